package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner"
)

// addScenarioFlags adds -f/--file and --example, whose values shell
// completion offers: files, and the names of the shipped examples. The
// file may be given as the command's one argument instead of -f, as in
// planner plan scenario.yaml; cmd's positional arguments are that one.
func addScenarioFlags(cmd *cobra.Command, file, example *string, what string) {
	cmd.Flags().StringVarP(file, "file", "f", "", "scenario file (YAML or JSON); - for standard input; or give it as the argument")
	cmd.Flags().StringVar(example, "example", "", what+" a shipped example instead: "+strings.Join(planner.ExampleNames(), ", "))
	_ = cmd.MarkFlagFilename("file", "yaml", "yml", "json")
	_ = cmd.RegisterFlagCompletionFunc("example", cobra.FixedCompletions(planner.ExampleNames(), cobra.ShellCompDirectiveNoFileComp))
	cmd.Args = usageArgs(cobra.MaximumNArgs(1))
	cmd.ValidArgsFunction = func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return []cobra.Completion{"yaml", "yml", "json"}, cobra.ShellCompDirectiveFilterFileExt
	}
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		if cmd.Flags().Changed("file") {
			return usageError{fmt.Errorf("give the scenario file as the argument or with -f, not both (got %q and -f %q)", args[0], *file)}
		}
		*file = args[0]
		return nil
	}
}
