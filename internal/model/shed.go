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

// ShedShare is the share of arrivals a stable pool at utilisation ρ = λE[S]/c
// sheds when every request that would wait longer than τ for a slot
// leaves, q·(1 − ρ)/(1 − q·ρ) with q = w.Beyond(τ). For M/M/c+D it is
// exact (Baccelli and Hebuterne, Performance '81, 1981; Zeltyn and
// Mandelbaum, Queueing Syst. 51, 2005): below τ the offered wait has the
// density of the queue without shedding, scaled by 1/(1 − q·ρ), and above
// it the density falls at the rate cμ rather than cμ − λ, since the
// arrivals it sheds bring no work. For other arrivals it applies the
// same to the plan's wait law. It is 0 for ρ ≤ 0 and q = 0, and assumes
// ρ < 1 (MMcDShed covers any ρ).
func ShedShare(w Wait, rho, tau float64) float64 {
	q := w.Beyond(tau)
	if q <= 0 || rho <= 0 {
		return 0
	}
	return q * (1 - rho) / (1 - q*rho)
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
// formula. For a < c it equals ShedShare with the Erlang C wait; as τ
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
