package model

import (
	"cmp"
	"math"
	"slices"
	"testing"
)

// TestTailMatchesBruteForce compares the tail shortcut with the quantile of
// the whole sample X + W for many wait laws.
func TestTailMatchesBruteForce(t *testing.T) {
	d := NewDraws(42, 5000)
	ttft, _ := LognormalP50P95(0.4, 0.9)
	tpot, _ := LognormalP50P95(0.022, 0.035)
	out, _ := LognormalP50P95(200, 600)
	s := Service{TTFT: ttft, TPOT: tpot, In: Fixed(800), Out: out.Clip(1, 800), Prefill: 0.0001}
	first, total := make([]float64, d.N), make([]float64, d.N)
	s.Fill(d, first, total)
	for _, p := range []float64{0.5, 0.9, 0.95, 0.99, 0.999} {
		tail := NewPacedTail(total, nil, d, p)
		for _, w := range []Wait{{}, {Prob: 0.01, Mean: 0.5}, {Prob: 0.3, Mean: 2}, {Prob: 0.9, Mean: 10}, {Prob: 0.05, Mean: 100}} {
			sum := make([]float64, d.N)
			for i := range sum {
				sum[i] = total[i]
				if d.U[i] < w.Prob {
					sum[i] += d.E[i] * w.Mean
				}
			}
			want := quantile(sum, p)
			if got := tail.Quantile(w); math.Abs(got-want) > 1e-12*want {
				t.Errorf("p=%g wait %+v: tail %g, brute force %g", p, w, got, want)
			}
			if got := QuantileWithWait(total, d, w, p, make([]float64, d.N)); math.Abs(got-want) > 1e-12*want {
				t.Errorf("p=%g wait %+v: one-off query %g, brute force %g", p, w, got, want)
			}
		}
	}
}

// TestTailTiesAndSmallSamples compares the tail with brute force where
// the rank-k value is tied (a fixed service time, answers clipped at
// max_tokens) and on samples too small for a subsample to bracket it.
func TestTailTiesAndSmallSamples(t *testing.T) {
	ttft, _ := LognormalP50P95(0.4, 0.9)
	out, _ := LognormalP50P95(200, 600)
	for _, tc := range []struct {
		name string
		n    int
		svc  Service
	}{
		{"fixed", 4000, Service{TTFT: Fixed(0.5), TPOT: Fixed(0.02), In: Fixed(1), Out: Fixed(100)}},
		{"clipped at max_tokens", 4000, Service{TTFT: Fixed(0.5), TPOT: Fixed(0.02), In: Fixed(1), Out: out.Clip(1, 300)}},
		{"seven draws", 7, Service{TTFT: ttft, TPOT: Fixed(0.02), In: Fixed(1), Out: out}},
		{"one draw", 1, Service{TTFT: ttft, TPOT: Fixed(0.02), In: Fixed(1), Out: out}},
	} {
		d := NewDraws(7, tc.n)
		first, total := make([]float64, d.N), make([]float64, d.N)
		tc.svc.Fill(d, first, total)
		for _, p := range []float64{0.5, 0.95, 0.99, 0.999} {
			tail := NewPacedTail(total, nil, d, p)
			for _, w := range []Wait{{}, {Prob: 0.2, Mean: 0.3}, {Prob: 0.6, Mean: 5}} {
				want := QuantileWithWait(total, d, w, p, make([]float64, d.N))
				if got := tail.Quantile(w); math.Abs(got-want) > 1e-12*want {
					t.Errorf("%s p=%g wait %+v: tail %g, brute force %g", tc.name, p, w, got, want)
				}
			}
		}
	}
}

// TestTailRareWaitsAreExact asks waits around the least of the draws'
// uniforms, where the tail answers without a query when no draw waits:
// every answer has the bits of the quantile over the whole sample, paced
// or not.
func TestTailRareWaitsAreExact(t *testing.T) {
	d := NewDraws(11, 3000)
	x, head := make([]float64, d.N), make([]float64, d.N)
	for i := range x {
		head[i] = math.Max(0, d.EP[i]-4)
		x[i] = 0.3*d.E[(i+1)%d.N] + head[i]
	}
	least := slices.Min(d.U)
	for _, h := range [][]float64{nil, head} {
		tail := NewPacedTail(x, h, d, 0.95)
		for _, prob := range []float64{1e-300, least / 2, math.Nextafter(least, 0), least, math.Nextafter(least, 1), 2 * least} {
			w := Wait{Prob: prob, Mean: 1e6}
			want := QuantileWithPacedWait(x, h, d, w, 0.95, make([]float64, d.N))
			if got := tail.Quantile(w); math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("paced %v, wait %+v: tail %v, whole sample %v", h != nil, w, got, want)
			}
		}
	}
}

// TestSparsePacedTailMatchesPacedTail holds the tail built from the
// unpaced tail's high draws and the draws with a head start to the tail
// built by a selection over the paced sample, bit for bit, over waits
// from none to every draw's: head starts on a few draws, some of them
// high draws, some lifting a low draw above the rank, with ties in X.
func TestSparsePacedTailMatchesPacedTail(t *testing.T) {
	d := NewDraws(21, 6000)
	x := make([]float64, d.N)
	for i := range x {
		x[i] = math.Round(40*d.E[(i+7)%d.N]) / 10 // ties at every value
	}
	for trial, share := range []float64{0, 0.001, 0.01, 0.05} {
		head := make([]float64, d.N)
		var at []int32
		for i := range head {
			if d.UP[i] < share {
				head[i] = 5 * d.EP[i]
				at = append(at, int32(i))
			}
		}
		paced := make([]float64, d.N)
		for i := range paced {
			paced[i] = x[i] + head[i]
		}
		for _, p := range []float64{0.5, 0.95, 0.99} {
			dense := NewPacedTail(paced, head, d, p)
			sparse := NewSparsePacedTail(NewPacedTail(x, nil, d, p), x, head, at, d)
			if !sparse.Sparse() || share >= 0.01 && sparse.Extra() == 0 {
				t.Fatalf("trial %d p=%g: sparse %v with %d extra of %d head starts", trial, p, sparse.Sparse(), sparse.Extra(), len(at))
			}
			for _, w := range []Wait{{}, {Prob: 1e-4, Mean: 3}, {Prob: 0.02, Mean: 1}, {Prob: 0.3, Mean: 4}, {Prob: 0.9, Mean: 20}, {Prob: 1, Mean: 0.5}} {
				want, got := dense.Quantile(w), sparse.Quantile(w)
				if math.Float64bits(got) != math.Float64bits(want) {
					t.Errorf("trial %d p=%g wait %+v: sparse %v, dense %v", trial, p, w, got, want)
				}
				if e1, e2 := dense.Estimate(w), sparse.Estimate(w); math.Float64bits(e1) != math.Float64bits(e2) {
					t.Errorf("trial %d p=%g wait %+v: estimates %v and %v", trial, p, w, e2, e1)
				}
			}
		}
	}
}

// TestSparsePacedWaitQuantileMatchesWholeSample holds the quantile of
// max(W + (1 − overlap)·D, D) selected among the draws with a pacing
// wait and those that wait for a slot to the selection over every draw,
// bit for bit, for overlaps of all, some and none of D: pacing
// waits on none, few and most draws, waits for a slot from none to every
// draw's, and percentiles whose ranks fall among the zeros, at their edge
// and above it.
func TestSparsePacedWaitQuantileMatchesWholeSample(t *testing.T) {
	dr := NewDraws(23, 5000)
	for _, share := range []float64{0, 0.003, 0.04, 0.6, 1} {
		d := make([]float64, dr.N)
		var at []int32
		for i := range d {
			if dr.UP[i] < share {
				d[i] = 2 * dr.EP[i]
				at = append(at, int32(i))
			}
		}
		for _, w := range []Wait{{}, {Prob: 1e-3, Mean: 0.5}, {Prob: 0.03, Mean: 1}, {Prob: 0.5, Mean: 3}, {Prob: 1, Mean: 0.2}, {Prob: 1, Mean: math.Inf(1)}} {
			// The rank just below the candidates: its neighbour above is
			// their least.
			zeros := 0
			for i := range d {
				if d[i] == 0 && !(dr.U[i] < w.Prob) {
					zeros++
				}
			}
			edge := (float64(zeros) - 0.5) / float64(dr.N-1)
			for _, overlap := range []float64{1, 0.3, 0} {
				h := make([]float64, dr.N)
				for i, v := range d {
					h[i] = overlap * v
				}
				for _, p := range []float64{0.5, 0.9, 0.95, 0.99, 0.9994, 1, edge} {
					want := QuantileWithPacedWait(d, h, dr, w, p, make([]float64, dr.N))
					got := QuantileWithSparsePacedWait(d, at, dr, w, overlap, p, make([]float64, dr.N))
					if math.Float64bits(got) != math.Float64bits(want) {
						t.Errorf("share %g, wait %+v, overlap %g, p=%g: %v, whole sample %v", share, w, overlap, p, got, want)
					}
				}
			}
		}
	}
}

// TestAscendingSortsUniforms holds the radix sort of the draws' uniforms
// to a stable sort by value: uniforms, ties, zeros and tiny values.
func TestAscendingSortsUniforms(t *testing.T) {
	d := NewDraws(5, 3000)
	for name, v := range map[string][]float64{
		"uniforms": d.U,
		"ties":     {0.5, 0, 0.25, 0.5, 1e-300, 0, 0.999, 0.25, 5e-324},
		"empty":    {},
	} {
		want := make([]int32, len(v))
		for i := range want {
			want[i] = int32(i)
		}
		slices.SortStableFunc(want, func(a, b int32) int { return cmp.Compare(v[a], v[b]) })
		if got := ascending(v); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", name, got[:min(len(got), 12)], want[:min(len(want), 12)])
		}
	}
}

// TestRankValue checks the bracketed selection against sorting, with a
// subsample that brackets the rank and one that misses it (the fallback).
func TestRankValue(t *testing.T) {
	d := NewDraws(3, 10000)
	x := slices.Clone(d.E)
	sorted := slices.Sorted(slices.Values(x))
	for _, k := range []int{0, 17, 5000, 9499, 9998, 9999} {
		for name, sample := range map[string][]float64{"subsample": subsample(x, nil), "misleading": slices.Repeat([]float64{100}, 512)} {
			v, above := rankValue(x, k, sample)
			wantAbove := len(x) - 1 - k
			if v != sorted[k] || above != wantAbove {
				t.Errorf("%s, rank %d: %g with %d above, want %g with %d", name, k, v, above, sorted[k], wantAbove)
			}
		}
	}
}

func TestTailUnstableWaitIsInfinite(t *testing.T) {
	d := NewDraws(1, 100)
	tail := NewPacedTail(slices.Repeat([]float64{1}, 100), nil, d, 0.95)
	if got := tail.Quantile(Wait{Prob: 1, Mean: math.Inf(1)}); !math.IsInf(got, 1) {
		t.Fatalf("unstable wait gave %g", got)
	}
}

func TestDrawsAreSeeded(t *testing.T) {
	a, b := NewDraws(9, 1000), NewDraws(9, 1000)
	if !slices.Equal(a.ZTTFT, b.ZTTFT) || !slices.Equal(a.E, b.E) {
		t.Fatal("same seed gave different draws")
	}
	if c := NewDraws(10, 1000); slices.Equal(a.ZOut, c.ZOut) {
		t.Fatal("different seeds gave the same draws")
	}
}

// TestServiceMomentsMatchSimulation checks E[S] and Var(S) against the
// Monte Carlo sample built from the same parts.
func TestServiceMomentsMatchSimulation(t *testing.T) {
	d := NewDraws(3, 200000)
	ttft, _ := LognormalP50P95(0.4, 0.9)
	tpot, _ := LognormalP50P95(0.022, 0.035)
	in, _ := LognormalP50P95(800, 2400)
	out, _ := LognormalP50P95(200, 600)
	s := Service{TTFT: ttft, TPOT: tpot, In: in, Out: out.Clip(1, 800), Prefill: 0.0002}
	first, total := make([]float64, d.N), make([]float64, d.N)
	s.Fill(d, first, total)
	var m, m2 float64
	for _, v := range total {
		m += v
		m2 += v * v
	}
	m /= float64(d.N)
	v := m2/float64(d.N) - m*m
	if rel := math.Abs(m-s.Mean()) / s.Mean(); rel > 0.005 {
		t.Errorf("E[S]: closed form %g, simulated %g", s.Mean(), m)
	}
	if rel := math.Abs(v-s.Var()) / s.Var(); rel > 0.03 {
		t.Errorf("Var(S): closed form %g, simulated %g", s.Var(), v)
	}
	if s.SCV() <= 0 {
		t.Errorf("cs² = %g, want > 0", s.SCV())
	}
	fixed := Service{TTFT: Fixed(0.2), TPOT: Fixed(0.02), In: Fixed(100), Out: Fixed(51)}
	if got := fixed.Mean(); math.Abs(got-1.2) > 1e-12 {
		t.Errorf("fixed E[S] = %g, want 0.2 + 0.02·50 = 1.2", got)
	}
	if fixed.SCV() != 0 {
		t.Errorf("fixed cs² = %g, want 0", fixed.SCV())
	}
}

// TestTailEstimateIsClose checks that the quick estimate stays near the
// exact Monte Carlo quantile across wait laws (it only guides searches).
func TestTailEstimateIsClose(t *testing.T) {
	d := NewDraws(8, 20000)
	ttft, _ := LognormalP50P95(0.4, 0.9)
	tpot, _ := LognormalP50P95(0.022, 0.035)
	out, _ := LognormalP50P95(200, 600)
	s := Service{TTFT: ttft, TPOT: tpot, In: Fixed(800), Out: out.Clip(1, 800)}
	first, total := make([]float64, d.N), make([]float64, d.N)
	s.Fill(d, first, total)
	for _, x := range [][]float64{first, total} {
		tail := NewPacedTail(x, nil, d, 0.95)
		for _, w := range []Wait{{Prob: 0.02, Mean: 1}, {Prob: 0.2, Mean: 0.5}, {Prob: 0.5, Mean: 3}, {Prob: 0.9, Mean: 20}} {
			exact, est := tail.Quantile(w), tail.Estimate(w)
			if math.Abs(est-exact)/exact > 0.1 {
				t.Errorf("wait %+v: estimate %g, exact %g", w, est, exact)
			}
		}
	}
}

func TestTailEstimateRareWaits(t *testing.T) {
	d := NewDraws(3, 2000)
	x := make([]float64, d.N)
	for i := range x {
		x[i] = 0.25 + 0.05*float64(i%7)
	}
	tail := NewPacedTail(x, nil, d, 0.95)
	for _, w := range []Wait{{Prob: 0.0016, Mean: 0.36}, {Prob: 1e-9, Mean: 1e-9}, {Prob: 0.04, Mean: 100}} {
		if est := tail.Estimate(w); math.IsInf(est, 0) || math.IsNaN(est) || est < tail.Quantile(Wait{}) {
			t.Errorf("wait %+v: estimate %g", w, est)
		}
	}
}

// TestServiceThirdMomentMatchesSimulation checks E[S³] against the Monte
// Carlo sample of the same service time.
func TestServiceThirdMomentMatchesSimulation(t *testing.T) {
	d := NewDraws(5, 400000)
	ttft, _ := LognormalP50P95(0.4, 0.9)
	tpot, _ := LognormalP50P95(0.022, 0.035)
	in, _ := LognormalP50P95(800, 2400)
	out, _ := LognormalP50P95(200, 600)
	s := Service{TTFT: ttft, TPOT: tpot, In: in, Out: out.Clip(1, 800), Prefill: 0.0002}
	first, total := make([]float64, d.N), make([]float64, d.N)
	s.Fill(d, first, total)
	var m1, m2, m3 float64
	for _, x := range total {
		m1 += x
		m2 += x * x
		m3 += x * x * x
	}
	n := float64(d.N)
	e1, e2, e3 := s.Moments()
	for _, c := range []struct {
		name       string
		exact, sim float64
		tol        float64
	}{{"E[S]", e1, m1 / n, 0.003}, {"E[S²]", e2, m2 / n, 0.01}, {"E[S³]", e3, m3 / n, 0.03}} {
		if rel := math.Abs(c.exact-c.sim) / c.exact; rel > c.tol {
			t.Errorf("%s: exact %g, simulated %g", c.name, c.exact, c.sim)
		}
	}
}

// QuantileWithWait is the p-quantile (type 7) of X + W over the draws, where
// the i-th draw waits E[i]·w.Mean when U[i] < w.Prob: the same value a Tail
// gives, for one query without building a Tail. scratch must have length
// len(x) and is overwritten.
func QuantileWithWait(x []float64, d *Draws, w Wait, p float64, scratch []float64) float64 {
	return QuantileWithPacedWait(x, nil, d, w, p, scratch)
}
