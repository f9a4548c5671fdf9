package model

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/optimize"
)

// USL is Gunther's Universal Scalability Law fitted to measured throughput,
// X(N) = γN / (1 + α(N−1) + βN(N−1)) (Gunther, Guerrilla Capacity Planning,
// Springer 2007, ch. 4): α is contention, β coherency delay, γ the throughput
// of one request stream.
type USL struct {
	Alpha float64 `json:"alpha"`
	Beta  float64 `json:"beta"`
	Gamma float64 `json:"gamma"`
	R2    float64 `json:"r2"` // coefficient of determination of the fit
}

// Throughput is X(N), the predicted requests per second at concurrency n.
func (u USL) Throughput(n float64) float64 {
	return u.Gamma * n / (1 + u.Alpha*(n-1) + u.Beta*n*(n-1))
}

// Peak is N* = sqrt((1 − α)/β), the concurrency of maximum throughput; ok is
// false when the law has no finite peak (β = 0 or α ≥ 1).
func (u USL) Peak() (n float64, ok bool) {
	if u.Beta <= 0 || u.Alpha >= 1 {
		return 0, false
	}
	return math.Sqrt((1 - u.Alpha) / u.Beta), true
}

// FitUSL fits the law to throughput x measured at concurrencies n by least
// squares, with α, β ≥ 0. For given α and β the best γ is linear,
// γ = Σxᵢgᵢ / Σgᵢ² with gᵢ = Nᵢ/(1 + α(Nᵢ−1) + βNᵢ(Nᵢ−1)), so only α and β
// are searched (Nelder–Mead from gonum/optimize over α = s², β = t², from a
// small grid of starting points). It needs at least three points with
// distinct concurrencies.
func FitUSL(n, x []float64) (USL, error) {
	if len(n) != len(x) {
		return USL{}, fmt.Errorf("usl: %d concurrencies but %d throughputs", len(n), len(x))
	}
	distinct := map[float64]bool{}
	for i := range n {
		if !(n[i] > 0) || !(x[i] >= 0) || math.IsInf(n[i], 0) || math.IsInf(x[i], 0) {
			return USL{}, fmt.Errorf("usl: point %d (N=%g, X=%g) is not positive and finite", i, n[i], x[i])
		}
		distinct[n[i]] = true
	}
	if len(distinct) < 3 {
		return USL{}, errors.New("usl: needs at least three distinct concurrencies")
	}
	gammaFor := func(alpha, beta float64) (gamma, ss float64) {
		var sxg, sgg float64
		for i := range n {
			g := n[i] / (1 + alpha*(n[i]-1) + beta*n[i]*(n[i]-1))
			sxg += x[i] * g
			sgg += g * g
		}
		gamma = sxg / sgg
		for i := range n {
			r := x[i] - gamma*n[i]/(1+alpha*(n[i]-1)+beta*n[i]*(n[i]-1))
			ss += r * r
		}
		return gamma, ss
	}
	objective := func(p []float64) float64 {
		_, ss := gammaFor(p[0]*p[0], p[1]*p[1])
		return ss
	}
	best, bestSS := []float64{0, 0}, math.Inf(1)
	for _, a := range []float64{0, 0.1, 0.5} {
		for _, b := range []float64{0, 1e-3, 1e-1} {
			start := []float64{math.Sqrt(a), math.Sqrt(b)}
			res, err := optimize.Minimize(optimize.Problem{Func: objective}, start,
				&optimize.Settings{FuncEvaluations: 2000, Converger: &optimize.FunctionConverge{Relative: 1e-12, Iterations: 60}},
				&optimize.NelderMead{SimplexSize: 0.05})
			if err != nil || res == nil {
				continue
			}
			if res.F < bestSS {
				best, bestSS = res.X, res.F
			}
		}
	}
	if math.IsInf(bestSS, 1) {
		return USL{}, errors.New("usl: the fit did not converge")
	}
	u := USL{Alpha: best[0] * best[0], Beta: best[1] * best[1]}
	u.Gamma, bestSS = gammaFor(u.Alpha, u.Beta)
	var mean, ssTot float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		ssTot += (v - mean) * (v - mean)
	}
	switch {
	case ssTot > 0:
		u.R2 = 1 - bestSS/ssTot
	case bestSS <= 1e-12*mean*mean:
		u.R2 = 1
	}
	return u, nil
}
