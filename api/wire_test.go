package api

import (
	"encoding/json"
	"flag"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plannerdev/planner"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata (wire names, OpenAPI examples) from the current output")

// TestWireNames pins the JSON names that clients read in the API's plan
// documents (the engine's plan, what-if grid and simulation): every key
// path of the plans of the shipped examples, of a what-if grid with an
// invalid cell, of a what-if over priced tiers with its ranking, of a
// plan whose remedy names a tier and of a simulation, against
// testdata/wire-names.txt. A
// renamed or vanished name is an API break; a new one is a review of the
// golden file (go test ./api -run TestWireNames -update).
func TestWireNames(t *testing.T) {
	s := newServer(t, Options{Tiers: pricedTiers})
	paths := map[string]bool{}
	collect := func(doc, path string, body map[string]any) {
		t.Helper()
		rec := send(s, http.MethodPost, path, mustJSON(t, body))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: status %d: %s", path, rec.Code, rec.Body)
		}
		var v any
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		keyPaths(v, doc, paths)
	}
	for _, name := range planner.ExampleNames() {
		collect("plan", "/v1/plans", map[string]any{"scenario": exampleDoc(t, name)})
	}
	collect("what-if", "/v1/what-if", map[string]any{
		"scenario":   exampleDoc(t, "chat"),
		"variations": []map[string]any{{"path": "/quotas/0/tpm", "values": []any{1000000, -5}}},
	})
	collect("what-if", "/v1/what-if", map[string]any{
		"scenario":   exampleDoc(t, "priced"),
		"variations": []map[string]any{{"path": "/quotas/1", "tiers": []string{"payg", "hourly"}}},
	})
	tight := exampleDoc(t, "priced")
	tight["quotas"].([]any)[1].(map[string]any)["tpm"] = 100000
	collect("plan", "/v1/plans", map[string]any{"scenario": tight})
	collect("simulation", "/v1/simulations", map[string]any{"scenario": exampleDoc(t, "backfill"), "duration_s": 60})
	got := strings.Join(slices.Sorted(maps.Keys(paths)), "\n") + "\n"
	golden(t, "testdata/wire-names.txt", []byte(got))
}

// keyPaths adds the path of every member under v, lists written as [].
func keyPaths(v any, path string, into map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			p := path + "." + k
			into[p] = true
			keyPaths(e, p, into)
		}
	case []any:
		for _, e := range v {
			keyPaths(e, path+"[]", into)
		}
	}
}

// golden compares got with the file at path, printing a diff, or rewrites
// the file with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./api -update creates it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs from the output (-want +got); if the change is meant, run go test ./api -update and review the diff:\n%s", path, d)
	}
}
