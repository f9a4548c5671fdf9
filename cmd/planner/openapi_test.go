package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestOpenAPIMatchesCheckedIn keeps openapi.yaml at the repository root equal
// to what `planner openapi` prints.
func TestOpenAPIMatchesCheckedIn(t *testing.T) {
	code, out, errOut := execute(t, "", "openapi")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want, err := os.ReadFile("../../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Fatal("openapi.yaml is not the output of planner openapi; run: go run ./cmd/planner openapi --out openapi.yaml")
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
