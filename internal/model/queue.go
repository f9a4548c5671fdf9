package model

import "math"

// ErlangC is the probability that an arrival has to wait in an M/M/c queue
// with c servers and offered load a = λ·E[S] erlangs. It uses the stable
// recursion of the Erlang B formula, B₀ = 1, Bₖ = a·Bₖ₋₁ / (k + a·Bₖ₋₁),
// then C = c·B_c / (c − a·(1 − B_c)) (Cooper, Introduction to Queueing
// Theory, 2nd ed., §3.4). It is 1 when c ≤ a (no steady state: every
// arrival waits) and 0 when a = 0.
func ErlangC(c int, a float64) float64 {
	if a <= 0 {
		return 0
	}
	if float64(c) <= a {
		return 1
	}
	b := 1.0
	for k := 1; k <= c; k++ {
		b = a * b / (float64(k) + a*b)
	}
	return float64(c) * b / (float64(c) - a*(1-b))
}

// Wait is the law of a client-side queue wait: zero with probability 1−Prob,
// otherwise exponential with mean Mean (seconds).
type Wait struct {
	Prob float64 // P(W > 0), the Erlang C probability
	Mean float64 // E[W | W > 0] = Wq / C
}

// Expected is E[W] = Prob·Mean, the mean wait Wq.
func (w Wait) Expected() float64 {
	if w.Prob == 0 {
		return 0
	}
	return w.Prob * w.Mean
}

// Stable reports whether the queue has a steady state (finite waits).
func (w Wait) Stable() bool { return w.Prob < 1 && !math.IsInf(w.Mean, 1) }

// QueueWait is the wait in an M/G/c queue with c servers, arrival rate λ,
// mean service time meanS, and squared coefficients of variation ca2 of the
// inter-arrival times and cs2 of the service time. Its mean is the
// Allen–Cunneen approximation Wq = C/(c/E[S] − λ) · (ca² + cs²)/2 (Allen,
// Probability, Statistics and Queueing Theory, 2nd ed., 1990, §6.3), exact
// for M/M/c; the wait is zero with probability 1 − C and otherwise
// exponential with mean Wq/C. An unstable queue (c ≤ λ·E[S]) has an
// infinite wait.
func QueueWait(c int, lambda, meanS, ca2, cs2 float64) Wait {
	if lambda <= 0 || meanS <= 0 {
		return Wait{}
	}
	a := lambda * meanS
	if float64(c) <= a {
		return Wait{Prob: 1, Mean: math.Inf(1)}
	}
	pw := ErlangC(c, a)
	if pw == 0 {
		return Wait{}
	}
	wq := pw / (float64(c)/meanS - lambda) * (ca2 + cs2) / 2
	return Wait{Prob: pw, Mean: wq / pw}
}

// LittleConcurrency is Little's Law L = λ·W: the mean number in flight for an
// arrival rate λ (per second) and a mean time in system W (seconds)
// (Little, Operations Research 9(3), 1961).
func LittleConcurrency(rate, timeInSystem float64) float64 { return rate * timeInSystem }

// LittleRate is Little's Law solved for the rate: λ = L / W, the throughput of
// a pool that keeps L requests in flight, each taking W seconds.
func LittleRate(concurrency, timeInSystem float64) float64 {
	if timeInSystem <= 0 {
		return math.Inf(1)
	}
	return concurrency / timeInSystem
}

// Variant selects an experimental wait law.
var Variant = 1

// QueueWaitGIGc is an experimental wait law.
func QueueWaitGIGc(c int, lambda, meanS, ca2, cs2 float64) Wait {
	if lambda <= 0 || meanS <= 0 {
		return Wait{}
	}
	a := lambda * meanS
	if float64(c) <= a {
		return Wait{Prob: 1, Mean: math.Inf(1)}
	}
	rho := a / float64(c)
	ec := ErlangC(c, a)
	// mean wait
	theta := (ca2 + cs2) / 2 * meanS / (float64(c) * (1 - rho))
	if c > 1 && cs2 < 1 {
		g := math.Min(0.24, (1-rho)*float64(c-1)*(math.Sqrt(4+5*float64(c))-2)/(16*float64(c)*rho))
		theta *= 1 + g*(1-cs2)
	}
	if ca2 > 1 && (Variant == 9 || Variant == 11 || Variant == 13) {
		theta *= math.Exp(-(1 - rho) * (ca2 - 1) / (ca2 + 4*cs2))
	}
	pi := ec * qedRatio(c, rho, (1+ca2)/2)
	mean := pi * theta
	if Variant >= 10 {
		pi = ec * qedRatio(c, rho, math.Max(0.01, (ca2+cs2)/2))
		theta = mean / pi
	}
	if c == 1 && Variant >= 12 {
		pi = qnaDelay(rho, ca2, cs2)
		theta = klbMean(rho, meanS, ca2, cs2) / pi
	}
	if Variant%2 == 1 && Variant != 9 {
	}
	if Variant == 11 || Variant == 13 {
		theta *= 1.1
	}
	pi = math.Min(1, pi)
	if pi <= 0 || theta <= 0 {
		return Wait{}
	}
	return Wait{Prob: pi, Mean: theta}
}

// qedRatio is α(β/√z)/α(β) with α the Halfin–Whitt delay probability.
func qedRatio(c int, rho, z float64) float64 {
	beta := (1 - rho) * math.Sqrt(float64(c))
	return hw(beta/math.Sqrt(z)) / hw(beta)
}

func hw(b float64) float64 {
	phi := math.Exp(-b*b/2) / math.Sqrt(2*math.Pi)
	cdf := 0.5 * math.Erfc(-b/math.Sqrt2)
	return 1 / (1 + b*cdf/phi)
}

func qnaDelay(rho, ca2, cs2 float64) float64 {
	var h float64
	if ca2 <= 1 {
		h = (1 + ca2 + rho*cs2) / (1 + rho*(cs2-1) + rho*rho*(4*ca2+cs2))
	} else {
		h = 4 * rho / (ca2 + rho*rho*(4*ca2+cs2))
	}
	return math.Max(1e-6, math.Min(1, rho+(ca2-1)*rho*(1-rho)*h))
}

func klbMean(rho, meanS, ca2, cs2 float64) float64 {
	var g float64
	if ca2 < 1 {
		g = math.Exp(-2 * (1 - rho) * (1 - ca2) * (1 - ca2) / (3 * rho * (ca2 + cs2)))
	} else {
		g = math.Exp(-(1 - rho) * (ca2 - 1) / (ca2 + 4*cs2))
	}
	return rho * meanS * (ca2 + cs2) / (2 * (1 - rho)) * g
}
