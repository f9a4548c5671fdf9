package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpAgreesWithMath: exp is within 4 units in the last place of
// math.Exp over the range samples use and beyond, and equal to it at the
// ends and on special values.
func TestExpAgreesWithMath(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		x := (2*r.Float64() - 1) * 750
		want, got := math.Exp(x), exp(x)
		if math.Abs(got-want) > 4*ulp(want) {
			t.Fatalf("exp(%g) = %g, math.Exp %g (%g ulp)", x, got, want, math.Abs(got-want)/ulp(want))
		}
	}
	for _, x := range []float64{0, 1, -1, 699.9, -699.9, 700, -700, 710, -746, math.Inf(1), math.Inf(-1)} {
		if want, got := math.Exp(x), exp(x); math.Abs(got-want) > 4*ulp(want) {
			t.Errorf("exp(%g) = %g, math.Exp %g", x, got, want)
		}
	}
	if !math.IsNaN(exp(math.NaN())) {
		t.Error("exp(NaN) is a number")
	}
}

// ulp is the spacing of float64 values at x.
func ulp(x float64) float64 { return math.Nextafter(x, math.Inf(1)) - x }

func BenchmarkExp(b *testing.B) {
	z := NewDraws(1, 20000).ZOut
	out := make([]float64, len(z))
	for b.Loop() {
		for i, v := range z {
			out[i] = exp(5 + 0.6*v)
		}
	}
}

func BenchmarkMathExp(b *testing.B) {
	z := NewDraws(1, 20000).ZOut
	out := make([]float64, len(z))
	for b.Loop() {
		for i, v := range z {
			out[i] = math.Exp(5 + 0.6*v)
		}
	}
}
