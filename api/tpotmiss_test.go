package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/plannerdev/planner/internal/plan"
)

// TestATPOTMissIsInTheSchema: a class whose TPOT breaks its target, at
// the 95th percentile or at the one its SLO names, is answered with the
// miss named as its check names it (tpot_p95_ms, tpot_ms_at_percentile),
// in a plan and in a checked what-if cell, each an answer that
// openapi.yaml allows.
func TestATPOTMissIsInTheSchema(t *testing.T) {
	s := newServer(t, Options{})
	doc := exampleDoc(t, "chat")
	chat := doc["classes"].([]any)[0].(map[string]any)
	at95 := map[string]any{}
	for k, v := range chat {
		at95[k] = v
	}
	chat["slo"] = map[string]any{"ttft_ms": 1500, "e2e_ms": 12000, "tpot_ms": 20, "percentile": 99}
	at95["name"], at95["slo"] = "chat95", map[string]any{"ttft_ms": 1500, "e2e_ms": 12000, "tpot_ms": 20}
	doc["classes"] = []any{chat, at95}
	rec := send(s, http.MethodPost, "/v1/plans", mustJSON(t, map[string]any{"scenario": doc}))
	if rec.Code != http.StatusOK {
		t.Fatalf("POST /v1/plans: %d %s", rec.Code, rec.Body)
	}
	var p plan.Plan
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"tpot_ms_at_percentile", "tpot_p95_ms"} {
		c := p.Classes[i]
		if c.Check == nil || !slices.ContainsFunc(c.Check.Misses, func(m plan.Miss) bool { return m.Metric == want }) {
			t.Errorf("class %s: check %+v, want a miss of %s", c.Name, c.Check, want)
		}
	}
	rec = send(s, http.MethodPost, "/v1/what-if", mustJSON(t, map[string]any{"scenario": doc, "check": true,
		"variations": []any{map[string]any{"path": "/classes/0/slo/tpot_ms", "values": []any{20, 25}}}}))
	if rec.Code != http.StatusOK {
		t.Fatalf("POST /v1/what-if: %d %s", rec.Code, rec.Body)
	}
}
