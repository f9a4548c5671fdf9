package model

import "math"

// TrendCritical is the one-sided critical value of TrendZ at p < 0.001: a
// share that rises by chance alone passes it once in a thousand series.
const TrendCritical = 3.09

// Group is one group of a trend test: its score (the dose, here log2 of a
// concurrency), its trials and its events.
type Group struct {
	Score, Trials, Events float64
}

// TrendZ tests whether the share of events rises with the score, by the
// Cochran–Armitage test for trend in proportions (Armitage, Biometrics
// 11(3), 1955):
//
//	Z = Σ xᵢ(sᵢ − s̄) / √(p(1 − p) · Σ nᵢ(sᵢ − s̄)²),  s̄ = Σ nᵢsᵢ / N,  p = Σ xᵢ / N
//
// nᵢ the trials of group i, xᵢ its events, sᵢ its score. It returns Z, and
// false when the groups cannot show a trend (fewer than two scores among
// groups with trials, no event, or only events).
func TrendZ(groups []Group) (float64, bool) {
	var n, x, sn float64
	scores := map[float64]bool{}
	for _, g := range groups {
		if g.Trials <= 0 {
			continue
		}
		scores[g.Score] = true
		n += g.Trials
		x += g.Events
		sn += g.Trials * g.Score
	}
	if len(scores) < 2 || x <= 0 || x >= n {
		return 0, false
	}
	p, mean := x/n, sn/n
	var num, den float64
	for _, g := range groups {
		if g.Trials <= 0 {
			continue
		}
		d := g.Score - mean
		num += g.Events * d
		den += g.Trials * d * d
	}
	if den <= 0 {
		return 0, false
	}
	return num / math.Sqrt(p*(1-p)*den), true
}

// ConcurrencyScore is the score of a concurrency in a trend test: log2 of
// it, so that a ramp's doubling steps are evenly spaced.
func ConcurrencyScore(c float64) float64 { return math.Log2(math.Max(1, c)) }
