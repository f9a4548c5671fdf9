package model

import (
	"math"
	"testing"
)

func TestFitUSLRecoversKnownParameters(t *testing.T) {
	truth := USL{Alpha: 0.05, Beta: 0.002, Gamma: 10}
	ns := []float64{1, 2, 4, 8, 16, 32, 64}
	xs := make([]float64, len(ns))
	for i, n := range ns {
		xs[i] = truth.Throughput(n)
	}
	got, err := FitUSL(ns, xs)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.Alpha-truth.Alpha) > 1e-4 || math.Abs(got.Beta-truth.Beta) > 1e-6 || math.Abs(got.Gamma-truth.Gamma) > 1e-3 {
		t.Errorf("fit %+v, want %+v", got, truth)
	}
	if got.R2 < 0.999999 {
		t.Errorf("R² = %g on exact data", got.R2)
	}
	peak, ok := got.Peak()
	if want := math.Sqrt(0.95 / 0.002); !ok || math.Abs(peak-want) > 0.05 {
		t.Errorf("N* = %g (%v), want %g", peak, ok, want)
	}
}

func TestFitUSLLinearScalingHasNoPeak(t *testing.T) {
	got, err := FitUSL([]float64{1, 2, 4, 8}, []float64{5, 10, 20, 40})
	if err != nil {
		t.Fatal(err)
	}
	if got.Alpha > 1e-6 || got.Beta > 1e-8 || math.Abs(got.Gamma-5) > 1e-6 {
		t.Errorf("linear data fitted as %+v", got)
	}
	if _, ok := got.Peak(); ok && got.Beta > 0 {
		n, _ := got.Peak()
		if n < 1000 {
			t.Errorf("linear scaling should have no nearby peak, got N* = %g", n)
		}
	}
}

func TestFitUSLRejectsTooFewPoints(t *testing.T) {
	if _, err := FitUSL([]float64{1, 2}, []float64{1, 2}); err == nil {
		t.Error("two points fitted")
	}
	if _, err := FitUSL([]float64{1, 1, 1}, []float64{1, 2, 3}); err == nil {
		t.Error("one distinct concurrency fitted")
	}
	if _, err := FitUSL([]float64{1, 2, math.NaN()}, []float64{1, 2, 3}); err == nil {
		t.Error("NaN concurrency fitted")
	}
}
