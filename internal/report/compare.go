package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/plannerdev/planner/internal/compare"
	"github.com/plannerdev/planner/internal/signed"
)

// ComparisonFormats are the formats of WriteComparison.
var ComparisonFormats = []string{FormatTable, FormatJSON, FormatYAML, FormatMarkdown, FormatCSV}

// WriteComparison writes runs side by side in one of ComparisonFormats:
// a terminal table, a Markdown table, CSV with one row per run and the
// figures unrounded, or the comparison itself as JSON or YAML.
func WriteComparison(w io.Writer, c compare.Comparison, format string) error {
	switch format {
	case FormatTable:
		return writeComparisonTable(w, c)
	case FormatMarkdown:
		return writeComparisonMarkdown(w, c)
	case FormatCSV:
		return writeComparisonCSV(w, c)
	}
	return WriteData(w, c, format)
}

// compareKnee renders a run's knee as its result gives it, with
// knee_refined beside it in the table forms: the one place a comparison
// renders a knee, so that a mark on it (a knee the run did not reach is a
// lower bound) goes here.
func compareKnee(r compare.Row) string {
	if r.KneeLowerBound {
		return "≥ " + intOrNone(r.Knee)
	}
	return intOrNone(r.Knee)
}

// refinedText renders knee_refined with its resolution, "-" without one.
func refinedText(r compare.Row) string {
	if r.KneeRefined == nil {
		return "-"
	}
	if r.KneeResolution == nil {
		return strconv.Itoa(*r.KneeRefined)
	}
	return fmt.Sprintf("%d (res. %d)", *r.KneeRefined, *r.KneeResolution)
}

// servedText is the model a run's answers named, "!" after it when they
// named another model than the one asked; "-" when the source does not
// say.
func servedText(r compare.Row) string {
	if r.Served == nil || len(r.Served.Models) == 0 {
		return "-"
	}
	s := r.Served.Names()
	if r.Served.Switched() {
		s += " !"
	}
	return s
}

func dateText(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(timeLayout)
}

// rateLimitedText is a run's 429 answers out of all its answers.
func rateLimitedText(r compare.Row) string {
	if r.Answers == 0 {
		return strconv.Itoa(r.RateLimited)
	}
	return fmt.Sprintf("%d of %d", r.RateLimited, r.Answers)
}

func quotaText(limited bool) string {
	if limited {
		return "yes"
	}
	return "no"
}

// atKnee is a figure of the step at the knee, with d decimals; "-"
// without a knee or when the source did not give it.
func atKnee(r compare.Row, f func(compare.AtKnee) float64, d int) string {
	if r.AtKnee == nil {
		return "-"
	}
	return num(f(*r.AtKnee), d)
}

// measured is a latency of the step at the knee, nil (an empty cell)
// where the run did not measure it: a latency is never 0 ms.
func measured(ms float64) *float64 {
	if ms <= 0 {
		return nil
	}
	return &ms
}

// driftText renders a drift in percent with its sign, "-" when it is
// null, "base" for the baseline.
func driftText(r compare.Row, f func(compare.Drift) *float64) string {
	if r.Drift == nil {
		return "base"
	}
	p := f(*r.Drift)
	if p == nil {
		return "-"
	}
	return signed.Pct(*p)
}

var (
	ttftAt    = func(k compare.AtKnee) float64 { return k.TTFTP95Ms }
	e2eAt     = func(k compare.AtKnee) float64 { return k.E2EP95Ms }
	goodputAt = func(k compare.AtKnee) float64 { return k.GoodputRPS }

	kneeDrift    = func(d compare.Drift) *float64 { return d.KneePct }
	ttftDrift    = func(d compare.Drift) *float64 { return d.TTFTP95Pct }
	e2eDrift     = func(d compare.Drift) *float64 { return d.E2EP95Pct }
	goodputDrift = func(d compare.Drift) *float64 { return d.GoodputPct }
)

// comparisonCells are a run's cells in the table forms, in the order of
// their headers.
func comparisonCells(r compare.Row) []string {
	return []string{
		r.Name, orNone(r.Model, "-"), servedText(r), dateText(r.Date), compareKnee(r), refinedText(r),
		atKnee(r, ttftAt, 1), atKnee(r, e2eAt, 1), atKnee(r, goodputAt, 3), rateLimitedText(r), quotaText(r.QuotaLimited),
		driftText(r, kneeDrift), driftText(r, ttftDrift), driftText(r, e2eDrift), driftText(r, goodputDrift),
	}
}

// comparisonLegend says what the table's columns hold.
func comparisonLegend(c compare.Comparison) string {
	legend := "knee and refined in requests in flight; TTFT and E2E p95 in ms and goodput in req/s, at the knee; 429: answers " +
		"that were 429 of all answers, retries and warm-up included; drift in % of the baseline, " + c.Baseline
	for _, r := range c.Runs {
		if r.Served.Switched() {
			return legend + "; ! the answers named another model than the one asked"
		}
	}
	return legend
}

// writeComparisonTable prints a comparison for a terminal, in two tables
// that share the run column: the figures of each run, and their drift
// against the baseline.
func writeComparisonTable(w io.Writer, c compare.Comparison) error {
	var b strings.Builder
	for i, head := range []string{
		"run\tmodel\tserved\tdate\tknee\trefined\tttft_p95\te2e_p95\tgoodput\t429\tquota",
		"run\tknee_drift\tttft_drift\te2e_drift\tgoodput_drift",
	} {
		if i > 0 {
			b.WriteByte('\n')
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, head)
		for _, r := range c.Runs {
			cells := comparisonCells(r)
			if i == 0 {
				cells = cells[:11]
			} else {
				cells = append(cells[:1], cells[11:]...)
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(&b, "(%s)\n", comparisonLegend(c))
	for _, r := range c.Runs {
		if r.Served.Switched() {
			fmt.Fprintf(&b, "%s: %s\n", r.Name, r.Served.Sentence())
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeComparisonMarkdown(w io.Writer, c compare.Comparison) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "# Runs compared with %s\n\n", mdText(c.Baseline))
	fmt.Fprintln(ew, "| Run | Model | Served | Date | Knee | Refined | TTFT p95 | E2E p95 | Goodput | 429 | Quota limited | Knee drift | TTFT drift | E2E drift | Goodput drift |")
	fmt.Fprintln(ew, "|---|---|---|---|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|")
	for _, r := range c.Runs {
		cells := comparisonCells(r)
		for i := range cells {
			cells[i] = mdText(cells[i])
		}
		if r.Served.Switched() {
			cells[2] = "**" + cells[2] + "**"
		}
		fmt.Fprintf(ew, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintf(ew, "\n%s.\n", mdText(strings.ToUpper(comparisonLegend(c)[:1])+comparisonLegend(c)[1:]))
	for _, r := range c.Runs {
		if r.Served.Switched() {
			fmt.Fprintf(ew, "\n- %s: %s\n", mdText(r.Name), mdText(r.Served.Sentence()))
		}
	}
	return ew.err
}

// comparisonCSVHeader is the column layout of a comparison as CSV.
var comparisonCSVHeader = []string{
	"run", "endpoint", "model", "served_model", "served_check", "date", "knee", "knee_refined", "knee_refined_resolution",
	"ttft_p95_ms", "e2e_p95_ms", "goodput_rps", "rate_limited", "answers", "quota_limited",
	"knee_drift_pct", "ttft_p95_drift_pct", "e2e_p95_drift_pct", "goodput_drift_pct", "knee_lower_bound",
}

// writeComparisonCSV writes one row per run, figures unrounded; an
// absent figure is an empty cell.
func writeComparisonCSV(w io.Writer, c compare.Comparison) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(comparisonCSVHeader); err != nil {
		return fmt.Errorf("write csv header: %w", err)
	}
	f := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'f', -1, 64)
	}
	i := func(v *int) string {
		if v == nil {
			return ""
		}
		return strconv.Itoa(*v)
	}
	for _, r := range c.Runs {
		var served, check, date string
		if r.Served != nil {
			served, check = r.Served.Names(), r.Served.Check
		}
		if r.Date != nil {
			date = r.Date.Format(time.RFC3339)
		}
		var ttft, e2e, goodput *float64
		if k := r.AtKnee; k != nil {
			ttft, e2e, goodput = measured(k.TTFTP95Ms), measured(k.E2EP95Ms), &k.GoodputRPS
		}
		var d compare.Drift
		if r.Drift != nil {
			d = *r.Drift
		}
		row := []string{
			r.Name, r.Endpoint, r.Model, served, check, date, i(r.Knee), i(r.KneeRefined), i(r.KneeResolution),
			f(ttft), f(e2e), f(goodput), strconv.Itoa(r.RateLimited), strconv.Itoa(r.Answers), strconv.FormatBool(r.QuotaLimited),
			f(d.KneePct), f(d.TTFTP95Pct), f(d.E2EP95Pct), f(d.GoodputPct), strconv.FormatBool(r.KneeLowerBound),
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("write csv row: %w", err)
		}
	}
	cw.Flush()
	return cw.Error()
}
