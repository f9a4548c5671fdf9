package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes of every planner command.
const (
	exitOK    = 0
	exitError = 1 // the command ran and failed (bad scenario, unreachable endpoint, ...)
	exitUsage = 2 // the command line itself is wrong
)

// usageError marks an error in the command line rather than in the work.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// streams carries the standard streams so that commands are testable.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// newRootCmd builds the whole command tree.
func newRootCmd(s streams) *cobra.Command {
	root := &cobra.Command{
		Use:           "planner",
		Short:         "Capacity planning for teams calling LLM APIs",
		Long:          "planner sizes per-class concurrency pools from quotas, token distributions,\nmeasured latency and SLOs, names the binding constraint, and measures endpoints.\n\nWith no command, planner serves the API (planner serve).",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.Args = usageArgs(cobra.NoArgs)
	root.RunE = func(cmd *cobra.Command, _ []string) error { return serveByDefault(cmd, s) }
	root.AddCommand(
		newImportCmd(s),
		newKneeCmd(s),
		newPlanCmd(s),
		newSimCmd(s),
		newSimulateCmd(s),
		newProbeCmd(s),
		newReportCmd(s),
		newServeCmd(s),
		newOpenAPICmd(s),
	)
	return root
}

// run executes the command line and maps the outcome to an exit code.
func run(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer) int {
	root := newRootCmd(streams{in: in, out: out, err: errOut})
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(errOut, "planner:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitError
}

// usageArgs makes a positional-argument check report a usage error (exit 2).
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}
