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
// returns a[k]. It is Hoare's quickselect with a median-of-three pivot:
// O(len(a)) on average and deterministic.
func selectK(a []float64, k int) float64 {
	lo, hi := 0, len(a)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] < a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] < a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		pivot := a[mid]
		i, j := lo, hi
		for i <= j {
			for a[i] < pivot {
				i++
			}
			for a[j] > pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return a[k]
		}
	}
	return a[k]
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
