package plan

import (
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

func TestPredictAt(t *testing.T) {
	// Fixed service time 2.5 s: X(c) = c/2.5 and every percentile is 2.5 s.
	s := handScenario(scenario.Quota{RPM: 600})
	s.Classes[0].Demand = &scenario.Demand{RPS: 4} // ignored: a closed loop has no queue
	p, err := PredictAt(s, "work", 10)
	if err != nil {
		t.Fatal(err)
	}
	if p.ThroughputRPS != 4 || p.MeanServiceMs != 2500 || p.E2EP95Ms != 2500 || p.TTFTP95Ms != 500 ||
		p.InputTokensP50 != 1000 || p.MeanOutputTokens != 101 {
		t.Fatalf("prediction %+v", p)
	}
	// The request shape: the input's median, the output's mean under the cap.
	p50, p95 := 800.0, 2400.0
	s.Classes[0].InputTokens = scenario.Dist{P50: &p50, P95: &p95}
	s.Classes[0].MaxTokens = 60
	if p, err := PredictAt(s, "work", 1); err != nil || p.InputTokensP50 != 800 || p.MeanOutputTokens != 60 {
		t.Fatalf("shape %+v %v", p, err)
	}
	// On a curve the prediction follows the load: 200 + 150·(12 − 8) ms TTFT at 12.
	c, err := PredictAt(curveScenario(), "work", 12)
	if err != nil || c.TTFTP95Ms != 800 || c.E2EP95Ms != 1800 {
		t.Fatalf("curve prediction %+v %v", c, err)
	}
	if _, err := PredictAt(s, "nope", 1); err == nil {
		t.Error("unknown class predicted")
	}
	if _, err := PredictAt(s, "work", 0); err == nil {
		t.Error("concurrency 0 predicted")
	}
}

// TestNumBeside: a number read beside another that num shows alike gets
// the digits that tell them apart.
func TestNumBeside(t *testing.T) {
	for _, tc := range []struct {
		v, other float64
		want     string
	}{
		{0.2716, 0.272, "0.2716"},
		{0.27201, 0.272, "0.27201"},
		{0.25, 0.272, "0.25"},
		{0.272, 0.272, "0.272"},
		{512.3, 512.31, "512.3"},
		{1500, 1500.4, "1,500"},
	} {
		if got := numBeside(tc.v, tc.other); got != tc.want {
			t.Errorf("numBeside(%v, %v) = %q, want %q", tc.v, tc.other, got, tc.want)
		}
	}
}
