package model

import (
	"math"
	"testing"
)

func TestErlangCPublishedValues(t *testing.T) {
	tests := []struct {
		name string
		c    int
		a    float64
		want float64
		tol  float64
	}{
		{"A=48 c=55", 55, 48, 0.238701, 5e-7},
		{"A=10 c=12", 12, 10, 0.449388, 5e-7},
		{"A=2 c=3 is 4/9", 3, 2, 4.0 / 9.0, 1e-15},
		{"one server is utilisation", 1, 0.5, 0.5, 1e-15},
		{"saturated", 10, 10, 1, 0},
		{"overloaded", 10, 12, 1, 0},
		{"no load", 4, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ErlangC(tt.c, tt.a); math.Abs(got-tt.want) > tt.tol {
				t.Errorf("ErlangC(%d, %g) = %.9f, want %.9f", tt.c, tt.a, got, tt.want)
			}
		})
	}
}

func TestErlangCLargeServerCountsStayFinite(t *testing.T) {
	// The naive formula overflows a^c/c! long before c = 1000.
	got := ErlangC(1000, 990)
	if math.IsNaN(got) || got <= 0 || got >= 1 {
		t.Fatalf("ErlangC(1000, 990) = %g, want a probability in (0, 1)", got)
	}
}

func TestQueueWaitMMcMatchesErlangFormula(t *testing.T) {
	// M/M/c: λ = 48/240 per second, E[S] = 240 s, c = 55, cs² = 1.
	w := QueueWait(55, 48.0/240, 240, 1, 1)
	if got := w.Expected(); math.Abs(got-8.184) > 5e-4 {
		t.Errorf("mean wait = %.4f s, want 8.184 s", got)
	}
	if math.Abs(w.Prob-0.238701) > 5e-7 {
		t.Errorf("P(wait) = %.6f, want 0.238701", w.Prob)
	}
	// Allen–Cunneen scales the M/M/c wait by (ca² + cs²)/2.
	det := QueueWait(55, 48.0/240, 240, 1, 0)
	if got, want := det.Expected(), w.Expected()/2; math.Abs(got-want) > 1e-12 {
		t.Errorf("deterministic service wait = %g, want half of M/M/c %g", got, want)
	}
}

func TestQueueWaitUnstable(t *testing.T) {
	w := QueueWait(4, 2, 2, 1, 1) // A = 4 = c
	if w.Stable() {
		t.Fatalf("QueueWait with c = A is stable: %+v", w)
	}
	if w := QueueWait(4, 0, 2, 1, 1); w.Expected() != 0 || !w.Stable() {
		t.Fatalf("no arrivals should mean no wait, got %+v", w)
	}
}

func TestLittlesLaw(t *testing.T) {
	if got := LittleConcurrency(3, 2.5); got != 7.5 {
		t.Errorf("L = λW = %g, want 7.5", got)
	}
	if got := LittleRate(8, 1.25); got != 6.4 {
		t.Errorf("λ = L/W = %g, want 6.4", got)
	}
	if got := LittleRate(8, 0); !math.IsInf(got, 1) {
		t.Errorf("rate with zero time = %g, want +Inf", got)
	}
}
