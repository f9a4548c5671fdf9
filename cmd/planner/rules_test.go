package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/plannerdev/planner/api"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/optional"
	"github.com/plannerdev/planner/internal/probe"
)

// TestOneRuleTwoNames: each probe and validation rule is written once
// (probe.Config.Validate, verify.Options.Validate), and the command line
// and the service report it under their own names for the field: a flag,
// a body location. A rule that only the configuration knows reads the
// same in both; a bound that the service's schema also publishes is
// refused by both at the same field.
func TestOneRuleTwoNames(t *testing.T) {
	srv := httptest.NewServer(api.New(api.Options{}))
	t.Cleanup(srv.Close)
	target := map[string]any{"base_url": "http://127.0.0.1:9/v1", "model": "m"}
	probeArgs := []string{"probe", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"}
	validateArgs := []string{"plan", "--example", "chat", "--validate", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"}
	for _, tc := range []struct {
		name     string
		args     []string
		flag     string
		path     string
		body     map[string]any
		location string
		message  string // the rule's own words, when the schema does not publish it
	}{
		{"steps not ascending", append(probeArgs, "--steps", "4,2"), "--steps",
			"/v1/probes", map[string]any{"steps": []int{4, 2}}, "body.steps[1]", "the steps must be strictly ascending (2 after 4)"},
		{"a search with requests per step", append(probeArgs, "--search", "--requests-per-step", "100"), "--requests-per-step",
			"/v1/probes", map[string]any{"search": true, "requests_per_step": 100}, "body.requests_per_step", "a search sizes its steps itself"},
		{"a search's top without a search", append(probeArgs, "--max-concurrency", "8"), "--max-concurrency",
			"/v1/probes", map[string]any{"max_concurrency": 8}, "body.max_concurrency", "bounds a knee search"},
		{"steps too short", append(probeArgs, "--requests-per-step", "16"), "--requests-per-step",
			"/v1/probes", map[string]any{"requests_per_step": 16}, "body.requests_per_step",
			"16 requests with 1 warm-up leave 15 measured at concurrency 1, fewer than the minimum max(40, 3c) = 40"},
		{"a collapse tolerance of 0", append(probeArgs, "--collapse-tolerance-pct", "0"), "--collapse-tolerance-pct",
			"/v1/probes", map[string]any{"stop": map[string]any{"collapse_tolerance_pct": 0}}, "body.stop.collapse_tolerance_pct", ""},
		{"a collapse tolerance of 100", append(probeArgs, "--collapse-tolerance-pct", "100"), "--collapse-tolerance-pct",
			"/v1/probes", map[string]any{"stop": map[string]any{"collapse_tolerance_pct": 100}}, "body.stop.collapse_tolerance_pct", ""},
		{"a validation tolerance of 999.5", append(validateArgs, "--tolerance-pct", "999.5"), "--tolerance-pct",
			"/v1/plans/p1/validate", map[string]any{"tolerance_pct": 999.5}, "body.tolerance_pct", ""},
		{"a validation deadline of 0", append(validateArgs, "--deadline", "0s"), "--deadline",
			"/v1/plans/p1/validate", map[string]any{"deadline_ms": 0}, "body.deadline_ms", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := execute(t, "", tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.flag+": ") || !strings.Contains(stderr, tc.message) {
				t.Errorf("command line: exit %d, %q; want exit 2 naming %s with %q", code, stderr, tc.flag, tc.message)
			}
			body := map[string]any{"target": target}
			for k, v := range tc.body {
				body[k] = v
			}
			b, _ := json.Marshal(body)
			resp, err := http.Post(srv.URL+tc.path, "application/json", bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var problem struct {
				Errors []struct{ Location, Message string } `json:"errors"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&problem); err != nil || resp.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("service: %d, %v", resp.StatusCode, err)
			}
			if len(problem.Errors) != 1 || problem.Errors[0].Location != tc.location || !strings.Contains(problem.Errors[0].Message, tc.message) {
				t.Fatalf("service: %+v; want one problem at %s with %q", problem.Errors, tc.location, tc.message)
			}
			if tc.message != "" && !strings.Contains(stderr, tc.flag+": "+problem.Errors[0].Message) {
				t.Errorf("the command line says %q, the service %q", stderr, problem.Errors[0].Message)
			}
		})
	}
}

// configFields are the fields of a probe configuration's JSON, dotted
// ("budget.max_requests"): the names its problems are located by.
func configFields(t *testing.T) map[string]bool {
	t.Helper()
	set := probe.Config{
		BaseURL: "http://127.0.0.1:9/v1", Model: "m", Steps: []int{1}, RequestsPerStep: optional.Of(50), Warmup: optional.Of(1),
		Prompts: []probe.Prompt{{Text: "x"}},
		Budget:  probe.Budget{MaxRequests: optional.Of(1), MaxTokens: optional.Of(1)},
	}
	search := set
	search.Search, search.SearchMax = true, optional.Of(8)
	open := set
	open.Open = &probe.OpenLoop{Rates: []float64{1}, MaxInFlight: 1}
	synthetic := set
	synthetic.Prompts = nil
	ramp := synthetic
	ramp.Steps, ramp.RequestsPerStep = nil, optional.Value[int]{}
	prefill, cache, conversation := ramp, ramp, ramp
	prefill.Prefill = &probe.PrefillLadder{InputTokens: []int{1, 2}}
	cache.Cache = &probe.CacheComparison{}
	conversation.Conversation, conversation.SLO = &probe.Conversation{Calls: 2}, measure.Targets{TTFTMs: 1, TPOTMs: 1, E2EMs: 1}
	// The record leaves the key out, and with it the header it goes in.
	fields := map[string]bool{"api_key_header": true}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		fields[prefix] = true // a field, or an object of fields (a mode's)
		if m, ok := v.(map[string]any); ok {
			for k, x := range m {
				walk(strings.TrimPrefix(prefix+"."+k, "."), x)
			}
		}
	}
	for _, c := range []probe.Config{set, search, open, synthetic, prefill, cache, conversation} {
		b, err := json.Marshal(c.WithDefaults())
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		walk("", doc)
	}
	return fields
}

// TestFlagTablesNameFields: every entry of the flag tables is a field of
// the configuration, so that a field renamed in one place cannot leave its
// problems under their raw path.
func TestFlagTablesNameFields(t *testing.T) {
	fields := configFields(t)
	for path := range probeFlags.Fields {
		if !fields[path] {
			t.Errorf("probeFlags names %q, which is no field of a probe's configuration", path)
		}
	}
	for path := range validateFlags.Fields {
		if p, ok := strings.CutPrefix(path, "probe."); ok && !fields[p] {
			t.Errorf("validateFlags names %q, which is no field of a probe's configuration", path)
		}
	}
}
