package report

import (
	"bufio"
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/simulate"
)

// ReportInput is everything a team report shows: the scenario, its plan
// and, when a probe backs the plan, what the probe measured. Its JSON form
// is the report's data (planner report -o json).
type ReportInput struct {
	// Title heads the report; DefaultTitle when empty.
	Title string `json:"title,omitempty"`
	// Generated is when the report was made, shown in its header.
	Generated time.Time         `json:"generated"`
	Scenario  scenario.Scenario `json:"scenario"`
	Plan      *plan.Plan        `json:"plan"`
	// Probe is nil when no probe backs the plan.
	Probe *ProbeData `json:"probe,omitempty"`
	// Simulation is a simulated run of the plan, nil when none was made.
	Simulation *simulate.Simulation `json:"simulation,omitempty"`
}

// DefaultTitle heads a report that was given no title.
const DefaultTitle = "Capacity report"

// ProbeData is what a probe measured against one endpoint.
type ProbeData struct {
	Result measure.Result `json:"result"`
	// Endpoint is the base URL probed, without credentials.
	Endpoint string `json:"endpoint"`
	Model    string `json:"model"`
	// Date is when the probe ran.
	Date time.Time `json:"date"`
	// DeadlineMs is the per-request deadline that defined goodput.
	DeadlineMs float64 `json:"deadline_ms"`
	// Source says where the data came from (a probe id, an imported file,
	// synthetic data); it is printed with the measurements.
	Source string `json:"source"`
}

func (in ReportInput) title() string {
	if strings.TrimSpace(in.Title) == "" {
		return DefaultTitle
	}
	return in.Title
}

func (in ReportInput) check() error {
	if in.Plan == nil {
		return errors.New("report: no plan to report")
	}
	return nil
}

const timeLayout = "2006-01-02 15:04 UTC"

// WriteReportMarkdown writes the team report as Markdown: the scenario in
// words, the plan (WriteMarkdown's tables, headings one level down), and
// the probe's measurements as a table. Markdown has no charts: a note
// points to the HTML form, whose charts carry the same numbers as the
// tables.
func WriteReportMarkdown(w io.Writer, in ReportInput) error {
	if err := in.check(); err != nil {
		return err
	}
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "# %s\n\n", mdText(in.title()))
	if !in.Generated.IsZero() {
		fmt.Fprintf(ew, "Generated %s by planner.\n\n", in.Generated.UTC().Format(timeLayout))
	}
	words := describeScenario(in.Scenario)
	fmt.Fprint(ew, "## Scenario\n\n")
	for _, k := range words.Keys {
		fmt.Fprintf(ew, "- %s\n", mdText(k))
	}
	fmt.Fprintf(ew, "\nLatency: %s.\n\n", mdText(words.Latency))
	for _, e := range words.Endpoints {
		fmt.Fprintf(ew, "- %s\n", mdText(e))
	}
	if len(words.Endpoints) > 0 {
		fmt.Fprint(ew, "\n")
	}
	fmt.Fprint(ew, "Classes:\n\n")
	for _, c := range words.Classes {
		fmt.Fprintf(ew, "- %s\n", mdText(c))
	}
	fmt.Fprintf(ew, "\n%s\n\n", mdText(words.Policy))
	if err := writeShifted(ew, func(w io.Writer) error { return WriteMarkdown(w, in.Plan) }); err != nil {
		return err
	}
	if p := in.Probe; p != nil {
		fmt.Fprint(ew, "\n## Measurements\n\n")
		for _, s := range describeProbe(*p) {
			fmt.Fprintf(ew, "%s\n\n", mdText(s))
		}
		writeStepsMarkdown(ew, p.Result)
		if len(p.Result.Notes) > 0 {
			fmt.Fprint(ew, "\nNotes:\n\n")
			for _, n := range p.Result.Notes {
				fmt.Fprintf(ew, "- %s\n", mdText(n))
			}
		}
	}
	if r := in.Simulation; r != nil {
		fmt.Fprintln(ew)
		if err := writeShifted(ew, func(w io.Writer) error { return WriteSimulationMarkdown(w, r) }); err != nil {
			return err
		}
	}
	fmt.Fprint(ew, "\n## Charts\n\nThe HTML form of this report draws each class's ceilings as a bar chart")
	if in.Probe != nil {
		fmt.Fprint(ew, ", and goodput, output TPS, TTFT p95 and E2E p95 against concurrency with the knee and the SLOs")
	}
	if in.Simulation != nil {
		fmt.Fprint(ew, ", and each class's simulated requests in flight, queued and answered 429 over time")
	}
	fmt.Fprint(ew, "; the tables above carry the same numbers.\n")
	return ew.err
}

// writeShifted writes the Markdown that write produces with every heading
// one level down, under the report's title.
func writeShifted(w io.Writer, write func(io.Writer) error) error {
	var md bytes.Buffer
	if err := write(&md); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	sc := bufio.NewScanner(&md)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			line = "#" + line
		}
		fmt.Fprintln(w, line)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// writeStepsMarkdown writes a ramp's steps as a table, the knee marked.
func writeStepsMarkdown(w io.Writer, r measure.Result) {
	fmt.Fprintln(w, "| In flight | Requests | OK | 429 | Errors | Goodput req/s | Throughput req/s | Output TPS | TTFT p95 ms | E2E p95 ms |")
	fmt.Fprintln(w, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, s := range r.Steps {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %s | %s | %s | %s | %s |\n", stepLabel(s, r),
			s.Requests, s.OK, s.RateLimited, s.Errors, fmtNum(s.GoodputRPS), fmtNum(s.ThroughputRPS),
			fmtNum(s.OutputTPS), fmtNum(s.TTFTP95Ms), fmtNum(s.E2EP95Ms))
	}
}

// stepLabel is a step's concurrency, marked when it is the knee (or its
// lower bound) or the collapse point.
func stepLabel(s measure.Step, r measure.Result) string {
	l := fmt.Sprint(s.Concurrency)
	switch {
	case r.Knee != nil && *r.Knee == s.Concurrency && r.KneeLowerBound:
		l += " (knee ≥, a lower bound)"
	case r.Knee != nil && *r.Knee == s.Concurrency:
		l += " (knee)"
	}
	if r.Collapse != nil && *r.Collapse == s.Concurrency {
		l += " (collapse)"
	}
	return l
}

//go:embed report.html.tmpl
var reportTemplateText string

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"num":            fmtNum,
	"intOrDash":      intOrDash,
	"msOrDash":       msOrDash,
	"yesNo":          yesNo,
	"limits":         limits,
	"use":            func(u map[string]float64) string { return upperFirst(utilization(u)) },
	"stepLabel":      stepLabel,
	"clientSettings": clientSettings,
	"shedRule":       classShedRule,
	"classFacts":     classFacts,
	"keyFacts":       keyFacts,
	"settingsLine":   func(s simulate.SimulationSettings) string { return upperFirst(settingsLine(s)) },
	"remedy":         remedyWords,
	"join":           func(s []string) string { return strings.Join(s, ", ") },
	"checkWord":      checkWord,
	"fitWord":        fitWord,
	"checkLine":      checkLine,
	"rates":          rates,
	"e2eCell":        e2eCell,
	"legend":         func() string { return Legend },
	"windowSpan":     windowSpan,
	"windowClasses":  windowClasses,
}).Parse(reportTemplateText))

// htmlReport is the data of report.html.tmpl.
type htmlReport struct {
	Title, Generated string
	Words            scenarioWords
	Plan             *plan.Plan
	Classes          []htmlClass
	Costs            []costRow
	CostUnit         string // what the cost table's per 1,000 counts
	Probe            *htmlProbe
	Simulation       *htmlSimulation
}

// htmlSimulation is a simulated run with a time-series chart per class.
type htmlSimulation struct {
	*simulate.Simulation
	Charts []htmlFigure
}

type htmlClass struct {
	plan.ClassPlan
	Chart template.HTML
}

type htmlProbe struct {
	Facts      []string
	Result     measure.Result
	Throughput template.HTML
	Latency    []htmlFigure
}

type htmlFigure struct {
	Chart   template.HTML
	Caption string
}

// WriteReportHTML writes the team report as one self-contained HTML page:
// the content of WriteReportMarkdown, with each class's ceilings as an
// inline SVG bar chart and, when a probe backs the plan, the throughput
// chart and a latency chart for each distinct SLO of the classes, and with
// a simulation its figures, verdict and a time-series chart per class. The
// page loads nothing (no scripts, fonts, images or stylesheets) and every text
// that came from a user is escaped.
func WriteReportHTML(w io.Writer, in ReportInput) error {
	if err := in.check(); err != nil {
		return err
	}
	view := htmlReport{Title: in.title(), Words: describeScenario(in.Scenario), Plan: in.Plan, Costs: costRows(in.Plan), CostUnit: planUnit(in.Plan)}
	if !in.Generated.IsZero() {
		view.Generated = in.Generated.UTC().Format(timeLayout)
	}
	for _, c := range in.Plan.Classes {
		svg, err := CeilingsSVG(c)
		if err != nil && !errors.Is(err, ErrNoData) {
			return fmt.Errorf("report: %w", err)
		}
		view.Classes = append(view.Classes, htmlClass{ClassPlan: c, Chart: trusted(svg)})
	}
	if p := in.Probe; p != nil {
		hp := &htmlProbe{Facts: describeProbe(*p), Result: p.Result}
		svg, err := ThroughputSVG(p.Result)
		if err != nil && !errors.Is(err, ErrNoData) {
			return fmt.Errorf("report: %w", err)
		}
		hp.Throughput = trusted(svg)
		for _, g := range sloGroups(in.Scenario) {
			svg, err := LatencySVG(p.Result, g.e2eMs, g.ttftMs)
			if errors.Is(err, ErrNoData) {
				break
			}
			if err != nil {
				return fmt.Errorf("report: %w", err)
			}
			hp.Latency = append(hp.Latency, htmlFigure{Chart: trusted(svg), Caption: g.caption()})
		}
		view.Probe = hp
	}
	if r := in.Simulation; r != nil {
		hs := &htmlSimulation{Simulation: r}
		for _, c := range r.Classes {
			svg, err := SimulationSVG(c, r.Settings)
			if err != nil {
				return fmt.Errorf("report: %w", err)
			}
			hs.Charts = append(hs.Charts, htmlFigure{Chart: trusted(svg), Caption: fmt.Sprintf(
				"%s: %s per %s s of the simulated run.", c.Name, seriesNames(c).caption, simulate.Num(r.Settings.IntervalS))})
		}
		view.Simulation = hs
	}
	if err := reportTemplate.Execute(w, view); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// trusted marks a chart made by this package as safe HTML: gonum escapes
// every text it draws and annotate escapes the attributes it adds.
func trusted(svg []byte) template.HTML {
	return template.HTML(svg)
}

// sloGroup is the classes that share one pair of SLOs, which one latency
// chart serves.
type sloGroup struct {
	classes       []string
	e2eMs, ttftMs float64
}

// sloGroups groups the classes by their SLOs, in class order; with no SLO
// anywhere there is one group without lines.
func sloGroups(sc scenario.Scenario) []sloGroup {
	var gs []sloGroup
	for _, c := range sc.Classes {
		if c.SLO == nil || (c.SLO.E2E() <= 0 && c.SLO.TTFT() <= 0) {
			continue
		}
		found := false
		for i := range gs {
			if gs[i].e2eMs == c.SLO.E2E() && gs[i].ttftMs == c.SLO.TTFT() {
				gs[i].classes = append(gs[i].classes, c.Name)
				found = true
			}
		}
		if !found {
			gs = append(gs, sloGroup{classes: []string{c.Name}, e2eMs: c.SLO.E2E(), ttftMs: c.SLO.TTFT()})
		}
	}
	if len(gs) == 0 {
		gs = append(gs, sloGroup{})
	}
	return gs
}

func (g sloGroup) caption() string {
	if len(g.classes) == 0 {
		return "Latency by concurrency; no class states an SLO."
	}
	var slo []string
	if g.ttftMs > 0 {
		slo = append(slo, "TTFT p95 "+fmtNum(g.ttftMs)+" ms")
	}
	if g.e2eMs > 0 {
		slo = append(slo, "E2E p95 "+fmtNum(g.e2eMs)+" ms")
	}
	return fmt.Sprintf("Latency by concurrency against the SLO of %s: %s.", strings.Join(g.classes, ", "), strings.Join(slo, ", "))
}

// clientSettings is a class's client-side settings in one sentence; none
// for a class that gets no pool, which sends nothing.
func clientSettings(c plan.ClassPlan) string {
	if c.Pool < 1 {
		return "Client settings: none, as it gets no pool: it sends nothing (max_in_flight 0)."
	}
	return fmt.Sprintf("Client settings: pacing %s req/s with a burst of %d; AIMD from %d between %d and %d; up to %d attempts with full-jitter backoff from %s ms (cap %s ms).",
		fmtNum(c.Pacing.RateRPS), c.Pacing.Burst, c.Adaptive.Start, c.Adaptive.Floor, c.Adaptive.Ceiling,
		c.Retry.MaxAttempts, fmtNum(c.Retry.BaseMs), fmtNum(c.Retry.CapMs))
}

// shedRule is a class's admission rule in one sentence; empty when the
// class has no E2E SLO to shed against.
func shedRule(a plan.Admission) string { return shedRuleOf(a, "request") }

// shedRuleOf is shedRule of what the pool admits: a request, or a task of
// an agent task class, whose pool counts tasks.
func shedRuleOf(a plan.Admission, one string) string {
	if a.MaxQueueWaitMs == nil {
		return ""
	}
	return fmt.Sprintf("Shed a %s that waits more than %s ms for a slot, with %d and Retry-After: %d.", one, fmtNum(*a.MaxQueueWaitMs), a.Status, a.RetryAfterS)
}

// classShedRule is a class's shedRule with the share of its requests (an
// agent task class's tasks) the plan predicts it sheds, when that is not
// 0; none for a class without a pool.
func classShedRule(c plan.ClassPlan) string {
	if c.Pool < 1 {
		return "" // it sends nothing, and has nothing to shed
	}
	one, many := "request", "requests"
	if c.Task != nil {
		one, many = "task", "tasks"
	}
	s := shedRuleOf(c.Admission, one)
	if sh := c.Predicted.ShedShare; s != "" && sh > 0 {
		s += fmt.Sprintf(" Predicted to shed %s %% of its %s (its percentiles are over those served).", fmtNum(100*sh), many)
	}
	return s
}

// upperFirst capitalises the first letter of a sentence.
func upperFirst(s string) string {
	r := []rune(s)
	if len(r) == 0 {
		return s
	}
	return strings.ToUpper(string(r[0])) + string(r[1:])
}
