package plan

import (
	"context"

	"github.com/plannerdev/planner/internal/scenario"
)

func f(v float64) *float64 { return &v }

func fixed(v float64) scenario.Dist      { return scenario.Dist{Fixed: f(v)} }
func fixedMs(v float64) *scenario.Dist   { d := fixed(v); return &d }
func pct(p50, p95 float64) scenario.Dist { return scenario.Dist{P50: f(p50), P95: f(p95)} }

// handScenario is one class with a fixed service time of 2.5 s:
// TTFT 500 ms + TPOT 20 ms × (101 − 1) output tokens, 1,000 input tokens.
func handScenario(q scenario.Quota) scenario.Scenario {
	q.Name = "key"
	return scenario.Scenario{
		Quotas:  []scenario.Quota{q},
		Latency: scenario.Latency{TTFTMs: fixedMs(500), TPOTMs: fixedMs(20)},
		Classes: []scenario.Class{{
			Name: "work", Quota: "key", Mode: scenario.ModeInteractive,
			InputTokens: fixed(1000), OutputTokens: fixed(101),
		}},
		Policy: scenario.Policy{MonteCarloDraws: 2000},
	}
}

// testEngine plans the tests' scenarios, sharing its caches as a service's
// engine does (TestPropertyDeterministicFiniteJSON checks that they never
// change an answer).
var testEngine = New(Options{})

func mustPlan(t interface {
	Helper()
	Fatalf(string, ...any)
}, s scenario.Scenario) *Plan {
	t.Helper()
	p, err := testEngine.Plan(context.Background(), s)
	if err != nil {
		t.Fatalf("Compute: %v", err)
	}
	return p
}

// compute plans a scenario with a new engine, which shares nothing with
// other plans.
func compute(s scenario.Scenario) (*Plan, error) {
	return New(Options{}).Plan(context.Background(), s)
}

// sweep sweeps a scenario with a new engine.
func sweep(s scenario.Scenario, vars []Variation) (*WhatIf, error) {
	return New(Options{}).Sweep(context.Background(), s, vars)
}

func ceiling(cp ClassPlan, name string) *Ceiling {
	for i := range cp.Ceilings {
		if cp.Ceilings[i].Constraint == name {
			return &cp.Ceilings[i]
		}
	}
	return nil
}
