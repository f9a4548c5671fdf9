package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/optional"
	"github.com/plannerdev/planner/internal/probe"
)

// TestBodyTablesNameFields: every entry of the body tables is a field of
// the probe's configuration (the names of its JSON, which its problems
// are located by), and every location they give is a field of the body,
// so that neither side can be renamed alone.
func TestBodyTablesNameFields(t *testing.T) {
	c := probe.Config{BaseURL: "http://127.0.0.1:9/v1", Model: "m", Steps: []int{1}, RequestsPerStep: optional.Of(50),
		Budget: probe.Budget{MaxRequests: optional.Of(1), MaxTokens: optional.Of(1)}}
	search := c
	search.Steps, search.Search = nil, true
	prefill, cache, conversation := c, c, c
	prefill.Steps, prefill.RequestsPerStep, prefill.Prefill = nil, optional.Value[int]{}, &probe.PrefillLadder{InputTokens: []int{1, 2}}
	cache.Steps, cache.RequestsPerStep, cache.Cache = nil, optional.Value[int]{}, &probe.CacheComparison{}
	conversation.Steps, conversation.RequestsPerStep = nil, optional.Value[int]{}
	conversation.Conversation, conversation.SLO = &probe.Conversation{Calls: 2}, measure.Targets{TTFTMs: 1, TPOTMs: 1, E2EMs: 1}
	fields := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		fields[prefix] = true // a field, or an object of fields (a mode's)
		if m, ok := v.(map[string]any); ok {
			for k, x := range m {
				walk(strings.TrimPrefix(prefix+"."+k, "."), x)
			}
		}
	}
	for _, cfg := range []probe.Config{c, search, prefill, cache, conversation} {
		b, _ := json.Marshal(cfg.WithDefaults())
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		walk("", doc)
	}
	bodies := map[string]bodySchema{"probe": probeSchema(), "validation": validateSchema()}
	for name, table := range map[string]map[string]string{"probe": probeFields.Fields, "validation": validateFields.Fields} {
		for path, location := range table {
			p, isProbe := strings.CutPrefix(path, "probe.")
			if (name == "probe" || isProbe) && !fields[p] {
				t.Errorf("the %s table names %q, which is no field of a probe's configuration", name, path)
			}
			if !bodyHas(bodies[name], strings.TrimPrefix(location, "body.")) {
				t.Errorf("the %s table locates %q at %s, which is no field of its body", name, path, location)
			}
		}
	}
}

// bodyHas reports whether a dotted path is a property of a body's schema.
func bodyHas(bs bodySchema, path string) bool {
	s := bs.schema
	for _, name := range strings.Split(path, ".") {
		if s.Ref != "" {
			s = bs.registry.SchemaFromRef(s.Ref)
		}
		next, ok := s.Properties[name]
		if !ok {
			return false
		}
		s = next
	}
	return true
}

// TestProbeRulesInTheBody: the probe's rules reach a probe request as
// problems at the body's fields, all of them in one answer, before
// anything is sent.
func TestProbeRulesInTheBody(t *testing.T) {
	env := newProbeEnv(t, Options{Probe: smallCaps()})
	s := newSim(t, fastSim)
	body := probeBody(s.url, []int{4, 2}, 41)
	body["search"], body["max_concurrency"] = true, 8
	status, _, b := call(t, http.MethodPost, env.url+"/v1/probes", body)
	if status != http.StatusUnprocessableEntity {
		t.Fatalf("status %d: %s", status, b)
	}
	p := decode[problem](t, b)
	want := map[string]string{
		"body.steps":             "a knee search chooses its own steps",
		"body.requests_per_step": "a search sizes its steps itself",
	}
	for _, e := range p.Errors {
		if w, ok := want[e.Location]; ok && strings.Contains(e.Message, w) {
			delete(want, e.Location)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing %v in %s", want, b)
	}
	if n := s.chats.Load(); n != 0 {
		t.Errorf("a refused probe sent %d requests", n)
	}
}

// TestProbeStepTooLargeForAnInteger: a step written as 1e20 or -1e20, a
// whole number no integer holds, is one problem at its element, not one
// at the body and a second that calls it concurrency 0.
func TestProbeStepTooLargeForAnInteger(t *testing.T) {
	env := newProbeEnv(t, Options{Probe: smallCaps()})
	s := newSim(t, fastSim)
	for _, tc := range []struct {
		step float64
		want string
	}{{1e20, "expected number <= 10000"}, {-1e20, "expected number >= 1"}} {
		body := probeBody(s.url, nil, 41)
		body["steps"] = []any{1, 2, tc.step}
		delete(body, "requests_per_step")
		status, _, b := call(t, http.MethodPost, env.url+"/v1/probes", body)
		if status != http.StatusUnprocessableEntity {
			t.Fatalf("status %d: %s", status, b)
		}
		p := decode[problem](t, b)
		if len(p.Errors) != 1 || p.Errors[0].Location != "body.steps[2]" || p.Errors[0].Message != tc.want {
			t.Errorf("step %g: problems %s, want one at body.steps[2]: %s", tc.step, b, tc.want)
		}
	}
	if n := s.chats.Load(); n != 0 {
		t.Errorf("a refused probe sent %d requests", n)
	}
}
