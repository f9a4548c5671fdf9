package api

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plannerdev/planner/internal/store"
	"github.com/plannerdev/planner/internal/testutil"
)

// TestPlansStoredBeforeVersionsRead: a database that the release before
// stored documents carried a schema version wrote (the rows of
// internal/store/testdata/v1: the plans of every shipped example, one
// backed by a probe of planner sim) answers GET /v1/plans,
// /v1/plans/{id} and /v1/probes/{id} exactly as that release answered
// them, and its record card lists the same pools (testdata/
// store-v1-responses.json; the rest of a card is worded afresh by each
// release). A probe's latency block is derived afresh from its stored
// steps: it keeps the knee and the concurrencies, and its curve is the
// isotonic fit of the stored percentiles (checked by isotonicOf).
func TestPlansStoredBeforeVersionsRead(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "planner.db")
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	testutil.InsertRows(t, db, "../internal/store/testdata/v1/rows.json", "probes", "plans")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := newChecked(t, Options{Store: st})

	b, err := os.ReadFile("testdata/store-v1-responses.json")
	if err != nil {
		t.Fatal(err)
	}
	var answers map[string]json.RawMessage
	if err := json.Unmarshal(b, &answers); err != nil {
		t.Fatal(err)
	}
	if len(answers) != 9 {
		t.Fatalf("%d recorded answers, want 9", len(answers))
	}
	for _, p := range slices.Sorted(maps.Keys(answers)) {
		rec := send(s, http.MethodGet, p, nil)
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s: %d %s", p, rec.Code, rec.Body)
			continue
		}
		gotBody, wantBody := rec.Body.Bytes(), []byte(answers[p])
		if strings.HasPrefix(p, "/v1/records/") {
			gotBody, wantBody = member(t, gotBody, "pools"), member(t, wantBody, "pools")
		}
		if strings.HasPrefix(p, "/v1/probes/") {
			isotonicOf(t, member(t, gotBody, "latency"), member(t, wantBody, "latency"))
			gotBody, wantBody = without(t, gotBody, "latency"), without(t, wantBody, "latency")
		}
		var got, want bytes.Buffer
		if err := json.Compact(&got, gotBody); err != nil {
			t.Fatal(err)
		}
		if err := json.Compact(&want, wantBody); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("GET %s answers differently from the release that stored it (-want +got):\n%s", p, cmp.Diff(want.String(), got.String()))
		}
	}
}

// isotonicOf checks that the latency block got is the isotonic fit of
// the block want: the same knee and concurrencies, each percentile
// column non-decreasing in concurrency, and each pooled value within the
// range of the stored values it replaces (pool-adjacent-violators keeps
// every fitted value between the least and the greatest of its block).
func isotonicOf(t *testing.T, got, want []byte) {
	t.Helper()
	type point map[string]float64
	type block struct {
		Knee  int     `json:"knee"`
		Curve []point `json:"curve"`
	}
	var g, w block
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if g.Knee != w.Knee || len(g.Curve) != len(w.Curve) {
		t.Fatalf("latency block: knee %d over %d points, stored %d over %d", g.Knee, len(g.Curve), w.Knee, len(w.Curve))
	}
	for name := range w.Curve[0] {
		lo, hi := w.Curve[0][name], w.Curve[0][name]
		for i := range w.Curve {
			if g.Curve[i]["concurrency"] != w.Curve[i]["concurrency"] {
				t.Fatalf("curve point %d at concurrency %g, stored %g", i, g.Curve[i]["concurrency"], w.Curve[i]["concurrency"])
			}
			lo, hi = min(lo, w.Curve[i][name]), max(hi, w.Curve[i][name])
		}
		for i := range g.Curve {
			v := g.Curve[i][name]
			if v < lo-1e-9 || v > hi+1e-9 {
				t.Errorf("curve point %d: %s = %g outside the stored %g..%g", i, name, v, lo, hi)
			}
			if strings.HasSuffix(name, "_ms") && i > 0 && v < g.Curve[i-1][name]-1e-9 {
				t.Errorf("curve point %d: %s = %g falls from %g", i, name, v, g.Curve[i-1][name])
			}
		}
	}
}

// without is a JSON object without one of its members.
func without(t *testing.T, doc []byte, name string) []byte {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(doc, &obj); err != nil {
		t.Fatal(err)
	}
	delete(obj, name)
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// member is one member of a JSON object, as it was written.
func member(t *testing.T, doc []byte, name string) []byte {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(doc, &obj); err != nil || obj[name] == nil {
		t.Fatalf("no %s in %.200s (%v)", name, doc, err)
	}
	return obj[name]
}
