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
