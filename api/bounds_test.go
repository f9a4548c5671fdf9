package api

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/probe"
)

// TestProbeBoundsComeFromTheProbe: the schema publishes package probe's
// bounds and defaults, and a request one past a bound is refused at its
// field before anything is sent, whatever the server's caps.
func TestProbeBoundsComeFromTheProbe(t *testing.T) {
	doc := New(Options{}).OpenAPI().Components.Schemas.Map()
	req, budgets := doc["ProbeRequest"].Properties, doc["Budgets"].Properties
	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"steps maxItems", float64(*req["steps"].MaxItems), probe.MaxSteps},
		{"requests_per_step maximum", *req["requests_per_step"].Maximum, probe.MaxRequestsPerStep},
		{"budgets.max_requests maximum", *budgets["max_requests"].Maximum, probe.MaxBudgetRequests},
		{"budgets.max_tokens maximum", *budgets["max_tokens"].Maximum, probe.MaxBudgetTokens},
		{"budgets.max_duration_s maximum", *budgets["max_duration_s"].Maximum, probe.MaxBudgetDuration.Seconds()},
		{"validation requests_per_step maximum", *doc["ValidateRequest"].Properties["requests_per_step"].Maximum, probe.MaxRequestsPerStep},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %g, want %g", tc.name, tc.got, tc.want)
		}
	}
	for _, want := range []string{"Default 1, 2, 4, 8, 16, 32.", "(256 unless configured)"} {
		if !strings.Contains(req["steps"].Description, want) {
			t.Errorf("steps description %q lacks %q", req["steps"].Description, want)
		}
	}
	if d := req["max_tokens"].Description; !strings.Contains(d, "default "+strconv.Itoa(probe.DefaultMaxTokens)) {
		t.Errorf("max_tokens description %q", d)
	}

	env := newProbeEnv(t, Options{})
	s := newSim(t, fastSim)
	tooMany := make([]int, probe.MaxSteps+1)
	for i := range tooMany {
		tooMany[i] = i + 1
	}
	for _, tc := range []struct {
		name     string
		edit     func(map[string]any)
		location string
	}{
		{"steps", func(b map[string]any) { b["steps"] = tooMany }, "body.steps"},
		{"requests per step", func(b map[string]any) { b["requests_per_step"] = probe.MaxRequestsPerStep + 1 }, "body.requests_per_step"},
		{"request budget", func(b map[string]any) { b["budgets"] = map[string]any{"max_requests": probe.MaxBudgetRequests + 1} }, "body.budgets.max_requests"},
		{"duration budget", func(b map[string]any) {
			b["budgets"] = map[string]any{"max_duration_s": probe.MaxBudgetDuration.Seconds() + 1}
		}, "body.budgets.max_duration_s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := probeBody(s.url, []int{1}, 4)
			tc.edit(body)
			status, _, b := call(t, http.MethodPost, env.url+"/v1/probes", body)
			p := decode[problem](t, b)
			if status != http.StatusUnprocessableEntity || len(p.Errors) == 0 || p.Errors[0].Location != tc.location {
				t.Fatalf("status %d, want 422 at %s: %s", status, tc.location, b)
			}
		})
	}
	if n := s.chats.Load(); n != 0 {
		t.Fatalf("refused probes sent %d requests", n)
	}
}
