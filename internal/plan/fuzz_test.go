package plan

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/scenario"
)

// FuzzPlanNumbers plans scenarios whose numbers the fuzzer chooses: every
// scenario that passes validation must plan within a few seconds (no
// runaway search, no overflow of a float turned into an integer) into a
// plan that encodes as JSON (no NaN or Inf) and keeps its own bounds; an
// invalid one is refused with field errors, never a panic.
func FuzzPlanNumbers(f *testing.F) {
	f.Add(400.0, 900.0, 22.0, 35.0, 800.0, 2400.0, 200.0, 600.0, 800, 3.0, 2e6, 5000.0, 24, 1500.0, 12000.0, 1.0, false, uint8(0))
	f.Add(1.0, 1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 10000000, 1e7, 1e13, 1e12, 100000, 1e8, 1e9, 100.0, true, uint8(1))
	f.Add(1e-9, 1e-9, 1e-9, 1e-9, 1.0, 1.0, 0.5, 0.5, 1, 1e-9, 1e-9, 1e-9, 1, 1e-9, 1e-9, 0.0, true, uint8(2))
	f.Add(300.0, 300.0, 20.0, 20.0, 1000.0, 1000.0, 101.0, 101.0, 0, 4.0, 0.0, 600.0, 0, 0.0, 3000.0, 4.0, false, uint8(5))
	e := New(Options{})
	f.Fuzz(func(t *testing.T, ttft50, ttft95, tpot50, tpot95, in50, in95, out50, out95 float64, maxTokens int,
		rps, tpm, rpm float64, knee int, sloTTFT, sloE2E, scv float64, curve bool, shape uint8) {
		s := scenario.Scenario{
			Quotas: []scenario.Quota{{Name: "k", RPM: rpm, TPM: tpm}},
			Classes: []scenario.Class{{
				Name: "a", Quota: "k", Mode: []string{"interactive", "semi", "batch"}[shape%3],
				InputTokens: scenario.Dist{P50: &in50, P95: &in95}, OutputTokens: scenario.Dist{P50: &out50, P95: &out95},
				MaxTokens: maxTokens, ArrivalSCV: &scv,
			}},
			Policy: scenario.Policy{MonteCarloDraws: 1000},
		}
		if rps != 0 {
			s.Classes[0].Demand = &scenario.Demand{RPS: rps}
		}
		if sloTTFT != 0 || sloE2E != 0 {
			s.Classes[0].SLO = &scenario.SLO{TTFTP95Ms: sloTTFT, E2EP95Ms: sloE2E}
		}
		if knee != 0 {
			s.Latency.Knee = &knee
		}
		if curve {
			s.Latency.Curve = []scenario.CurvePoint{
				{Concurrency: 1, TTFTP50Ms: ttft50, TTFTP95Ms: ttft95, TPOTP50Ms: tpot50, TPOTP95Ms: tpot95},
				{Concurrency: 1 + int(shape), TTFTP50Ms: 2 * ttft50, TTFTP95Ms: 2 * ttft95, TPOTP50Ms: 2 * tpot50, TPOTP95Ms: 2 * tpot95, ThroughputRPS: rps},
			}
		} else {
			s.Latency.TTFTMs = &scenario.Dist{P50: &ttft50, P95: &ttft95}
			s.Latency.TPOTMs = &scenario.Dist{P50: &tpot50, P95: &tpot95}
		}
		if shape&8 != 0 { // a second class sharing the key and the endpoint
			b := s.Classes[0]
			b.Name, b.Mode, b.Demand = "b", "batch", nil
			s.Classes = append(s.Classes, b)
		}
		doc, err := json.Marshal(s)
		if err != nil {
			return // NaN or Inf: not a document
		}
		s, err = scenario.Parse(doc)
		if err != nil {
			var errs scenario.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("parse: %v", err)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p, err := e.Plan(ctx, s)
		if err != nil {
			var errs scenario.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("plan of a valid scenario failed: %v\n%s", err, doc)
			}
			return
		}
		if _, err := json.Marshal(p); err != nil {
			t.Fatalf("plan does not encode (NaN or Inf?): %v\n%s", err, doc)
		}
		for _, c := range p.Classes {
			if c.Pool < 0 || c.Pool > 1000 {
				t.Fatalf("pool %d outside [0, max_pool]\n%s", c.Pool, doc)
			}
		}
		for _, ep := range p.Endpoints {
			if ep.Budget != nil && ep.TotalPool > *ep.Budget {
				t.Fatalf("endpoint %s: pools %d over the budget %d\n%s", ep.Name, ep.TotalPool, *ep.Budget, doc)
			}
		}
	})
}
