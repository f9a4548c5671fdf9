package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/app"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/simulate"
)

// TestCreateSimulationMatchesEngine: the answer is the engine's run of the
// same scenario and options, and the same request gives the same bytes.
func TestCreateSimulationMatchesEngine(t *testing.T) {
	s := newServer(t, Options{})
	body := mustJSON(t, map[string]any{"scenario": exampleDoc(t, "backfill"), "duration_s": 600, "interval_s": 60, "pacing": false, "seed": 3})
	rec := send(s, http.MethodPost, "/v1/simulations", body)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var got SimulationResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	seed := uint64(3)
	want, err := app.New(plan.New(plan.Options{})).Simulate(context.Background(), exampleScenario(t, "backfill"), simulate.Options{
		DurationS: 600, IntervalS: 60, NoPacing: true, Seed: &seed, MaxEvents: 2_000_000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, got, *want) {
		t.Error("the API's simulation differs from the app's")
	}
	if got.Settings.Pacing || got.Settings.Seed != 3 || got.Settings.Intervals != 10 || got.Verdict.Holds {
		t.Errorf("settings %+v, verdict %+v", got.Settings, got.Verdict)
	}
	if again := send(s, http.MethodPost, "/v1/simulations", body); !bytes.Equal(again.Body.Bytes(), rec.Body.Bytes()) {
		t.Error("the same request gave a different answer")
	}
}

// TestCreateSimulationRefusesBadInput: every bad field gets a 422 that
// names it, never a 5xx.
func TestCreateSimulationRefusesBadInput(t *testing.T) {
	s := newServer(t, Options{SimulationMaxEvents: 500_000, SimulationMaxDuration: time.Hour})
	good := func(change func(map[string]any)) map[string]any {
		b := map[string]any{"scenario": exampleDoc(t, "three-classes"), "duration_s": 600}
		change(b)
		return b
	}
	for _, tc := range []struct {
		name string
		body map[string]any
		want []string
	}{
		{"no duration", good(func(b map[string]any) { delete(b, "duration_s") }), nil},
		{"zero duration", good(func(b map[string]any) { b["duration_s"] = 0.0 }), []string{"body.duration_s"}},
		{"negative duration", good(func(b map[string]any) { b["duration_s"] = -5 }), []string{"body.duration_s"}},
		{"duration of -1", good(func(b map[string]any) { b["duration_s"] = -1 }), []string{"body.duration_s"}},
		{"negative duration and interval", good(func(b map[string]any) { b["duration_s"], b["interval_s"] = -1, -1 }), []string{"body.duration_s", "body.interval_s"}},
		{"over the server's duration", good(func(b map[string]any) { b["duration_s"] = 7200 }), []string{"body.duration_s"}},
		{"over the server's events", good(func(b map[string]any) { b["max_events"] = 600_000 }), []string{"body.max_events"}},
		{"more events than allowed", good(func(b map[string]any) { b["max_events"] = 1000 }), []string{"body.duration_s"}},
		{"unknown refill", good(func(b map[string]any) { b["refill"] = "sliding" }), []string{"body.refill"}},
		{"too many points", good(func(b map[string]any) { b["interval_s"] = 0.1 }), []string{"body.interval_s"}},
		{"interval beyond the run", good(func(b map[string]any) { b["interval_s"] = 1000 }), []string{"body.interval_s"}},
		{"replay of no class", good(func(b map[string]any) {
			b["replay"] = []map[string]any{{"class": "nobody", "start_s": []float64{1}}}
		}), []string{"body.replay[0].class"}},
		{"negative replay time", good(func(b map[string]any) {
			b["replay"] = []map[string]any{{"class": "chat", "start_s": []float64{1, -1}}}
		}), []string{"body.replay[0].start_s[1]"}},
		{"scenario rule", good(func(b map[string]any) {
			b["scenario"].(map[string]any)["classes"].([]any)[0].(map[string]any)["output_tokens"] = map[string]any{"p50": 150, "p95": 100}
		}), []string{"body.scenario.classes[0].output_tokens.p95"}},
		{"overlapping profile", good(func(b map[string]any) {
			b["scenario"].(map[string]any)["classes"].([]any)[0].(map[string]any)["demand"] = map[string]any{"rps": 3, "profile": []map[string]any{
				{"start_s": 0, "duration_s": 100, "factor": 2}, {"start_s": 50, "duration_s": 100, "factor": 3}}}
		}), []string{"body.scenario.classes[0].demand.profile[1].start_s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := send(s, http.MethodPost, "/v1/simulations", mustJSON(t, tc.body))
			if tc.want == nil {
				if rec.Code != http.StatusOK {
					t.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				return
			}
			if rec.Code != http.StatusUnprocessableEntity {
				t.Fatalf("status %d, want 422: %s", rec.Code, rec.Body)
			}
			p := readProblem(t, rec)
			for _, loc := range tc.want {
				if !slices.Contains(p.locations(), loc) {
					t.Errorf("no problem at %s: %s", loc, rec.Body)
				}
			}
			// Only the fields that are wrong: none that the body leaves to
			// its default (interval_s, from a duration_s that is wrong).
			for _, loc := range p.locations() {
				if !slices.Contains(tc.want, loc) {
					t.Errorf("a problem at %s, which is not wrong: %s", loc, rec.Body)
				}
			}
		})
	}
}

// TestCreateSimulationStopsAtTheDeadline: a request whose deadline has
// passed gets a 422 that names the simulated time, not a 5xx.
func TestCreateSimulationStopsAtTheDeadline(t *testing.T) {
	s := newServer(t, Options{})
	body := mustJSON(t, map[string]any{"scenario": exampleDoc(t, "chat"), "duration_s": 60})
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/simulations", bytes.NewReader(body))
	req.Host = testHost
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnprocessableEntity {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	p := readProblem(t, rec)
	if !slices.Contains(p.locations(), "body.duration_s") || !strings.Contains(p.Detail, "stopped") {
		t.Errorf("problem %+v", p)
	}
}

// TestSimulationExampleIsTheEngines: the OpenAPI document's example answer
// is what the engine gives for its example request.
func TestSimulationExampleIsTheEngines(t *testing.T) {
	s := newServer(t, Options{})
	op := s.OpenAPI().Paths["/v1/simulations"].Post
	req := op.RequestBody.Content["application/json"].Examples["backfill"].Value
	resp := op.Responses["200"].Content["application/json"].Examples["backfill"].Value
	rec := send(s, http.MethodPost, "/v1/simulations", mustJSON(t, req))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var got any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, got, resp) {
		t.Error("the example answer differs from the API's answer to the example request")
	}
}
