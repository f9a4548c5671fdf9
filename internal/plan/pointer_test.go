package plan

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

// TestSetNumberMatchesJSONPatch checks the typed setter against a JSON
// Patch of the encoded scenario, and that it leaves the original alone.
func TestSetNumberMatchesJSONPatch(t *testing.T) {
	tests := []struct {
		example, path string
		value         float64
		ok            bool
	}{
		{"three-classes", "/quotas/0/tpm", 2_500_000, true},
		{"three-classes", "/quotas/0/rpd", 90_000, true},           // absent: added
		{"three-classes", "/classes/1/slo/e2e_p95_ms", 9000, true}, // absent member of an existing object
		{"chat-and-batch", "/policy/max_pool", 77, true},
		{"chat", "/latency/knee", 48, true},
		{"endpoints", "/endpoints/0/latency/knee", 31, true},
		{"endpoints", "/endpoints/0/latency/curve/2/ttft_p95_ms", 512, true},
		{"chat", "/classes/0/latency/knee", 8, false}, // the class has no latency of its own
		{"chat", "/quotas/7/tpm", 1, false},
		{"chat", "/quotas/-1/tpm", 1, false},
		{"chat", "/quotas/0/nonsense", 1, false},
		{"chat", "/quotas/0/name", 1, false},
		{"chat", "quotas/0/tpm", 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.example+tt.path, func(t *testing.T) {
			s := withEndpoint(t, tt.example)
			before := encodeScenario(t, s)
			got, err := setNumber(s, tt.path, tt.value)
			if !reflect.DeepEqual(encodeScenario(t, s), before) {
				t.Fatal("the original scenario changed")
			}
			if (err == nil) != tt.ok {
				t.Fatalf("error %v, want ok=%v", err, tt.ok)
			}
			if !tt.ok {
				return
			}
			var v any = tt.value
			if tt.path == "/policy/max_pool" || tt.path[len(tt.path)-5:] == "/knee" {
				v = int(tt.value)
			}
			sameAsWhatIf(t, got, before, tt.path, v)
		})
	}
}

// TestSetNumberAddsToAnOmittedPolicy sets a policy field of a scenario
// that gives no policy: the policy is a value that always exists, though
// its JSON encoding leaves it out.
func TestSetNumberAddsToAnOmittedPolicy(t *testing.T) {
	s := example(t, "three-classes")
	if s.Policy != (scenario.Policy{}) {
		t.Fatal("the example sets a policy")
	}
	got, err := setNumber(s, "/policy/max_pool", 77)
	if err != nil || got.Policy.MaxPool != 77 {
		t.Fatalf("max_pool %d, error %v", got.Policy.MaxPool, err)
	}
	// What-if takes the same path: a remedy can be tried there.
	sameAsWhatIf(t, got, encodeScenario(t, s), "/policy/max_pool", 77)
	if _, err := set(encodeScenario(t, s), "/classes/0/slo/nonsense/x", 1); err == nil {
		t.Error("what-if added an object the scenario does not have")
	}
}

// sameAsWhatIf checks that got is the scenario doc becomes when what-if
// sets the value at path (a JSON Patch of the document).
func sameAsWhatIf(t *testing.T, got scenario.Scenario, doc []byte, path string, value any) {
	t.Helper()
	patched, err := set(doc, path, value)
	if err != nil {
		t.Fatalf("what-if: %v", err)
	}
	var want scenario.Scenario
	if err := json.Unmarshal(patched, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(encodeScenario(t, got), encodeScenario(t, want)) {
		t.Errorf("setNumber gives %s\nwhat-if gives %s", encodeScenario(t, got), encodeScenario(t, want))
	}
}

// withEndpoint is the named example, or for "endpoints" the measured curve
// on a named endpoint.
func withEndpoint(t *testing.T, name string) scenario.Scenario {
	if name != "endpoints" {
		return example(t, name)
	}
	s := mutable(example(t, "measured-curve"))
	s.Endpoints = []scenario.Endpoint{{Name: "gpu", Latency: s.Latency}}
	s.Latency = scenario.Latency{}
	for i := range s.Classes {
		s.Classes[i].Endpoint = "gpu"
	}
	return s
}

func encodeScenario(t *testing.T, s scenario.Scenario) []byte {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
