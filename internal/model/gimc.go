package model

import "math"

// Renewal arrivals: the laws of inter-arrival gaps that a plan's queue
// considers (docs/concepts.md, "Queueing"). Each is given by
// the logarithm of its Laplace–Stieltjes transform A*(s) = E[e^{−sT}] for
// gaps T of mean 1/λ and squared coefficient of variation ca².

// logLSTGamma is ln A*(s) of gamma gaps of shape k = 1/ca² and mean 1/λ:
// A*(s) = (kλ/(kλ + s))^k.
func logLSTGamma(lambda, ca2, s float64) float64 {
	k := 1 / ca2
	return -k * math.Log1p(s/(k*lambda))
}

// logLSTSmooth is ln A*(s) of gaps smoother than Poisson (ca² < 1): gamma
// of shape 1/ca², and for ca² = 0, the gamma's limit, evenly spaced gaps
// of 1/λ, A*(s) = e^{−s/λ}. Where x = ca²·s/λ is below 1e-6 it is the
// gamma's to second order, −(s/λ)·(1 − x/2), which a tiny ca² (where
// s/(kλ) underflows to 0) also needs.
func logLSTSmooth(lambda, ca2, s float64) float64 {
	if x := ca2 * s / lambda; x < 1e-6 {
		return -s / lambda * (1 - x/2)
	}
	return logLSTGamma(lambda, ca2, s)
}

// logLSTH2 is ln A*(s) of two-phase hyperexponential gaps with balanced
// means (Whitt, "Approximating a point process by a renewal process, I",
// Oper. Res. 30(1), 1982): phase i is taken with probability pᵢ and has
// rate λᵢ = 2pᵢλ, p₁ = (1 + √((ca² − 1)/(ca² + 1)))/2, so that
// p₁/λ₁ = p₂/λ₂; A*(s) = p₁λ₁/(λ₁ + s) + p₂λ₂/(λ₂ + s). It needs ca² ≥ 1.
func logLSTH2(lambda, ca2, s float64) float64 {
	p1 := (1 + math.Sqrt((ca2-1)/(ca2+1))) / 2
	p2 := 1 - p1
	l1, l2 := 2*p1*lambda, 2*p2*lambda
	// ln(1 − (1 − A*(s))), which keeps its digits for small s.
	return math.Log1p(-(p1*s/(l1+s) + p2*s/(l2+s)))
}

// negligibleWait is ln(1/P(W > 0)) past which giMc stops adding terms.
const negligibleWait = 35

// giMc is the GI/M/c queue with c servers of rate μ and renewal arrivals
// of rate λ whose gaps have the transform exp(logLST(s)) (Takács,
// Introduction to the Theory of Queues, 1962, ch. 5; Gross and Harris,
// Fundamentals of Queueing Theory, §6.3): σ is the root in (0, 1) of
// σ = A*(cμ(1 − σ)); an arrival waits with probability
//
//	P(W > 0) = 1 / (1 + (1 − σ)·Σ_{j=1}^{c} binom(c, j)/(C_j(1 − β_j)) · (c(1 − β_j) − j)/(c(1 − σ) − j)),
//
// with β_j = A*(jμ) and C_j = Π_{i≤j} β_i/(1 − β_i); and the wait of those
// who wait is exponential with rate cμ(1 − σ). The sum's numerator and
// denominator change sign at the same j, so every term is positive, and
// it is added up in logarithms (binom(c, j)/C_j overflows for large c):
// the evaluation is stable for any c. It needs λ < cμ. For Poisson gaps
// it is Erlang C with σ = ρ; for one server P(W > 0) = σ.
func giMc(c int, lambda, mu float64, logLST func(s float64) float64) (pWait, theta float64) {
	cm := float64(c) * mu
	// σ by bisection on x = 1 − σ, in logarithms of x: g(x) = A*(cμx) −
	// (1 − x), written with expm1 to keep its digits near x = 0, is
	// positive at x = 1 and negative just above 0 when λ < cμ.
	g := func(x float64) float64 { return math.Expm1(logLST(cm*x)) + x }
	lo, hi := -60.0, 0.0 // ln x
	if g(math.Exp(lo)) >= 0 {
		return 1, math.Inf(1)
	}
	for range 100 {
		mid := (lo + hi) / 2
		if mid == lo || mid == hi {
			break // the bracket is two neighbouring floats: no halving moves it
		}
		if g(math.Exp(mid)) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	x := math.Exp(hi)
	lx := math.Log(x)
	cf := float64(c)
	var terms []float64
	logC, peak := 0.0, math.Inf(-1)
	lbin := 0.0 // ln binom(c, j), built up as ln binom(c, j−1) + ln((c − j + 1)/j)
	for j := 1; j <= c; j++ {
		jf := float64(j)
		lbin += math.Log((cf - jf + 1) / jf)
		lb := logLST(jf * mu)
		l1b := math.Log(-math.Expm1(lb)) // ln(1 − β_j)
		logC += lb - l1b
		num, den := cf*(-math.Expm1(lb))-jf, cf*x-jf
		var ratio float64
		if math.Abs(den) > 1e-6*cf {
			ratio = num / den
		} else {
			// Both vanish at j = c(1 − σ): the ratio's limit is −f′(j)
			// for f(j) = c(1 − A*(jμ)) − j, by a central difference.
			const h = 1e-4
			f := func(j float64) float64 { return cf*(-math.Expm1(logLST(j*mu))) - j }
			ratio = -(f(cf*x+h) - f(cf*x-h)) / (2 * h)
		}
		if !(ratio > 0) {
			continue // rounding at the sign change: a vanishing term
		}
		v := lbin - logC - l1b + math.Log(ratio)
		terms = append(terms, v)
		peak = math.Max(peak, v)
		if v < peak-50 {
			break // the terms fall once past their peak: the rest add nothing
		}
		if lx+peak > negligibleWait {
			// Every term is positive, so the sum is already past e^peak
			// and P(W > 0) below e^−35 ≈ 6e−16: the rest of the terms
			// could only make it smaller. Light traffic on many servers
			// stops here instead of adding up all c terms.
			break
		}
	}
	s := logSumExp(terms)
	pWait = 1 / (1 + math.Exp(lx+s))
	return pWait, 1 / (cm * x)
}

// logSumExp is ln Σ e^{vᵢ}, −Inf for no values.
func logSumExp(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = math.Max(m, x)
	}
	if math.IsInf(m, 0) {
		return m
	}
	var s float64
	for _, x := range v {
		s += math.Exp(x - m)
	}
	return m + math.Log(s)
}
