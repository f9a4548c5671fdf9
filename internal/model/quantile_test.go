package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestQuantileMatchesNumpyLinear(t *testing.T) {
	tests := []struct {
		xs   []float64
		p    float64
		want float64
	}{
		// numpy.quantile(xs, p) with the default method "linear".
		{[]float64{1, 2, 3, 4}, 0.95, 3.85},
		{[]float64{15, 20, 35, 40, 50}, 0.4, 29},
		{[]float64{15, 20, 35, 40, 50}, 0.5, 35},
		{[]float64{3, 1, 2}, 0, 1},
		{[]float64{3, 1, 2}, 1, 3},
		{[]float64{7}, 0.95, 7},
		{[]float64{10, 20}, 0.95, 19.5},
	}
	for _, tt := range tests {
		if got := quantile(tt.xs, tt.p); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("quantile(%v, %g) = %g, want %g", tt.xs, tt.p, got, tt.want)
		}
	}
	if !math.IsNaN(quantile(nil, 0.5)) {
		t.Error("Quantile of nothing should be NaN")
	}
}

func TestSelectKAgreesWithSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 1 + r.IntN(300)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(r.IntN(20)) // many ties
		}
		sorted := slices.Sorted(slices.Values(xs))
		k := r.IntN(n)
		if got := selectK(slices.Clone(xs), k); got != sorted[k] {
			t.Fatalf("trial %d: selectK(k=%d) = %g, want %g", trial, k, got, sorted[k])
		}
	}
}

// TestSelectKPartitionsLargeSpans: on spans long enough to be sampled
// first, the k-th value is the sorted one and no value before it is
// larger, none after it smaller, with ties, infinities, sorted and
// reversed input, and k at both ends.
func TestSelectKPartitionsLargeSpans(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 60 {
		n := selectSample + 1 + r.IntN(40_000)
		xs := make([]float64, n)
		for i := range xs {
			switch trial % 4 {
			case 0:
				xs[i] = float64(r.IntN(7)) // few distinct values
			case 1:
				xs[i] = r.ExpFloat64()
				if r.IntN(50) == 0 {
					xs[i] = math.Inf(1)
				}
			case 2:
				xs[i] = float64(i) // sorted
			default:
				xs[i] = float64(n - i) // reversed
			}
		}
		sorted := slices.Sorted(slices.Values(xs))
		for _, k := range []int{0, r.IntN(n), n * 95 / 100, n - 1} {
			a := slices.Clone(xs)
			got := selectK(a, k)
			if got != sorted[k] {
				t.Fatalf("trial %d, n %d: selectK(k=%d) = %g, want %g", trial, n, k, got, sorted[k])
			}
			if m := slices.Max(a[:k+1]); m > got {
				t.Fatalf("trial %d, n %d, k %d: %g before the k-th value %g", trial, n, k, m, got)
			}
			if m := slices.Min(a[k:]); m < got {
				t.Fatalf("trial %d, n %d, k %d: %g after the k-th value %g", trial, n, k, m, got)
			}
		}
	}
}

// BenchmarkQuantilesSelect is the p50, p95 and p99 of 100,000 samples,
// the most a simulated class keeps.
func BenchmarkQuantilesSelect(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	xs := make([]float64, 100_000)
	for i := range xs {
		xs[i] = r.ExpFloat64()
	}
	a := make([]float64, len(xs))
	for b.Loop() {
		copy(a, xs)
		QuantilesSelect(a, 0.5, 0.95, 0.99)
	}
}

// quantile is QuantileSorted of an unsorted sample, which it leaves unchanged.
func quantile(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return QuantileSorted(s, p)
}

// TestQuantileSelectAgreesWithSort: the selected quantile is the sorted
// one, to the bit, for ties, interpolation and both ends.
func TestQuantileSelectAgreesWithSort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 300 {
		n := 1 + r.IntN(400)
		xs := make([]float64, n)
		for i := range xs {
			if trial%2 == 0 {
				xs[i] = float64(r.IntN(30)) // many ties
			} else {
				xs[i] = r.ExpFloat64()
			}
		}
		ps := []float64{0, 0.05, 0.5, 0.95, 0.99, 1}
		all := QuantilesSelect(slices.Clone(xs), ps...)
		for j, p := range ps {
			want := quantile(xs, p)
			if got := QuantileSelect(slices.Clone(xs), p); got != want {
				t.Fatalf("trial %d, n %d, p %g: %g, want %g", trial, n, p, got, want)
			}
			if all[j] != want {
				t.Fatalf("trial %d, n %d, p %g among several: %g, want %g", trial, n, p, all[j], want)
			}
		}
	}
	if !math.IsNaN(QuantileSelect(nil, 0.5)) {
		t.Error("QuantileSelect of nothing should be NaN")
	}
}
