package main

import (
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

var updateSpec = flag.Bool("update", false, "rewrite openapi.yaml from the output of planner openapi")

// TestOpenAPIMatchesCheckedIn keeps openapi.yaml at the repository root equal
// to what `planner openapi` prints, showing the difference when it is not;
// -update rewrites it.
func TestOpenAPIMatchesCheckedIn(t *testing.T) {
	const spec = "../../openapi.yaml"
	code, out, errOut := execute(t, "", "openapi")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if *updateSpec {
		if err := os.WriteFile(spec, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Fatalf("openapi.yaml is not the output of planner openapi (-openapi.yaml +planner openapi):\n%s\n"+
			"if the change is meant, run go test ./cmd/planner -run TestOpenAPIMatchesCheckedIn -update "+
			"(or go run ./cmd/planner openapi > openapi.yaml) and review the diff", cmp.Diff(strings.Split(string(want), "\n"), strings.Split(out, "\n")))
	}
}

func TestOpenAPIFormats(t *testing.T) {
	_, ym, _ := execute(t, "", "openapi", "--format", "yaml")
	code, js, errOut := execute(t, "", "openapi", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var fromJSON, fromYAML map[string]any
	if err := json.Unmarshal([]byte(js), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(ym), &fromYAML); err != nil {
		t.Fatal(err)
	}
	if fromJSON["openapi"] != "3.1.0" || len(fromJSON["paths"].(map[string]any)) != len(fromYAML["paths"].(map[string]any)) {
		t.Errorf("json and yaml differ: %v paths vs %v", fromJSON["paths"], fromYAML["paths"])
	}
	if code, _, _ := execute(t, "", "openapi", "--format", "xml"); code != exitUsage {
		t.Errorf("--format xml: exit %d, want %d", code, exitUsage)
	}
}
