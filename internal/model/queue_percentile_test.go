package model

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// TestWaitMatchedAtThePercentile: in M/D/1 (π = ρ, E[W | W > 0] =
// E[S]/(2(1 − ρ)), cw² = 2ρ − 1 + (4/3)(1 − ρ) with Tail = 1) the wait's
// exponential law puts its p-quantile where the gamma of that mean and cw²
// has its quantile at q = 1 − (1 − p)/π, for p95 (the default) and p99.
func TestWaitMatchedAtThePercentile(t *testing.T) {
	const rho, mean = 0.6, 1.0
	q := Queue{C: 1, Lambda: rho / mean, CA2: 1, Mean: mean, CS2: 0, Tail: 1}
	theta0 := mean / (2 * (1 - rho))
	cw := 2*rho - 1 + 4.0/3*(1-rho)
	k := 1 / cw
	for _, p := range []float64{0, 0.95, 0.99} {
		q.P = p
		w := q.Wait()
		pp := p
		if p == 0 {
			pp = 0.95
		}
		if math.Abs(w.Prob-rho) > 1e-9 {
			t.Fatalf("p=%g: π = %g, want ρ = %g", p, w.Prob, rho)
		}
		level := 1 - (1-pp)/rho
		want := distuv.Gamma{Alpha: k, Beta: k / theta0}.Quantile(level)
		// P(W > x) = π·exp(−x/θ) = 1 − p at x = θ·ln(π/(1 − p)).
		if got := w.Mean * math.Log(w.Prob/(1-pp)); math.Abs(got-want) > 1e-9*want {
			t.Errorf("p=%g: the wait's p-quantile is %g, the gamma's at q = %g is %g", p, got, level, want)
		}
	}
	q.P = 0.99
	w99 := q.Wait()
	q.P = 0.95
	if w95 := q.Wait(); w99.Mean == w95.Mean {
		t.Errorf("the law is the same at p95 and p99: %+v", w95)
	}
}
