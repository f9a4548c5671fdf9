package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
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
			"(or go run ./cmd/planner openapi --out openapi.yaml) and review the diff", cmp.Diff(strings.Split(string(want), "\n"), strings.Split(out, "\n")))
	}
}

func TestOpenAPIFormats(t *testing.T) {
	_, ym, _ := execute(t, "", "openapi", "-o", "yaml")
	code, js, errOut := execute(t, "", "openapi", "--output", "json")
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
	if code, _, _ := execute(t, "", "openapi", "-o", "xml"); code != exitUsage {
		t.Errorf("-o xml: exit %d, want %d", code, exitUsage)
	}
	file := filepath.Join(t.TempDir(), "openapi.yaml")
	if code, out, errOut := execute(t, "", "openapi", "--out", file); code != exitOK || out != "" {
		t.Fatalf("--out: exit %d, stdout %q: %s", code, out, errOut)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != ym {
		t.Errorf("--out wrote %d bytes (%v), not what -o yaml prints", len(b), err)
	}
}
