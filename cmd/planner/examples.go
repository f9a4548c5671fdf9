package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner"
)

// addScenarioFlags adds -f/--file and --example, whose values shell
// completion offers: files, and the names of the shipped examples.
func addScenarioFlags(cmd *cobra.Command, file, example *string, what string) {
	cmd.Flags().StringVarP(file, "file", "f", "", "scenario file (YAML or JSON); - for standard input")
	cmd.Flags().StringVar(example, "example", "", what+" a shipped example instead: "+strings.Join(planner.ExampleNames(), ", "))
	_ = cmd.MarkFlagFilename("file", "yaml", "yml", "json")
	_ = cmd.RegisterFlagCompletionFunc("example", cobra.FixedCompletions(planner.ExampleNames(), cobra.ShellCompDirectiveNoFileComp))
}
