package signed

import (
	"math"
	"testing"
)

func TestFixed(t *testing.T) {
	for _, tc := range []struct {
		v      float64
		digits int
		want   string
	}{
		{0, 1, "+0.0"},
		{math.Copysign(0, -1), 1, "+0.0"},
		{-0.04, 1, "+0.0"},
		{-0.05000001, 1, "-0.1"},
		{0.04, 1, "+0.0"},
		{12.345, 1, "+12.3"},
		{-3.25, 1, "-3.2"},
		{-100, 1, "-100.0"},
		{-0.4, 0, "+0"},
		{-0.6, 0, "-1"},
		{1e6, 0, "+1000000"},
		{math.Inf(1), 1, "+Inf"},
		{math.Inf(-1), 1, "-Inf"},
	} {
		if got := Fixed(tc.v, tc.digits); got != tc.want {
			t.Errorf("Fixed(%v, %d) = %q, want %q", tc.v, tc.digits, got, tc.want)
		}
	}
	if got := Pct(-0.03); got != "+0.0 %" {
		t.Errorf("Pct(-0.03) = %q", got)
	}
}

// TestRoundHasNoNegativeZero: Round keeps d decimals, half away from
// zero, and a value that rounds to zero from below is +0.
func TestRoundHasNoNegativeZero(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		d    int
		want float64
	}{
		{1.23456, 2, 1.23},
		{-1.235, 2, -1.24},
		{2.5, 0, 3},
		{-0.004, 2, 0},
		{-0.00004, 4, 0},
		{0, 1, 0},
	} {
		got := Round(tc.v, tc.d)
		if got != tc.want || math.Signbit(got) != math.Signbit(tc.want) {
			t.Errorf("Round(%g, %d) = %g (sign bit %v), want %g", tc.v, tc.d, got, math.Signbit(got), tc.want)
		}
	}
}
