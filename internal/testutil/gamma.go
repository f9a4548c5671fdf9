package testutil

import (
	"math"
	"math/rand/v2"
)

// GammaDraw is a Gamma(k, 1) draw (Marsaglia and Tsang, ACM TOMS 26(3),
// 2000), boosted by U^{1/k} for k < 1: the tests' own generator of gamma
// gaps, apart from the one the product's simulation draws with, so that
// the event-by-event simulations of the tests stay independent of it.
func GammaDraw(r *rand.Rand, k float64) float64 {
	if k < 1 {
		return GammaDraw(r, k+1) * math.Pow(r.Float64(), 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		if math.Log(r.Float64()) < x*x/2+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}
