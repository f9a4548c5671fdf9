package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/importer"
	"github.com/plannerdev/planner/internal/report"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/simulate"
)

// Output formats of `planner simulate`.
var simulateFormats = []string{report.FormatTable, report.FormatJSON, report.FormatYAML, report.FormatMarkdown, report.FormatCSV}

// simulateFlags are the options of `planner simulate`.
type simulateFlags struct {
	file, example, output, out, refill string
	duration, interval                 time.Duration
	seed                               uint64
	startHour                          float64
	noPacing, aimd, noRetryAfter       bool
	maxEvents                          int
	replay                             []string
}

func newSimulateCmd(s streams) *cobra.Command {
	var f simulateFlags
	cmd := &cobra.Command{
		Use:   "simulate (FILE | -f FILE | --example NAME) [--duration 1h] [--seed N] [--no-pacing] [--aimd]",
		Short: "Watch a plan run against its quotas, bursts and retries",
		Long: "Simulate plans a scenario (YAML or JSON; -f - reads standard input) and runs the\n" +
			"plan as a seeded discrete-event simulation: each class's arrivals (Poisson at its\n" +
			"demand, its demand profile, or replayed start times), its pool and queue, the\n" +
			"plan's pacing, admission shedding, retries honouring Retry-After and optionally\n" +
			"AIMD, against a provider that enforces every quota limit per burst window. It\n" +
			"prints each class's throughput, 429s, shedding and latency beside the plan's\n" +
			"predictions, the use of each key, and a verdict: whether the plan holds (SLOs\n" +
			"met, at most 1 % of sends answered 429, arrivals served, batches done in their\n" +
			"window). The exit status is 1 when it does not. The same seed gives the same\n" +
			"result.\n\n" +
			"--replay CLASS=FILE replays the request start times of a probe's requests.csv or\n" +
			"of an imported result file as that class's arrivals (see planner import).\n\n" +
			"Examples shipped with planner: " + strings.Join(planner.ExampleNames(), ", ") + ".\n" +
			"The model and its limits: docs/simulate.md.",
		Example: "  planner simulate --example backfill --no-pacing\n" +
			"  planner simulate -f scenario.yaml --duration 4h --aimd -o json --out run.json\n" +
			"  planner simulate -f scenario.yaml --replay chat=probe-out/requests.csv",
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := f.options(cmd)
			if err != nil {
				return err
			}
			if err := stdinOnce(f.file, f.replay); err != nil {
				return err
			}
			data, err := scenarioBytes(s.in, f.file, f.example)
			if err != nil {
				return err
			}
			sc, err := scenario.Parse(data)
			if err != nil {
				return fmt.Errorf("invalid scenario: %w", err)
			}
			if opts.Replay, err = readReplays(s.in, f.replay); err != nil {
				return err
			}
			a, err := newApp(cmd)
			if err != nil {
				return err
			}
			r, err := a.Simulate(cmd.Context(), sc, opts)
			if err != nil {
				return simulateError(err, f.replay, simulateOptionFlags)
			}
			var buf bytes.Buffer
			if err := writeSimulation(&buf, r, f.output); err != nil {
				return err
			}
			if f.out == "" {
				_, err = s.out.Write(buf.Bytes())
			} else if err = os.WriteFile(f.out, buf.Bytes(), 0o644); err != nil {
				err = fmt.Errorf("write the simulation: %w", err)
			}
			if err != nil {
				return err
			}
			if !r.Verdict.Holds {
				return errors.New(r.Verdict.Summary)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	addScenarioFlags(cmd, &f.file, &f.example, "simulate")
	fl.DurationVar(&f.duration, "duration", time.Hour, "simulated time (at most a week)")
	fl.Float64Var(&f.startHour, "start-hour", 0, "time of day the run starts at, hours after midnight UTC, for classes with a schedule")
	fl.Uint64Var(&f.seed, "seed", 0, "seed of every random stream (default: the scenario's policy.seed, else 1)")
	fl.BoolVar(&f.noPacing, "no-pacing", false, "turn the plan's pacing token bucket off")
	fl.BoolVar(&f.aimd, "aimd", false, "let every client resize its pool with the plan's AIMD settings")
	fl.StringVar(&f.refill, "refill", simulate.RefillContinuous, "how the provider refills per-minute limits: continuous (a bucket) or window (a counter reset every burst window)")
	fl.BoolVar(&f.noRetryAfter, "no-retry-after", false, "the provider's 429s carry no Retry-After, so clients back off with jitter")
	fl.DurationVar(&f.interval, "interval", 0, "width of one point of the time series (default: the duration / 240, in whole seconds); a series has at most "+strconv.Itoa(simulate.MaxIntervals)+" points, so 1s takes a --duration of at most "+strconv.Itoa(simulate.MaxIntervals)+"s")
	fl.IntVar(&f.maxEvents, "max-events", simulate.DefaultMaxEvents, "stop a run that needs more events than this; it bounds the run's memory")
	fl.StringArrayVar(&f.replay, "replay", nil, "CLASS=FILE: replay the start times of FILE (a probe's requests.csv or an imported result) as CLASS's arrivals; repeatable")
	fl.StringVarP(&f.output, "output", "o", report.FormatTable, "output format: "+report.DescribeFormats(simulateFormats))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(simulateFormats, cobra.ShellCompDirectiveNoFileComp))
	fl.StringVar(&f.out, "out", "", "write the output to this file instead of standard output")
	return cmd
}

// options checks the flags and turns them into simulation options; the
// output format an alias names (md) takes its place.
func (f *simulateFlags) options(cmd *cobra.Command) (simulate.Options, error) {
	format, err := report.ParseFormat(f.output, simulateFormats)
	if err != nil {
		return simulate.Options{}, usageError{fmt.Errorf("-o/--output: %w", err)}
	}
	f.output = format
	switch {
	case f.refill != simulate.RefillContinuous && f.refill != simulate.RefillWindow:
		return simulate.Options{}, usageError{fmt.Errorf("--refill must be %s or %s, got %q", simulate.RefillContinuous, simulate.RefillWindow, f.refill)}
	case f.duration.Seconds() < simulate.MinDurationS || f.duration.Seconds() > simulate.MaxDurationS:
		return simulate.Options{}, usageError{fmt.Errorf("--duration must be at least 1s and at most a week (168h), got %s", f.duration)}
	case f.interval < 0 || f.interval == 0 && cmd.Flags().Changed("interval"):
		return simulate.Options{}, usageError{fmt.Errorf("--interval must be positive, got %s", f.interval)}
	case f.maxEvents < 1:
		return simulate.Options{}, usageError{fmt.Errorf("--max-events must be at least 1, got %d", f.maxEvents)}
	case f.seed >= 1<<53:
		return simulate.Options{}, usageError{fmt.Errorf("--seed must be below 2^53, as the API's seed is, got %d", f.seed)}
	}
	o := simulate.Options{
		DurationS: f.duration.Seconds(), IntervalS: f.interval.Seconds(), NoPacing: f.noPacing, AIMD: f.aimd,
		Refill: f.refill, NoRetryAfter: f.noRetryAfter, MaxEvents: f.maxEvents, StartHour: f.startHour,
	}
	if cmd.Flags().Changed("seed") {
		seed := f.seed
		o.Seed = &seed
	}
	return o, nil
}

// stdinOnce refuses standard input named twice, by -f - and a --replay
// CLASS=- or by two --replay: the first to read it would leave nothing
// for the other.
func stdinOnce(file string, replays []string) error {
	var uses []string
	if file == "-" {
		uses = append(uses, "-f -")
	}
	for _, spec := range replays {
		if _, f, _ := strings.Cut(spec, "="); f == "-" {
			uses = append(uses, "--replay "+spec)
		}
	}
	if len(uses) > 1 {
		return usageError{fmt.Errorf("standard input (-) can be given once, not to %s", strings.Join(uses, " and "))}
	}
	return nil
}

// readReplays reads each --replay CLASS=FILE: the start times of the
// file's requests, from the first one on.
func readReplays(in io.Reader, specs []string) ([]simulate.Replay, error) {
	var out []simulate.Replay
	for _, spec := range specs {
		class, file, ok := strings.Cut(spec, "=")
		if !ok || class == "" || file == "" {
			return nil, usageError{fmt.Errorf("--replay takes CLASS=FILE, got %q", spec)}
		}
		m, err := readMeasurement(in, file)
		if err != nil {
			return nil, fmt.Errorf("--replay %s: %w", spec, err)
		}
		imp, err := importer.Import(m.Name, m.Data, importer.Options{})
		if err != nil {
			return nil, fmt.Errorf("--replay %s: %w", spec, err)
		}
		starts := make([]float64, len(imp.Records))
		for i, rec := range imp.Records {
			starts[i] = rec.StartS
		}
		if len(starts) == 0 || slices.Min(starts) == slices.Max(starts) && len(starts) > 1 {
			return nil, fmt.Errorf("--replay %s: the file has no per-request start times to replay", spec)
		}
		first := slices.Min(starts)
		for i := range starts {
			starts[i] = math.Max(0, starts[i]-first)
		}
		out = append(out, simulate.Replay{Class: class, StartS: starts})
	}
	return out, nil
}

// replayAt locates a problem at the i-th replay.
var replayAt = regexp.MustCompile(`^replay\[(\d+)\]`)

// simulateOptionFlags names the options of a simulation as planner simulate's
// flags; reportSimulateFlags as planner report's, whose --simulate is the
// run's length and which has no flag for its events.
var (
	simulateOptionFlags = map[string]string{"duration_s": "--duration", "interval_s": "--interval", "max_events": "--max-events", "refill": "--refill", "start_hour": "--start-hour"}
	reportSimulateFlags = map[string]string{"duration_s": "--simulate", "max_events": "--simulate"}
)

// simulateError names the flag behind an option problem (flags: the
// command's names of the options, simulateOptionFlags or
// reportSimulateFlags): a replay's as it was given (replays: the --replay
// flags, in order), "--replay nobody=run1/requests.csv: no class named
// "nobody"", and the events' bound by its flag, or, without one, by
// planner simulate's.
func simulateError(err error, replays []string, flags map[string]string) error {
	var errs simulate.OptionErrors
	if !errors.As(err, &errs) {
		return fmt.Errorf("simulate: %w", err)
	}
	ownFlag := flags["max_events"] == "--max-events"
	raise := "run it with planner simulate --max-events"
	if ownFlag {
		raise = "raise --max-events"
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		name, ok := flags[e.Path]
		if !ok {
			name = "--replay (" + e.Path + ")"
			if m := replayAt.FindStringSubmatch(e.Path); m != nil {
				if n, _ := strconv.Atoi(m[1]); n < len(replays) {
					name = "--replay " + replays[n]
				}
			}
		}
		msg := strings.ReplaceAll(e.Message, "raise max_events", raise)
		if ownFlag {
			msg = strings.ReplaceAll(msg, "max_events", "--max-events")
		} else {
			msg = strings.ReplaceAll(msg, "more than max_events", "more than the events a report's simulation may have,")
		}
		msgs[i] = name + ": " + msg
	}
	return usageError{errors.New(strings.Join(msgs, "; "))}
}

// writeSimulation renders a simulation in one of simulateFormats.
func writeSimulation(w io.Writer, r *simulate.Simulation, format string) error {
	switch format {
	case report.FormatJSON, report.FormatYAML:
		return report.WriteData(w, r, format)
	case report.FormatMarkdown:
		return report.WriteSimulationMarkdown(w, r)
	case report.FormatCSV:
		return report.WriteSimulationCSV(w, r)
	}
	return report.WriteSimulationTable(w, r)
}
