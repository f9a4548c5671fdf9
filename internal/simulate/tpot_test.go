package simulate

import (
	"context"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

// TestFixedTPOTIsSimulatedExactly: with a fixed TPOT every request's
// (E2E − TTFT)/(out − 1) is that TPOT, whatever its queue wait and
// retries, at every percentile; an agent task's calls are measured the
// same way, one TPOT a call.
func TestFixedTPOTIsSimulatedExactly(t *testing.T) {
	for _, tc := range []struct{ name, class string }{
		{"request", `{name: c, quota: k, mode: interactive, demand: {rps: 2}, input_tokens: {fixed: 500}, output_tokens: {fixed: 101},
     slo: {tpot_ms: 30, percentile: 99}}`},
		{"task", `{name: c, quota: k, mode: interactive, demand: {rps: 0.5}, input_tokens: {fixed: 500}, output_tokens: {fixed: 101},
     task: {calls: {fixed: 3}, tool_ms: {fixed: 200}}, slo: {tpot_ms: 30, percentile: 99}}`},
	} {
		sc := parse(t, `
quotas: [{name: k, rpm: 100000}]
latency: {ttft_ms: {fixed: 400}, tpot_ms: {fixed: 20}, prefill_ms_per_1k_tokens: 40}
classes:
  - `+tc.class+`
policy: {monte_carlo_draws: 2000}
`)
		c := run(t, sc, Options{DurationS: 300}).Classes[0]
		sm := c.Simulated
		if sm.Completed == 0 {
			t.Fatalf("%s: nothing completed", tc.name)
		}
		for name, v := range map[string]*float64{"p50": sm.TPOTP50Ms, "p95": sm.TPOTP95Ms, "p99": sm.TPOTP99Ms, "at p99": sm.TPOTMsAtPercentile} {
			if v == nil || *v != 20 {
				t.Errorf("%s: TPOT %s %v ms, want the configured 20", tc.name, name, deref(v))
			}
		}
		if hw := sm.TPOTCI95MsAtPercentile; hw == nil || *hw != 0 {
			t.Errorf("%s: TPOT p99 interval %v, want 0 for a fixed TPOT", tc.name, deref(hw))
		}
		if !c.Verdict.Holds || !strings.Contains(strings.Join(c.Verdict.Reasons, "; "), "TPOT p99 20 ms meets the SLO of 30 ms") {
			t.Errorf("%s: verdict %+v", tc.name, c.Verdict)
		}
	}
}

// TestTPOTTargetIsJudged: a TPOT target above the TPOT distribution's p95
// holds in the simulation; one below it breaks it, and the verdict names
// TPOT. TPOT lognormal with p50 20 ms and p95 40 ms. The plan gives a
// class whose TPOT target no pool meets no pool (slo_tpot binds at 0), so
// the pools simulated against the 30 ms target are those planned for 60.
func TestTPOTTargetIsJudged(t *testing.T) {
	scenarioWith := func(target string) scenario.Scenario {
		return parse(t, `
quotas: [{name: k, rpm: 100000}]
latency: {ttft_ms: {fixed: 400}, tpot_ms: {p50: 20, p95: 40}}
classes:
  - {name: c, quota: k, mode: interactive, demand: {rps: 2}, input_tokens: {fixed: 500}, output_tokens: {fixed: 101},
     slo: {tpot_ms: `+target+`}}
policy: {monte_carlo_draws: 2000}
`)
	}
	p, err := engine.Plan(context.Background(), scenarioWith("60"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		target string
		holds  bool
	}{{"60", true}, {"30", false}} {
		sim, err := RunPlan(context.Background(), engine, scenarioWith(tc.target), p, Options{DurationS: 600})
		if err != nil {
			t.Fatal(err)
		}
		c := sim.Classes[0]
		sm := c.Simulated
		if p := sm.TPOTP95Ms; p == nil || *p < 38 || *p > 42 {
			t.Fatalf("TPOT p95 %v ms, want about the distribution's 40", deref(p))
		}
		if c.Verdict.Holds != tc.holds {
			t.Errorf("tpot_ms %s: holds %v, want %v: %+v", tc.target, c.Verdict.Holds, tc.holds, c.Verdict)
		}
		if !tc.holds && !strings.Contains(c.Verdict.Summary, "TPOT p95 over its SLO") {
			t.Errorf("tpot_ms %s: summary %q does not name TPOT", tc.target, c.Verdict.Summary)
		}
	}
}
