package plan

import (
	"context"
	"fmt"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// quantileAt is quantile at the probability p: the class's own percentile
// (m.pct) from its tails and the engine's caches, any other selected from
// the Monte Carlo sample, which is exact and costs a pass over the draws.
func (m *classModel) quantileAt(ctx context.Context, s, full *service, w model.Wait, which percentile, p float64) (float64, error) {
	if p == m.pct {
		return m.quantile(ctx, s, full, w, which)
	}
	if which == pctService {
		which, w = pctE2E, model.Wait{}
	}
	metric := metricOf(which)
	// The engine's cache keeps them too: a search asks again at the same
	// pool as the plan's rounds settle.
	k := percentileKey{service: s.keyOf(metric), wait: w, which: which, p: p}
	if full != nil {
		k.full = full.keyOf(metric)
	}
	if v, ok := m.eng.percentiles.Get(k); ok {
		return v, nil
	}
	first, total, err := m.sample(ctx, s)
	if err != nil {
		return 0, err
	}
	x := total
	if which == pctTTFT {
		x = first
	}
	var v float64
	if full == nil {
		v = model.QuantileWithPacedWait(x, m.headOf(s), m.draws, w, p, m.scratch())
	} else {
		ffirst, ftotal, err := m.sample(ctx, full)
		if err != nil {
			return 0, err
		}
		xw := ftotal
		if which == pctTTFT {
			xw = ffirst
		}
		v = model.QuantileWithSplitWait(x, xw, m.headOf(s), m.draws, w, p, m.scratch())
	}
	m.eng.percentiles.Add(k, v)
	return v, nil
}

// statesPercentile reports whether the class's SLO names its percentile:
// its predictions then carry the values at it besides the p95s.
func (m *classModel) statesPercentile() bool {
	return m.spec.SLO != nil && m.spec.SLO.Percentile > 0
}

// hasTPOTTarget reports whether the class has a TPOT target.
func (m *classModel) hasTPOTTarget() bool { return m.spec.SLO != nil && m.spec.SLO.TPOT() > 0 }

// tpotAt is the class's percentile of TPOT, seconds, with load in flight on
// its endpoint. Each request draws its TPOT once (docs/concepts.md,
// "Service time") and neither the queue nor the pacing wait adds to it, so
// it is the percentile of the TPOT distribution at that load.
func (m *classModel) tpotAt(load int) float64 { return m.at(load).svc.TPOT.Quantile(m.pct) }

// atPercentile adds to class i's prediction at its pool the values at the
// class's percentile, when its SLO names one: TTFT and E2E, queue wait
// included, and TPOT.
func (r *run) atPercentile(ctx context.Context, i, pool int, pr *Predicted) error {
	m := r.models[i]
	if !m.statesPercentile() {
		return nil
	}
	load := r.load(i)
	pct := signed.Round(m.pct*100, 4)
	pr.Percentile = &pct
	pr.TPOTMsAtPercentile = msPtr(m.tpotAt(load))
	if pool < 1 || pr.TTFTP95Ms == nil || m.pct == 0.95 {
		// No pool, a queue without bound (both null), or the p95s
		// themselves.
		pr.TTFTMsAtPercentile, pr.E2EMsAtPercentile = pr.TTFTP95Ms, pr.E2EP95Ms
		return nil
	}
	ttft, err := m.p95(ctx, pool, load, pctTTFT)
	if err != nil {
		return err
	}
	e2e, err := m.p95(ctx, pool, load, pctE2E)
	if err != nil {
		return err
	}
	pr.TTFTMsAtPercentile, pr.E2EMsAtPercentile = msPtr(ttft), msPtr(e2e)
	return nil
}

// sloField is the name of the SLO's field for a metric in the form the
// class gives it: ttft_ms and e2e_ms, or the older ttft_p95_ms and
// e2e_p95_ms.
func sloField(slo *scenario.SLO, metric int) string {
	legacy := slo.TTFTP95Ms > 0 || slo.E2EP95Ms > 0
	switch {
	case metric == metricTTFT && legacy:
		return "ttft_p95_ms"
	case metric == metricTTFT:
		return "ttft_ms"
	case legacy:
		return "e2e_p95_ms"
	}
	return "e2e_ms"
}

// tpotMissed reports whether the class's TPOT at its percentile, with load
// in flight on its endpoint, misses its TPOT target (by more than the
// 0.05 ms that the plan's rounding to 0.1 ms may add).
func (m *classModel) tpotMissed(load int) bool {
	return m.hasTPOTTarget() && m.tpotAt(load)*1000 > m.spec.SLO.TPOT()*(1+tolerance)+0.05
}

// tpotTarget holds class i's plan to its TPOT target: a TPOT at the SLO's
// percentile over it makes the class not fit, whatever its pool, since
// the pool changes only the queue wait, which TPOT does not include; on a
// measured curve a smaller load on the endpoint lowers it.
func (r *run) tpotTarget(i int, cp *ClassPlan) {
	m := r.models[i]
	if !m.hasTPOTTarget() {
		return
	}
	load := r.load(i)
	v, target := m.tpotAt(load)*1000, m.spec.SLO.TPOT()
	if !m.tpotMissed(load) {
		return
	}
	cp.Feasible = false
	where := "at any pool: a faster endpoint or model is what meets it"
	if m.loadDependent() {
		where = fmt.Sprintf("with %d in flight on the endpoint: fewer in flight, or a faster endpoint, meets it", load)
	}
	cp.Warnings = append(cp.Warnings, fmt.Sprintf("TPOT p%s is %s ms, over the %s ms target (slo.tpot_ms) %s",
		num(m.pct*100), num(v), num(target), where))
}

// pctLabel names the class's percentile: "p95", "p99", "p99.9".
func (m *classModel) pctLabel() string { return "p" + num(signed.Round(m.pct*100, 4)) }
