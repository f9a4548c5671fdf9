package plan

import (
	"context"
	"math"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

// TestCacheLowersTTFTByTheCachedPrefill holds the plan to TTFT = base +
// k·(1 − r)·in/1000: with fixed tokens and latency the TTFT p95 falls by
// exactly k·r·in/1000, and with distributions the mean TTFT falls by
// exactly k·r·E[in]/1000.
func TestCacheLowersTTFTByTheCachedPrefill(t *testing.T) {
	const k, in = 40.0, 3000.0 // ms per 1,000 input tokens; input tokens
	for _, r := range []float64{0.25, 0.5, 0.9} {
		s := handScenario(scenario.Quota{RPM: 600})
		s.Latency.PrefillMsPer1K = k
		s.Classes[0].InputTokens = fixed(in)
		cold := mustPlan(t, s).Classes[0].Predicted
		s.Classes[0].CachedInputFraction = r
		warm := mustPlan(t, s).Classes[0].Predicted
		// 500 ms + 40 × 3 = 620 ms cold; warm 620 − 40·r·3.
		if *cold.TTFTP95Ms != 620 || *warm.TTFTP95Ms != 620-k*r*in/1000 {
			t.Errorf("r=%g: TTFT p95 %g ms cold, %g ms warm; want 620 and %g", r, *cold.TTFTP95Ms, *warm.TTFTP95Ms, 620-k*r*in/1000)
		}
		if d := cold.MeanServiceMs - warm.MeanServiceMs; math.Abs(d-k*r*in/1000) > 1e-9 {
			t.Errorf("r=%g: mean service time falls by %g ms, want %g", r, d, k*r*in/1000)
		}
	}
	ctx := context.Background()
	s := sloScenario(scenario.SLO{TTFTMs: 1e6})
	cold, err := testEngine.Workloads(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	const r = 0.6
	s.Classes[0].CachedInputFraction = r
	warm, err := testEngine.Workloads(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	c, w := cold[0].At(1), warm[0].At(1)
	want := s.Latency.PrefillMsPer1K * r * c.In.Mean() / 1000 / 1000 // seconds
	if d := c.MeanTTFT() - w.MeanTTFT(); math.Abs(d-want) > 1e-12 {
		t.Errorf("mean TTFT falls by %g s, want k·r·E[in]/1000 = %g s", d, want)
	}
}
