package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/compare"
	"github.com/plannerdev/planner/internal/importer"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/report"
)

func newCompareCmd(s streams) *cobra.Command {
	var baseline string
	var j judgement
	cmd := &cobra.Command{
		Use:   "compare RUN... [--baseline RUN] [-o table|json|yaml|markdown|csv] [--out FILE]",
		Short: "Put measured runs side by side, with the drift of each against a baseline",
		Long: "Compare puts runs side by side: the same ladder on several models, or records of\n" +
			"one endpoint at several times of day. For each run it gives the knee and\n" +
			"knee_refined, the TTFT and E2E p95 and the goodput at the knee, the 429 answers,\n" +
			"whether the quota limited it, the model its answers named and when it ran, and\n" +
			"the drift of the knee, the p95s and the goodput against the baseline, in percent\n" +
			"of the baseline's figure. A RUN is a probe's output directory (planner probe\n" +
			"--out DIR), its steps.json, or one result file that planner import reads (judged\n" +
			"with --deadline and the knee settings, as planner import judges it; a steps.json\n" +
			"keeps the probe's judgement, and with those flags given its requests.csv is the\n" +
			"RUN to give instead). --baseline names one of the RUNs as given; the first by\n" +
			"default.",
		Example: "  planner compare morning/ evening/\n" +
			"  planner compare probe-gpt-4o/ probe-gpt-4o-mini/ vllm-result.json --baseline probe-gpt-4o -o markdown\n" +
			"  planner compare run1 run2 -o csv --out drift.csv",
		Args: usageArgs(cobra.MinimumNArgs(1)),
	}
	out := addOutputFlags(cmd, report.ComparisonFormats...)
	cmd.Flags().StringVar(&baseline, "baseline", "", "the run the others are compared with, named as on the command line (default: the first)")
	j.addFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := out.check(); err != nil {
			return err
		}
		opts, err := j.options()
		if err != nil {
			return err
		}
		if len(args) > compare.MaxRuns {
			return usageError{fmt.Errorf("at most %d runs are compared at once, got %d", compare.MaxRuns, len(args))}
		}
		if err := oneStdin(args); err != nil {
			return err
		}
		if err := outNotRead(out.path, args); err != nil {
			return err
		}
		var judged []string // the judgement flags given, which a probe's steps.json cannot take
		for _, name := range []string{"deadline", "min-gain-pct", "max-p95-fraction", "collapse-tolerance-pct", "slo"} {
			if cmd.Flags().Changed(name) {
				judged = append(judged, "--"+name)
			}
		}
		runs := make([]compare.Run, 0, len(args))
		for _, a := range args {
			r, err := readRun(s.in, a, opts, judged)
			if err != nil {
				return err
			}
			runs = append(runs, r)
		}
		if baseline != "" {
			baseline = filepath.Clean(baseline)
		}
		c, err := compare.New(runs, baseline)
		if err != nil {
			return usageError{err}
		}
		return out.write(s, func(w io.Writer) error { return report.WriteComparison(w, c, out.format) })
	}
	return cmd
}

// readRun reads one RUN of planner compare: a probe's output directory,
// its steps.json, or a result file that the importer reads ("-":
// standard input), judged with opts. The run is named by its path,
// cleaned. A steps.json holds the probe's own judgement, so it is refused
// when judged names judgement flags given on the command line: the runs
// would otherwise be judged by different rules, and their drift with them.
func readRun(in io.Reader, path string, opts analysis.Options, judged []string) (compare.Run, error) {
	name := filepath.Clean(path)
	file := name
	if info, err := os.Stat(name); err == nil && info.IsDir() {
		file = filepath.Join(name, probe.StepsFile)
	}
	f, err := readMeasurement(in, file)
	if err != nil {
		return compare.Run{}, err
	}
	file = f.Name
	if isStepsFile(f.Data) {
		if len(judged) > 0 {
			return compare.Run{}, usageError{fmt.Errorf("%s: %s is a probe's steps.json, judged as the probe ran it; give its requests.csv (%s) to judge it with %s",
				strings.Join(judged, ", "), name, filepath.Join(filepath.Dir(file), probe.RequestsFile), strings.Join(judged, ", "))}
		}
		pd, err := parseProbeSteps(file, f.Data)
		if err != nil {
			return compare.Run{}, err
		}
		return compare.Run{Name: name, Endpoint: pd.Endpoint, Model: pd.Model, Date: pd.Date, Result: pd.Result}, nil
	}
	imp, err := importer.Import(file, f.Data, importer.Options{Options: opts})
	if err != nil {
		return compare.Run{}, fmt.Errorf("%s: neither a probe's steps.json nor a result file planner import reads: %w", file, err)
	}
	run := compare.Run{Name: name, Result: imp.Analysis}
	if len(imp.Sources) > 0 {
		src := imp.Sources[0]
		run.Endpoint, run.Model, run.Date = src.Endpoint, src.Model, sourceDate(src.Date)
	}
	return run, nil
}

// isStepsFile reports whether b is a probe's steps.json: a JSON object
// with the steps, the stop reason and the configuration of a run.
func isStepsFile(b []byte) bool {
	var doc struct {
		Steps      json.RawMessage `json:"steps"`
		StopReason *string         `json:"stop_reason"`
		Config     json.RawMessage `json:"config"`
	}
	return json.Unmarshal(b, &doc) == nil && doc.Steps != nil && doc.StopReason != nil && doc.Config != nil
}

// sourceDate reads the date an imported file records, in the layouts the
// tools write (RFC 3339, vLLM's 20060102-150405, a space for the T); zero
// when it is none of them.
func sourceDate(s string) time.Time {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "20060102-150405"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}
