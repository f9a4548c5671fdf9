package simulate

import "testing"

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
