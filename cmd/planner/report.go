package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

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
		if simulateFor != 0 && (simulateFor.Seconds() < simulate.MinDurationS || simulateFor.Seconds() > simulate.MaxDurationS) {
			return usageError{fmt.Errorf("--simulate must be a duration of at least 1s and at most a week (168h), got %s", simulateFor)}
		}
		if simulateFor != 0 {
			defaults := simulateFlags{output: report.FormatTable, refill: simulate.RefillContinuous, duration: simulateFor, maxEvents: simulate.DefaultMaxEvents}
			opts, err := defaults.options(cmd)
			if err != nil {
				return err
			}
			if in.Simulation, err = a.Simulate(cmd.Context(), sc, opts); err != nil {
				return simulateError(err)
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

// parseProbeSteps reads the steps.json at path, whose content is b, into
// the report's probe data.
func parseProbeSteps(path string, b []byte) (*report.ProbeData, error) {
	var doc stepsFile
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("probe steps %s: %w", path, err)
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
