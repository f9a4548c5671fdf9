package report

import (
	"github.com/plannerdev/planner/internal/report/reportcheck"

	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/simulate"
)

// backfillRun simulates the first ten minutes of docs/examples/backfill.yaml
// without pacing: the start-up storm of 429s, then a steady key.
func backfillRun(t *testing.T) (ReportInput, *simulate.Simulation) {
	t.Helper()
	sc, p := examplePlan(t, "backfill")
	r, err := newApp().Simulate(context.Background(), sc, simulate.Options{DurationS: 600, IntervalS: 10, NoPacing: true})
	if err != nil {
		t.Fatal(err)
	}
	return ReportInput{Title: "Chat and a backfill on one key", Generated: exampleDate, Scenario: sc, Plan: p, Simulation: r}, r
}

// TestSimulationGolden renders a simulation as a terminal table, as
// Markdown, and inside the team report in both forms.
func TestSimulationGolden(t *testing.T) {
	in, r := backfillRun(t)
	var table, md bytes.Buffer
	if err := WriteSimulationTable(&table, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteSimulationMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(table.String(), "\n") {
		if n := len([]rune(line)); n > Width {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
	reportMD, page := renderBoth(t, in)
	charts, err := reportcheck.CheckHTML(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range charts {
		kinds = append(kinds, c.Kind)
	}
	if got := strings.Join(kinds, ","); got != "ceilings,ceilings,simulation,simulation" {
		t.Errorf("charts %s, want the two classes' ceilings and simulations", got)
	}
	for _, want := range []string{
		"pacing off", "backfill: 429s on 20.9 % of sends",
		"| backfill | closed loop | 76 |",
	} {
		if !bytes.Contains(md.Bytes(), []byte(want)) || !bytes.Contains(reportMD, []byte(want)) {
			t.Errorf("the Markdown lacks %q", want)
		}
	}
	if !bytes.Contains(reportMD, []byte("\n## Simulation\n")) || !bytes.Contains(reportMD, []byte("\n### backfill\n")) {
		t.Error("the report's simulation headings are not one level down")
	}
	md2, page2 := renderBoth(t, in)
	if !bytes.Equal(reportMD, md2) || !bytes.Equal(page, page2) {
		t.Error("two renderings of the same run differ")
	}
	golden(t, "testdata/backfill-simulation.txt", table.Bytes())
	golden(t, "testdata/backfill-report.md", reportMD)
	golden(t, "testdata/backfill-report.html", page)
}

func TestSimulationSVG(t *testing.T) {
	_, r := backfillRun(t)
	svg, err := SimulationSVG(r.Classes[1], r.Settings)
	if err != nil {
		t.Fatal(err)
	}
	info, err := reportcheck.CheckSVG(svg)
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != ChartSimulation || info.XLabel != "simulated time (minutes)" || strings.Join(info.YLabels, "|") != "requests|per interval" {
		t.Errorf("chart %+v", info)
	}
	texts := drawnTexts(t, svg)
	for _, want := range []string{"in flight", "queued", "429s", "shed"} {
		if !texts[want] {
			t.Errorf("the legend lacks %q: %v", want, keys(texts))
		}
	}
	if _, err := SimulationSVG(simulate.ClassRun{Name: "x"}, r.Settings); !errors.Is(err, ErrNoData) {
		t.Errorf("a class without series: %v", err)
	}
}

func TestSimulationEscapesNames(t *testing.T) {
	in, r := backfillRun(t)
	r.Classes[0].Name = `<script>x</script> | y`
	r.Classes[0].Verdict.Reasons = append(r.Classes[0].Verdict.Reasons, "<img src=x>")
	md, page := renderBoth(t, in)
	if _, err := reportcheck.CheckHTML(bytes.NewReader(page)); err != nil {
		t.Fatalf("a class name made the page unsafe: %v", err)
	}
	for _, raw := range []string{"<script>x", "<img"} {
		if bytes.Contains(page, []byte(raw)) || bytes.Contains(md, []byte(raw)) {
			t.Errorf("the report contains %q", raw)
		}
	}
	if !bytes.Contains(md, []byte(`&lt;script&gt;x&lt;/script&gt; \| y`)) {
		t.Error("the class name is not escaped for Markdown")
	}
}

func TestDescribeDemandProfile(t *testing.T) {
	d := &scenario.Demand{RPM: 180, Profile: []scenario.DemandWindow{{StartS: 600, DurationS: 300, Factor: 2}, {StartS: 3600, DurationS: 3600, Factor: 1.5}}}
	want := "demand 180 req/min (3 req/s), in simulations × 2 for 300 s from 600 s, × 1.5 for 3,600 s from 3,600 s"
	if got := describeDemand(d, false); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestSimulationOfTasksCountsTasks: a simulated agent task class's
// figures are told in tasks, as its run counts them, in the terminal
// table, the Markdown and the team report's HTML.
func TestSimulationOfTasksCountsTasks(t *testing.T) {
	sc, p := examplePlan(t, "agent")
	r, err := newApp().Simulate(context.Background(), sc, simulate.Options{DurationS: 600})
	if err != nil {
		t.Fatal(err)
	}
	if r.Classes[0].Counts != "tasks" {
		t.Fatalf("counts %q, want tasks", r.Classes[0].Counts)
	}
	var table, md bytes.Buffer
	if err := WriteSimulationTable(&table, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteSimulationMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	_, page := renderBoth(t, ReportInput{Scenario: sc, Plan: p, Simulation: r})
	s := r.Classes[0].Simulated
	facts := fmt.Sprintf("%s tasks, %s completed; offered %s tasks/s", simulate.Num(float64(s.Requests)), simulate.Num(float64(s.Completed)), simulate.Num(s.OfferedRPS))
	for name, out := range map[string][]byte{"table": table.Bytes(), "Markdown": md.Bytes(), "HTML": page} {
		flat := strings.Join(strings.Fields(string(out)), " ")
		if !strings.Contains(flat, facts) || strings.Contains(flat, "requests, ") {
			t.Errorf("the %s does not say %q:\n%s", name, facts, out)
		}
	}
	if !strings.Contains(md.String(), simulate.Num(s.ThroughputRPS)+" tasks/s |") {
		t.Errorf("the Markdown table gives the throughput of tasks in another unit:\n%s", md.String())
	}
	// Its chart counts model calls in flight and tasks queued for a
	// slot, and says so, in its panel and legend and in the caption.
	svg, err := SimulationSVG(r.Classes[0], r.Settings)
	if err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"tasks queued, calls in flight", "calls in flight", "tasks queued", "429s (calls)", "tasks shed"} {
		if !bytes.Contains(svg, []byte(">"+label+"</text>")) {
			t.Errorf("the chart of a task class has no %q", label)
		}
	}
	if bytes.Contains(svg, []byte(">requests</text>")) {
		t.Error("the chart of a task class labels its panel requests")
	}
	if caption := "model calls in flight and tasks queued (time-averages), and calls answered 429 and tasks shed per"; !bytes.Contains(page, []byte(caption)) {
		t.Errorf("the report's caption of the task class's chart does not say %q", caption)
	}
}

// TestSimulationTableWritesNumbersAsItsReasons: a class's throughput and
// p95s beside the plan's read the same in the table and the Markdown as
// in the reason that compares them (10,015 ms, not 10,015.3 ms beside
// it; 0.35, not 0.34, for 0.345), whatever their size.
func TestSimulationTableWritesNumbersAsItsReasons(t *testing.T) {
	sc, _ := examplePlan(t, "chat-and-batch")
	r, err := newApp().Simulate(context.Background(), sc, simulate.Options{DurationS: 600})
	if err != nil {
		t.Fatal(err)
	}
	// A throughput on a half: its reason, as the verdict writes it.
	c := &r.Classes[0]
	c.Simulated.ThroughputRPS = 0.345
	for i, reason := range c.Verdict.Reasons {
		if before, after, ok := strings.Cut(reason, " req/s against the plan's "); ok && strings.HasPrefix(before, "throughput ") {
			c.Verdict.Reasons[i] = "throughput " + simulate.Num(0.345) + " req/s against the plan's " + after
		}
	}
	var table, md bytes.Buffer
	if err := WriteSimulationTable(&table, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteSimulationMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	compared := regexp.MustCompile(`(throughput|TTFT p95|E2E p95) ([0-9][0-9,.]*)( ms| req/s)? against (the plan's )?([0-9][0-9,.]*)`)
	for _, c := range r.Classes {
		var cells []string
		for _, reason := range c.Verdict.Reasons {
			for _, m := range compared.FindAllStringSubmatch(reason, -1) {
				unit := " ms"
				if m[1] == "throughput" {
					unit = ""
				}
				cells = append(cells, m[2]+unit, m[5]+unit)
			}
		}
		if len(cells) < 6 {
			t.Fatalf("%s: the reasons compare %d figures with the plan's, want throughput, TTFT and E2E: %q", c.Name, len(cells), c.Verdict.Reasons)
		}
		var row, mdRow string
		for _, line := range strings.Split(table.String(), "\n") {
			if strings.HasPrefix(line, c.Name+" ") {
				row = " " + strings.Join(strings.Fields(line), " ") + " "
			}
		}
		for _, line := range strings.Split(md.String(), "\n") {
			if strings.HasPrefix(line, "| "+c.Name+" |") {
				mdRow = line
			}
		}
		for _, cell := range cells {
			if !strings.Contains(row, " "+cell+" ") {
				t.Errorf("%s: the table's row %q does not write %q as the reasons do", c.Name, row, cell)
			}
			if !strings.Contains(mdRow, "| "+cell+" ") {
				t.Errorf("%s: the Markdown row %q does not write %q as the reasons do", c.Name, mdRow, cell)
			}
		}
	}
}
