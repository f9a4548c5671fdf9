package model

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Z95 is the 0.95 quantile of the standard normal distribution, used to fit a
// lognormal to a median and a 95th percentile.
const Z95 = 1.6448536269514722

type distKind uint8

const (
	kindFixed distKind = iota
	kindLognormal
	kindEmpirical
)

// Dist is a non-negative random quantity (a token count or a time), possibly
// clipped to [lo, hi]. It is one of: a fixed value, a lognormal, or an
// empirical distribution of samples. Moments are exact (closed form for the
// clipped lognormal), so that E[S] and Var(S) need no simulation.
type Dist struct {
	kind      distKind
	v         float64   // fixed value
	mu, sigma float64   // lognormal parameters of ln X
	sorted    []float64 // empirical samples, ascending
	lo, hi    float64   // clip bounds; hi is +Inf when unclipped
}

// Fixed is a distribution that always takes the value v.
func Fixed(v float64) Dist { return Dist{kind: kindFixed, v: v, hi: math.Inf(1)} }

// LognormalP50P95 fits a lognormal to its median and 95th percentile:
// μ = ln p50 and σ = ln(p95/p50) / z0.95 with z0.95 = 1.6448536.
// Equal percentiles give a fixed value.
func LognormalP50P95(p50, p95 float64) (Dist, error) {
	if !(p50 > 0) || !(p95 >= p50) || math.IsInf(p95, 0) {
		return Dist{}, fmt.Errorf("lognormal needs 0 < p50 <= p95 < Inf, got p50=%g p95=%g", p50, p95)
	}
	if p95 == p50 {
		return Fixed(p50), nil
	}
	return Dist{kind: kindLognormal, mu: math.Log(p50), sigma: math.Log(p95/p50) / Z95, hi: math.Inf(1)}, nil
}

// LognormalMeanStd fits a lognormal by matching its mean and standard
// deviation: σ² = ln(1 + sd²/mean²) and μ = ln mean − σ²/2.
// A standard deviation of zero gives a fixed value.
func LognormalMeanStd(mean, sd float64) (Dist, error) {
	if !(mean > 0) || !(sd >= 0) || math.IsInf(mean, 0) || math.IsInf(sd, 0) {
		return Dist{}, fmt.Errorf("lognormal needs mean > 0 and stddev >= 0, got mean=%g stddev=%g", mean, sd)
	}
	if sd == 0 {
		return Fixed(mean), nil
	}
	s2 := math.Log1p(sd * sd / (mean * mean))
	return Dist{kind: kindLognormal, mu: math.Log(mean) - s2/2, sigma: math.Sqrt(s2), hi: math.Inf(1)}, nil
}

// Empirical is the distribution of the given samples (copied), each with
// equal weight.
func Empirical(samples []float64) (Dist, error) {
	if len(samples) == 0 {
		return Dist{}, errors.New("empirical distribution needs at least one sample")
	}
	s := slices.Clone(samples)
	for _, x := range s {
		if !(x >= 0) || math.IsInf(x, 0) {
			return Dist{}, fmt.Errorf("samples must be finite and non-negative, got %g", x)
		}
	}
	slices.Sort(s)
	return Dist{kind: kindEmpirical, sorted: s, hi: math.Inf(1)}, nil
}

// Clip returns the distribution of min(max(X, lo), hi), narrowing any clip
// already applied.
func (d Dist) Clip(lo, hi float64) Dist {
	d.lo = math.Max(d.lo, lo)
	d.hi = math.Min(d.hi, hi)
	if d.lo > d.hi {
		d.lo = d.hi
	}
	return d
}

// Sigma is σ of a lognormal distribution and 0 for the other kinds.
func (d Dist) Sigma() float64 {
	if d.kind == kindLognormal {
		return d.sigma
	}
	return 0
}

// clip bounds x to [lo, hi] (plain comparisons: x is never NaN here, and
// this sits in the Monte Carlo's inner loop).
func (d Dist) clip(x float64) float64 {
	if x < d.lo {
		return d.lo
	}
	if x > d.hi {
		return d.hi
	}
	return x
}

// Mean is E[X] of the clipped distribution.
func (d Dist) Mean() float64 { return d.moment(1) }

// SecondMoment is E[X²] of the clipped distribution.
func (d Dist) SecondMoment() float64 { return d.moment(2) }

// ThirdMoment is E[X³] of the clipped distribution.
func (d Dist) ThirdMoment() float64 { return d.moment(3) }

// Var is the variance of the clipped distribution.
func (d Dist) Var() float64 {
	m := d.Mean()
	return math.Max(0, d.SecondMoment()-m*m)
}

// moment returns E[X^k] for k = 1, 2 or 3. For the lognormal clipped to [a, b]:
// E[X^k] = a^k·P(X≤a) + b^k·P(X≥b) + e^{kμ+k²σ²/2}·(Φ(β−kσ) − Φ(α−kσ)),
// with α = (ln a − μ)/σ and β = (ln b − μ)/σ (the partial moments of the
// lognormal; Johnson, Kotz and Balakrishnan, Continuous Univariate
// Distributions, vol. 1, ch. 14).
func (d Dist) moment(k int) float64 {
	pow := func(x float64) float64 {
		switch k {
		case 1:
			return x
		case 2:
			return x * x
		}
		return x * x * x
	}
	switch d.kind {
	case kindFixed:
		return pow(d.clip(d.v))
	case kindEmpirical:
		var s float64
		for _, x := range d.sorted {
			s += pow(d.clip(x))
		}
		return s / float64(len(d.sorted))
	}
	kf := float64(k)
	alpha, beta := math.Inf(-1), math.Inf(1)
	if d.lo > 0 {
		alpha = (math.Log(d.lo) - d.mu) / d.sigma
	}
	if !math.IsInf(d.hi, 1) {
		beta = (math.Log(d.hi) - d.mu) / d.sigma
	}
	m := math.Exp(kf*d.mu+kf*kf*d.sigma*d.sigma/2) * (normCDF(beta-kf*d.sigma) - normCDF(alpha-kf*d.sigma))
	if d.lo > 0 {
		m += pow(d.lo) * normCDF(alpha)
	}
	if !math.IsInf(d.hi, 1) {
		m += pow(d.hi) * (1 - normCDF(beta))
	}
	return m
}

// Quantile is the p-quantile of the clipped distribution (type 7 for
// empirical samples).
func (d Dist) Quantile(p float64) float64 {
	switch d.kind {
	case kindFixed:
		return d.clip(d.v)
	case kindEmpirical:
		return d.clip(QuantileSorted(d.sorted, p))
	}
	return d.clip(math.Exp(d.mu + d.sigma*normQuantile(p)))
}

// Exceed is P(X > x) for the clipped distribution. The truncation risk of
// a max_tokens cap m is Exceed(m) of the output length before that cap: an
// answer of exactly m tokens is complete, one that would be longer is cut.
func (d Dist) Exceed(x float64) float64 {
	if x < d.lo {
		return 1
	}
	if x >= d.hi {
		return 0
	}
	switch d.kind {
	case kindFixed:
		if d.v > x {
			return 1
		}
		return 0
	case kindEmpirical:
		i, _ := slices.BinarySearch(d.sorted, math.Nextafter(x, math.Inf(1)))
		return float64(len(d.sorted)-i) / float64(len(d.sorted))
	}
	return 1 - normCDF((math.Log(x)-d.mu)/d.sigma)
}

// Sample maps a standard normal draw z to a value of the distribution,
// F⁻¹(Φ(z)), so that the same z always gives the same value and larger z
// never gives a smaller one (common random numbers across scenarios).
func (d *Dist) Sample(z float64) float64 {
	if d.kind == kindLognormal {
		// expInRange inlines where exp, with its fallback, is a call: a
		// simulated request draws four of these.
		x := d.mu + d.sigma*z
		if x > -700 && x < 700 {
			return d.clip(expInRange(x))
		}
		return d.clip(exp(x))
	}
	if d.kind == kindEmpirical {
		n := len(d.sorted)
		i := min(n-1, int(normCDF(z)*float64(n)))
		return d.clip(d.sorted[max(0, i)])
	}
	return d.clip(d.v)
}

// SampleAll maps every standard normal draw of z to a value (Sample).
func (d Dist) SampleAll(z []float64) []float64 {
	out := make([]float64, len(z))
	if d.kind != kindLognormal {
		for i, v := range z {
			out[i] = d.Sample(v)
		}
		return out
	}
	for i, v := range z {
		x := d.mu + d.sigma*v
		if x > -700 && x < 700 {
			out[i] = d.clip(expInRange(x))
		} else {
			out[i] = d.Sample(v)
		}
	}
	return out
}

// normCDF is Φ(x), the standard normal distribution function.
func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// normQuantile is Φ⁻¹(p).
func normQuantile(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }

// AppendKey appends a binary encoding of the distribution that identifies it
// exactly, for use as a cache key.
func (d Dist) AppendKey(b []byte) []byte {
	b = append(b, byte(d.kind))
	for _, v := range []float64{d.v, d.mu, d.sigma, d.lo, d.hi} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(d.sorted)))
	for _, v := range d.sorted {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}
