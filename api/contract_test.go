package api

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/report"
	"github.com/plannerdev/planner/internal/simulate"
	"github.com/plannerdev/planner/internal/store"
	"github.com/plannerdev/planner/internal/testutil"
	"github.com/plannerdev/planner/internal/verify"
)

// TestStoredResultsAreServedWhole: a plan and a probe's analysis with
// every field set (testutil.Fill), stored and then read through
// GET /v1/plans/{id} and GET /v1/probes/{id}, arrive field for field, so
// that a field the engine adds reaches the API's answer or fails here,
// named.
func TestStoredResultsAreServedWhole(t *testing.T) {
	st := openStore(t)
	s := newServer(t, Options{Store: st})
	ctx := context.Background()
	t.Run("plan", func(t *testing.T) {
		testutil.Carried(t, func(t testing.TB, p plan.Plan) plan.Plan {
			id, err := st.SavePlan(ctx, store.StoredPlan{Name: "every field", Scenario: exampleScenario(t, "chat"), Plan: p})
			if err != nil {
				t.Fatal(err)
			}
			return get[struct {
				Plan plan.Plan `json:"plan"`
			}](t, s, "/v1/plans/"+id).Plan
		})
	})
	t.Run("probe", func(t *testing.T) {
		testutil.Carried(t, func(t testing.TB, r measure.Result) measure.Result {
			id, err := st.CreateProbe(ctx, store.ProbeRun{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.SaveProbeResult(ctx, id, store.ProbeResult{Analysis: r}); err != nil {
				t.Fatal(err)
			}
			return get[measure.Result](t, s, "/v1/probes/"+id)
		})
	})
}

// TestComputedResultsAreServedWhole: the answers the API computes rather
// than stores are the engine's types, embedded in the body when it adds
// members (an id, the format read), so a body built around an engine
// value with every field set encodes each of its fields: the plan, a
// what-if cell, an analysis, a simulation, a validation report and a
// record card.
func TestComputedResultsAreServedWhole(t *testing.T) {
	t.Run("plan", func(t *testing.T) {
		testutil.Carried(t, func(t testing.TB, p plan.Plan) plan.Plan {
			return reencode[plan.Plan](t, PlanResponse{ID: "p1", Plan: p})
		})
	})
	t.Run("what-if cell", func(t *testing.T) {
		testutil.Carried(t, func(t testing.TB, c plan.Cell) plan.Cell {
			return reencode[WhatIfResponse](t, WhatIfResponse{Cells: []plan.Cell{c}}).Cells[0]
		})
	})
	t.Run("analysis", func(t *testing.T) {
		testutil.Carried(t, func(t testing.TB, r measure.Result) measure.Result {
			return reencode[measure.Result](t, AnalysisResponse{Format: "steps", Result: r})
		})
	})
	t.Run("simulation", func(t *testing.T) {
		testutil.Carried(t, func(t testing.TB, r simulate.Simulation) simulate.Simulation {
			return reencode[simulate.Simulation](t, SimulationResponse{Simulation: r})
		})
	})
	t.Run("validation", func(t *testing.T) {
		testutil.Carried(t, func(t testing.TB, r verify.Report) verify.Report {
			return reencode[verify.Report](t, ValidateResponse{PlanID: "p1", Report: r})
		})
	})
	t.Run("record card", func(t *testing.T) {
		testutil.Carried(t, func(t testing.TB, c report.RecordCard) report.RecordCard {
			return reencode[RecordList](t, RecordList{Items: []report.RecordCard{c}}).Items[0]
		})
	})
}

// get decodes the answer to GET path as a T.
func get[T any](t testing.TB, s *Server, path string) T {
	t.Helper()
	rec := send(s, http.MethodGet, path, nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	var v T
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// reencode is body encoded as JSON, as the API sends it, and decoded as T.
func reencode[T any](t testing.TB, body any) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(mustJSON(t, body), &v); err != nil {
		t.Fatal(err)
	}
	return v
}
