package api

import (
	"encoding/json"
	"maps"
	"net/http"
	"testing"
	"time"

	planner "github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/simulate"
)

// FuzzPlan sends arbitrary bodies to POST /v1/plans. Whatever the body, the
// answer is a 200 with a whole plan in valid JSON (so no NaN or Inf, which
// JSON cannot carry) or a 4xx problem whose every error has a location;
// never a 5xx or a panic. The seed corpus (testdata/fuzz/FuzzPlan) holds the
// shipped examples and broken bodies. A short plan timeout keeps slow
// inputs (huge Monte Carlo runs) from stalling the fuzzer; they end as the
// 422 that such a scenario gets.
// Each exchange is also checked against the OpenAPI document.
func FuzzPlan(f *testing.F) {
	s := New(Options{Store: openStore(f), Tiers: testTiers, PlanTimeout: 250 * time.Millisecond})
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := send(contractChecked(t, s), http.MethodPost, "/v1/plans", body)
		switch {
		case rec.Code == http.StatusOK:
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("200 with a body that is not JSON: %.300s", rec.Body)
			}
			var p plan.Plan
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || len(p.Classes) == 0 {
				t.Fatalf("200 without a plan (%v): %.300s", err, rec.Body)
			}
		case rec.Code >= 400 && rec.Code < 500:
			p := readProblem(t, rec)
			if len(p.Errors) == 0 {
				t.Fatalf("%d problem without errors: %s", rec.Code, rec.Body)
			}
			for _, e := range p.Errors {
				if e.Location == "" {
					t.Fatalf("%d problem with an unlocated error: %s", rec.Code, rec.Body)
				}
			}
		default:
			t.Fatalf("status %d for body %q: %s", rec.Code, body, rec.Body)
		}
	})
}

// FuzzSimulation sends arbitrary bodies to POST /v1/simulations, seeded
// with every shipped example wrapped in a request of ten simulated
// minutes and with the options varied. As for FuzzPlan, the answer is a
// 200 with a whole simulation in valid JSON or a 4xx problem whose every
// error has a location, never a 5xx or a panic, and every exchange is
// checked against the OpenAPI document. A small event cap keeps each run
// short; a run past it is the 422 a user gets.
func FuzzSimulation(f *testing.F) {
	s := New(Options{Store: openStore(f), Tiers: testTiers, PlanTimeout: 250 * time.Millisecond, SimulationMaxEvents: 20000})
	options := []map[string]any{
		{"duration_s": 600},
		{"duration_s": 600, "pacing": false, "refill": "window", "retry_after": false},
		{"duration_s": 1, "aimd": true, "interval_s": 0.001, "start_hour": 23.99, "seed": 9007199254740991},
	}
	for i, name := range planner.ExampleNames() {
		body := map[string]any{"scenario": exampleDoc(f, name)}
		maps.Copy(body, options[i%len(options)])
		f.Add(mustJSON(f, body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := send(contractChecked(t, s), http.MethodPost, "/v1/simulations", body)
		switch {
		case rec.Code == http.StatusOK:
			var sim simulate.Simulation
			if err := json.Unmarshal(rec.Body.Bytes(), &sim); err != nil || len(sim.Classes) == 0 {
				t.Fatalf("200 without a simulation (%v): %.300s", err, rec.Body)
			}
		case rec.Code >= 400 && rec.Code < 500:
			for _, e := range readProblem(t, rec).Errors {
				if e.Location == "" {
					t.Fatalf("%d problem with an unlocated error: %s", rec.Code, rec.Body)
				}
			}
		default:
			t.Fatalf("status %d for body %q: %s", rec.Code, body, rec.Body)
		}
	})
}
