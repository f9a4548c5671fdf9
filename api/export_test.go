package api

import (
	"bytes"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/plannerdev/planner/internal/export"
)

// TestPlanExport exports a stored plan to every target: the file is what
// planner export writes of the same scenario and plan, with its media
// type; an unknown target is a 422 at query.to, an unknown plan a 404.
func TestPlanExport(t *testing.T) {
	env := newProbeEnv(t, Options{})
	status, _, b := call(t, http.MethodPost, env.url+"/v1/plans", map[string]any{"scenario": exampleDoc(t, "three-classes"), "save": true})
	id := decode[PlanResponse](t, b).ID
	if status != http.StatusOK || id == "" {
		t.Fatalf("save: %d %s", status, b)
	}
	_, _, b = call(t, http.MethodGet, env.url+"/v1/plans/"+id, nil)
	sp := decode[StoredPlan](t, b)
	for _, tc := range []struct{ to, query, ct string }{
		{export.ToPrometheusRules, "", "application/yaml; charset=utf-8"},
		{export.ToLiteLLM, "&model=openai/gpt-4o-mini", "application/yaml; charset=utf-8"},
		{export.ToClient, "", "application/json"},
	} {
		status, h, body := call(t, http.MethodGet, env.url+"/v1/plans/"+id+"/export?to="+tc.to+tc.query, nil)
		var want bytes.Buffer
		if err := export.Write(&want, tc.to, sp.Scenario, &sp.Plan, export.Options{Model: strings.TrimPrefix(tc.query, "&model=")}); err != nil {
			t.Fatal(err)
		}
		var doc any
		if status != http.StatusOK || h.Get("Content-Type") != tc.ct || !bytes.Equal(body, want.Bytes()) || yaml.Unmarshal(body, &doc) != nil {
			t.Errorf("%s: %d %s, %d bytes (want %d)\n%.300s", tc.to, status, h.Get("Content-Type"), len(body), want.Len(), body)
		}
	}
	if !strings.Contains(string(mustGet(t, env.url+"/v1/plans/"+id+"/export?to=litellm&model=openai/gpt-4o-mini")), "model: openai/gpt-4o-mini") {
		t.Error("the model is not in the LiteLLM settings")
	}
	// A model of two lines wrote a block scalar into litellm_params.model;
	// a model with another target was ignored.
	for _, q := range []string{"to=litellm&model=openai%2Fa%0Ab", "to=litellm&model=%20openai%2Fa", "to=prometheus-rules&model=openai%2Fa"} {
		if status, _, b := call(t, http.MethodGet, env.url+"/v1/plans/"+id+"/export?"+q, nil); status != http.StatusUnprocessableEntity || !strings.Contains(string(b), `"location":"query.model"`) {
			t.Errorf("%s: %d %s", q, status, b)
		}
	}
	if status, _, b := call(t, http.MethodGet, env.url+"/v1/plans/"+id+"/export?to=grafana", nil); status != http.StatusUnprocessableEntity || !strings.Contains(string(b), `"location":"query.to"`) {
		t.Errorf("an unknown target: %d %s", status, b)
	}
	if status, _, b := call(t, http.MethodGet, env.url+"/v1/plans/"+id+"/export", nil); status != http.StatusUnprocessableEntity || !strings.Contains(string(b), `"location":"query.to"`) {
		t.Errorf("no target: %d %s", status, b)
	}
	for _, to := range []string{export.ToPrometheusRules, export.ToClient} {
		status, _, b := call(t, http.MethodGet, env.url+"/v1/plans/"+id+"/export?to="+to+"&model=openai/gpt-4o-mini", nil)
		if p := decode[problem](t, b); status != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Location != "query.model" ||
			p.Errors[0].Message != "only to=litellm takes a model; "+to+" has none" {
			t.Errorf("a model for %s: %d %s", to, status, b)
		}
	}
	if status, _, b := call(t, http.MethodGet, env.url+"/v1/plans/nope/export?to=client", nil); status != http.StatusNotFound || !strings.Contains(string(b), `"location":"path.id"`) {
		t.Errorf("an unknown plan: %d %s", status, b)
	}
}

func mustGet(t *testing.T, url string) []byte {
	t.Helper()
	status, _, b := call(t, http.MethodGet, url, nil)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, status, b)
	}
	return b
}

// TestExportTargetsAreOneList: the API's enum of to is export.Targets.
func TestExportTargetsAreOneList(t *testing.T) {
	f, _ := reflect.TypeFor[exportInput]().FieldByName("To")
	if got := strings.Split(f.Tag.Get("enum"), ","); !slices.Equal(got, export.Targets) {
		t.Errorf("the enum of to is %q, export.Targets %q", got, export.Targets)
	}
}

// TestExportOfKeysThatShareAVariable: a stored plan whose keys' names
// give one LiteLLM environment variable is refused as a 422 naming the
// second key, not a 500; its other exports are served.
func TestExportOfKeysThatShareAVariable(t *testing.T) {
	env := newProbeEnv(t, Options{})
	doc := map[string]any{
		"quotas":  []any{map[string]any{"name": "team.a", "rpm": 1000}, map[string]any{"name": "team-a", "rpm": 1000}},
		"latency": map[string]any{"ttft_ms": map[string]any{"p50": 400, "p95": 900}, "tpot_ms": map[string]any{"p50": 20, "p95": 30}},
		"classes": []any{
			map[string]any{"name": "a", "quota": "team.a", "mode": "interactive", "demand": map[string]any{"rps": 1}, "input_tokens": map[string]any{"fixed": 500}, "output_tokens": map[string]any{"fixed": 100}},
			map[string]any{"name": "b", "quota": "team-a", "mode": "interactive", "demand": map[string]any{"rps": 1}, "input_tokens": map[string]any{"fixed": 500}, "output_tokens": map[string]any{"fixed": 100}},
		},
	}
	status, _, b := call(t, http.MethodPost, env.url+"/v1/plans", map[string]any{"scenario": doc, "save": true})
	id := decode[PlanResponse](t, b).ID
	if status != http.StatusOK || id == "" {
		t.Fatalf("save: %d %s", status, b)
	}
	status, _, b = call(t, http.MethodGet, env.url+"/v1/plans/"+id+"/export?to=litellm", nil)
	if status != http.StatusUnprocessableEntity || !strings.Contains(string(b), `"location":"scenario.quotas[1].name"`) || !strings.Contains(string(b), "TEAM_A_API_KEY") {
		t.Errorf("LiteLLM: %d %s", status, b)
	}
	if status, _, b := call(t, http.MethodGet, env.url+"/v1/plans/"+id+"/export?to=client", nil); status != http.StatusOK {
		t.Errorf("client settings: %d %s", status, b)
	}
}
