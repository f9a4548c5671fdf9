package simulate

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

func times(a arrivals) []float64 {
	var out []float64
	for {
		t, ok := a.next()
		if !ok {
			return out
		}
		out = append(out, t)
	}
}

// TestRenewalGaps: the gaps of the arrival process have the demand's mean
// and the class's arrival_scv (0: evenly spaced; 1: Poisson; gamma
// otherwise).
func TestRenewalGaps(t *testing.T) {
	const rate, end = 5.0, 20000.0
	for _, ca2 := range []float64{0, 0.5, 1, 4} {
		ts := times(newRenewal(rate, ca2, nil, []span{{0, end}}, end, rand.NewPCG(1, 2)))
		gaps := make([]float64, len(ts))
		prev := 0.0
		for i, t := range ts {
			gaps[i], prev = t-prev, t
		}
		var mean, m2 float64
		for _, g := range gaps {
			mean += g
		}
		mean /= float64(len(gaps))
		for _, g := range gaps {
			m2 += (g - mean) * (g - mean)
		}
		scv := m2 / float64(len(gaps)-1) / (mean * mean)
		n := float64(len(ts))
		if want := rate * end; math.Abs(n-want) > 4*math.Sqrt(want*math.Max(ca2, 0.01)) {
			t.Errorf("ca² %g: %g arrivals in %g s, want about %g", ca2, n, end, want)
		}
		if math.Abs(scv-ca2) > 0.05*math.Max(ca2, 0.2) {
			t.Errorf("ca² %g: gaps have scv %.4f", ca2, scv)
		}
	}
}

// TestProfileWindows: evenly spaced arrivals (ca² = 0) at 2 req/s with the
// rate tripled in [100, 200) and paused in [300, 350) come exactly rate ×
// factor × length to a window.
func TestProfileWindows(t *testing.T) {
	profile := []scenario.DemandWindow{{StartS: 100, DurationS: 100, Factor: 3}, {StartS: 300, DurationS: 50, Factor: 0}}
	ts := times(newRenewal(2, 0, profile, []span{{0, 400}}, 400, rand.NewPCG(1, 2)))
	count := func(from, to float64) int {
		n := 0
		for _, t := range ts {
			if t > from && t <= to {
				n++
			}
		}
		return n
	}
	for _, w := range []struct {
		from, to float64
		want     int
	}{{0, 100, 200}, {100, 200, 600}, {200, 300, 200}, {300, 350, 0}, {350, 400, 100}} {
		if got := count(w.from, w.to); got != w.want {
			t.Errorf("(%g, %g]: %d arrivals, want %d", w.from, w.to, got, w.want)
		}
	}
	if len(ts) != 1100 {
		t.Errorf("%d arrivals, want 1,100", len(ts))
	}
}

func TestReplayOrdersAndCuts(t *testing.T) {
	ts := times(newReplay([]float64{3, 1, 2, 10, 2}, 3))
	if len(ts) != 4 || ts[0] != 1 || ts[3] != 3 {
		t.Errorf("replay %v, want [1 2 2 3]", ts)
	}
}
