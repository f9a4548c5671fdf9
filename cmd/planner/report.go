package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/report"
	"github.com/plannerdev/planner/internal/simulate"
)

// maxStepsBytes bounds a probe's steps.json.
const maxStepsBytes = 16 << 20

func newReportCmd(s streams) *cobra.Command {
	var file, example, probePath, title string
	var simulateFor time.Duration
	cmd := &cobra.Command{
		Use:   "report (FILE | -f FILE | --example NAME) [--probe steps.json] [--simulate DURATION] [-o markdown|html] [--out PATH]",
		Short: "Write a team report of a scenario's plan, with charts",
		Long: "Report plans a scenario (YAML or JSON; -f - reads standard input) and writes a\n" +
			"document a team can read without the tool: the scenario in words, the plan,\n" +
			"each class's ceilings and, with --probe, the measured curves with the knee\n" +
			"and the SLOs. --probe takes the steps.json that planner probe writes.\n" +
			"--simulate adds a simulated run of the plan (as planner simulate runs it\n" +
			"with its defaults) with each class's time series.\n" +
			"The HTML form (-o html) is one self-contained page with inline SVG charts;\n" +
			"the Markdown form (the default; -o md is short for it, as everywhere) carries the same\n" +
			"numbers in tables; -o json and -o yaml give the data behind them.",
		Example: "  planner report --example measured-curve -o html --out report.html\n" +
			"  planner report -f scenario.yaml --probe probe-out/steps.json --out report.md",
	}
	f := cmd.Flags()
	addScenarioFlags(cmd, &file, &example, "report on")
	f.StringVar(&probePath, "probe", "", "a probe's steps.json, whose curves back the plan")
	f.StringVar(&title, "title", "", "title of the report (default \""+report.DefaultTitle+"\")")
	f.DurationVar(&simulateFor, "simulate", 0, "add a simulated run of the plan of this length (such as 1h)")
	_ = cmd.MarkFlagFilename("probe", "json")
	out := addOutputFlags(cmd, report.FormatMarkdown, report.FormatHTML, report.FormatJSON, report.FormatYAML)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := out.check(); err != nil {
			return err
		}
		a, err := newApp(cmd)
		if err != nil {
			return err
		}
		sc, p, err := planScenario(cmd.Context(), a, s.in, file, example)
		if err != nil {
			return err
		}
		in := report.ReportInput{Title: title, Generated: time.Now().UTC(), Scenario: sc, Plan: p}
		if probePath != "" {
			pd, err := readProbeSteps(probePath)
			if err != nil {
				return err
			}
			in.Probe = pd
		}
		if (simulateFor != 0 || cmd.Flags().Changed("simulate")) && (simulateFor.Seconds() < simulate.MinDurationS || simulateFor.Seconds() > simulate.MaxDurationS) {
			return usageError{fmt.Errorf("--simulate must be a duration of at least 1s and at most a week (168h), got %s", simulateFor)}
		}
		if simulateFor != 0 {
			defaults := simulateFlags{output: report.FormatTable, refill: simulate.RefillContinuous, duration: simulateFor, maxEvents: simulate.DefaultMaxEvents}
			opts, err := defaults.options(cmd)
			if err != nil {
				return err
			}
			if in.Simulation, err = a.Simulate(cmd.Context(), sc, opts); err != nil {
				return simulateError(err, nil, reportSimulateFlags)
			}
		}
		return out.write(s, func(w io.Writer) error {
			switch out.format {
			case report.FormatHTML:
				return report.WriteReportHTML(w, in)
			case report.FormatMarkdown:
				return report.WriteReportMarkdown(w, in)
			}
			return report.WriteData(w, in, out.format)
		})
	}
	return cmd
}

// stepsFile is the part of a probe's steps.json that a report uses: the
// analysis at the top level, when the run started, why it stopped, and the
// endpoint and deadline from its configuration.
type stepsFile struct {
	measure.Result
	StopReason string    `json:"stop_reason"`
	Started    time.Time `json:"started"`
	Config     struct {
		BaseURL  string `json:"base_url"`
		Model    string `json:"model"`
		Deadline string `json:"deadline"` // a Go duration, "12s"
	} `json:"config"`
}

// readProbeSteps reads a probe's steps.json into the report's probe data.
func readProbeSteps(path string) (*report.ProbeData, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read probe steps: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStepsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read probe steps %s: %w", path, err)
	}
	if len(b) > maxStepsBytes {
		return nil, fmt.Errorf("probe steps %s: larger than %d MiB", path, maxStepsBytes>>20)
	}
	return parseProbeSteps(path, b)
}

// jsonProblem says what is wrong in the JSON document b that err, of
// decoding it, found: where (line and column of a syntax error, line of a
// value of the wrong kind) and what, by the document's keys
// ("steps.concurrency must be a number, got a string"), not encoding/json's
// words about Go types.
func jsonProblem(b []byte, err error) string {
	at := func(off int64) (int, int) {
		o := int(min(max(off, 0), int64(len(b))))
		return 1 + bytes.Count(b[:o], []byte("\n")), 1 + o - (bytes.LastIndexByte(b[:o], '\n') + 1)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := at(se.Offset - 1)
		return fmt.Sprintf("line %d, column %d: %v", line, col, se)
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err.Error()
	}
	kinds := map[reflect.Kind]string{reflect.Slice: "a list", reflect.Array: "a list", reflect.Map: "an object", reflect.Struct: "an object",
		reflect.String: "a string", reflect.Bool: "true or false"}
	want, ok := kinds[te.Type.Kind()]
	if !ok {
		want = "a number"
	}
	got := map[string]string{"array": "a list", "object": "an object", "string": "a string", "bool": "true or false", "number": "a number"}[te.Value]
	if got == "" {
		got = te.Value
	}
	// The field's path, without the names of embedded Go fields.
	var keys []string
	for k := range strings.SplitSeq(te.Field, ".") {
		if k != "" && !unicode.IsUpper(rune(k[0])) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return fmt.Sprintf("must be a JSON object (the steps.json of a probe run), got %s", got)
	}
	line, _ := at(te.Offset)
	return fmt.Sprintf("line %d: %s must be %s, got %s", line, strings.Join(keys, "."), want, got)
}

// parseProbeSteps reads the steps.json at path, whose content is b, into
// the report's probe data.
func parseProbeSteps(path string, b []byte) (*report.ProbeData, error) {
	var doc stepsFile
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("probe steps %s: %s", path, jsonProblem(b, err))
	}
	if len(doc.Steps) == 0 {
		return nil, fmt.Errorf("probe steps %s: no steps (is it the steps.json of a probe run?)", path)
	}
	pd := &report.ProbeData{Result: doc.Result, Endpoint: doc.Config.BaseURL, Model: doc.Config.Model, Date: doc.Started}
	if d := doc.Config.Deadline; d != "" {
		dl, err := time.ParseDuration(d)
		if err != nil {
			return nil, fmt.Errorf("probe steps %s: config.deadline: %w", path, err)
		}
		if dl < 0 {
			return nil, fmt.Errorf("probe steps %s: config.deadline %s is negative", path, d)
		}
		pd.DeadlineMs = float64(dl) / float64(time.Millisecond)
	}
	pd.Source = "From the probe run in " + filepath.Join(filepath.Base(filepath.Dir(path)), filepath.Base(path))
	if doc.StopReason != "" {
		pd.Source += fmt.Sprintf(" (stopped: %s)", doc.StopReason)
	}
	pd.Source += "."
	return pd, nil
}
