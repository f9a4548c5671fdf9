package scenario_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/testutil"
)

// TestSetMatchesJSONPatch checks the typed setter against a JSON Patch of
// the encoded scenario ("replace", or "add" for a member the document
// leaves out), and that it leaves the original alone.
func TestSetMatchesJSONPatch(t *testing.T) {
	tests := []struct {
		example, path string
		value         any
		ok            bool
	}{
		{"three-classes", "/quotas/0/tpm", 2_500_000.0, true},
		{"three-classes", "/quotas/0/rpd", 90_000.0, true},           // absent: added
		{"three-classes", "/classes/1/slo/e2e_p95_ms", 9000.0, true}, // absent member of an existing object
		{"three-classes", "/classes/0/demand", map[string]any{"rpm": 30.0}, true},
		{"three-classes", "/classes/0/max_tokens", nil, true}, // left out
		{"three-classes", "/quotas/0", scenario.Quota{Name: "other", RPM: 7, TokenAccounting: "max_tokens"}, true},
		{"three-classes", "/classes/2/mode", "semi", true},
		{"chat-and-batch", "/policy/max_pool", 77.0, true},
		{"chat-and-batch", "/policy/seed", 9.0, true},
		{"chat", "/latency/knee", 48.0, true},
		{"endpoints", "/endpoints/0/latency/knee", 31.0, true},
		{"endpoints", "/endpoints/0/latency/curve/2/ttft_p95_ms", 512.0, true},
		{"chat", "/classes/0/latency/knee", 8.0, false}, // the class has no latency of its own
		{"chat", "/quotas/7/tpm", 1.0, false},
		{"chat", "/classes/1", 1.0, false}, // would insert into the list
	}
	for _, tt := range tests {
		t.Run(tt.example+tt.path, func(t *testing.T) {
			s := withEndpoint(t, tt.example)
			before := encode(t, s)
			p, err := scenario.ParsePointer(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if errs := p.Check(tt.value); tt.ok && len(errs) > 0 {
				t.Fatalf("Check: %v", errs)
			}
			got, err := s.Set(p, tt.value)
			if !slices.Equal(encode(t, s), before) {
				t.Fatal("the original scenario changed")
			}
			if reach := s.Reaches(p); (reach == nil) != (err == nil) {
				t.Errorf("Reaches %v, Set %v", reach, err)
			}
			if (err == nil) != tt.ok {
				t.Fatalf("error %v, want ok=%v", err, tt.ok)
			}
			if !tt.ok {
				if want := "no field at " + tt.path + " in the scenario"; err.Error() != want {
					t.Errorf("error %q, want %q", err, want)
				}
				return
			}
			want := encodeScenarioJSON(t, patched(t, before, tt.path, tt.value))
			if !slices.Equal(encode(t, got), want) {
				t.Errorf("Set gives %s\nJSON Patch %s", encode(t, got), want)
			}
		})
	}
}

// TestSetWritesAnOmittedPolicy sets a policy field of a scenario that
// gives no policy: the policy is a value that always exists, though its
// JSON encoding leaves it out; a missing optional object on the way is no
// field.
func TestSetWritesAnOmittedPolicy(t *testing.T) {
	s := testutil.Example(t, "three-classes")
	if s.Policy != (scenario.Policy{}) {
		t.Fatal("the example sets a policy")
	}
	p, _ := scenario.ParsePointer("/policy/max_pool")
	got, err := s.Set(p, 77.0)
	if err != nil || got.Policy.MaxPool != 77 {
		t.Fatalf("max_pool %d, error %v", got.Policy.MaxPool, err)
	}
	p, _ = scenario.ParsePointer("/policy/knee_safety/batch")
	if _, err := s.Set(p, 0.5); err == nil {
		t.Error("wrote into a knee_safety the scenario does not have")
	}
}

// TestParsePointer: the syntax of RFC 6901 and the scenario's fields,
// and where a problem at the pointer is located.
func TestParsePointer(t *testing.T) {
	for text, want := range map[string]string{
		"quotas/0/tpm":               "a JSON Pointer starts with /, as in /quotas/0/tpm",
		"":                           "a JSON Pointer starts with /, as in /quotas/0/tpm",
		"/":                          "no field at / in the scenario",
		"/quotas/0/nonsense":         "no field at /quotas/0/nonsense in the scenario",
		"/quotas/0/tpm/x":            "no field at /quotas/0/tpm/x in the scenario",
		"/quotas/01/tpm":             "no field at /quotas/01/tpm in the scenario",
		"/quotas/-/tpm":              "no field at /quotas/-/tpm in the scenario",
		"/quotas/+1/tpm":             "no field at /quotas/+1/tpm in the scenario",
		"/quotas/-1/tpm":             "no field at /quotas/-1/tpm in the scenario",
		"/quotas/99999999999/tpm":    "no field at /quotas/99999999999/tpm in the scenario",
		"/quotas/0~2/tpm":            "/quotas/0~2/tpm is not a JSON Pointer: write ~ as ~0 and / as ~1",
		"/quotas/0/tpm~":             "/quotas/0/tpm~ is not a JSON Pointer: write ~ as ~0 and / as ~1",
		"/classes/0/demand/profile/": "no field at /classes/0/demand/profile/ in the scenario",
	} {
		if _, err := scenario.ParsePointer(text); err == nil || err.Error() != want {
			t.Errorf("%q: error %v, want %q", text, err, want)
		}
	}
	for text, want := range map[string]string{
		"/quotas/0/tpm":                            "quotas[0].tpm",
		"/classes/12/output_tokens/p95":            "classes[12].output_tokens.p95",
		"/endpoints/0/latency/curve/3/ttft_p95_ms": "endpoints[0].latency.curve[3].ttft_p95_ms",
		"/policy":                            "policy",
		"/classes/0/demand/profile/1/factor": "classes[0].demand.profile[1].factor",
	} {
		p, err := scenario.ParsePointer(text)
		if err != nil || p.Location() != want || p.String() != text {
			t.Errorf("%s: location %q, error %v; want %q", text, p.Location(), err, want)
		}
	}
	for text, want := range map[string]int{"/quotas/0": 0, "/quotas/17": 17, "/quotas/0/tpm": -1, "/classes/0": -1, "/policy": -1} {
		p, err := scenario.ParsePointer(text)
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := p.QuotaIndex(); (ok && n != want) || ok != (want >= 0) {
			t.Errorf("%s: QuotaIndex %d, %v", text, n, ok)
		}
	}
}

// TestCheckAgreesWithParse: the problems Check finds in a value are those
// Parse finds in the document with the value written there, at the same
// paths, with the same messages.
func TestCheckAgreesWithParse(t *testing.T) {
	s := testutil.Example(t, "three-classes")
	tests := []struct {
		path  string
		value any
	}{
		{"/quotas/0/rpm", "lots"},
		{"/quotas/0/rpm", -1.0},
		{"/quotas/0/tpm", 1e20},
		{"/quotas/0/name", "-bad name"},
		{"/quotas/0/token_accounting", "guess"},
		{"/quotas/0", nil},
		{"/quotas/0", map[string]any{"rpm": 1.0, "colour": "blue"}},
		{"/classes/0/max_tokens", 2.5},
		{"/classes/0/demand", map[string]any{"rps": -1.0}},
		{"/classes/0/demand", 5.0},
		{"/classes/1/output_tokens", map[string]any{"p50": 1.0, "p95": "x"}},
		{"/classes/1/output_tokens/samples", []any{1.0, "two"}},
		{"/policy/seed", -3.0},
		{"/policy/max_utilization", 1.0},
		{"/classes/0/mode", true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.path, "=", tt.value), func(t *testing.T) {
			p, err := scenario.ParsePointer(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			got := p.Check(tt.value)
			if len(got) == 0 {
				t.Fatal("no problem found")
			}
			_, err = scenario.Parse(patched(t, encode(t, s), tt.path, tt.value))
			var want scenario.Errors
			if !errors.As(err, &want) {
				t.Fatalf("Parse: %v", err)
			}
			for _, e := range got {
				if !slices.Contains(want, e) {
					t.Errorf("Check found %v; Parse found %v", e, want)
				}
				if !strings.HasPrefix(e.Path, p.Location()) {
					t.Errorf("%v is not at or below %s", e, p.Location())
				}
			}
		})
	}
	for path, value := range map[string]any{"/classes/0/max_tokens": nil, "/classes/0/demand": nil, "/quotas/0/rpm": 12.0, "/policy/seed": 3.0} {
		p, _ := scenario.ParsePointer(path)
		if errs := p.Check(value); len(errs) > 0 {
			t.Errorf("%s = %v: %v", path, value, errs)
		}
	}
}

// patched is doc with value at path by a JSON Patch: "replace", or "add"
// for a member that doc leaves out, with the settings objects a scenario
// always has (policy, the top-level latency) present.
func patched(t *testing.T, doc []byte, path string, value any) []byte {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(doc, &root); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"policy", "latency"} {
		if _, ok := root[k]; !ok {
			root[k] = map[string]any{}
		}
	}
	doc, _ = json.Marshal(root)
	v, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"replace", "add"} {
		p, err := jsonpatch.DecodePatch(fmt.Appendf(nil, `[{"op":%q,"path":%q,"value":%s}]`, op, path, v))
		if err != nil {
			t.Fatal(err)
		}
		if out, err := p.Apply(doc); err == nil {
			return out
		}
	}
	t.Fatalf("no JSON Patch writes %s", path)
	return nil
}

// withEndpoint is the named example, or for "endpoints" the measured curve
// on a named endpoint.
func withEndpoint(t *testing.T, name string) scenario.Scenario {
	if name != "endpoints" {
		return testutil.Example(t, name)
	}
	s := testutil.Example(t, "measured-curve")
	s.Endpoints = []scenario.Endpoint{{Name: "gpu", Latency: s.Latency}}
	s.Latency = scenario.Latency{}
	s.Classes = slices.Clone(s.Classes)
	for i := range s.Classes {
		s.Classes[i].Endpoint = "gpu"
	}
	return s
}

// encodeScenarioJSON is a scenario document as the scenario type encodes it.
func encodeScenarioJSON(t *testing.T, doc []byte) []byte {
	t.Helper()
	var s scenario.Scenario
	if err := json.Unmarshal(doc, &s); err != nil {
		t.Fatal(err)
	}
	return encode(t, s)
}

func encode(t *testing.T, s scenario.Scenario) []byte {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
