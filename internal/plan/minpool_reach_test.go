package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

// TestMinPoolMeetsATargetWithinReach: a target the class meets without
// queueing, though by less than 5 %, is met at min_pool, and missed one
// below it: the 5 % allowance is only for a target that no pool meets.
// (TTFT p50 400 / p95 900 ms, 5 req/s, TTFT p99 target 1,260 ms.)
func TestMinPoolMeetsATargetWithinReach(t *testing.T) {
	s := scenario.Scenario{
		Quotas:  []scenario.Quota{{Name: "key", RPM: 100000}},
		Latency: scenario.Latency{TTFTMs: new(pct(400, 900)), TPOTMs: new(pct(20, 30))},
		Classes: []scenario.Class{{
			Name: "chat", Quota: "key", Mode: scenario.ModeInteractive, Demand: &scenario.Demand{RPS: 5},
			InputTokens: pct(800, 2400), OutputTokens: pct(150, 400), MaxTokens: 600,
			SLO: &scenario.SLO{TTFTMs: 1260, Percentile: 99},
		}},
	}
	cp := mustPlan(t, s).Classes[0]
	if cp.MinPool == nil || !cp.Feasible {
		t.Fatalf("min_pool %v, feasible %v", cp.MinPool, cp.Feasible)
	}
	at := func(pool int) float64 {
		capped := s
		capped.Policy.MaxPool = pool
		pr := mustPlan(t, capped).Classes[0].Predicted
		if pr.TTFTMsAtPercentile == nil {
			t.Fatalf("no TTFT p99 at pool %d", pool)
		}
		return *pr.TTFTMsAtPercentile
	}
	if v := at(*cp.MinPool); v > 1260 {
		t.Errorf("at min_pool %d the TTFT p99 is %.1f ms, over the 1,260 ms target", *cp.MinPool, v)
	}
	if v := at(*cp.MinPool - 1); v <= 1260 {
		t.Errorf("one below min_pool %d the TTFT p99 is %.1f ms, within the target: min_pool is not the least", *cp.MinPool, v)
	}
}

// TestZeroTargetsAreNoSLO: an SLO whose every target is 0 sets none, and
// the plan warns as it does without an SLO.
func TestZeroTargetsAreNoSLO(t *testing.T) {
	for _, slo := range []*scenario.SLO{nil, {}, {TTFTMs: 0, TaskE2EMs: 0}} {
		s := handScenario(scenario.Quota{RPM: 600})
		s.Classes[0].Demand = &scenario.Demand{RPS: 1}
		s.Classes[0].SLO = slo
		cp := mustPlan(t, s).Classes[0]
		if !slices.ContainsFunc(cp.Warnings, func(w string) bool { return strings.HasPrefix(w, "no SLO given") }) {
			t.Errorf("slo %+v: warnings %q", slo, cp.Warnings)
		}
	}
}
