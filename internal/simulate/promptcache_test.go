package simulate

import (
	"fmt"
	"math"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

// TestCacheLowersSimulatedTTFT: the simulation draws TTFT as the plan
// does, prefill on the uncached input only. Fixed latency and tokens and
// a pool that never fills make every TTFT 500 + 40 × (1 − r) × 3 ms.
func TestCacheLowersSimulatedTTFT(t *testing.T) {
	sc := parse(t, `
quotas: [{name: k, rpm: 100000}]
latency: {ttft_ms: {fixed: 500}, tpot_ms: {fixed: 20}, prefill_ms_per_1k_tokens: 40}
classes:
  - {name: c, quota: k, mode: interactive, demand: {rps: 0.5}, input_tokens: {fixed: 3000}, output_tokens: {fixed: 101},
     cached_input_fraction: 0.75}
policy: {monte_carlo_draws: 2000}
`)
	c := run(t, sc, Options{DurationS: 600}).Classes[0]
	if c.Simulated.Completed == 0 || *c.Simulated.TTFTP50Ms != 530 || *c.Simulated.TTFTP95Ms != 530 || *c.Predicted.TTFTP95Ms != 530 {
		t.Fatalf("TTFT p50 %v, p95 %v ms simulated, %v planned; want 530 = 500 + 40 × 0.25 × 3", deref(c.Simulated.TTFTP50Ms), deref(c.Simulated.TTFTP95Ms), deref(c.Predicted.TTFTP95Ms))
	}
}

// TestTaskPrefixCacheCallByCall: fixedTask with a prompt cache on its
// endpoint (hit rate 1, a minimum prefix of 1,024 tokens) and a key whose
// cache reads are free for itpm. Calls 2 to 4 carry prefixes of 1,101,
// 1,601 and 2,101 tokens, the previous call's input and output, all
// cached: each prefills only its tool result of 399 tokens, so the
// calls' TTFTs are 600, 539.9, 539.9 and 539.9 ms and a task takes
// 14.7 − 0.7 + 0.2197 = 14.2197 s. itpm counts 1,000 + 3 × 399 = 2,197
// tokens a task, 549.25 a call, where rpm counts one.
func TestTaskPrefixCacheCallByCall(t *testing.T) {
	sc := parse(t, fmt.Sprintf(fixedTask, 6000))
	sc.Quotas[0].ITPM, sc.Quotas[0].CachedInputFree = 1e6, true
	sc.Latency.Cache = &scenario.CacheProfile{MinPrefixTokens: 1024}
	sim := run(t, sc, Options{DurationS: 3600})
	c := sim.Classes[0].Simulated
	if *c.TTFTP50Ms != 539.9 || *c.TTFTP99Ms != 600 || *c.E2EP50Ms != 14219.7 || *c.E2EP95Ms != 14219.7 {
		t.Fatalf("TTFT p50 %v p99 %v, E2E p50 %v p95 %v; want 539.9, 600, 14,219.7 and 14,219.7 ms", *c.TTFTP50Ms, *c.TTFTP99Ms, *c.E2EP50Ms, *c.E2EP95Ms)
	}
	use := map[string]float64{}
	for _, d := range sim.Quotas[0].Dimensions {
		use[d.Dimension] = d.UseMean * d.Limit
	}
	// Tasks still running at the end have sent their first, longest
	// calls only: a few of some 1,800 tasks.
	if perCall := use["itpm"] / use["rpm"]; math.Abs(perCall-549.25) > 2 {
		t.Fatalf("itpm counts %v tokens a call, want about 549.25", perCall)
	}
	if p := sim.Classes[0].Predicted.Utilization["itpm"]; p != 0.0659 {
		t.Fatalf("the plan's itpm use %v, want 0.5 × 2,197 × 60 / 1e6 = 0.0659", p)
	}
}
