package model

import (
	"math"
)

// QuantileSorted returns the p-quantile of sorted (ascending) by linear
// interpolation between order statistics, Hyndman and Fan's type 7 (the
// default of numpy.quantile and R): with h = (n−1)·p,
// Q = x(⌊h⌋) + (h − ⌊h⌋)·(x(⌊h⌋+1) − x(⌊h⌋)). An empty slice gives NaN.
func QuantileSorted(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	k, frac := quantileRank(n, p)
	if frac == 0 || k+1 >= n {
		return sorted[k]
	}
	return sorted[k] + frac*(sorted[k+1]-sorted[k])
}

// quantileRank splits the type-7 position h = (n−1)·p into its integer and
// fractional parts, with p clamped to [0, 1].
func quantileRank(n int, p float64) (int, float64) {
	p = math.Min(1, math.Max(0, p))
	h := float64(n-1) * p
	k := int(math.Floor(h))
	if k >= n-1 {
		return n - 1, 0
	}
	return k, h - float64(k)
}

// selectK reorders a so that a[k] holds the value it would hold if a were
// sorted, with no larger value before it and no smaller value after it, and
// returns a[k]. It is Floyd and Rivest's SELECT (Commun. ACM 18(3), 1975,
// Algorithm 489): on a span of more than selectSample values it first
// selects within a sample span around where a[k] is expected to fall, so
// that the value it partitions the whole span on lands close to k, which
// takes about n + min(k, n − k) comparisons where Hoare's quickselect
// takes two to three n; smaller spans are partitioned on a[k] itself.
// Deterministic, and exact: ties and infinities are ordered as by <.
func selectK(a []float64, k int) float64 {
	floydRivest(a, 0, len(a)-1, k)
	return a[k]
}

// selectSample is the span above which floydRivest selects within a
// sample first (the constant of Algorithm 489).
const selectSample = 600

// floydRivest is SELECT on a[left..right], k within them.
func floydRivest(a []float64, left, right, k int) {
	for right > left {
		if right-left > selectSample {
			// A span of s values around k's expected place, s = n^(2/3)/2,
			// offset by about two standard deviations of where the k-th
			// of n falls in it, toward the middle.
			n := float64(right - left + 1)
			i := float64(k - left + 1)
			z := math.Log(n)
			s := 0.5 * math.Exp(2*z/3)
			sd := 0.5 * math.Sqrt(z*s*(n-s)/n)
			if i < n/2 {
				sd = -sd
			}
			lo := max(left, int(float64(k)-i*s/n+sd))
			hi := min(right, int(float64(k)+(n-i)*s/n+sd))
			floydRivest(a, lo, hi, k)
		}
		t := a[k]
		i, j := left, right
		a[left], a[k] = a[k], a[left]
		if a[right] > t {
			a[right], a[left] = a[left], a[right]
		}
		for i < j {
			a[i], a[j] = a[j], a[i]
			i++
			j--
			for a[i] < t {
				i++
			}
			for a[j] > t {
				j--
			}
		}
		if a[left] == t {
			a[left], a[j] = a[j], a[left]
		} else {
			j++
			a[j], a[right] = a[right], a[j]
		}
		if j <= k {
			left = j + 1
		}
		if k <= j {
			right = j - 1
		}
	}
}

// QuantileSelect returns the p-quantile of a, type 7 as QuantileSorted,
// without sorting: a quickselect of the order statistic below the
// quantile's position and the smallest value above it, O(len(a)) on
// average. It reorders a. An empty slice gives NaN.
func QuantileSelect(a []float64, p float64) float64 {
	return QuantilesSelect(a, p)[0]
}

// QuantilesSelect is QuantileSelect at several levels in ascending order:
// each selection after the first searches only above the one before, so
// that p50, p95 and p99 together cost little more than one. It reorders
// a; ps must be ascending.
func QuantilesSelect(a []float64, ps ...float64) []float64 {
	out := make([]float64, len(ps))
	n := len(a)
	lo := 0
	for i, p := range ps {
		if n == 0 {
			out[i] = math.NaN()
			continue
		}
		k, frac := quantileRank(n, p)
		k = max(k, lo)
		v := selectK(a[lo:], k-lo)
		lo = k
		if frac == 0 || k+1 >= n {
			out[i] = v
			continue
		}
		next := a[k+1]
		for _, x := range a[k+2:] {
			if x < next {
				next = x
			}
		}
		out[i] = v + frac*(next-v)
	}
	return out
}
