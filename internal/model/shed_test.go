package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// M/M/1+D by hand from the offered wait's density (MMcDShed's formula with
// B(0, a) = 1): at ρ = 0.5 and τ = E[S], e = e^{−0.5}, g = 2(1 − e), and the
// share shed is 0.5e/(1 + 0.5g + 0.5e) = 0.178734; at ρ = 1, g = τ/E[S] = 1
// and e = 1: 1/3; at ρ = 2, e = e, g = e − 1: 2e/(1 + 2(e − 1) + 2e) =
// 0.550643, above the 1 − 1/ρ = 0.5 that no single server serves.
func TestMMcDShedByHand(t *testing.T) {
	for _, tc := range []struct {
		c         int
		a, tau, w float64
	}{
		{1, 0.5, 1, 0.178734},
		{1, 1, 1, 1.0 / 3},
		{1, 2, 1, 2 * math.E / (1 + 2*(math.E-1) + 2*math.E)},
		{1, 2, 1, 0.550643},
	} {
		if got := MMcDShed(tc.c, tc.a, tc.tau); math.Abs(got-tc.w) > 1e-6 {
			t.Errorf("MMcDShed(%d, %g, %g) = %.6f, want %.6f", tc.c, tc.a, tc.tau, got, tc.w)
		}
	}
	// Large patience: nothing shed below c, the excess above it.
	if got := MMcDShed(10, 8, 200); got > 1e-12 {
		t.Errorf("a = 8 on 10 servers, τ = 200 E[S]: %g shed, want about 0", got)
	}
	if got := MMcDShed(10, 12, 1e6); math.Abs(got-(1-10.0/12)) > 1e-9 {
		t.Errorf("a = 12 on 10 servers, τ = 10⁶ E[S]: %g shed, want 1/6", got)
	}
}

// For a < c the closed form over the Erlang C wait, q(1 − ρ)/(1 − qρ),
// is the same share as the density's normalisation.
func TestShedShareIsMMcDBelowSaturation(t *testing.T) {
	for _, tc := range []struct {
		c      int
		a, tau float64
	}{{1, 0.5, 1}, {2, 1.5, 0.3}, {10, 8, 0.1}, {55, 48, 0.05}, {300, 280, 0.02}} {
		q := Queue{C: tc.c, Lambda: tc.a, CA2: 1, Mean: 1, CS2: 1, Tail: 1.5}
		got := q.ShedShare(q.Wait(), tc.tau)
		want := MMcDShed(tc.c, tc.a, tc.tau)
		if math.Abs(got-want) > 1e-9*math.Max(1, want) || want <= 0 {
			t.Errorf("c %d, a %g, τ %g: ShedShare %.9f, MMcDShed %.9f", tc.c, tc.a, tc.tau, got, want)
		}
	}
}

// An M/M/c+D queue run event by event (exponential gaps and service, a
// request that would wait longer than τ leaves on arrival, as a first
// come, first served queue knows its wait then) sheds the share MMcDShed
// gives, at loads below, at and above the servers.
func TestMMcDShedAgainstSimulation(t *testing.T) {
	for _, tc := range []struct {
		c      int
		a, tau float64
	}{{1, 0.7, 0.5}, {4, 3.5, 0.2}, {4, 4, 0.5}, {8, 10, 0.3}} {
		r := rand.New(rand.NewPCG(3, uint64(tc.c)))
		free := make([]float64, tc.c)
		t0, shed, n := 0.0, 0, 400000
		for range n {
			t0 += r.ExpFloat64() / tc.a
			k := 0
			for j, f := range free {
				if f < free[k] {
					k = j
				}
			}
			start := math.Max(t0, free[k])
			if start-t0 > tc.tau {
				shed++
				continue
			}
			free[k] = start + r.ExpFloat64()
		}
		got, want := float64(shed)/float64(n), MMcDShed(tc.c, tc.a, tc.tau)
		if math.Abs(got-want) > 0.03*want+0.002 {
			t.Errorf("c %d, a %g, τ %g: simulated %.4f shed, MMcDShed %.4f", tc.c, tc.a, tc.tau, got, want)
		}
	}
}

// QuantileServed keeps the draws that wait at most τ: with a wait
// exponential of mean 1 for every draw (π = 1) and X = 0, the served
// waits are an exponential given E ≤ τ, whose p-quantile is
// −ln(1 − p(1 − e^{−τ})).
func TestQuantileServedTruncatesTheWait(t *testing.T) {
	d := NewDraws(1, 200000)
	x := make([]float64, d.N)
	w := Wait{Prob: 1 - 1e-12, Mean: 1}
	for _, tau := range []float64{0.5, 2} {
		got := QuantileServed(x, x, nil, d, w, 0.95, tau, make([]float64, d.N))
		want := -math.Log(1 - 0.95*(1-math.Exp(-tau)))
		if math.Abs(got-want) > 0.01*want {
			t.Errorf("τ %g: p95 of the served waits %.4f, want %.4f", tau, got, want)
		}
	}
	// Without a wait beyond τ it is the quantile over every draw.
	all := QuantileWithPacedWait(x, nil, d, w, 0.95, make([]float64, d.N))
	if got := QuantileServed(x, x, nil, d, w, 0.95, math.Inf(1), make([]float64, d.N)); got != all {
		t.Errorf("τ = ∞: %v, over every draw %v", got, all)
	}
}
