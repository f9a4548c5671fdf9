package simulate

import (
	"github.com/plannerdev/planner/internal/scenario"
)

// atPercentile adds to a class's simulated figures its TTFT, E2E and TPOT
// at the percentile its SLO names, when it names one, with their
// intervals, from the same reservoirs of completed requests as the p50,
// p95 and p99: for an agent task, TTFT and TPOT from its calls' and E2E
// from the whole tasks'. It selects in buf.
func (c *client) atPercentile(sm *Simulated, buf *scratch) {
	slo := c.spec.SLO
	if slo == nil || slo.Percentile <= 0 {
		return
	}
	p := slo.At()
	sm.Percentile = &p
	ttftOf := func(r [2]float64) float64 { return r[0] }
	e2eOf := func(r [2]float64) float64 { return r[1] }
	ttft := quantiles(buf, c.st.latency.all(), ttftOf, p/100)
	ttftHW, ttftOK := sectionHalfWidth(buf, &c.st.latency, ttftOf, p/100)
	if c.w.Task != nil {
		self := func(v float64) float64 { return v }
		ttft = quantiles(buf, c.st.callTTFT.all(), self, p/100)
		ttftHW, ttftOK = sectionHalfWidth(buf, &c.st.callTTFT, self, p/100)
	}
	e2e := quantiles(buf, c.st.latency.all(), e2eOf, p/100)
	sm.TTFTMsAtPercentile, sm.E2EMsAtPercentile = msPtr(ttft[0]), msPtr(e2e[0])
	if ttftOK {
		sm.TTFTCI95MsAtPercentile = msPtr(ttftHW)
	}
	if hw, ok := sectionHalfWidth(buf, &c.st.latency, e2eOf, p/100); ok {
		sm.E2ECI95MsAtPercentile = msPtr(hw)
	}
	self := func(v float64) float64 { return v }
	sm.TPOTMsAtPercentile = msPtr(quantiles(buf, c.st.tpot.all(), self, p/100)[0])
	if hw, ok := sectionHalfWidth(buf, &c.st.tpot, self, p/100); ok {
		sm.TPOTCI95MsAtPercentile = msPtr(hw)
	}
}

// Target is one latency target of a class's SLO beside the value it is
// held to: the value at the percentile the SLO binds (slo.percentile, else
// the p95), TTFT for ttft_ms, E2E for e2e_ms and, for an agent task, the
// whole task's E2E for task_e2e_ms, and TPOT for tpot_ms (each request's,
// or each call's of an agent task; docs/simulate.md, "Verdict").
type Target struct {
	Name   string   // TTFT, E2E, task E2E or TPOT
	Metric string   // the field of Simulated that holds Got
	At     string   // the percentile: p95, p99
	Bound  float64  // the target, milliseconds
	Got    *float64 // the value, milliseconds; nil when nothing completed
	CI95   *float64 // the half-width of Got's 95 % interval, when known
}

// Met reports whether the value meets its target: value ≤ target, the
// value at the percentile itself, whatever its interval (a run's interval
// says how far another seed may move it, and a value over the target
// within it is still over; docs/simulate.md, "The verdict"). Nothing
// completed is a miss.
func (t Target) Met() bool { return t.Got != nil && *t.Got <= t.Bound }

// AtEdge reports whether the value meets its target while its 95 %
// interval reaches past it: another seed, or a longer run, may well miss
// it.
func (t Target) AtEdge() bool { return t.Met() && t.CI95 != nil && *t.Got+*t.CI95 > t.Bound }

// Targets are the SLO's latency targets, those it sets, with the values
// sm holds them to. The verdict and a plan's check both judge by them.
func Targets(slo *scenario.SLO, sm Simulated) []Target {
	if slo == nil {
		return nil
	}
	at, ttft, e2e := "p95", Target{Metric: "ttft_p95_ms", Got: sm.TTFTP95Ms, CI95: sm.TTFTP95CI95Ms}, Target{Metric: "e2e_p95_ms", Got: sm.E2EP95Ms, CI95: sm.E2EP95CI95Ms}
	tpot := Target{Metric: "tpot_p95_ms", Got: sm.TPOTP95Ms, CI95: sm.TPOTP95CI95Ms}
	if sm.Percentile != nil {
		at = "p" + Num(*sm.Percentile)
		ttft = Target{Metric: "ttft_ms_at_percentile", Got: sm.TTFTMsAtPercentile, CI95: sm.TTFTCI95MsAtPercentile}
		e2e = Target{Metric: "e2e_ms_at_percentile", Got: sm.E2EMsAtPercentile, CI95: sm.E2ECI95MsAtPercentile}
		tpot = Target{Metric: "tpot_ms_at_percentile", Got: sm.TPOTMsAtPercentile, CI95: sm.TPOTCI95MsAtPercentile}
	}
	var out []Target
	for _, t := range []struct {
		name  string
		bound float64
		v     Target
	}{{"TTFT", slo.TTFT(), ttft}, {"E2E", slo.E2E(), e2e}, {"task E2E", slo.TaskE2E(), e2e}, {"TPOT", slo.TPOT(), tpot}} {
		if t.bound > 0 {
			v := t.v
			v.Name, v.At, v.Bound = t.name, at, t.bound
			out = append(out, v)
		}
	}
	return out
}
