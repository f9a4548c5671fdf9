package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/plannerdev/planner/internal/measure"
)

// WriteStepTable prints a ramp's steps for a terminal, in two tables that
// share the concurrency column: the load (requests, 429 answers, errors,
// goodput with its 95 % interval, throughput, output TPS, the measuring
// window) and the latency (TTFT, TPOT and E2E at p50, p90, p95 and p99,
// and the interval of each p95). Rates are per second, times in
// milliseconds. Marks: "-" a figure the source did not give, "~" after a
// value derived rather than measured, "*" an estimated concurrency, "r" a
// refinement step of a knee search, "!" a step too short for a steady
// state (not judged); the legend under the tables names those that occur.
func WriteStepTable(w io.Writer, steps []measure.Step) error {
	var b strings.Builder
	marks := map[string]bool{}
	load := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(load, "conc\trate\treqs\tok\t429\terr\tgoodput\t±95%\tthrpt\tout_tps\twindow_s\t")
	for _, s := range steps {
		counts := []string{strconv.Itoa(s.Requests), strconv.Itoa(s.OK), strconv.Itoa(s.RateLimited), strconv.Itoa(s.Errors)}
		if s.CountsUnknown {
			counts = []string{"-", "-", "-", "-"}
		}
		ci := "-"
		if s.GoodputCI != nil {
			ci = strconv.FormatFloat((s.GoodputCI.Hi-s.GoodputCI.Lo)/2, 'f', 3, 64)
		}
		fmt.Fprintf(load, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			concCell(s, marks), num(s.RateRPS, 3), counts[0], counts[1], counts[2], counts[3],
			mark(strconv.FormatFloat(s.GoodputRPS, 'f', 3, 64), s.GoodputEstimated, marks), ci,
			strconv.FormatFloat(s.ThroughputRPS, 'f', 3, 64), num(s.OutputTPS, 1), num(s.WallS, 2))
	}
	if err := load.Flush(); err != nil {
		return err
	}
	b.WriteByte('\n')
	lat := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(lat, "conc\tttft_p50\tp90\tp95\tp99\tp95_ci\ttpot_p50\tp90\tp95\tp99\tp95_ci\te2e_p50\tp90\tp95\tp99\tp95_ci\t")
	for _, s := range steps {
		row := []string{concCell(s, marks)}
		for _, m := range []struct {
			p50, p90, p95, p99 float64
			ci                 *measure.Interval
			estimated          bool
			digits             int
		}{
			{s.TTFTP50Ms, s.TTFTP90Ms, s.TTFTP95Ms, s.TTFTP99Ms, s.TTFTP95CI, s.TTFTEstimated, 1},
			{s.TPOTP50Ms, s.TPOTP90Ms, s.TPOTP95Ms, s.TPOTP99Ms, s.TPOTP95CI, s.TPOTEstimated, 2},
			{s.E2EP50Ms, s.E2EP90Ms, s.E2EP95Ms, s.E2EP99Ms, s.E2EP95CI, s.E2EEstimated, 1},
		} {
			for _, v := range []float64{m.p50, m.p90, m.p95, m.p99} {
				row = append(row, mark(num(v, m.digits), m.estimated && v != 0, marks))
			}
			row = append(row, interval(m.ci, m.digits))
		}
		fmt.Fprintln(lat, strings.Join(row, "\t")+"\t")
	}
	if err := lat.Flush(); err != nil {
		return err
	}
	legend := []string{"rates per second, times in ms, - not given", "429: every 429 answer, retried ones and warm-up included"}
	for _, m := range []struct{ key, text string }{
		{"~", "~ estimated, not measured"}, {"*", "* concurrency estimated"},
		{"r", "r refinement step of the knee search"}, {"!", "! too short for a steady state: not judged"},
	} {
		if marks[m.key] {
			legend = append(legend, m.text)
		}
	}
	fmt.Fprintf(&b, "(%s)\n", strings.Join(legend, "; "))
	_, err := io.WriteString(w, b.String())
	return err
}

// concCell is the concurrency with its marks.
func concCell(s measure.Step, marks map[string]bool) string {
	c := strconv.Itoa(s.Concurrency)
	if s.Concurrency == 0 {
		c = "?"
	}
	for _, m := range []struct {
		on  bool
		key string
	}{{s.ConcurrencyEstimated, "*"}, {s.Refine, "r"}, {s.TooShort, "!"}} {
		if m.on {
			c += m.key
			marks[m.key] = true
		}
	}
	return c
}

// mark appends "~" to an estimated value.
func mark(v string, estimated bool, marks map[string]bool) string {
	if !estimated || v == "-" {
		return v
	}
	marks["~"] = true
	return v + "~"
}

// interval renders a 95 % interval as lo–hi, or "-".
func interval(iv *measure.Interval, d int) string {
	if iv == nil {
		return "-"
	}
	return strconv.FormatFloat(iv.Lo, 'f', d, 64) + "–" + strconv.FormatFloat(iv.Hi, 'f', d, 64)
}

// num prints v with d decimals, or "-" for 0 (not given).
func num(v float64, d int) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

// WriteAnalysis prints the verdicts of a ramp under its step table: the
// knee ("≥ 4" for a lower bound; and knee_refined with its resolution),
// the first failing step,
// the collapse point, whether the quota bound it, the Universal
// Scalability Law fit, what the answers named as their model and how the
// requests got their connections (a probe's), and the notes.
func WriteAnalysis(w io.Writer, res measure.Result, notes []string) error {
	var b strings.Builder
	quota := "no"
	if res.QuotaLimited {
		quota = "yes (the share of 429s rises with concurrency, or the key ran out: the quota binds, not the model)"
	}
	knee := intOrNone(res.Knee)
	if res.KneeLowerBound && res.Knee != nil {
		knee = fmt.Sprintf("≥ %d (a lower bound: no step failed the knee rule; probe to higher concurrency to find it)", *res.Knee)
	}
	fmt.Fprintf(&b, "\nknee: %s", knee)
	if res.KneeRefined != nil {
		fmt.Fprintf(&b, "   knee_refined: %d (resolution %d)", *res.KneeRefined, *res.KneeResolution)
	}
	fmt.Fprintf(&b, "   first failing: %s   collapse: %s   quota-limited: %s\n", intOrNone(res.FirstFailing), intOrNone(res.Collapse), quota)
	if u := res.USL; u != nil {
		peak := "none (throughput does not turn down)"
		if u.Peak != nil {
			peak = strconv.FormatFloat(*u.Peak, 'f', 1, 64)
			if u.PeakBeyondRange {
				peak += fmt.Sprintf(" (beyond the measured range, up to %d in flight: an extrapolation, not a peak)", measuredTop(res))
			}
		}
		fmt.Fprintf(&b, "USL: alpha=%.4g beta=%.4g gamma=%.4g R²=%.3f peak N*=%s\n", u.Alpha, u.Beta, u.Gamma, u.R2, peak)
	} else {
		b.WriteString("USL: not fitted (it needs throughput at three or more concurrencies)\n")
	}
	if s := res.Served; s != nil {
		fmt.Fprintf(&b, "served model: %s\n", s.Sentence())
	}
	if c := res.Connections; c != nil {
		fmt.Fprintf(&b, "connections: %s\n", connText(c))
	}
	if len(notes) > 0 {
		b.WriteString("notes:\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func intOrNone(p *int) string {
	if p == nil {
		return "none"
	}
	return strconv.Itoa(*p)
}

// connText says in one line how requests got their connections: how many
// opened a new one, what its set-up cost and its phases, and the time to
// the first byte on each kind.
func connText(c *measure.ConnStats) string {
	s := fmt.Sprintf("%d new, %d reused of %d requests", c.New, c.Reused, c.Requests)
	if c.SetupMeanMs > 0 {
		phase := func(v float64) string {
			if v <= 0 {
				return "-" // not reported, or none (no TLS over http, no DNS for an address)
			}
			return fmtNum(v)
		}
		s += fmt.Sprintf("; a new one took %s ms to set up (mean; DNS %s, connect %s, TLS %s ms)",
			fmtNum(c.SetupMeanMs), phase(c.DNSMeanMs), phase(c.ConnectMeanMs), phase(c.TLSMeanMs))
	}
	if c.TTFBNewP50Ms > 0 || c.TTFBReusedP50Ms > 0 {
		s += fmt.Sprintf("; first byte p50 %s on a new connection, %s on a reused one", msText(c.TTFBNewP50Ms), msText(c.TTFBReusedP50Ms))
	}
	return s
}
