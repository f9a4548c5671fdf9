package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/store"
)

// TestStoreProblems answers each way a store cannot take a write with its
// problem, at readiness and at a save: never a 500, and never the
// store's own error.
func TestStoreProblems(t *testing.T) {
	cause := errors.New("disk I/O error at /var/lib/planner/planner.db")
	for _, tc := range []struct {
		name       string
		err        error
		save       int
		ready      int
		detailWant string
	}{
		{"full", fmt.Errorf("%w: %w", store.ErrFull, cause), http.StatusInsufficientStorage, http.StatusServiceUnavailable, "free space"},
		{"removed", fmt.Errorf("%w: %w", store.ErrGone, cause), http.StatusServiceUnavailable, http.StatusServiceUnavailable, "removed or replaced"},
		{"degraded", fmt.Errorf("%w: %w", store.ErrStarting, fmt.Errorf("%w: %w", store.ErrFull, cause)), http.StatusServiceUnavailable, http.StatusServiceUnavailable, "started degraded"},
		{"starting", fmt.Errorf("%w: %w", store.ErrStarting, cause), http.StatusServiceUnavailable, http.StatusServiceUnavailable, "start-up"},
		{"unavailable", fmt.Errorf("%w: %w", store.ErrUnavailable, cause), http.StatusServiceUnavailable, http.StatusServiceUnavailable, "cannot read or write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, Options{Store: failingStore{err: tc.err}})
			rec := send(s, http.MethodGet, "/readyz", nil)
			p := readProblem(t, rec)
			if rec.Code != tc.ready || !strings.Contains(p.Detail+p.Title, tc.detailWant) || strings.Contains(rec.Body.String(), cause.Error()) {
				t.Errorf("readyz: %d %s", rec.Code, rec.Body)
			}
			body := mustJSON(t, map[string]any{"scenario": exampleDoc(t, "chat"), "save": true})
			rec = send(s, http.MethodPost, "/v1/plans", body)
			p = readProblem(t, rec)
			if rec.Code != tc.save || !strings.Contains(p.Detail+p.Title, tc.detailWant) || strings.Contains(rec.Body.String(), cause.Error()) {
				t.Errorf("save: %d %s", rec.Code, rec.Body)
			}
		})
	}
}

// failingStore fails every write and readiness check with err.
type failingStore struct {
	fakeStore
	err error
}

func (f failingStore) Ready(context.Context) error { return f.err }
func (f failingStore) SavePlan(context.Context, store.StoredPlan) (string, error) {
	return "", fmt.Errorf("save plan: %w", f.err)
}

// TestFullStoreAnswers507 fills a real store capped at 1 MiB through the
// API: every save answers 200 or 507 with a problem, readiness fails once
// the store has too little room, reads go on, and after a restart with
// room every acknowledged plan is there and saves are accepted again.
func TestFullStoreAnswers507(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "planner.db")
	open := func(maxBytes int64) *store.Store {
		st, err := store.Open(ctx, path, store.WithMaxBytes(maxBytes), store.WithMaxDocumentBytes(32<<10))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := open(1 << 20)
	s := newServer(t, Options{Store: st})
	if rec := send(s, http.MethodGet, "/readyz", nil); rec.Code != http.StatusOK {
		t.Fatalf("readyz on an empty store: %d %s", rec.Code, rec.Body)
	}
	var acked []string
	full := false
	for i := 0; i < 1000 && !full; i++ {
		body := mustJSON(t, map[string]any{"scenario": exampleDoc(t, "three-classes"), "save": true, "name": fmt.Sprintf("plan %d", i)})
		rec := send(s, http.MethodPost, "/v1/plans", body)
		switch rec.Code {
		case http.StatusOK:
			var out struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.ID == "" {
				t.Fatalf("save %d: %s", i, rec.Body)
			}
			acked = append(acked, out.ID)
		case http.StatusInsufficientStorage:
			p := readProblem(t, rec)
			if !strings.Contains(p.Detail, "full") || !strings.Contains(p.Detail, "nothing was saved") {
				t.Errorf("the 507: %s", rec.Body)
			}
			full = true
		default:
			t.Fatalf("save %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	if !full || len(acked) == 0 {
		t.Fatalf("%d saves acknowledged, full %v", len(acked), full)
	}
	rec := send(s, http.MethodGet, "/readyz", nil)
	if p := readProblem(t, rec); rec.Code != http.StatusServiceUnavailable || !strings.Contains(p.Detail, "too little room") {
		t.Errorf("readyz on a full store: %d %s", rec.Code, rec.Body)
	}
	if rec := send(s, http.MethodGet, "/v1/plans/"+acked[0], nil); rec.Code != http.StatusOK {
		t.Errorf("a read on a full store: %d %s", rec.Code, rec.Body)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = open(2 << 20)
	defer st.Close()
	s = newServer(t, Options{Store: st})
	if rec := send(s, http.MethodGet, "/readyz", nil); rec.Code != http.StatusOK {
		t.Fatalf("readyz after a restart with room: %d %s", rec.Code, rec.Body)
	}
	for _, id := range acked {
		if rec := send(s, http.MethodGet, "/v1/plans/"+id, nil); rec.Code != http.StatusOK {
			t.Fatalf("acknowledged plan %s after the restart: %d %s", id, rec.Code, rec.Body)
		}
	}
	body := mustJSON(t, map[string]any{"scenario": exampleDoc(t, "three-classes"), "save": true})
	if rec := send(s, http.MethodPost, "/v1/plans", body); rec.Code != http.StatusOK {
		t.Errorf("a save after the restart with room: %d %s", rec.Code, rec.Body)
	}
}

// TestStoredDocumentCap refuses a plan whose stored form is over the
// store's cap with a 413 that names store.max_document_bytes.
func TestStoredDocumentCap(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "planner.db"), store.WithMaxDocumentBytes(4096))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := newServer(t, Options{Store: st})
	rec := send(s, http.MethodPost, "/v1/plans", mustJSON(t, map[string]any{"scenario": exampleDoc(t, "three-classes"), "save": true}))
	p := readProblem(t, rec)
	if rec.Code != http.StatusRequestEntityTooLarge || len(p.Errors) != 1 || p.Errors[0].Location != "body" ||
		!strings.Contains(p.Errors[0].Message, "store.max_document_bytes of 4096") {
		t.Fatalf("a plan over the cap: %d %s", rec.Code, rec.Body)
	}
	if rec := send(s, http.MethodPost, "/v1/plans", mustJSON(t, map[string]any{"scenario": exampleDoc(t, "chat"), "save": true})); rec.Code != http.StatusOK {
		t.Errorf("a plan under the cap: %d %s", rec.Code, rec.Body)
	}
	if rec := send(s, http.MethodPost, "/v1/plans", mustJSON(t, map[string]any{"scenario": exampleDoc(t, "three-classes")})); rec.Code != http.StatusOK {
		t.Errorf("a plan over the cap, not saved: %d %s", rec.Code, rec.Body)
	}
}

// TestRemovedStoreRefusesSaves removes the store's files under a running
// API: saves and new probes answer 503 instead of being acknowledged into
// the removed file, readiness fails, and none of them is in the store that
// the next start opens.
func TestRemovedStoreRefusesSaves(t *testing.T) {
	env := newProbeEnv(t, Options{})
	sim := newSim(t, fastSim)
	body := map[string]any{"scenario": exampleDoc(t, "chat"), "save": true}
	if status, _, b := call(t, http.MethodPost, env.url+"/v1/plans", body); status != http.StatusOK {
		t.Fatalf("save before: %d %s", status, b)
	}
	for _, p := range []string{env.db, env.db + "-wal", env.db + "-shm"} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		status, _, b := call(t, http.MethodPost, env.url+"/v1/plans", body)
		if status != http.StatusServiceUnavailable || !strings.Contains(string(b), "removed or replaced") {
			t.Fatalf("save %d after the removal: %d %s", i, status, b)
		}
	}
	if status, _, b := call(t, http.MethodPost, env.url+"/v1/probes", probeBody(sim.url, []int{1}, 41)); status != http.StatusServiceUnavailable {
		t.Errorf("a probe after the removal: %d %s", status, b)
	}
	if status, _, b := call(t, http.MethodGet, env.url+"/readyz", nil); status != http.StatusServiceUnavailable || !strings.Contains(string(b), "removed or replaced") {
		t.Errorf("readyz after the removal: %d %s", status, b)
	}
	if strings.Contains(env.logs.String(), `"level":"ERROR","msg":"store failure"`) {
		t.Errorf("the refusals are logged as failures: %s", env.logs)
	}

	if err := env.st.Close(); err != nil {
		t.Fatal(err)
	}
	next, err := store.Open(context.Background(), env.db)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	plans, _, err := next.ListPlans(context.Background(), store.ListOptions{})
	if err != nil || len(plans) != 0 {
		t.Fatalf("the next start's store holds %d plans (%v): none was acknowledged", len(plans), err)
	}
}
