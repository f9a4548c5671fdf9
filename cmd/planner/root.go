package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/plannerdev/planner/internal/report"
)

// Exit codes of every planner command. A command that SIGINT or SIGTERM
// stopped before it finished exits with 128 plus the signal's number, as a
// shell reports it: 130 and 143.
const (
	exitOK    = 0
	exitError = 1 // the command ran and failed (bad scenario, unreachable endpoint, ...)
	exitUsage = 2 // the command line itself is wrong
	exitUnfit = 3 // plan --check: the plan was made, and some class does not fit
)

// exitStatuses is the help's account of the exit codes.
const exitStatuses = "Exit status: 0 when the command worked, 1 when it failed, 2 when the command\n" +
	"line is wrong, 3 when plan --check finds a class that does not fit, and 130 or\n" +
	"143 when SIGINT or SIGTERM stopped it before it finished (planner serve stops\n" +
	"gracefully on either and exits 0)."

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
		Use:   "planner",
		Short: "Capacity planning for teams calling LLM APIs",
		Long: "planner sizes per-class concurrency pools from quotas, token distributions,\n" +
			"measured latency and SLOs, names the binding constraint, and measures endpoints.\n\n" +
			"With no command, planner serves the API (planner serve) and takes serve's flags:\n" +
			"planner --listen 127.0.0.1:9000 is planner serve --listen 127.0.0.1:9000; -o json\n" +
			"prints where it listens as JSON, and --out writes that to a file. With --version\n" +
			"it prints the version of the build (planner version).\n\n" + exitStatuses,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.Args = usageArgs(cobra.NoArgs)
	var version bool
	root.Flags().BoolVar(&version, "version", false, "print the version, VCS revision and time of this build (planner version)")
	out := addOutputFlags(root, startFormats...)
	serveCmd := newServeCmd(s)
	// Bare planner is planner serve: it takes serve's flags (each one
	// Flag, shared, as only one of the two commands runs).
	serveCmd.Flags().VisitAll(func(f *pflag.Flag) {
		if root.Flags().Lookup(f.Name) == nil {
			root.Flags().AddFlag(f)
		}
	})
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := out.check(); err != nil {
			return err
		}
		if version {
			return writeVersion(s, out)
		}
		return serveByDefault(cmd, s, out)
	}
	root.AddCommand(
		newCompareCmd(s),
		newExportCmd(s),
		newImportCmd(s),
		newKneeCmd(s),
		newPlanCmd(s),
		newSimCmd(s),
		newSimulateCmd(s),
		newProbeCmd(s),
		newReportCmd(s),
		serveCmd,
		newOpenAPICmd(s),
		newWhatIfCmd(s),
		newTiersCmd(s),
		newVersionCmd(s),
	)
	// Cobra's completion command prints its help for a shell it does not
	// know, or for none; like every other wrong command line, that is a
	// usage error.
	root.InitDefaultCompletionCmd()
	if c, _, err := root.Find([]string{"completion"}); err == nil && c != root {
		c.Args = usageArgs(cobra.NoArgs)
		c.RunE = func(*cobra.Command, []string) error {
			return usageError{errors.New("name a shell: planner completion bash|zsh|fish|powershell")}
		}
	}
	return root
}

// run executes the command line and maps the outcome to an exit code.
func run(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer) int {
	root := newRootCmd(streams{in: in, out: out, err: errOut})
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil && cmd.Flags().NArg() > 0 && (cmd == root && cmd.Flags().Changed("help") || cmd.Name() == "help" && cmd.Parent() == root) {
		// planner nonexist --help and planner help nonexist: cobra prints
		// the root's help for a command it does not know, which is still
		// a wrong command line.
		if c, _, ferr := root.Find(cmd.Flags().Args()); ferr != nil || c == root {
			err = usageError{fmt.Errorf("unknown command %q for \"planner\"", cmd.Flags().Arg(0))}
		}
	}
	if err == nil {
		return exitOK
	}
	var stopped interruption
	if errors.As(context.Cause(ctx), &stopped) {
		if errors.Is(err, context.Canceled) {
			err = stopped // "context canceled" says less than the signal
		}
		fmt.Fprintln(errOut, "planner:", err)
		return 128 + int(stopped.sig)
	}
	fmt.Fprintln(errOut, "planner:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	var ne notFitting
	if errors.As(err, &ne) {
		return exitUnfit
	}
	return exitError
}

// notFitting is the outcome of plan --check when some class does not fit:
// the plan was printed, and the exit status says it to a CI job.
type notFitting struct{ classes []string }

func (e notFitting) Error() string {
	return fmt.Sprintf("%d class(es) do not fit: %s (see their remedies)", len(e.classes), strings.Join(e.classes, ", "))
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

// startFormats are the formats of the message that says where the service
// listens, and of the version.
var startFormats = []string{"text", "json"}

// started is the message that says where the service listens.
type started struct {
	URL  string `json:"url"`
	Docs string `json:"docs"`
}

// announce prints where the service listens, in o's format.
func announce(s streams, o *output, url string) error {
	msg := started{URL: url, Docs: url + "/docs"}
	return o.write(s, func(w io.Writer) error {
		if o.format == "json" {
			return report.WriteData(w, msg, o.format)
		}
		_, err := fmt.Fprintf(w, "planner: serving on %s (docs at %s)\n", msg.URL, msg.Docs)
		return err
	})
}
