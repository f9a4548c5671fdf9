package model

import (
	"math"
	"testing"
)

// TestTrendZByHand checks the Cochran–Armitage statistic against a hand
// computation: scores 0, 1, 2, 100 trials each, 0, 10 and 20 events:
// p = 0.1, s̄ = 1, Σx(s − s̄) = 20, Σn(s − s̄)² = 200,
// Z = 20 / √(0.09·200) = 4.714.
func TestTrendZByHand(t *testing.T) {
	z, ok := TrendZ([]Group{{0, 100, 0}, {1, 100, 10}, {2, 100, 20}})
	if want := 20 / math.Sqrt(0.09*200); !ok || math.Abs(z-want) > 1e-9 {
		t.Errorf("z = %g (%v), want %g", z, ok, want)
	}
}

func TestTrendZUndefined(t *testing.T) {
	for name, gs := range map[string][]Group{
		"one score":   {{1, 100, 3}, {1, 50, 2}},
		"no event":    {{0, 100, 0}, {1, 100, 0}},
		"only events": {{0, 10, 10}, {1, 10, 10}},
		"no trials":   {{0, 0, 0}, {1, 0, 0}},
	} {
		if z, ok := TrendZ(gs); ok {
			t.Errorf("%s: z = %g, want no test", name, z)
		}
	}
}

// TestTrendZFlatShare: the same share at every score gives Z = 0.
func TestTrendZFlatShare(t *testing.T) {
	z, ok := TrendZ([]Group{{0, 200, 10}, {1, 200, 10}, {2, 200, 10}})
	if !ok || math.Abs(z) > 1e-12 {
		t.Errorf("z = %g (%v), want 0", z, ok)
	}
}
