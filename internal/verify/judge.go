package verify

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// measuredAt is the measurement at concurrency c, false when the probe has
// no summary of that step. The throughput's interval is the goodput
// interval's relative width around it (the same figure when every answer
// came within the deadline).
func measuredAt(res *probe.Result, c int) (Measured, bool) {
	i := slices.IndexFunc(res.Analysis.Steps, func(s measure.Step) bool { return s.Concurrency == c })
	if i < 0 {
		return Measured{}, false
	}
	s := res.Analysis.Steps[i]
	m := Measured{
		Requests: s.Requests, OK: s.OK, Errors: s.Errors, ThroughputRPS: signed.Round(s.ThroughputRPS, 4),
		TTFTP95Ms: signed.Round(s.TTFTP95Ms, 1), E2EP95Ms: signed.Round(s.E2EP95Ms, 1),
		TTFTP95CI: roundCI(s.TTFTP95CI, 1), E2EP95CI: roundCI(s.E2EP95CI, 1),
	}
	if ci := s.GoodputCI; ci != nil && s.GoodputRPS > 0 {
		f := s.ThroughputRPS / s.GoodputRPS
		m.ThroughputCI = roundCI(&measure.Interval{Lo: ci.Lo * f, Hi: ci.Hi * f}, 4)
	}
	if s.ThroughputRPS > 0 {
		m.MeanOutputTokens = signed.Round(s.OutputTPS/s.ThroughputRPS, 2)
	}
	for _, r := range res.Records {
		if r.Step != c || r.ErrorClass == measure.ErrCancelled {
			continue
		}
		m.RateLimited += r.RateLimitedAnswers()
	}
	return m, true
}

// sloAttainment is how the class's measured requests at concurrency c
// met its SLO's targets all at once, each request judged against the
// targets (its TTFT and its E2E, within the deadline), as the probe
// counts SLO goodput (docs/probe.md, "SLO goodput"): where at least 95 %
// did, the SLO's p95s hold (the share its percentile names, for an SLO
// that names one). nil for a class without an SLO.
func sloAttainment(sc scenario.Scenario, class string, res *probe.Result, c int) *measure.SLOStats {
	slo := sloOfClass(sc, class)
	targets := measure.Targets{TTFTMs: slo.TTFT(), TPOTMs: slo.TPOT(), E2EMs: slo.E2E()}
	if targets.IsZero() {
		return nil
	}
	var rows []measure.Record
	for _, r := range res.Records {
		if r.Step == c {
			rows = append(rows, r)
		}
	}
	opts := res.Config.AnalysisOptions()
	opts.SLO = targets
	for _, s := range analysis.Summarize(rows, opts) {
		if s.Concurrency == c {
			return s.SLO
		}
	}
	return nil
}

func roundCI(ci *measure.Interval, d int) *measure.Interval {
	if ci == nil {
		return nil
	}
	return &measure.Interval{Lo: signed.Round(ci.Lo, d), Hi: signed.Round(ci.Hi, d)}
}

// figure is one figure of a point: its prediction, its measurement and
// the measurement's interval.
type figure struct {
	name, unit     string
	pred, meas     float64
	ci             *measure.Interval
	slower, faster string
}

// figures are the figures a point compares.
func figures(pt Point) []figure {
	m := pt.Measured
	return []figure{
		{"throughput", "req/s", pt.Predicted.ThroughputRPS, m.ThroughputRPS, m.ThroughputCI,
			"the endpoint serves less than the scenario's latency allows", "the endpoint is faster than the scenario says, so the pool may be smaller than it could be"},
		{"TTFT p95", "ms", pt.Predicted.TTFTP95Ms, m.TTFTP95Ms, m.TTFTP95CI,
			"the model under-predicts the time to first token", "the model over-predicts the time to first token"},
		{"E2E p95", "ms", pt.Predicted.E2EP95Ms, m.E2EP95Ms, m.E2EP95CI,
			"the model under-predicts the request time", "the model over-predicts the request time"},
	}
}

// bounds is the figure's interval, or the measurement itself without one.
func (f figure) bounds() (lo, hi float64) {
	if f.ci == nil {
		return f.meas, f.meas
	}
	return math.Min(f.ci.Lo, f.meas), math.Max(f.ci.Hi, f.meas)
}

// beyondPct is how far the figure's interval lies from the prediction, in
// percent of it: 0 when it holds the prediction, negative when it lies
// below, positive above; 0 without a prediction.
func (f figure) beyondPct() float64 {
	lo, hi := f.bounds()
	switch {
	case f.pred <= 0:
		return 0
	case hi < f.pred:
		return signed.Round((hi-f.pred)/f.pred*100, 1)
	case lo > f.pred:
		return signed.Round((lo-f.pred)/f.pred*100, 1)
	}
	return 0
}

// intervalErrors are a measured point's interval errors.
func intervalErrors(pt Point) *Errors {
	fs := figures(pt)
	return &Errors{ThroughputRPS: fs[0].beyondPct(), TTFTP95Ms: fs[1].beyondPct(), E2EP95Ms: fs[2].beyondPct()}
}

// failureOf is ": " and why nothing succeeded, for a class whose probe
// says so, else empty.
func failureOf(cr *ClassReport) string {
	if cr.Failure == "" {
		return ""
	}
	return ": " + cr.Failure
}

// judge sets a class's verdict and reasons from its points; tol is the
// tolerance in percent.
func judge(sc scenario.Scenario, cp plan.ClassPlan, cr *ClassReport, tol float64) {
	var fails, degraded []string
	at, above := cr.Points[0], cr.Points[1]
	quotaBound := isQuotaDimension(cp.BindingConstraint)
	if at.Measured == nil || at.Measured.OK == 0 {
		fails = append(fails, fmt.Sprintf("nothing succeeded at the pool of %d (probe stopped: %s)%s", cr.Pool, cr.StopReason, failureOf(cr)))
	} else {
		m := at.Measured
		if m.RateLimited > 0 {
			fails = append(fails, fmt.Sprintf("%d 429 answers at the pool of %d: the quota is tighter than the plan assumes", m.RateLimited, cr.Pool))
		}
		if m.Errors > 0 {
			fails = append(fails, fmt.Sprintf("%d failed requests at the pool of %d", m.Errors, cr.Pool))
		}
		where := fmt.Sprintf("at the pool of %d", cr.Pool)
		if at.Load > at.Concurrency {
			where += fmt.Sprintf(" (%d in flight on its endpoint)", at.Load)
		}
		f, ok := offPrediction(at, where, tol)
		fails, cr.Reasons = append(fails, f...), append(cr.Reasons, ok...)
		f, d := sloBreaches(sc, cp.Name, at, "at the pool", false)
		fails, degraded = append(fails, f...), append(degraded, d...)
		if m.MeanOutputTokens > 0 && math.Abs(m.MeanOutputTokens-float64(cr.OutputTokens)) > 0.1*float64(cr.OutputTokens) {
			cr.Reasons = append(cr.Reasons, fmt.Sprintf("answers had %.1f output tokens on average, not the %d asked: the endpoint may ignore ignore_eos, which skews the comparison", m.MeanOutputTokens, cr.OutputTokens))
		}
	}
	where := fmt.Sprintf("at %d (1.25 × the pool)", above.Concurrency)
	if above.Load > above.Concurrency {
		where = fmt.Sprintf("at %d (1.25 × the pool, %d in flight on its endpoint)", above.Concurrency, above.Load)
	}
	switch m := above.Measured; {
	case m == nil || m.OK == 0:
		degraded = append(degraded, fmt.Sprintf("nothing was measured at %d (1.25 × the pool)", above.Concurrency))
	default:
		if m.RateLimited > 0 && quotaBound {
			cr.Reasons = append(cr.Reasons, fmt.Sprintf("%d 429 answers %s, as expected: %s binds the pool", m.RateLimited, where, cp.BindingConstraint))
		} else if m.RateLimited > 0 {
			degraded = append(degraded, fmt.Sprintf("%d 429 answers %s: the quota leaves less headroom above the pool than the plan assumes", m.RateLimited, where))
		}
		if m.RateLimited == 0 || !quotaBound {
			f, ok := offPrediction(above, where, tol)
			fails, cr.Reasons = append(fails, f...), append(cr.Reasons, ok...)
		}
		f, _ := sloBreaches(sc, cp.Name, above, where, true)
		fails = append(fails, f...)
	}
	cr.conclude(fails, degraded)
}

// conclude gives a class its verdict, fails if any reason failed it,
// degraded if any degraded it, else ok, and puts those reasons first.
func (cr *ClassReport) conclude(fails, degraded []string) {
	switch {
	case len(fails) > 0:
		cr.Verdict = VerdictFails
	case len(degraded) > 0:
		cr.Verdict = VerdictDegraded
	default:
		cr.Verdict = VerdictOK
	}
	cr.Reasons = slices.Concat(fails, degraded, cr.Reasons)
}

// offPrediction compares throughput, TTFT p95 and E2E p95 at a point with
// the model's prediction: each one whose interval lies more than tol
// percent of the prediction away from it is a failure reason; the rest
// are said to hold.
func offPrediction(pt Point, where string, tol float64) (fails, ok []string) {
	var within []string
	for _, f := range figures(pt) {
		if f.pred <= 0 {
			continue
		}
		off := f.beyondPct()
		if math.Abs(off) <= tol {
			within = append(within, f.name+" "+signed.Pct(relPct(f.meas, f.pred)))
			continue
		}
		why := f.faster
		if (f.name == "throughput") == (off < 0) {
			why = f.slower
		}
		measured := fmt.Sprintf("%.1f %s", f.meas, f.unit)
		if lo, hi := f.bounds(); hi > lo {
			measured += fmt.Sprintf(" (95 %%: %.1f–%.1f)", lo, hi)
			off = relPct(f.meas, f.pred)
			fails = append(fails, fmt.Sprintf("%s %s is %s, %s %% off the predicted %.1f %s, %s %% beyond its interval (tolerance %g %%): %s",
				f.name, where, measured, signed.Fixed(off, 0), f.pred, f.unit, signed.Fixed(f.beyondPct(), 0), tol, why))
			continue
		}
		fails = append(fails, fmt.Sprintf("%s %s is %s, %s %% off the predicted %.1f %s (tolerance %g %%): %s",
			f.name, where, measured, signed.Fixed(off, 0), f.pred, f.unit, tol, why))
	}
	if len(within) > 0 {
		ok = append(ok, fmt.Sprintf("%s, within %g %% of the prediction beyond the 95 %% intervals: %s", where, tol, strings.Join(within, ", ")))
	}
	return fails, ok
}

// sloBreaches lists the class's SLOs that the measurement at pt breaks:
// fails when the p95's interval lies wholly above the SLO, degraded when
// the p95 is above it but its interval reaches under it (the breach is
// within the noise). Above the pool (onlyPredicted), only the SLOs the
// model predicted to hold there count.
func sloBreaches(sc scenario.Scenario, class string, pt Point, where string, onlyPredicted bool) (fails, degraded []string) {
	for _, c := range sc.Classes {
		if c.Name != class || c.SLO == nil {
			continue
		}
		for _, f := range figures(pt)[1:] {
			slo := c.SLO.TTFT()
			if f.name == "E2E p95" {
				slo = c.SLO.E2E()
			}
			if slo <= 0 || f.meas <= slo || (onlyPredicted && f.pred > slo) {
				continue
			}
			lo, _ := f.bounds()
			if lo > slo {
				fails = append(fails, fmt.Sprintf("%s %s is %.0f ms, above the SLO of %.0f ms", f.name, where, f.meas, slo))
			} else {
				degraded = append(degraded, fmt.Sprintf("%s %s is %.0f ms, above the SLO of %.0f ms, though its 95 %% interval reaches down to %.0f ms", f.name, where, f.meas, slo, lo))
			}
		}
	}
	return fails, degraded
}

// overall is the worst verdict of the classes validated, and a sentence.
func overall(classes []ClassReport) (verdict, summary string) {
	rank := map[string]int{VerdictOK: 1, VerdictDegraded: 2, VerdictFails: 3}
	verdict = ""
	var validated, worst []string
	for _, c := range classes {
		if c.Verdict == VerdictSkipped {
			continue
		}
		validated = append(validated, c.Class)
		switch {
		case rank[c.Verdict] > rank[verdict]:
			verdict, worst = c.Verdict, []string{c.Class}
		case c.Verdict == verdict:
			worst = append(worst, c.Class)
		}
	}
	switch verdict {
	case "":
		return VerdictFails, "no class could be validated"
	case VerdictOK:
		tasks := 0
		for _, c := range classes {
			if c.Verdict != VerdictSkipped && c.Task != nil {
				tasks++
			}
		}
		switch tasks {
		case 0:
			return verdict, fmt.Sprintf("the plan holds: every class validated (%d), beside the other classes of its endpoint, measured throughput, TTFT p95 and E2E p95 within the tolerance of the model beyond their 95 %% intervals at its pool and 1.25 × it, without 429s at the pool", len(validated))
		case len(validated):
			return verdict, fmt.Sprintf("the plan holds: every agent task class validated (%d) measured TTFT and task E2E at its SLO's percentile within the tolerance of the model beyond their 95 %% intervals at its pool of tasks, without 429s", tasks)
		}
		return verdict, fmt.Sprintf("the plan holds: every class of single calls validated (%d), beside the other classes of its endpoint, measured throughput, TTFT p95 and E2E p95 within the tolerance of the model beyond their 95 %% intervals at its pool and 1.25 × it, and every agent task class (%d) TTFT and task E2E at its SLO's percentile at its pool of tasks, without 429s at the pools", len(validated)-tasks, tasks)
	}
	return verdict, fmt.Sprintf("%s: %s (see each class's reasons)", verdict, joinNames(worst))
}

func joinNames(names []string) string {
	if len(names) == 1 {
		return "class " + names[0]
	}
	return "classes " + strings.Join(names, ", ")
}

// relPct is (measured − predicted)/predicted in percent, 0 without a
// prediction.
func relPct(measured, predicted float64) float64 {
	if predicted <= 0 {
		return 0
	}
	return signed.Round((measured-predicted)/predicted*100, 1)
}

// isQuotaDimension reports whether a constraint is a quota limit (rpm,
// tpm, itpm, otpm, rpd, tpd).
func isQuotaDimension(constraint string) bool {
	for d := range scenario.NumDimensions {
		if d.String() == constraint {
			return true
		}
	}
	return false
}
