package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/optional"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/report/reportcheck"
)

// writeProbeRun writes the outputs of a made-up probe run with the probe's
// own writer, so that the test reads steps.json exactly as a run leaves it.
func writeProbeRun(t *testing.T) string {
	t.Helper()
	var steps []measure.Step
	for _, s := range []struct {
		c          int
		rps, e2e95 float64
	}{{1, 0.3, 3300}, {4, 1.2, 3600}, {8, 2.3, 4000}, {16, 3.9, 4900}, {32, 4.1, 8400}} {
		steps = append(steps, measure.Step{Concurrency: s.c, Requests: 40, OK: 40, WallS: 40 / s.rps, GoodputRPS: s.rps,
			ThroughputRPS: s.rps, OutputTPS: s.rps * 200, TTFTP50Ms: 150, TTFTP95Ms: 300, E2EP50Ms: s.e2e95 * 0.8, E2EP95Ms: s.e2e95,
			TPOTP50Ms: 15, TPOTP95Ms: 20})
	}
	res := &probe.Result{
		Config:     probe.Config{BaseURL: "http://127.0.0.1:8000/v1?api-key=hidden", Model: "test-model", APIKey: "sk-never-0123456789abcdef", Deadline: optional.Of(10 * time.Second)},
		Analysis:   analysis.Analyze(steps, analysis.Options{DeadlineMs: 10000}),
		StopReason: "completed",
		Started:    time.Date(2025, 6, 2, 9, 30, 0, 0, time.UTC),
		Ended:      time.Date(2025, 6, 2, 9, 40, 0, 0, time.UTC),
	}
	dir := filepath.Join(t.TempDir(), "probe-run")
	if _, err := probe.WriteFiles(dir, res); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, probe.StepsFile)
}

func TestReportMarkdownWithProbe(t *testing.T) {
	steps := writeProbeRun(t)
	code, out, errOut := execute(t, "", "report", "--example", "measured-curve", "--probe", steps, "--title", "Assistant <capacity>")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"# Assistant &lt;capacity&gt;",
		"## Scenario", "## Capacity plan", "### assistant", "## Measurements",
		"Measured on `http://127.0.0.1:8000/v1?api-key=[redacted]`, model test-model, on 2025-06-02 09:30 UTC, with a per-request deadline of 10,000 ms.",
		"From the probe run in probe-run/steps.json (stopped: completed).",
		"Knee: 16 requests in flight",
		"| 16 (knee) |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sk-never") || strings.Contains(out, "hidden") {
		t.Error("the report shows a credential")
	}
}

func TestReportHTMLToFile(t *testing.T) {
	steps := writeProbeRun(t)
	dir := t.TempDir()
	scenarioFile := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(scenarioFile, []byte(exampleText(t, "measured-curve")), 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "report.html")
	code, out, errOut := execute(t, "", "report", "-f", scenarioFile, "--probe", steps, "-o", "html", "--out", target)
	if code != exitOK || out != "" {
		t.Fatalf("exit %d, stdout %q: %s", code, out, errOut)
	}
	page, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	charts, err := reportcheck.CheckHTML(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	// Two classes' ceilings, the throughput chart, and one latency chart
	// for each of the two classes' SLOs.
	if len(charts) != 5 {
		t.Errorf("%d charts, want 5", len(charts))
	}
}

func TestReportWithoutProbeFromStdin(t *testing.T) {
	code, out, errOut := execute(t, exampleText(t, "three-classes"), "report", "-f", "-", "-o", "html")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	charts, err := reportcheck.CheckHTML(strings.NewReader(out))
	if err != nil || len(charts) != 3 {
		t.Fatalf("%d charts, %v", len(charts), err)
	}
	if strings.Contains(out, "Measurements") {
		t.Error("a report without a probe has measurements")
	}
}

func TestReportExitCodes(t *testing.T) {
	dir := t.TempDir()
	notSteps := filepath.Join(dir, "steps.json")
	if err := os.WriteFile(notSteps, []byte(`{"config": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	badDeadline := filepath.Join(dir, "bad-deadline.json")
	if err := os.WriteFile(badDeadline, []byte(`{"steps": [{"concurrency": 1}], "config": {"deadline": "soon"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	wrongKind := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stepsNumber := wrongKind("steps-number.json", "{\n  \"steps\": 5\n}\n")
	concWord := wrongKind("conc-word.json", `{"steps": [{"concurrency": "x"}]}`)
	list := wrongKind("list.json", `[1, 2]`)
	broken := wrongKind("broken.json", "{\n  \"steps\": [\n    {\"concurrency\": 1,}\n  ]\n}\n")
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
		err   string
	}{
		{"steps of the wrong kind", "", []string{"report", "--example", "chat", "--probe", stepsNumber}, exitError, "probe steps " + stepsNumber + ": line 2: steps must be a list, got a number"},
		{"a concurrency of the wrong kind", "", []string{"report", "--example", "chat", "--probe", concWord}, exitError, "probe steps " + concWord + ": line 1: steps.concurrency must be a number, got a string"},
		{"a list", "", []string{"report", "--example", "chat", "--probe", list}, exitError, "probe steps " + list + ": must be a JSON object (the steps.json of a probe run), got a list"},
		{"invalid JSON", "", []string{"report", "--example", "chat", "--probe", broken}, exitError, "probe steps " + broken + ": line 3, column 23: invalid character '}'"},
		{"no scenario", "", []string{"report"}, exitUsage, "give a scenario"},
		{"bad format", "", []string{"report", "--example", "chat", "-o", "pdf"}, exitUsage, `the output format must be one of markdown (or md), html, json, yaml, got "pdf"`},
		{"a file given as the format", "", []string{"report", "--example", "chat", "-o", "report.md"}, exitUsage, `got "report.md"`},
		{"unknown flag", "", []string{"report", "--example", "chat", "--bogus"}, exitUsage, "unknown flag"},
		{"positional argument", "", []string{"report", "--example", "chat", "extra"}, exitUsage, ""},
		{"missing probe file", "", []string{"report", "--example", "chat", "--probe", filepath.Join(dir, "none.json")}, exitError, "no such file"},
		{"not a steps.json", "", []string{"report", "--example", "chat", "--probe", notSteps}, exitError, "no steps"},
		{"bad deadline", "", []string{"report", "--example", "chat", "--probe", badDeadline}, exitError, "config.deadline"},
		{"invalid scenario", "quotas: []\nclasses: []\n", []string{"report", "-f", "-"}, exitError, "invalid scenario"},
		{"unwritable output", "", []string{"report", "--example", "chat", "--out", filepath.Join(dir, "no", "such", "dir", "r.md")}, exitError, "no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := execute(t, tc.stdin, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.err) || strings.Contains(errOut, "Go struct") || strings.Contains(errOut, "Go value") {
				t.Fatalf("exit %d, want %d; stderr %q, want %q in it", code, tc.code, errOut, tc.err)
			}
		})
	}
}
