package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/report"
	"github.com/plannerdev/planner/internal/simulate"
)

// Output formats of `planner report`.
var reportFormats = []string{"md", "html"}

// maxStepsBytes bounds a probe's steps.json.
const maxStepsBytes = 16 << 20

func newReportCmd(s streams) *cobra.Command {
	var file, example, probePath, format, output, title string
	var simulateFor time.Duration
	cmd := &cobra.Command{
		Use:   "report (-f FILE | --example NAME) [--probe steps.json]",
		Short: "Write a team report of a scenario's plan, with charts",
		Long: "Report plans a scenario (YAML or JSON; -f - reads standard input) and writes a\n" +
			"document a team can read without the tool: the scenario in words, the plan,\n" +
			"each class's ceilings and, with --probe, the measured curves with the knee\n" +
			"and the SLOs. --probe takes the steps.json that planner probe writes.\n" +
			"--simulate adds a simulated run of the plan (as planner simulate runs it\n" +
			"with its defaults) with each class's time series.\n" +
			"The HTML form is one self-contained page with inline SVG charts; the\n" +
			"Markdown form carries the same numbers in tables.",
		Example: "  planner report --example measured-curve --format html -o report.html\n" +
			"  planner report -f scenario.yaml --probe probe-out/steps.json -o report.md",
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !oneOf(format, reportFormats) {
				return usageError{fmt.Errorf("--format must be one of %s, got %q", strings.Join(reportFormats, ", "), format)}
			}
			sc, p, err := planScenario(s.in, file, example)
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
			if simulateFor < 0 || simulateFor.Seconds() > simulate.MaxDurationS {
				return usageError{fmt.Errorf("--simulate must be a positive duration of at most a week (168h), got %s", simulateFor)}
			}
			if simulateFor != 0 {
				opts, err := simulateFlags{output: "table", refill: simulate.RefillContinuous, duration: simulateFor, maxEvents: simulate.DefaultMaxEvents}.options(cmd)
				if err != nil {
					return err
				}
				if in.Simulation, err = simulate.Run(cmd.Context(), plan.New(), sc, opts); err != nil {
					return simulateError(err)
				}
			}
			var buf bytes.Buffer
			write := report.WriteReportMarkdown
			if format == "html" {
				write = report.WriteReportHTML
			}
			if err := write(&buf, in); err != nil {
				return err
			}
			if output == "" {
				_, err := s.out.Write(buf.Bytes())
				return err
			}
			if err := os.WriteFile(output, buf.Bytes(), 0o644); err != nil {
				return fmt.Errorf("write report: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "scenario file (YAML or JSON); - for standard input")
	f.StringVar(&example, "example", "", "report on a shipped example instead: "+strings.Join(planner.ExampleNames(), ", "))
	f.StringVar(&probePath, "probe", "", "a probe's steps.json, whose curves back the plan")
	f.StringVar(&format, "format", "md", "output format: "+strings.Join(reportFormats, ", "))
	f.StringVarP(&output, "output", "o", "", "write the report to this file instead of standard output")
	f.StringVar(&title, "title", "", "title of the report (default \""+report.DefaultTitle+"\")")
	f.DurationVar(&simulateFor, "simulate", 0, "add a simulated run of the plan of this length (such as 1h)")
	return cmd
}

// stepsFile is the part of a probe's steps.json that a report uses: the
// analysis at the top level, when the run started, why it stopped, and the
// endpoint and deadline from its configuration.
type stepsFile struct {
	analysis.Result
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
