package model

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/interp"
)

// LatencyPoint is one measured point of a latency-versus-concurrency curve,
// in seconds and requests per second.
type LatencyPoint struct {
	Concurrency      float64
	TTFTP50, TTFTP95 float64
	TPOTP50, TPOTP95 float64
	Throughput       float64 // completed requests per second; 0 when unknown
	Weight           float64 // how many requests the point stands for; 0 counts as 1
}

// Curve predicts TTFT and TPOT at any concurrency from measured points.
// Inside the measured range each percentile series is interpolated with the
// monotone Fritsch–Butland cubic (Fritsch and Butland, SIAM J. Sci. Stat.
// Comput. 5(2), 1984; gonum/interp). Latency does not fall as concurrency
// grows, so each series is first fitted by isotonic regression (Isotonic,
// weighted by the requests each point stands for): a dip between steps is
// noise, averaged with its neighbours, rather than one noisy step's value
// spread to every higher concurrency as a running maximum would. Below the first point the first
// point holds. Above the last point latency grows as the closed-system
// response time N/X(N) of the Universal Scalability Law fitted to the
// throughput (or, with fewer than three throughput points, as if throughput
// stayed flat, R ∝ N), and the prediction is flagged as extrapolated.
type Curve struct {
	lo, hi                         float64
	ttft50, ttft95, tpot50, tpot95 interp.Predictor
	last                           LatencyPoint
	usl                            USL
	hasUSL                         bool
}

// NewCurve builds the predictor from at least one point; points may come in
// any order but concurrencies must be distinct, positive, and every
// percentile must be positive with p95 ≥ p50.
func NewCurve(points []LatencyPoint) (*Curve, error) {
	if len(points) == 0 {
		return nil, errors.New("curve: no points")
	}
	ps := slices.Clone(points)
	slices.SortFunc(ps, func(a, b LatencyPoint) int { return cmp.Compare(a.Concurrency, b.Concurrency) })
	for i, p := range ps {
		if !(p.Concurrency > 0) || !(p.TTFTP50 > 0) || !(p.TPOTP50 > 0) || p.TTFTP95 < p.TTFTP50 || p.TPOTP95 < p.TPOTP50 {
			return nil, fmt.Errorf("curve: point at concurrency %g needs positive latencies with p95 >= p50", p.Concurrency)
		}
		if i > 0 && p.Concurrency == ps[i-1].Concurrency {
			return nil, fmt.Errorf("curve: concurrency %g appears twice", p.Concurrency)
		}
	}
	// Each series made monotone by isotonic regression, then p95 kept at
	// or above p50.
	weights := make([]float64, len(ps))
	for i, p := range ps {
		weights[i] = math.Max(1, p.Weight)
	}
	for _, get := range []func(*LatencyPoint) *float64{
		func(p *LatencyPoint) *float64 { return &p.TTFTP50 },
		func(p *LatencyPoint) *float64 { return &p.TTFTP95 },
		func(p *LatencyPoint) *float64 { return &p.TPOTP50 },
		func(p *LatencyPoint) *float64 { return &p.TPOTP95 },
	} {
		ys := make([]float64, len(ps))
		for i := range ps {
			ys[i] = *get(&ps[i])
		}
		for i, y := range Isotonic(ys, weights) {
			*get(&ps[i]) = y
		}
	}
	for i := range ps {
		ps[i].TTFTP95 = math.Max(ps[i].TTFTP95, ps[i].TTFTP50)
		ps[i].TPOTP95 = math.Max(ps[i].TPOTP95, ps[i].TPOTP50)
	}
	c := &Curve{lo: ps[0].Concurrency, hi: ps[len(ps)-1].Concurrency, last: ps[len(ps)-1]}
	xs := make([]float64, len(ps))
	series := make([][]float64, 4)
	for i := range series {
		series[i] = make([]float64, len(ps))
	}
	var un, ux []float64
	for i, p := range ps {
		xs[i] = p.Concurrency
		series[0][i], series[1][i], series[2][i], series[3][i] = p.TTFTP50, p.TTFTP95, p.TPOTP50, p.TPOTP95
		if p.Throughput > 0 {
			un = append(un, p.Concurrency)
			ux = append(ux, p.Throughput)
		}
	}
	preds := make([]interp.Predictor, 4)
	for i, ys := range series {
		if len(xs) == 1 {
			preds[i] = interp.Constant(ys[0])
			continue
		}
		fb := &interp.FritschButland{}
		if err := fb.Fit(xs, ys); err != nil {
			return nil, fmt.Errorf("curve: interpolation: %w", err)
		}
		preds[i] = fb
	}
	c.ttft50, c.ttft95, c.tpot50, c.tpot95 = preds[0], preds[1], preds[2], preds[3]
	if u, err := FitUSL(un, ux); err == nil && u.Gamma > 0 {
		c.usl, c.hasUSL = u, true
	}
	return c, nil
}

// USL returns the law fitted to the curve's throughput, if there was one.
func (c *Curve) USL() (USL, bool) { return c.usl, c.hasUSL }

// Range is the lowest and highest measured concurrency.
func (c *Curve) Range() (lo, hi float64) { return c.lo, c.hi }

// At returns the TTFT and TPOT distributions (lognormal from the interpolated
// p50 and p95) at concurrency n, and whether n lies outside the measured range.
func (c *Curve) At(n float64) (ttft, tpot Dist, extrapolated bool) {
	var t50, t95, v50, v95 float64
	switch {
	case n > c.hi:
		r := c.growth(n)
		t50, t95, v50, v95 = c.last.TTFTP50*r, c.last.TTFTP95*r, c.last.TPOTP50*r, c.last.TPOTP95*r
	default:
		x := math.Max(n, c.lo)
		t50, t95, v50, v95 = c.ttft50.Predict(x), c.ttft95.Predict(x), c.tpot50.Predict(x), c.tpot95.Predict(x)
	}
	ttft = lognormalOrFixed(t50, math.Max(t95, t50))
	tpot = lognormalOrFixed(v50, math.Max(v95, v50))
	return ttft, tpot, n < c.lo || n > c.hi
}

// growth is the factor by which latency at concurrency n exceeds latency at
// the last measured point: the ratio of closed-system response times
// R(N) = N/X(N) (Little's Law), never below 1.
func (c *Curve) growth(n float64) float64 {
	r := n / c.hi
	if c.hasUSL {
		xn, xh := c.usl.Throughput(n), c.usl.Throughput(c.hi)
		if xn > 0 && xh > 0 {
			r = (n / xn) / (c.hi / xh)
		} else {
			r = maxGrowth
		}
	}
	return math.Min(maxGrowth, math.Max(1, r))
}

// maxGrowth caps how far extrapolated latency may grow beyond the last
// measured point: past the USL's throughput collapse the model has nothing
// to say but "far slower", and a cap keeps every product finite.
const maxGrowth = 1e6

// lognormalOrFixed fits p50 and p95 that are already known to be valid.
func lognormalOrFixed(p50, p95 float64) Dist {
	d, err := LognormalP50P95(p50, p95)
	if err != nil {
		return Fixed(p50)
	}
	return d
}

// Isotonic is the non-decreasing sequence closest to ys in weighted least
// squares, by the pool-adjacent-violators algorithm (Ayer et al., Ann.
// Math. Statist. 26(4), 1955; Barlow et al., Statistical Inference under
// Order Restrictions, 1972): adjacent values that decrease are pooled into
// their weighted mean until none does. weights must be positive.
func Isotonic(ys, weights []float64) []float64 {
	type block struct {
		mean, weight float64
		n            int
	}
	var blocks []block
	for i, y := range ys {
		blocks = append(blocks, block{y, weights[i], 1})
		for len(blocks) > 1 {
			a, b := blocks[len(blocks)-2], blocks[len(blocks)-1]
			if a.mean <= b.mean {
				break
			}
			w := a.weight + b.weight
			blocks = append(blocks[:len(blocks)-2], block{(a.mean*a.weight + b.mean*b.weight) / w, w, a.n + b.n})
		}
	}
	out := make([]float64, 0, len(ys))
	for _, b := range blocks {
		for range b.n {
			out = append(out, b.mean)
		}
	}
	return out
}
