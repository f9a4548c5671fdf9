package model

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

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
	// Shape is the squared coefficient of variation of the gamma law of
	// the wait given that it is positive, whose quantile at the level a
	// percentile needs Mean matches (Queue.Wait), and ShapeMean its mean;
	// both 0 when that law is the exponential of mean Mean itself.
	Shape, ShapeMean float64
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

// Queue is a client-side pool seen as a GI/G/c queue: c slots, arrivals
// at rate λ whose inter-arrival times have squared coefficient of
// variation CA2 (1 for Poisson), and service times with mean Mean, squared
// coefficient of variation CS2 and tail ratio Tail = E[S]·E[S³]/E[S²]²
// (1.5 for exponential service, 1 for a fixed one). P is the percentile,
// a probability, that the wait's law is matched at (0 for 0.95).
type Queue struct {
	C               int
	Lambda, CA2     float64
	Mean, CS2, Tail float64
	P               float64
}

// Wait is the law of the queue's wait (docs/concepts.md, "Queueing"): zero
// with probability π, otherwise exponential with a mean θ chosen so that
// the wait's upper quantiles match a two-moment fit. It is exact for M/M/c
// and an approximation otherwise, built from four published pieces:
//
//   - π = C(c, A)·α(β/√z)/α(β): the Erlang C probability of waiting
//     corrected for the arrivals' variability by the ratio of Halfin–Whitt
//     delay probabilities α(b) = 1/(1 + b·Φ(b)/φ(b)), β = (1 − ρ)√c, with
//     the argument scaled by the arrivals' variability z (delayScale; in
//     heavy traffic z = (1 + ca²)/2 is the GI/M/c limit: Halfin and Whitt,
//     Oper. Res. 29(3), 1981).
//   - E[W | W > 0] = (ca² + cs²)/2 · E[S]/(c(1 − ρ)), the Allen–Cunneen mean
//     (Allen, Probability, Statistics and Queueing Theory, 1990, §6.3),
//     times Cosmetatos' correction 1 + γ for service less variable than
//     exponential, γ = (1 − ρ)(c − 1)(√(4 + 5c) − 2)/(16ρc) scaled by
//     1 − cs² (Cosmetatos, Oper. Res. Q. 27(3), 1976), and, for bursty
//     arrivals (ca² > 1), the Kraemer–Langenbach-Belz factor
//     exp(−(1 − ρ)(ca² − 1)/(ca² + 4cs²)) (Kraemer and Langenbach-Belz,
//     Proc. 8th ITC, 1976).
//   - The shape of the wait given that it is positive: its squared
//     coefficient of variation in M/G/1 follows from the
//     Pollaczek–Khinchine moments, cw² = 2ρ − 1 + (4/3)(1 − ρ)·Tail (1 for
//     exponential service, more for heavy-tailed service), and tends to 1
//     as slots are added; here cw² = 1 + (cw₁² − 1)/√c, within 0.05 and
//     maxWaitSCV.
//   - For arrivals smoother than Poisson, π, the mean and cw² are then
//     corrected for what evenly spaced arrivals do away from heavy
//     traffic: they wait less often, longer when they do, and more
//     variably (smoothWait).
//   - And for those arrivals π is at most what the exact GI/M/c solution
//     gives for their gaps, raised for service more heavy-tailed than an
//     exponential (smoothCap).
//   - The conditional wait is then a gamma with that mean and cw², and θ is
//     the mean of the exponential that has the gamma's quantile at the
//     level the overall p-quantile needs, q = max(0.5, 1 − (1 − p)/π)
//     (p = 0.95 unless Queue.P says otherwise): the Monte Carlo keeps
//     drawing waits as exponentials.
//
// A queue with c ≤ A has no steady state: every arrival waits forever.
func (q Queue) Wait() Wait {
	if q.Lambda <= 0 || q.Mean <= 0 {
		return Wait{}
	}
	a := q.Lambda * q.Mean
	c := float64(q.C)
	if c <= a {
		return Wait{Prob: 1, Mean: math.Inf(1)}
	}
	rho := a / c
	var pi, theta float64
	if q.CA2 > 1 {
		pi, theta = q.burstyWait()
	} else {
		pi = math.Min(1, ErlangC(q.C, a)*delayRatio(rho, c, q.delayScale(rho)))
		theta = (q.CA2 + q.CS2) / 2 * q.Mean / (c * (1 - rho))
	}
	if pi <= 0 {
		return Wait{}
	}
	if q.C > 1 && q.CS2 < 1 && q.CA2 <= 1 {
		gamma := math.Min(0.24, (1-rho)*(c-1)*(math.Sqrt(4+5*c)-2)/(16*c*rho))
		theta *= 1 + gamma*(1-q.CS2)
	}
	if !(theta > 0) {
		return Wait{}
	}
	var widen float64 // how much more variable smooth arrivals' wait is
	if q.CA2 < 1 {
		pi, theta, widen = q.smoothWait(rho, pi, theta)
		pi, theta = q.smoothCap(pi, theta)
		if pi <= 0 {
			return Wait{}
		}
	}
	tail := q.tailRatio()
	cw1 := 2*rho - 1 + 4.0/3*(1-rho)*tail
	cw := 1 + (cw1-1)/math.Sqrt(c) + widen
	if q.CA2 > 1 {
		// Clumps keep the slots they fill in step whatever their number:
		// the wait of those who wait keeps the one-server shape.
		cw = cw1
	}
	cw = math.Min(maxWaitSCV, math.Max(0.05, cw))
	if math.Abs(cw-1) > 1e-9 {
		out := 0.05 // 1 − 0.95, exactly
		if q.P > 0 && q.P != 0.95 {
			out = 1 - q.P
		}
		level := math.Max(0.5, 1-out/pi)
		if q.CA2 > 1 && cw < 1 {
			// A wait less variable than an exponential is matched lower
			// down: with bursts, the p95 of the latency is often met at
			// a low quantile of the wait of those who wait.
			level = math.Max(0.15, 1-out/pi)
		}
		k := 1 / cw
		matched := distuv.Gamma{Alpha: k, Beta: k / theta}.Quantile(level) / -math.Log1p(-level)
		return Wait{Prob: pi, Mean: matched, Shape: cw, ShapeMean: theta}
	}
	return Wait{Prob: pi, Mean: theta}
}

// maxWaitSCV bounds the squared coefficient of variation of the wait of
// those who wait: a service time whose third moment overflows (a
// lognormal of σ above about 10, Tail +Inf) would otherwise give a gamma
// of shape 0, which has no quantile. 100 is the most variable arrivals a
// scenario may state (arrival_scv).
const maxWaitSCV = 100

// smoothWait corrects the law of the wait for arrivals smoother than
// Poisson (ca² < 1), given π and the mean θ of the wait of those who wait
// as Queue.Wait derives them: with u = (1 − ca²)² and cs² at least 0.05,
//
//	π′ = π·(1 − min(0.9, 0.3·(1 − ρ)·c^¼·u/√cs²)),
//	θ′ = θ·(1 + 0.4·(1 − ρ)·u/cs²^0.3),
//
// and the squared coefficient of variation of the wait of those who wait
// grows by widen = (1 − ρ)·u/√c. Evenly spaced arrivals find every slot
// busy less often than the heavy-traffic scaling says, but wait longer
// when they do, and the wait of those who wait is more variable: each
// wait follows a service time longer than the gap, not a clump of
// arrivals. The corrections vanish for Poisson arrivals and in heavy
// traffic; they were fitted to an event-by-event GI/G/c simulation
// (gamma gaps, lognormal service; c 1 to 16, ca² 0 to 0.5, cs² 0.1 to 1,
// ρ 0.5 to 0.92), whose p95 and p99 of the wait they meet within a few
// per cent where the law without them read the p99 up to a fifth low
// (docs/concepts.md, "Queueing").
func (q Queue) smoothWait(rho, pi, theta float64) (piS, thetaS, widen float64) {
	c := float64(q.C)
	u := (1 - q.CA2) * (1 - q.CA2)
	cs := math.Max(0.05, q.CS2)
	piS = pi * (1 - math.Min(0.9, 0.3*(1-rho)*math.Pow(c, 0.25)*u/math.Sqrt(cs)))
	thetaS = theta * (1 + 0.4*(1-rho)*u/math.Pow(cs, 0.3))
	return piS, thetaS, (1 - rho) * u / math.Sqrt(c)
}

// smoothCap bounds π for arrivals smoother than Poisson (ca² < 1) by the
// exact GI/M/c probability of waiting for their gaps (giMc: gamma of shape
// 1/ca², evenly spaced for ca² = 0), π_E, raised for service whose tail
// is heavier than an exponential's (Tail above 1.5):
//
//	π ≤ π_E^{1/(1 + 0.7·(1 − ca²)·(Tail/1.5 − 1)^{1.5})},
//
// and where the bound lowers π, θ grows so that the wait's tail keeps its
// value at the level ℓ = min(0.01, π′/e): θ′ = θ·ln(π/ℓ)/ln(π′/ℓ). The
// heavy-traffic scaling above reads evenly spaced arrivals in light
// traffic as waiting several times as often as they do (on one slot at ρ
// 0.3 with exponential service, 0.146 where D/M/1 gives σ = 0.0409, the
// root of σ = e^{−(1−σ)/ρ}), which turns a p95 wait of 0 into most of a
// service time; the bound is exact for exponential service, and the
// exponent and ℓ were fitted to an event-by-event GI/G/c simulation
// (gamma gaps of ca² 0 to 0.5, lognormal service of cs² 0.3 to 2, c 1 to
// 16, ρ 0.1 to 0.7), where with a mean service time added none of the
// wait's p95s and p99s moves down by more than half a per cent.
func (q Queue) smoothCap(pi, theta float64) (float64, float64) {
	pe, _ := giMc(q.C, q.Lambda, 1/q.Mean, func(s float64) float64 { return logLSTSmooth(q.Lambda, q.CA2, s) })
	heavy := math.Pow(math.Max(0, q.tailRatio()/1.5-1), 1.5)
	pe = math.Pow(pe, 1/(1+0.7*(1-q.CA2)*heavy))
	if !(pe < pi) {
		return pi, theta
	}
	if pe <= 0 {
		return 0, theta // so light a load that no arrival waits
	}
	l := math.Min(0.01, pe/math.E)
	return pe, theta * math.Log(pi/l) / math.Log(pe/l)
}

// tailRatio is Tail, or the exponential's 1.5 when it is not given.
func (q Queue) tailRatio() float64 {
	if !(q.Tail > 0) {
		return 1.5
	}
	return q.Tail
}

// burstyWait is the probability of waiting and the mean wait of those
// who wait for bursty arrivals (ca² > 1), from the exact GI/M/c solution
// (giMc) for two laws of gaps with the arrivals' ca², gamma and the
// two-phase hyperexponential with balanced means, taking for each the
// larger of the two (π_M, θ_M), so that the plan is safe for either law,
// then corrected for the class's service time, with w = (ca² − 1)/(ca² + 1):
//
//	π = π_M^{1 − 0.25·e^{−1.2·cs²}·√w},
//	θ = θ_M·(h·(1 − L) + (1 + g)·L),  L = (1 − π)²,
//
// h = (ca² + cs²)/(ca² + 1), the ratio of the heavy-traffic means of
// GI/G/c and GI/M/c (Kingman's; Whitt, "Approximations for the GI/G/m
// queue", Prod. Oper. Manag. 2(2), 1993), and, towards light traffic,
// g = 1.1·(1 − cs²)^{1.5}·max(0, (ca² − 2)/(ca² + 1)): a clump that fills
// the pool waits for slots that, with service less variable than an
// exponential, free together a whole service time later rather than one
// by one. The corrections are fitted to the discrete-event simulation of
// the tests, on the safe side (its long grid: scv 4 and 9, pools 1 to
// 300, at min_pool and two above).
func (q Queue) burstyWait() (pi, theta float64) {
	mu := 1 / q.Mean
	pg, tg := giMc(q.C, q.Lambda, mu, func(s float64) float64 { return logLSTGamma(q.Lambda, q.CA2, s) })
	ph, th := giMc(q.C, q.Lambda, mu, func(s float64) float64 { return logLSTH2(q.Lambda, q.CA2, s) })
	pm, tm := math.Max(pg, ph), math.Max(tg, th)
	w := (q.CA2 - 1) / (q.CA2 + 1)
	pi = math.Pow(pm, 1-0.25*math.Exp(-1.2*q.CS2)*math.Sqrt(w))
	h := (q.CA2 + q.CS2) / (q.CA2 + 1)
	g := 1.1 * math.Pow(math.Max(0, 1-q.CS2), 1.5) * math.Max(0, (q.CA2-2)/(q.CA2+1))
	light := (1 - pi) * (1 - pi)
	return pi, tm * (h*(1-light) + (1+g)*light)
}

// delayScale is z, the variability that scales the Halfin–Whitt argument
// of the probability of waiting for smooth arrivals (ca² ≤ 1): z =
// (1 + ca²)/2 in heavy traffic (ρ ≥ 0.85, the GI/M/c limit) and, towards
// light traffic (ρ ≤ 0.5), the smaller (ca² + min(cs², 1))/2, where a
// steady stream rarely finds every slot busy; between the two, and
// between ca² = 1 and ca² = 0, z is interpolated linearly. These are
// fitted to, and checked against, the discrete-event simulation of the
// tests (docs/concepts.md, "Queueing").
func (q Queue) delayScale(rho float64) float64 {
	heavy := (1 + q.CA2) / 2
	light := (q.CA2 + math.Min(q.CS2, 1)) / 2
	w := math.Max(0, math.Min(1, (0.85-rho)/0.35)) * (1 - q.CA2)
	return heavy + (light-heavy)*w
}

// delayRatio is α(β/√z)/α(β), how much the arrivals' variability changes
// the probability of waiting, with α the Halfin–Whitt delay probability.
func delayRatio(rho, c, z float64) float64 {
	if z == 1 {
		return 1
	}
	beta := (1 - rho) * math.Sqrt(c)
	return math.Exp(logHalfinWhitt(beta/math.Sqrt(math.Max(z, 1e-3))) - logHalfinWhitt(beta))
}

// logHalfinWhitt is ln α(b), α(b) = 1/(1 + b·Φ(b)/φ(b)) the heavy-traffic
// limit of the probability of waiting in M/M/c with β = b (α(0) = 1). In
// logarithms, since b·Φ(b)/φ(b) = b·Φ(b)·√(2π)·e^{b²/2} overflows past b
// of about 37 (a light load on thousands of slots), where the ratio of two
// α would be 0/0.
func logHalfinWhitt(b float64) float64 {
	r := b * normCDF(b) * math.Sqrt(2*math.Pi)
	e := b * b / 2
	if e < 700 {
		return -math.Log1p(r * math.Exp(e))
	}
	return -(e + math.Log(r))
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
