package model

import (
	"math"
	"testing"
)

func vllmLikeCurve() []LatencyPoint {
	// A server with 8 batch slots: flat latency up to 8, queueing beyond.
	return []LatencyPoint{
		{Concurrency: 1, TTFTP50: 0.200, TTFTP95: 0.205, TPOTP50: 0.0200, TPOTP95: 0.0205, Throughput: 0.83},
		{Concurrency: 4, TTFTP50: 0.202, TTFTP95: 0.210, TPOTP50: 0.0202, TPOTP95: 0.0207, Throughput: 3.3},
		{Concurrency: 8, TTFTP50: 0.205, TTFTP95: 0.215, TPOTP50: 0.0204, TPOTP95: 0.0210, Throughput: 6.6},
		{Concurrency: 16, TTFTP50: 1.40, TTFTP95: 1.45, TPOTP50: 0.0206, TPOTP95: 0.0212, Throughput: 6.7},
		{Concurrency: 32, TTFTP50: 3.80, TTFTP95: 3.90, TPOTP50: 0.0207, TPOTP95: 0.0214, Throughput: 6.7},
	}
}

func TestCurvePassesThroughMeasuredPoints(t *testing.T) {
	pts := vllmLikeCurve()
	c, err := NewCurve(pts)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		ttft, tpot, ext := c.At(p.Concurrency)
		if ext {
			t.Errorf("c=%g flagged as extrapolated", p.Concurrency)
		}
		if math.Abs(ttft.Quantile(0.95)-p.TTFTP95) > 1e-9 || math.Abs(tpot.Quantile(0.5)-p.TPOTP50) > 1e-9 {
			t.Errorf("c=%g: ttft p95 %g tpot p50 %g, want %g and %g", p.Concurrency, ttft.Quantile(0.95), tpot.Quantile(0.5), p.TTFTP95, p.TPOTP50)
		}
	}
}

func TestCurveIsMonotoneAndExtrapolatesUpward(t *testing.T) {
	pts := vllmLikeCurve()
	pts[2].TTFTP50 = 0.19 // a noisy dip below the previous step
	c, err := NewCurve(pts)
	if err != nil {
		t.Fatal(err)
	}
	prev := 0.0
	for n := 1.0; n <= 128; n++ {
		ttft, _, ext := c.At(n)
		v := ttft.Quantile(0.5)
		if v < prev-1e-12 {
			t.Fatalf("TTFT p50 falls from %g to %g at c=%g", prev, v, n)
		}
		prev = v
		if ext != (n > 32) {
			t.Fatalf("c=%g extrapolated=%v", n, ext)
		}
	}
	t64, _, _ := c.At(64)
	if t64.Quantile(0.5) <= 3.8*1.5 {
		t.Errorf("TTFT at 64 = %g: a saturated server should about double its latency from 32", t64.Quantile(0.5))
	}
	if _, ok := c.USL(); !ok {
		t.Error("no USL fit from five throughput points")
	}
}

func TestCurveSinglePointAssumesSaturation(t *testing.T) {
	c, err := NewCurve([]LatencyPoint{{Concurrency: 8, TTFTP50: 0.2, TTFTP95: 0.3, TPOTP50: 0.02, TPOTP95: 0.03}})
	if err != nil {
		t.Fatal(err)
	}
	ttft, _, ext := c.At(16)
	if !ext || math.Abs(ttft.Quantile(0.5)-0.4) > 1e-12 {
		t.Errorf("c=16 from one point at 8: p50 %g (extrapolated %v), want 0.4", ttft.Quantile(0.5), ext)
	}
	low, _, ext := c.At(2)
	if !ext || low.Quantile(0.5) != 0.2 {
		t.Errorf("below the range the first point holds: got %g, %v", low.Quantile(0.5), ext)
	}
}

func TestCurveRejectsBadPoints(t *testing.T) {
	good := LatencyPoint{Concurrency: 1, TTFTP50: 0.2, TTFTP95: 0.3, TPOTP50: 0.02, TPOTP95: 0.03}
	bad := good
	bad.TTFTP95 = 0.1
	for i, pts := range [][]LatencyPoint{nil, {bad}, {good, good}} {
		if _, err := NewCurve(pts); err == nil {
			t.Errorf("case %d accepted", i)
		}
	}
}

// TestIsotonicPoolsAdjacentViolators checks the pool-adjacent-violators
// fit against values worked by hand, and that one noisy step no longer
// raises every later concurrency as a running maximum did.
func TestIsotonicPoolsAdjacentViolators(t *testing.T) {
	tests := []struct {
		ys, ws, want []float64
	}{
		{[]float64{1, 2, 3}, []float64{1, 1, 1}, []float64{1, 2, 3}},
		// 3 then 2 pool to 2.5.
		{[]float64{1, 3, 2, 4}, []float64{1, 1, 1, 1}, []float64{1, 2.5, 2.5, 4}},
		// Weighted: (3·1 + 2·3)/4 = 2.25.
		{[]float64{1, 3, 2, 4}, []float64{1, 1, 3, 1}, []float64{1, 2.25, 2.25, 4}},
		// 5, 1 pool to 3, then with the next 1 to 7/3, which stays above 2.
		{[]float64{2, 5, 1, 1}, []float64{1, 1, 1, 1}, []float64{2, 7.0 / 3, 7.0 / 3, 7.0 / 3}},
		// 4, 1 pool to 2.5, then 2.5 and 2 to 2.25... and the first 3 joins: (3+4+1+2)/4 = 2.5.
		{[]float64{3, 4, 1, 2}, []float64{1, 1, 1, 1}, []float64{2.5, 2.5, 2.5, 2.5}},
	}
	for _, tt := range tests {
		got := Isotonic(tt.ys, tt.ws)
		for i := range got {
			if math.Abs(got[i]-tt.want[i]) > 1e-12 {
				t.Errorf("Isotonic(%v, %v) = %v, want %v", tt.ys, tt.ws, got, tt.want)
				break
			}
		}
	}
	// A noisy TPOT p95 of 60 ms at 8 in flight among 20-ish neighbours.
	c, err := NewCurve([]LatencyPoint{
		{Concurrency: 1, TTFTP50: 0.1, TTFTP95: 0.2, TPOTP50: 0.02, TPOTP95: 0.022, Weight: 40},
		{Concurrency: 8, TTFTP50: 0.1, TTFTP95: 0.2, TPOTP50: 0.02, TPOTP95: 0.060, Weight: 40},
		{Concurrency: 16, TTFTP50: 0.1, TTFTP95: 0.2, TPOTP50: 0.02, TPOTP95: 0.024, Weight: 40},
		{Concurrency: 32, TTFTP50: 0.1, TTFTP95: 0.2, TPOTP50: 0.02, TPOTP95: 0.026, Weight: 40},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, tpot, _ := c.At(32)
	// Pooled: 8, 16 and 32 average to (0.060 + 0.024 + 0.026)/3 = 0.0367, not 0.060.
	if got := tpot.Quantile(0.95); math.Abs(got-0.11/3) > 1e-9 {
		t.Errorf("TPOT p95 at 32 = %g, want the pooled 0.0367, not the noisy 0.060", got)
	}
}
