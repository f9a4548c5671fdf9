package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestLognormalFitPublishedValues(t *testing.T) {
	d, err := LognormalP50P95(1.5, 4.0)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Sigma(); math.Abs(got-0.596302) > 5e-7 {
		t.Errorf("sigma = %.7f, want 0.596302", got)
	}
	if got := d.Mean(); math.Abs(got-1.791858) > 5e-7 {
		t.Errorf("mean = %.7f, want 1.791858", got)
	}
	if got := d.Quantile(0.5); math.Abs(got-1.5) > 1e-12 {
		t.Errorf("median = %g, want 1.5", got)
	}
	if got := d.Quantile(0.95); math.Abs(got-4.0) > 1e-9 {
		t.Errorf("p95 = %g, want 4.0", got)
	}
}

func TestLognormalMeanStdRoundTrip(t *testing.T) {
	d, err := LognormalMeanStd(200, 120)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(d.Mean()-200) > 1e-9 || math.Abs(math.Sqrt(d.Var())-120) > 1e-9 {
		t.Errorf("mean %g sd %g, want 200 and 120", d.Mean(), math.Sqrt(d.Var()))
	}
	f, err := LognormalMeanStd(200, 0)
	if err != nil || f.Var() != 0 || f.Mean() != 200 {
		t.Errorf("stddev 0 should be fixed 200, got mean %g var %g err %v", f.Mean(), f.Var(), err)
	}
}

func TestDistConstructorsRejectBadInput(t *testing.T) {
	bad := []func() error{
		func() error { _, err := LognormalP50P95(0, 1); return err },
		func() error { _, err := LognormalP50P95(2, 1); return err },
		func() error { _, err := LognormalP50P95(math.NaN(), 1); return err },
		func() error { _, err := LognormalP50P95(1, math.Inf(1)); return err },
		func() error { _, err := LognormalMeanStd(-1, 1); return err },
		func() error { _, err := LognormalMeanStd(1, math.NaN()); return err },
		func() error { _, err := Empirical(nil); return err },
		func() error { _, err := Empirical([]float64{1, -2}); return err },
	}
	for i, f := range bad {
		if f() == nil {
			t.Errorf("case %d: want an error", i)
		}
	}
}

// TestClippedMomentsMatchSimulation checks the closed-form clipped moments
// against a large direct simulation of min(max(X, lo), hi).
func TestClippedMomentsMatchSimulation(t *testing.T) {
	base, _ := LognormalP50P95(200, 600)
	tests := []struct {
		name   string
		lo, hi float64
	}{
		{"unclipped", 0, math.Inf(1)},
		{"capped at max_tokens", 0, 400},
		{"at least one token, capped", 1, 300},
		{"floor only", 150, math.Inf(1)},
	}
	r := rand.New(rand.NewPCG(7, 7))
	const n = 400000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := base.Clip(tt.lo, tt.hi)
			var s1, s2 float64
			for range n {
				x := d.Sample(r.NormFloat64())
				s1 += x
				s2 += x * x
			}
			m1, m2 := s1/n, s2/n
			if rel := math.Abs(m1-d.Mean()) / d.Mean(); rel > 0.005 {
				t.Errorf("mean: closed form %g, simulated %g", d.Mean(), m1)
			}
			if rel := math.Abs(m2-d.SecondMoment()) / d.SecondMoment(); rel > 0.02 {
				t.Errorf("second moment: closed form %g, simulated %g", d.SecondMoment(), m2)
			}
		})
	}
}

func TestExceedIsTruncationRisk(t *testing.T) {
	d, _ := LognormalP50P95(200, 600)
	if got := d.Exceed(600); math.Abs(got-0.05) > 1e-9 {
		t.Errorf("P(out > p95) = %g, want 0.05", got)
	}
	if got := d.Exceed(200); math.Abs(got-0.5) > 1e-12 {
		t.Errorf("P(out > median) = %g, want 0.5", got)
	}
	if got := d.Clip(0, 500).Exceed(600); got != 0 {
		t.Errorf("a draw clipped at 500 never reaches 600, got %g", got)
	}
	e, _ := Empirical([]float64{100, 200, 300, 800})
	if got := e.Exceed(300); got != 0.25 {
		t.Errorf("empirical P(X > 300) = %g, want 0.25", got)
	}
	if got := e.Exceed(250); got != 0.5 {
		t.Errorf("empirical P(X > 250) = %g, want 0.5", got)
	}
	// An answer of exactly max_tokens tokens is not cut short.
	if got := Fixed(800).Exceed(800); got != 0 {
		t.Errorf("fixed 800 does not exceed 800: got %g", got)
	}
	if got := Fixed(801).Exceed(800); got != 1 {
		t.Errorf("fixed 801 exceeds 800: got %g", got)
	}
}

func TestEmpiricalMomentsAndQuantiles(t *testing.T) {
	e, _ := Empirical([]float64{4, 1, 3, 2})
	if e.Mean() != 2.5 || e.SecondMoment() != 7.5 {
		t.Errorf("mean %g E[X²] %g, want 2.5 and 7.5", e.Mean(), e.SecondMoment())
	}
	if got := e.Quantile(0.95); math.Abs(got-3.85) > 1e-12 {
		t.Errorf("p95 = %g, want 3.85 (numpy linear)", got)
	}
	if got := e.Clip(0, 3).Mean(); got != 2.25 {
		t.Errorf("clipped mean = %g, want 2.25", got)
	}
}

func TestSampleIsMonotoneInZ(t *testing.T) {
	ds := []Dist{Fixed(3)}
	l, _ := LognormalP50P95(10, 30)
	e, _ := Empirical([]float64{5, 1, 9, 7})
	ds = append(ds, l, l.Clip(1, 20), e)
	for i, d := range ds {
		prev := math.Inf(-1)
		for z := -4.0; z <= 4; z += 0.01 {
			v := d.Sample(z)
			if v < prev {
				t.Fatalf("dist %d: Sample(%g) = %g < %g", i, z, v, prev)
			}
			prev = v
		}
	}
}
