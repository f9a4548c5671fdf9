package model

import (
	"math"
	"testing"
)

// TestGIMcLightTrafficOnManyServers: 6 arrivals a second in clumps
// (ca² = 73) on 3,000 servers of 3 s each (ρ = 0.007) almost never wait,
// by either law of gaps: P(W > 0) below 1e-15, where giMc's sum stops
// rather than adding up all 3,000 terms, and a finite mean wait given
// waiting.
func TestGIMcLightTrafficOnManyServers(t *testing.T) {
	for name, lst := range map[string]func(float64) float64{
		"gamma": func(s float64) float64 { return logLSTGamma(6, 73, s) },
		"H2":    func(s float64) float64 { return logLSTH2(6, 73, s) },
	} {
		p, theta := giMc(3000, 6, 1.0/3, lst)
		if !(p >= 0 && p < 1e-15) || !(theta > 0) || math.IsInf(theta, 0) {
			t.Errorf("%s: P(W > 0) = %g, θ = %g; want below 1e-15 and a finite θ", name, p, theta)
		}
	}
}
