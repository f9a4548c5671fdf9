package report

import (
	"fmt"
	"image/color"
	"io"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/plannerdev/planner/internal/simulate"
)

// ChartSimulation is the data-chart kind of a class's simulated time series.
const ChartSimulation = "simulation"

// Axis labels of the simulation chart.
const (
	labelRequests    = "requests"
	labelTaskLoad    = "tasks queued, calls in flight"
	labelPerInterval = "per interval"
)

// simulationSeries names the series of a class's simulation chart by
// what they count: requests, or for an agent task class the model calls
// in flight and answered 429, and the tasks queued for a slot and shed.
type simulationSeries struct {
	axis, inFlight, queued, limited, shed string
	caption                               string // the chart's figure caption, without the class and interval
}

func seriesNames(c simulate.ClassRun) simulationSeries {
	if c.Counts == simulate.CountsTasks {
		return simulationSeries{labelTaskLoad, "calls in flight", "tasks queued", "429s (calls)", "tasks shed",
			"model calls in flight and tasks queued (time-averages), and calls answered 429 and tasks shed"}
	}
	return simulationSeries{labelRequests, "in flight", "queued", "429s", "shed",
		"requests in flight and queued (time-averages) and 429s and shed requests"}
}

// WriteSimulationTable writes a simulation as a terminal table within Width
// columns: one row per class with the simulated figures beside the plan's,
// then each class's verdict in words, each key's use, and the verdict.
func WriteSimulationTable(w io.Writer, r *simulate.Simulation) error {
	ew := &errWriter{w: w}
	wrap(ew, "", settingsLine(r.Settings))
	fmt.Fprintln(ew)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLASS\tPOOL\treq/s\tPLAN\tSHED\t429\tTTFT p95\tPLAN\tE2E p95\tPLAN\tHOLDS")
	names := make([]string, len(r.Classes))
	for i, c := range r.Classes {
		names[i] = c.Name
	}
	names = clipApart(names, 16)
	for i, c := range r.Classes {
		s := c.Simulated
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", names[i], c.Pool,
			simulate.Num(s.ThroughputRPS), simulate.Num(c.VsPlan.ExpectedRPS), simulate.Num(float64(s.Shed)), simulate.Num(float64(s.RateLimited)),
			simMs(s.TTFTP95Ms), simMs(c.Predicted.TTFTP95Ms), simMs(s.E2EP95Ms), simMs(c.Predicted.E2EP95Ms), yesNo(c.Verdict.Holds))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.Classes {
		fmt.Fprintf(ew, "\n%s\n", c.Name)
		wrap(ew, "  ", classFacts(c))
		for _, reason := range c.Verdict.Reasons {
			wrap(ew, "  - ", reason)
		}
	}
	fmt.Fprintln(ew)
	for _, q := range r.Quotas {
		wrap(ew, "", keyFacts(q))
	}
	fmt.Fprintln(ew)
	wrap(ew, "verdict: ", r.Verdict.Summary)
	for _, warn := range r.Warnings {
		wrap(ew, "warning: ", warn)
	}
	return ew.err
}

// WriteSimulationMarkdown writes a simulation as a Markdown section: the
// settings, a table of the simulated figures beside the plan's, each
// class's verdict, each key's use and the verdict.
func WriteSimulationMarkdown(w io.Writer, r *simulate.Simulation) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "# Simulation\n\n%s\n\n", mdText(upperFirst(settingsLine(r.Settings))))
	fmt.Fprintf(ew, "**Verdict:** %s.\n\n", mdText(r.Verdict.Summary))
	fmt.Fprintln(ew, "| Class | Arrivals | Pool | Throughput | Plan | Shed | 429s | Retries | Queue wait p95 | TTFT p95 | Plan | E2E p95 | Plan | Holds |")
	fmt.Fprintln(ew, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
	for _, c := range r.Classes {
		s := c.Simulated
		_, rate := runUnits(c)
		fmt.Fprintf(ew, "| %s | %s | %d | %s %s | %s %s | %s | %s | %s | %s ms | %s | %s | %s | %s | %s |\n",
			mdText(c.Name), strings.ReplaceAll(c.Arrivals, "_", " "), c.Pool, simulate.Num(s.ThroughputRPS), rate, simulate.Num(c.VsPlan.ExpectedRPS), rate,
			simulate.Num(float64(s.Shed)), simulate.Num(float64(s.RateLimited)), simulate.Num(float64(s.Retries)), simulate.Num(s.QueueWaitP95Ms), simMs(s.TTFTP95Ms), simMs(c.Predicted.TTFTP95Ms),
			simMs(s.E2EP95Ms), simMs(c.Predicted.E2EP95Ms), yesNo(c.Verdict.Holds))
	}
	for _, c := range r.Classes {
		fmt.Fprintf(ew, "\n## %s\n\n%s\n\n", mdText(c.Name), mdText(classFacts(c)))
		for _, reason := range c.Verdict.Reasons {
			fmt.Fprintf(ew, "- %s\n", mdText(reason))
		}
	}
	fmt.Fprint(ew, "\n## Keys\n\n")
	for _, q := range r.Quotas {
		fmt.Fprintf(ew, "- %s\n", mdText(keyFacts(q)))
	}
	if len(r.Warnings) > 0 {
		fmt.Fprint(ew, "\nWarnings:\n\n")
		for _, warn := range r.Warnings {
			fmt.Fprintf(ew, "- %s\n", mdText(warn))
		}
	}
	return ew.err
}

// settingsLine says what was simulated, in one sentence.
func settingsLine(s simulate.SimulationSettings) string {
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	ra := "with Retry-After"
	if !s.RetryAfter {
		ra = "without Retry-After"
	}
	from := ""
	if s.StartHour != 0 {
		from = " from " + clock(s.StartHour) + " UTC"
	}
	return fmt.Sprintf("simulated %s s%s with seed %d: pacing %s, AIMD %s, per-minute limits refilled %s, 429s %s; %s events, one point every %s s",
		simulate.Num(s.DurationS), from, s.Seed, onOff(s.Pacing), onOff(s.AIMD), refillWords(s.Refill), ra, simulate.Num(float64(s.Events)), simulate.Num(s.IntervalS))
}

func refillWords(refill string) string {
	if refill == simulate.RefillWindow {
		return "per window"
	}
	return "continuously"
}

// classFacts are a class's simulated figures in one sentence.
func classFacts(c simulate.ClassRun) string {
	s := c.Simulated
	ci := ""
	if s.QueueWaitMeanCI95Ms != nil {
		ci = " ± " + simulate.Num(*s.QueueWaitMeanCI95Ms)
	}
	planWait := ""
	if c.Predicted.QueueWaitMeanMs != nil {
		planWait = fmt.Sprintf(" (plan %s ms)", simulate.Num(*c.Predicted.QueueWaitMeanMs))
	}
	tpot := ""
	if s.TPOTP50Ms != nil && s.TPOTP95Ms != nil {
		tpotCI := ""
		if s.TPOTP95CI95Ms != nil {
			tpotCI = " ± " + simulate.Num(*s.TPOTP95CI95Ms)
		}
		tpot = fmt.Sprintf("; TPOT p50 %s ms, p95 %s%s ms", simulate.Num(*s.TPOTP50Ms), simulate.Num(*s.TPOTP95Ms), tpotCI)
	}
	n := func(v int) string { return simulate.Num(float64(v)) }
	many, rate := runUnits(c)
	return fmt.Sprintf("%s arrivals, pool %d (mean %s): %s %s, %s completed; offered %s %s, throughput %s, goodput %s; queue wait mean %s%s ms%s, p95 %s ms%s; %s 429s, %s retries, %s gave up, %s shed, %s waiting at the end.",
		strings.ReplaceAll(c.Arrivals, "_", " "), c.Pool, simulate.Num(s.PoolMean), n(s.Requests), many, n(s.Completed),
		simulate.Num(s.OfferedRPS), rate, simulate.Num(s.ThroughputRPS), simulate.Num(s.GoodputRPS), simulate.Num(s.QueueWaitMeanMs), ci, planWait,
		simulate.Num(s.QueueWaitP95Ms), tpot, n(s.RateLimited), n(s.Retries), n(s.GaveUp), n(s.Shed), n(s.Backlog))
}

// runUnits names what a simulated class's counts count and their rate:
// tasks for an agent task class, requests for any other.
func runUnits(c simulate.ClassRun) (many, rate string) {
	if c.Counts == simulate.CountsTasks {
		return "tasks", "tasks/s"
	}
	return "requests", "req/s"
}

// keyFacts are a key's use and 429s in one sentence.
func keyFacts(q simulate.KeyUse) string {
	parts := make([]string, len(q.Dimensions))
	for i, d := range q.Dimensions {
		peak := 0.0
		for _, p := range d.Peak {
			peak = max(peak, p)
		}
		parts[i] = fmt.Sprintf("%s %.1f %% used, its bucket at most %.0f %% full, %s 429s", d.Dimension, d.UseMean*100, peak*100, simulate.Num(float64(d.RateLimited)))
	}
	return fmt.Sprintf("key %s: %s", q.Name, strings.Join(parts, "; "))
}

// SimulationSVG draws one class's run over time: requests in flight and
// queued (and the AIMD pool when adapting) in the top panel, 429s and
// shed requests per interval in the bottom one, against minutes of
// simulated time (seconds for a run under ten minutes). An agent task
// class's chart counts model calls in flight and answered 429, and tasks
// queued and shed, and says so (seriesNames).
func SimulationSVG(c simulate.ClassRun, s simulate.SimulationSettings) ([]byte, error) {
	if s.Intervals == 0 || len(c.Series.InFlight) != s.Intervals {
		return nil, fmt.Errorf("simulation chart of class %s: %w", c.Name, ErrNoData)
	}
	unit, scale := "minutes", 60.0
	if s.DurationS < 600 {
		unit, scale = "seconds", 1
	}
	xLabel := "simulated time (" + unit + ")"
	at := func(i int) float64 { return (float64(i) + 0.5) * s.IntervalS / scale }
	series := func(vs []float64) plotter.XYs {
		var xys plotter.XYs
		for i, v := range vs {
			xys = appendFinite(xys, at(i), v)
		}
		return xys
	}
	counts := func(vs []int) plotter.XYs {
		xys := make(plotter.XYs, len(vs))
		for i, v := range vs {
			xys[i] = plotter.XY{X: at(i), Y: float64(v)}
		}
		return xys
	}
	dashed := []vg.Length{vg.Points(5), vg.Points(3)}
	names := seriesNames(c)
	top := newPanel(xLabel, names.axis)
	top.trace(names.inFlight, series(c.Series.InFlight), colorPrimary, nil)
	top.trace(names.queued, series(c.Series.Queued), colorSecond, dashed)
	if len(c.Series.Pool) > 0 {
		top.trace("AIMD pool", series(c.Series.Pool), colorTokens, nil)
	}
	bottom := newPanel(xLabel, labelPerInterval)
	bottom.trace(names.limited, counts(c.Series.RateLimited), colorBinding, nil)
	bottom.trace(names.shed, counts(c.Series.Shed), colorMuted, dashed)
	for _, pn := range []*panel{top, bottom} {
		pn.p.X.Min, pn.p.X.Max = 0, s.DurationS/scale
	}
	title := fmt.Sprintf("%s: simulated in flight, queue and 429s per %s s", c.Name, simulate.Num(s.IntervalS))
	return render(ChartSimulation, title, 2*panelHeight+titleHeight, top, bottom)
}

// trace draws a series as a line without points (a time series has too
// many for points to help), from a y of zero up, and adds it to the legend.
func (pn *panel) trace(name string, xys plotter.XYs, c color.Color, dashes []vg.Length) {
	pn.p.Y.Min = 0
	if len(xys) == 0 {
		return
	}
	line, err := plotter.NewLine(xys)
	if err != nil {
		return // unreachable: the values were filtered to finite numbers
	}
	line.Color, line.Width, line.Dashes = c, vg.Points(1.4), dashes
	pn.p.Add(line)
	pn.leg.Add(name, line)
}

// simMs is a simulation's latency in milliseconds, written as its
// reasons write it (simulate.Num), or "-" when there is none.
func simMs(p *float64) string {
	if p == nil {
		return "-"
	}
	return simulate.Num(*p) + " ms"
}
