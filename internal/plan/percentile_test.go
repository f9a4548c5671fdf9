package plan

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/scenario"
)

// sloScenario is one class of lognormal latency and tokens with a prefill
// slope, 2 req/s on a key whose only limit is daily (nothing to pace).
func sloScenario(slo scenario.SLO) scenario.Scenario {
	return scenario.Scenario{
		Quotas:  []scenario.Quota{{Name: "key", RPD: 1e7}},
		Latency: scenario.Latency{TTFTMs: &scenario.Dist{P50: f(300), P95: f(900)}, TPOTMs: &scenario.Dist{P50: f(20), P95: f(35)}, PrefillMsPer1K: 40},
		Classes: []scenario.Class{{
			Name: "chat", Quota: "key", Mode: scenario.ModeInteractive, Demand: &scenario.Demand{RPS: 2},
			InputTokens: pct(1000, 4000), OutputTokens: pct(150, 500), MaxTokens: 1000, SLO: &slo,
		}},
		Policy: scenario.Policy{MonteCarloDraws: 20000},
	}
}

func TestPercentile95IsTheOlderForm(t *testing.T) {
	old := mustPlan(t, sloScenario(scenario.SLO{TTFTP95Ms: 2500, E2EP95Ms: 12000})).Classes[0]
	cp := mustPlan(t, sloScenario(scenario.SLO{TTFTMs: 2500, E2EMs: 12000, Percentile: 95})).Classes[0]
	if old.Pool != cp.Pool || *old.MinPool != *cp.MinPool || *old.Predicted.TTFTP95Ms != *cp.Predicted.TTFTP95Ms || *old.Predicted.E2EP95Ms != *cp.Predicted.E2EP95Ms {
		t.Fatalf("the two forms at p95 plan differently: %+v and %+v", old.Predicted, cp.Predicted)
	}
	if old.Predicted.Percentile != nil || old.Predicted.TTFTMsAtPercentile != nil {
		t.Errorf("the older form names no percentile, yet the plan gives values at one: %+v", old.Predicted)
	}
	if *cp.Predicted.Percentile != 95 || *cp.Predicted.TTFTMsAtPercentile != *cp.Predicted.TTFTP95Ms || *cp.Predicted.E2EMsAtPercentile != *cp.Predicted.E2EP95Ms {
		t.Errorf("at percentile 95 the values at it are the p95s: %+v", cp.Predicted)
	}
}

// TestPercentile99AgainstBruteForce holds the plan's p99 at its pool to
// the quantile of every draw of TTFT + W and S + W, with W the plan's own
// wait law, sorted: the tails' selection is exact.
func TestPercentile99AgainstBruteForce(t *testing.T) {
	ctx := context.Background()
	s := sloScenario(scenario.SLO{TTFTMs: 4000, E2EMs: 26000, Percentile: 99})
	s.Policy.MaxPool = *mustPlan(t, s).Classes[0].MinPool // a pool whose queue waits
	cp := mustPlan(t, s).Classes[0]
	ws, err := testEngine.Workloads(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	m := ws[0].m
	d := model.NewDraws(1, 20000)
	first, total := make([]float64, d.N), make([]float64, d.N)
	ws[0].At(1).Fill(d, first, total)
	w := m.waitAt(cp.Pool, m.pacedOf(m.at(1)))
	tau, _, err := m.maxQueueWait(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	at := func(x []float64, p float64) float64 {
		// Over the requests served, with the wait's law matched at
		// p·(1 − q): the draws it puts beyond τ are left out, and a wait
		// between τ and the cut counts as τ.
		w := m.waitAtP(cp.Pool, m.pacedOf(m.at(1)), p*(1-w.LeftOut(tau)))
		cut := w.Cut(tau)
		var sum []float64
		for i, v := range x {
			if d.U[i] < w.Prob {
				if d.E[i]*w.Mean > cut {
					continue
				}
				v += math.Min(d.E[i]*w.Mean, tau)
			}
			sum = append(sum, v)
		}
		slices.Sort(sum)
		return ms(model.QuantileSorted(sum, p))
	}
	pr := cp.Predicted
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"TTFT p99", *pr.TTFTMsAtPercentile, at(first, 0.99)}, {"E2E p99", *pr.E2EMsAtPercentile, at(total, 0.99)},
		{"TTFT p95", *pr.TTFTP95Ms, at(first, 0.95)}, {"E2E p95", *pr.E2EP95Ms, at(total, 0.95)},
	} {
		if c.got != c.want {
			t.Errorf("%s: plan %g ms, brute force %g ms", c.name, c.got, c.want)
		}
	}
	if *pr.TTFTMsAtPercentile <= *pr.TTFTP95Ms || *pr.E2EMsAtPercentile <= *pr.E2EP95Ms {
		t.Errorf("p99 not above p95: %+v", pr)
	}
	if *pr.Percentile != 99 || w.Prob == 0 {
		t.Fatalf("want a percentile of 99 and a queue that waits: %+v, %+v", pr, w)
	}
}

// TestMinPoolAtP99 holds a pool to targets at p99 that p95 meets with
// fewer slots: min_pool grows, and its predicted p99 meets them.
func TestMinPoolAtP99(t *testing.T) {
	p95 := mustPlan(t, sloScenario(scenario.SLO{TTFTMs: 3200, E2EMs: 24000})).Classes[0]
	p99 := mustPlan(t, sloScenario(scenario.SLO{TTFTMs: 3200, E2EMs: 24000, Percentile: 99})).Classes[0]
	if !p95.Feasible || !p99.Feasible {
		t.Fatalf("want both to fit: %s | %s", p95.Explanation, p99.Explanation)
	}
	if *p99.MinPool <= *p95.MinPool {
		t.Errorf("min_pool %d at p99, %d at p95: the tighter percentile needs more", *p99.MinPool, *p95.MinPool)
	}
	if *p99.Predicted.TTFTMsAtPercentile > 3200 || *p99.Predicted.E2EMsAtPercentile > 24000 {
		t.Errorf("p99 plan misses its targets: %+v", p99.Predicted)
	}
	p99 = mustPlan(t, sloScenario(scenario.SLO{E2EMs: 24000, Percentile: 99.9})).Classes[0]
	if !strings.Contains(p99.Explanation, "E2E p99.9") {
		t.Errorf("explanation does not name the percentile: %s", p99.Explanation)
	}
}

// TestTPOTTarget: a fixed TPOT of 20 ms meets a 25 ms target at every
// pool, and misses 15 ms at every pool: slo_tpot binds at 0, and the
// remedy relaxes the target to the 20 ms that every pool gives, which
// makes the class fit, as a single call and as an agent task (whose calls
// have the same TPOT). No warning sends it to shed load: that lowers no
// TPOT.
func TestTPOTTarget(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 600})
	s.Classes[0].Demand = &scenario.Demand{RPS: 1}
	s.Classes[0].SLO = &scenario.SLO{TPOTMs: 25, Percentile: 99}
	cp := mustPlan(t, s).Classes[0]
	if !cp.Feasible || *cp.Predicted.TPOTMsAtPercentile != 20 {
		t.Fatalf("a fixed 20 ms TPOT meets 25 ms: feasible %v, tpot %v", cp.Feasible, *cp.Predicted.TPOTMsAtPercentile)
	}
	if c := ceiling(cp, ConstraintSLOTPOT); c == nil || c.MaxPool != nil || cp.BindingConstraint != "rpm" ||
		c.Detail != "slo_tpot: the TPOT p99 is 20 ms at every pool, within the 25 ms target: a pool changes only the wait for a slot, which TPOT does not include" {
		t.Fatalf("a TPOT target met at every pool: ceiling %+v, binding %s; want unbounded, rpm binding", c, cp.BindingConstraint)
	}
	for _, tc := range []struct {
		name string
		task bool
	}{{"single call", false}, {"agent task", true}} {
		s := handScenario(scenario.Quota{RPM: 600})
		if tc.task {
			s = taskScenario(scenario.Quota{RPM: 600})
		}
		s.Classes[0].Demand = &scenario.Demand{RPS: 0.5}
		s.Classes[0].SLO = &scenario.SLO{TPOTMs: 15, Percentile: 99}
		cp := mustPlan(t, s).Classes[0]
		c := ceiling(cp, ConstraintSLOTPOT)
		if cp.Feasible || cp.BindingConstraint != ConstraintSLOTPOT || cp.Pool != 0 || c == nil || c.MaxPool == nil || *c.MaxPool != 0 ||
			c.Detail != "slo_tpot: the TPOT p99 is 20 ms at every pool, over the 15 ms target: a pool changes only the wait for a slot, which TPOT does not include" {
			t.Fatalf("%s: a TPOT target missed at every pool: feasible %v, binding %s, pool %d, ceiling %+v", tc.name, cp.Feasible, cp.BindingConstraint, cp.Pool, c)
		}
		want := Remedy{Constraint: ConstraintSLOTPOT, Value: 20, Class: "work", Path: "/classes/0/slo/tpot_ms",
			Change: "relax class work's slo.tpot_ms from 15 to 20 ms (what every pool achieves), or serve it from a faster endpoint or model"}
		if len(cp.Remedies) != 1 || cp.Remedies[0] != want {
			t.Fatalf("%s: remedies %+v, want %+v", tc.name, cp.Remedies, want)
		}
		if slices.ContainsFunc(cp.Warnings, func(w string) bool { return strings.Contains(w, "shed load") }) {
			t.Errorf("%s: a warning says to shed load, which does not lower TPOT: %q", tc.name, cp.Warnings)
		}
		fixed, err := withRemedies(s, cp.Remedies)
		if err != nil {
			t.Fatal(err)
		}
		if p := mustPlan(t, fixed).Classes[0]; !p.Feasible {
			t.Fatalf("%s: relaxed to 20 ms it does not fit: %s", tc.name, p.Explanation)
		}
	}
	s.Classes[0].SLO = &scenario.SLO{TPOTMs: 15}
	cp = mustPlan(t, s).Classes[0]
	if cp.Feasible || !slices.ContainsFunc(cp.Warnings, func(w string) bool {
		return strings.Contains(w, "slo.tpot_ms") && strings.Contains(w, "TPOT p95 is 20 ms")
	}) {
		t.Fatalf("a fixed 20 ms TPOT misses 15 ms at any pool: feasible %v, warnings %q", cp.Feasible, cp.Warnings)
	}
}

func TestRemedyNamesTheFormGiven(t *testing.T) {
	for _, tc := range []struct {
		slo  scenario.SLO
		path string
	}{{scenario.SLO{TTFTMs: 300, Percentile: 99}, "/classes/0/slo/ttft_ms"}, {scenario.SLO{TTFTP95Ms: 300}, "/classes/0/slo/ttft_p95_ms"}} {
		s := handScenario(scenario.Quota{RPM: 600})
		s.Classes[0].Demand = &scenario.Demand{RPS: 1}
		s.Classes[0].SLO = &tc.slo
		cp := mustPlan(t, s).Classes[0]
		if cp.Feasible || !slices.ContainsFunc(cp.Remedies, func(r Remedy) bool { return r.Path == tc.path && r.Value == 500 }) {
			t.Errorf("%+v: want a remedy at %s to 500 ms, got %+v", tc.slo, tc.path, cp.Remedies)
		}
	}
}

// TestPercentileWorkedExample is the worked example of docs/concepts.md
// ("SLOs at a percentile"): TTFT p50 400 ms and p95 900 ms has a p99 of
// 1,259 ms, so a 1,000 ms target holds at p95 and at no pool at p99.
func TestPercentileWorkedExample(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 600})
	s.Latency.TTFTMs = &scenario.Dist{P50: f(400), P95: f(900)}
	s.Policy.MonteCarloDraws = 200000
	s.Classes[0].SLO = &scenario.SLO{TTFTMs: 1000}
	if cp := mustPlan(t, s).Classes[0]; !cp.Feasible {
		t.Fatalf("at p95: %s", cp.Explanation)
	}
	s.Classes[0].SLO = &scenario.SLO{TTFTMs: 1000, Percentile: 99}
	cp := mustPlan(t, s).Classes[0]
	ws, err := testEngine.Workloads(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ws[0].m.noWait95(context.Background(), 1, metricTTFT) // at the class's percentile
	if err != nil {
		t.Fatal(err)
	}
	if cp.Feasible || math.Abs(got*1000-1259.4) > 0.01*1259.4 {
		t.Fatalf("at p99: feasible %v, TTFT p99 %g ms, want about 1,259: %s", cp.Feasible, got*1000, cp.Explanation)
	}
	if pr, err := testEngine.PredictAt(context.Background(), s, "work", 1); err != nil || math.Abs(pr.TTFTP95Ms-900) > 0.01*900 {
		t.Errorf("PredictAt gives the p95 whatever the SLO's percentile: %v, %v", pr.TTFTP95Ms, err)
	}
	if c := ceiling(cp, ConstraintSLOTTFT); c == nil || *c.MaxPool != 0 || !strings.Contains(c.Detail, "TTFT p99") {
		t.Errorf("want an SLO ceiling of 0 at p99, got %+v", c)
	}
}

// TestTPOTOverItsTargetOnACurve: on the measured curve's endpoint, TPOT
// grows with what is in flight, and a target under the TPOT at the
// endpoint's load makes a class not fit at a pool that reaches its
// min_pool. Its explanation says that TPOT is why (not that it needs the
// pool it has), and its remedy relaxes the target to the TPOT at that
// load, which makes it fit: for the assistant, with demand, and for
// reports, without.
func TestTPOTOverItsTargetOnACurve(t *testing.T) {
	for _, tc := range []struct {
		class  int
		target float64
	}{{0, 17}, {1, 18}} {
		s := example(t, "measured-curve")
		s.Classes = slices.Clone(s.Classes)
		old := s.Classes[tc.class].SLO
		s.Classes[tc.class].SLO = &scenario.SLO{TTFTMs: old.TTFT(), E2EMs: old.E2E(), TPOTMs: tc.target}
		cp := mustPlan(t, s).Classes[tc.class]
		if cp.Feasible || cp.MinPool == nil || cp.Pool < *cp.MinPool {
			t.Fatalf("%s: want a pool that reaches min_pool and a TPOT over %g ms: feasible %v, pool %d, min_pool %v", cp.Name, tc.target, cp.Feasible, cp.Pool, cp.MinPool)
		}
		path := fmt.Sprintf("/classes/%d/slo/tpot_ms", tc.class)
		k := slices.IndexFunc(cp.Remedies, func(r Remedy) bool { return r.Path == path })
		if k < 0 || len(cp.Remedies) != 1 || !strings.Contains(cp.Remedies[0].Change, "in flight on endpoint default achieves") {
			t.Fatalf("%s: remedies %+v, want one that relaxes %s to the TPOT at the endpoint's load", cp.Name, cp.Remedies, path)
		}
		if !strings.Contains(cp.Explanation, "It does not fit: its predicted TPOT") || !strings.Contains(cp.Explanation, "To fit: "+cp.Remedies[0].Change) ||
			strings.Contains(cp.Explanation, fmt.Sprintf("needs a pool of %d.", cp.Pool)) {
			t.Errorf("%s: explanation %q", cp.Name, cp.Explanation)
		}
		if slices.ContainsFunc(cp.Warnings, func(w string) bool { return strings.HasPrefix(w, "no change of a limit") }) {
			t.Errorf("%s: warnings %q say no change makes it fit", cp.Name, cp.Warnings)
		}
		fixed, err := withRemedies(s, cp.Remedies)
		if err != nil {
			t.Fatal(err)
		}
		if got := mustPlan(t, fixed).Classes[tc.class]; !got.Feasible {
			t.Errorf("%s: with %+v it is still not feasible: %s %q", cp.Name, cp.Remedies, got.Explanation, got.Warnings)
		}
	}
}

// TestNoShedRemedyWhereNothingFits: a class whose TTFT target no pool
// meets sustains no rate at its pool, and its explanation does not offer
// shedding its whole demand as a way to fit (its shed block still says
// so, with a sustainable rate of 0).
func TestNoShedRemedyWhereNothingFits(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 600})
	s.Classes[0].Demand = &scenario.Demand{RPS: 1}
	s.Classes[0].SLO = &scenario.SLO{TTFTP95Ms: 300}
	cp := mustPlan(t, s).Classes[0]
	if cp.Feasible || cp.Shed == nil || cp.Shed.SustainableRPS != 0 || len(cp.Remedies) == 0 {
		t.Fatalf("want a class that sustains nothing, with remedies: feasible %v, shed %+v, remedies %+v", cp.Feasible, cp.Shed, cp.Remedies)
	}
	if strings.Contains(cp.Explanation, "or shed ") {
		t.Errorf("explanation %q offers to shed all of its demand", cp.Explanation)
	}
}
