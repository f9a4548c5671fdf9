package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestPlanRefusesAliasBombs: planner plan -f and simulate -f refuse a
// scenario file whose aliases would expand it hundreds of times (the 1 MB
// file of the report decoded to 4.85 GB), exiting 1 with the cause, and
// allocating a small multiple of the file rather than its expansion.
func TestPlanRefusesAliasBombs(t *testing.T) {
	dir := t.TempDir()
	var long strings.Builder
	fmt.Fprintf(&long, "quotas: [{name: &n %s, rpm: 1}]\nclasses:\n", strings.Repeat("k", 500_000))
	for i := range 1000 {
		fmt.Fprintf(&long, "  - {name: c%d, quota: *n, mode: batch}\n", i)
	}
	var nested strings.Builder
	nested.WriteString("quotas: &q0 [{name: k, rpm: 1}, {name: k, rpm: 1}, {name: k, rpm: 1}, {name: k, rpm: 1}]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&nested, "x%d: &q%d [*q%d, *q%d, *q%d, *q%d, *q%d, *q%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	for name, doc := range map[string]string{"long.yaml": long.String(), "nested.yaml": nested.String()} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"plan", "simulate"} {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			code, out, errOut := execute(t, "", cmd, "-f", path)
			runtime.ReadMemStats(&after)
			if code != exitError || out != "" || !strings.Contains(errOut, "aliases expand it") {
				t.Errorf("%s -f %s: exit %d, stderr %q", cmd, name, code, errOut)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 100*uint64(len(doc))+8<<20 {
				t.Errorf("%s -f %s (%d bytes) allocated %d bytes", cmd, name, len(doc), alloc)
			}
		}
	}
}
