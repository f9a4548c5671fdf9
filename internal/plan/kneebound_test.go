package plan

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

// kneeScenario is one batch class of 30 req/s on an endpoint whose
// latency is fixed: TTFT 100 ms and TPOT 10 ms for 21 output tokens, a
// service time of 0.3 s, so that its demand needs at least 9 in flight
// (30 × 0.3 = 9 busy, and a stable queue), with a knee of 4 (safety 1).
func kneeScenario() scenario.Scenario {
	return scenario.Scenario{
		Quotas:  []scenario.Quota{{Name: "key", RPM: 1_000_000}},
		Latency: scenario.Latency{TTFTMs: fixedMs(100), TPOTMs: fixedMs(10), Knee: intPtr(4)},
		Classes: []scenario.Class{{
			Name: "docs", Quota: "key", Mode: scenario.ModeBatch, Demand: &scenario.Demand{RPS: 30},
			InputTokens: fixed(200), OutputTokens: fixed(21),
		}},
		Policy: scenario.Policy{MonteCarloDraws: 2000},
	}
}

// TestLowerBoundKneeSaysProbeFurther: a knee the probe never reached (a
// ladder 1, 2, 4 whose every step passed writes knee 4 as a lower bound)
// still holds the pool to it, but the plan never asks for serving
// capacity: the remedy and the explanation say to probe further, to the
// knee the class needs. The same knee measured asks for capacity.
func TestLowerBoundKneeSaysProbeFurther(t *testing.T) {
	measured := mustPlan(t, kneeScenario()).Classes[0]
	if measured.Feasible || measured.Pool != 4 || measured.BindingConstraint != ConstraintKnee || len(measured.Remedies) != 1 ||
		!strings.Contains(measured.Remedies[0].Change, "add serving capacity") {
		t.Fatalf("a measured knee of 4: pool %d by %s, feasible %v, remedies %+v", measured.Pool, measured.BindingConstraint, measured.Feasible, measured.Remedies)
	}
	need := int(measured.Remedies[0].Value)

	s := kneeScenario()
	s.Latency.KneeLowerBound = true
	p := mustPlan(t, s)
	cp := p.Classes[0]
	if cp.Pool != 4 || cp.BindingConstraint != ConstraintKnee || cp.Feasible {
		t.Fatalf("a lower-bound knee of 4: pool %d by %s, feasible %v; want it held to 4", cp.Pool, cp.BindingConstraint, cp.Feasible)
	}
	if c := ceiling(cp, ConstraintKnee); c == nil || !strings.Contains(c.Detail, "(knee ≥ 4: a lower bound, the probe never reached the knee)") {
		t.Errorf("knee ceiling %+v: want it to say knee ≥ 4", c)
	}
	if len(cp.Remedies) != 1 || cp.Remedies[0].Path != "/latency/knee" || int(cp.Remedies[0].Value) != need ||
		!strings.HasPrefix(cp.Remedies[0].Change, "probe endpoint default further, to at least ") {
		t.Fatalf("remedies %+v: want one that probes to a knee of %d", cp.Remedies, need)
	}
	for _, text := range []string{cp.Remedies[0].Change, cp.Explanation} {
		if strings.Contains(text, "serving capacity") {
			t.Errorf("a lower-bound knee asks for serving capacity: %s", text)
		}
	}
	if !strings.Contains(cp.Explanation, "To fit: probe endpoint default further") {
		t.Errorf("explanation %q: want it to say to probe further", cp.Explanation)
	}
	if e := p.Endpoints[0]; !e.KneeLowerBound || e.KneeField != KneeFieldKnee || e.Knee == nil || *e.Knee != 4 {
		t.Errorf("endpoint %+v: want knee 4 from knee, a lower bound", e)
	}
	// Probing further and finding the knee the remedy names makes it fit.
	if fixed := mustPlan(t, applyRemedies(t, s, 0, cp.Remedies)).Classes[0]; !fixed.Feasible {
		t.Errorf("with the knee the remedy names: pool %d by %s, min_pool %v", fixed.Pool, fixed.BindingConstraint, fixed.MinPool)
	}

	// A class that fits, held by the lower bound, is told how far to probe.
	s.Classes[0].Demand = &scenario.Demand{RPS: 5}
	cp = mustPlan(t, s).Classes[0]
	if !cp.Feasible || cp.BindingConstraint != ConstraintKnee || !strings.Contains(cp.Explanation, "knee ≥ 4 is a lower bound, never reached by its probe: probe it further, to at least 8 in flight") {
		t.Errorf("feasible under a lower bound: %s, %v: %s", cp.BindingConstraint, cp.Feasible, cp.Explanation)
	}
}

// TestKneeRefinedSetsTheBudget: a knee search on 12 slots finds the
// doubling knee 16 and knee_refined 12; the plan's budget uses 12, and
// says so, and a remedy names the field it uses.
func TestKneeRefinedSetsTheBudget(t *testing.T) {
	s := kneeScenario()
	s.Latency.Knee, s.Latency.KneeRefined = intPtr(16), intPtr(12)
	p := mustPlan(t, s)
	cp := p.Classes[0]
	if cp.Pool != 12 || cp.BindingConstraint != ConstraintKnee {
		t.Fatalf("pool %d by %s, want 12 by the refined knee", cp.Pool, cp.BindingConstraint)
	}
	if c := ceiling(cp, ConstraintKnee); c == nil || *c.MaxPool != 12 || !strings.Contains(c.Detail, "refined knee 12 (knee_refined)") {
		t.Errorf("knee ceiling %+v", c)
	}
	if e := p.Endpoints[0]; e.Knee == nil || *e.Knee != 12 || e.KneeField != KneeFieldRefined || e.KneeLowerBound || *e.Budget != 12 {
		t.Errorf("endpoint %+v: want the budget of knee_refined 12", e)
	}
	s.Classes[0].Demand = &scenario.Demand{RPS: 60}
	cp = mustPlan(t, s).Classes[0]
	if len(cp.Remedies) != 1 || cp.Remedies[0].Path != "/latency/knee_refined" || !strings.Contains(cp.Remedies[0].Change, "(knee_refined 12)") {
		t.Errorf("remedies %+v: want one on knee_refined", cp.Remedies)
	}
}

// TestPropertyLowerBoundKneesNeverAskForCapacity: over random scenarios
// whose knees are all lower bounds (small ones, so that they bind often),
// no class is told to add serving capacity; every class bound by such a
// knee, or given a knee remedy, is told to probe further; and the remedies
// still make the class fit.
func TestPropertyLowerBoundKneesNeverAskForCapacity(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 4))
	bound, remedied := 0, 0
	for trial := range trials {
		s := randomScenario(r)
		lower := func(l *scenario.Latency) {
			if l.Knee != nil {
				l.Knee, l.KneeLowerBound = intPtr(2+r.IntN(10)), true
			}
		}
		lower(&s.Latency)
		for i := range s.Endpoints {
			lower(&s.Endpoints[i].Latency)
		}
		for ci, cp := range mustPlan(t, s).Classes {
			texts := append([]string{cp.Explanation}, cp.Warnings...)
			for _, c := range cp.Ceilings {
				texts = append(texts, c.Detail)
			}
			for _, rm := range cp.Remedies {
				texts = append(texts, rm.Change)
				if rm.Constraint == ConstraintKnee {
					remedied++
					if !strings.HasPrefix(rm.Change, "probe endpoint ") {
						t.Errorf("trial %d class %s: knee remedy %q does not say to probe further", trial, cp.Name, rm.Change)
					}
				}
			}
			for _, text := range texts {
				if strings.Contains(text, "serving capacity") {
					t.Errorf("trial %d class %s: a lower-bound knee asks for serving capacity: %s", trial, cp.Name, text)
				}
			}
			if cp.BindingConstraint == ConstraintKnee {
				bound++
				if !strings.Contains(cp.Explanation, "probe") {
					t.Errorf("trial %d class %s: bound by a lower-bound knee, the explanation does not say to probe: %s", trial, cp.Name, cp.Explanation)
				}
			}
			if !cp.Feasible && len(cp.Remedies) > 0 {
				if fixed := mustPlan(t, applyRemedies(t, s, ci, cp.Remedies)).Classes[ci]; !fixed.Feasible {
					t.Errorf("trial %d class %s: remedies %+v leave it infeasible", trial, cp.Name, cp.Remedies)
				}
			}
		}
	}
	t.Logf("%d classes bound by a lower-bound knee, %d knee remedies", bound, remedied)
	if bound < 10 || remedied < 3 {
		t.Fatalf("only %d classes bound by a lower-bound knee and %d knee remedies: the generator needs tuning", bound, remedied)
	}
}

// TestKneeRemedyNamesTheMeasuredKnee: the knee remedy names the knee the
// scenario measured, 8, however far the remedies' own runs raise it (they
// raised it to 16 before the one that fits, and the text said "measured
// 16"), on a curve whose TTFT jumps past the knee.
func TestKneeRemedyNamesTheMeasuredKnee(t *testing.T) {
	s, err := scenario.Parse([]byte(`
quotas: [{name: prod, rpm: 3000, tpm: 1000000, token_accounting: max_tokens, headroom: 0.9}]
latency:
  knee: 8
  curve:
    - {concurrency: 1, ttft_p50_ms: 202, ttft_p95_ms: 204, tpot_p50_ms: 20.2, tpot_p95_ms: 20.204, throughput_rps: 0.8391}
    - {concurrency: 2, ttft_p50_ms: 202, ttft_p95_ms: 204, tpot_p50_ms: 20.2, tpot_p95_ms: 20.204, throughput_rps: 1.6775}
    - {concurrency: 4, ttft_p50_ms: 202, ttft_p95_ms: 204, tpot_p50_ms: 20.2, tpot_p95_ms: 20.204, throughput_rps: 3.3547}
    - {concurrency: 8, ttft_p50_ms: 202, ttft_p95_ms: 204, tpot_p50_ms: 20.2, tpot_p95_ms: 20.204, throughput_rps: 6.7072}
    - {concurrency: 16, ttft_p50_ms: 1393.3, ttft_p95_ms: 1396.57, tpot_p50_ms: 20.2, tpot_p95_ms: 20.204, throughput_rps: 6.5014}
classes:
  - {name: chat, quota: prod, mode: interactive, demand: {rps: 2}, input_tokens: {p50: 600, p95: 2000}, output_tokens: {p50: 150, p95: 450}, max_tokens: 700, slo: {ttft_p95_ms: 1500, e2e_p95_ms: 12000}}
`))
	if err != nil {
		t.Fatal(err)
	}
	cp := mustPlan(t, s).Classes[0]
	i := slices.IndexFunc(cp.Remedies, func(r Remedy) bool { return r.Constraint == ConstraintKnee })
	if cp.BindingConstraint != ConstraintKnee || i < 0 {
		t.Fatalf("bound by %s, remedies %+v: want a knee remedy", cp.BindingConstraint, cp.Remedies)
	}
	if c := cp.Remedies[i].Change; !strings.Contains(c, "(measured 8)") {
		t.Errorf("knee remedy %q: want it to name the measured knee 8", c)
	}
}
