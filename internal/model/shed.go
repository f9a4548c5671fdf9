package model

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Shedding: a client that drops a request once it has waited τ for a slot
// makes its pool a queue with a fixed patience τ, GI/G/c+D
// (docs/concepts.md, "Shedding").

// Beyond is q = P(W > τ), the share of arrivals that would wait longer
// than τ in the queue without shedding; 1 for an unstable queue. The
// wait's law is fitted at a percentile, not at τ: of its two readings
// there, the exponential of mean θ (π·e^{−τ/θ}) and, when the wait of those
// who wait is a gamma (Shape), the gamma's tail at τ, Beyond is the
// larger, so that the share shed (ShedShare) is on the safe side.
func (w Wait) Beyond(tau float64) float64 {
	if !w.Stable() {
		return 1
	}
	if w.Prob == 0 {
		return 0
	}
	return math.Max(w.Prob*math.Exp(-tau/w.Mean), w.gammaBeyond(tau))
}

// gammaBeyond is π times the tail at τ of the gamma law of the wait of
// those who wait, 0 without one.
func (w Wait) gammaBeyond(tau float64) float64 {
	if w.Shape == 0 || w.ShapeMean == 0 {
		return 0
	}
	k := 1 / w.Shape
	return w.Prob * distuv.Gamma{Alpha: k, Beta: k / w.ShapeMean}.Survival(tau)
}

// Cut is the wait beyond which the Monte Carlo's draws, which wait E·θ
// (θ = Mean), are left out as shed: those that wait beyond τ by the
// reading of the wait's law that puts fewer there (Beyond), so that the
// percentiles of the requests served are on the safe side. The wait of a
// draw grows with E whatever the law, so a share q of the draws with the
// largest E are those that wait beyond τ: the exponential's own reading
// leaves out those beyond τ itself, the gamma's those beyond θ·ln(π/q)
// for q its tail at τ, when that is the smaller share. +Inf for a wait
// that is always 0.
func (w Wait) Cut(tau float64) float64 {
	if w.Prob == 0 {
		return math.Inf(1)
	}
	if w.Shape == 0 || w.ShapeMean == 0 {
		return tau
	}
	g := w.gammaBeyond(tau)
	if g <= 0 {
		return math.Inf(1)
	}
	return math.Max(tau, w.Mean*math.Log(w.Prob/g))
}

// LeftOut is the share of the draws Cut leaves out as shed,
// π·e^{−Cut(τ)/θ}: at most Beyond(τ).
func (w Wait) LeftOut(tau float64) float64 {
	if w.Prob == 0 {
		return 0
	}
	return w.Prob * math.Exp(-w.Cut(tau)/w.Mean)
}

// ShedShare is the share of arrivals the stable pool q sheds when every
// request that would wait longer than τ for a slot leaves, with w its
// wait without shedding (q.Wait(), or the plan's reading of it) and
// q = w.Beyond(τ) the share that would wait longer:
//
//	P(shed) = q·r/(1 − q·(1 − r)),  r = min(1, (1 − ρ)·g),
//
// at utilisation ρ = λE[S]/c. Below τ the offered wait keeps the density
// of the queue without shedding, up to its scale, and above it the
// requests shed bring no work, so the wait there drains faster: r is the
// ratio of the time the offered wait spends beyond τ with shedding to
// that without, per unit of density at τ. With Poisson arrivals g = 1:
// for M/M/c+D the share is exact (Baccelli and Hebuterne, Performance
// '81, 1981; Zeltyn and Mandelbaum, Queueing Syst. 51, 2005), and for
// M/G/1+D too, since the idle time 1 − ρ(1 − P) and the wait's mass below
// τ then fix both (the work-conservation argument of the same papers).
// Smoother arrivals have the queue without shedding drain its tail more
// slowly than the one that sheds, and so do less variable service times
// on several slots:
//
//	g = 1 + (g₀ − 1)·min(1, √((1 − ρ)/0.4)),
//	g₀ = ((1 + cs²)/(ca² + cs²))^¼ · (1 + (1 − cs²)/10 for c > 1)
//
// for ca² ≤ 1 (ca² + cs² at least 0.05, cs² at most 1 in the second
// factor): towards heavy traffic the wait of every law of arrivals
// approaches the same exponential, and g with it approaches 1. g = 1 for
// bursty arrivals, whose wait's law is already the worse of two. g₀ was
// fitted to an event-by-event GI/G/c+D simulation of gamma gaps and
// lognormal service (c 1 to 16, ca² 0 to 1, cs² 0.1 to 1, ρ 0.6 to 0.92,
// τ 1 to 4 E[S]; within about a fifth, on the safe side where it misses
// most), its fade to the shares planner simulate measures for classes
// near the 1 % limit over runs of up to a week (docs/concepts.md,
// "Shedding"). It is 0 for ρ ≤ 0 and q = 0, and assumes ρ < 1 (MMcDShed
// covers any ρ).
func (q Queue) ShedShare(w Wait, tau float64) float64 {
	beyond := w.Beyond(tau)
	rho := q.Lambda * q.Mean / float64(q.C)
	if beyond <= 0 || !(rho > 0) {
		return 0
	}
	r := math.Min(1, (1-rho)*q.shedDrain(rho))
	return beyond * r / (1 - beyond*(1-r))
}

// shedDrain is g of ShedShare at utilisation ρ.
func (q Queue) shedDrain(rho float64) float64 {
	if q.CA2 > 1 {
		return 1
	}
	g := math.Pow((1+q.CS2)/math.Max(0.05, q.CA2+q.CS2), 0.25)
	if q.C > 1 {
		g *= 1 + math.Max(0, 1-q.CS2)/10
	}
	return 1 + (g-1)*math.Min(1, math.Sqrt((1-rho)/0.4))
}

// MMcDShed is the share of arrivals an M/M/c+D queue sheds, with c
// servers, offered load a = λ·E[S] erlangs (any a, the queue being
// stable for every a since those that wait beyond τ leave) and patience
// τ = tau·E[S]. From the density of the offered wait, λπ_{c−1}·e^{−(cμ−λ)x}
// below τ and λπ_{c−1}·e^{λτ−cμx} above it, with πⱼ ∝ aʲ/j! for j < c
// (Zeltyn and Mandelbaum, Queueing Syst. 51, 2005, for M/M/n+G):
//
//	P(shed) = (a/c)·e / (1/B(c−1, a) + a·g + (a/c)·e),
//
// e = e^{−(c−a)τ/E[S]}, g = (1 − e)/(c − a) (τ/E[S] at c = a), B the Erlang B
// formula. For a < c it equals ShedShare of M/M/c with the Erlang C wait; as τ
// grows it tends to 0 for a < c and to 1 − c/a, the excess no pool of c
// serves, for a > c.
func MMcDShed(c int, a, tau float64) float64 {
	if a <= 0 || c < 1 {
		return 0
	}
	// 1/B(c−1, a) by the Erlang B recursion, B₀ = 1.
	b := 1.0
	for k := 1; k < c; k++ {
		b = a * b / (float64(k) + a*b)
	}
	cf := float64(c)
	x := (cf - a) * tau // the exponent's magnitude, in mean service times
	if x >= 0 {
		e := math.Exp(-x)
		g := tau
		if x > 1e-9 {
			g = -math.Expm1(-x) / (cf - a)
		}
		return (a / cf) * e / (1/b + a*g + (a/cf)*e)
	}
	// a > c: divide through by e = e^{|x|}, which may overflow.
	ie := math.Exp(x)              // 1/e
	g := -math.Expm1(x) / (a - cf) // (e − 1)/(a − c), over e
	return (a / cf) / (ie/b + a*g + a/cf)
}
