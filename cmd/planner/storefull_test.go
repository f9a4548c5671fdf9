package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/store"
)

// saveBody is a request that plans and saves the named example.
func saveBody(t *testing.T, example, name string) map[string]any {
	t.Helper()
	text, _ := planner.Example(example)
	doc, err := yaml.YAMLToJSON(text)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"scenario": json.RawMessage(doc), "save": true, "name": name}
}

// save saves a plan and returns the status and, on a 200, its id. Any
// answer but 200 or a problem of the full store (507) fails the test.
func save(t *testing.T, url, name string) (int, string) {
	t.Helper()
	status, b := jsonCall(t, http.MethodPost, url+"/v1/plans", saveBody(t, "three-classes", name))
	switch status {
	case http.StatusOK:
		var out struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(b, &out); err != nil || out.ID == "" {
			t.Fatalf("save %s: %s", name, b)
		}
		return status, out.ID
	case http.StatusInsufficientStorage:
		if !strings.Contains(string(b), "nothing was saved") {
			t.Fatalf("save %s: the 507 says %s", name, b)
		}
		return status, ""
	}
	t.Fatalf("save %s: %d %s", name, status, b)
	return 0, ""
}

// fillStore saves plans until the service answers 507, and returns the
// ids of those it acknowledged.
func fillStore(t *testing.T, url string) []string {
	t.Helper()
	var acked []string
	for i := range 2000 {
		status, id := save(t, url, fmt.Sprintf("plan %d", i))
		if status != http.StatusOK {
			if len(acked) == 0 {
				t.Fatal("the store was full before the first save")
			}
			return acked
		}
		acked = append(acked, id)
	}
	t.Fatalf("%d saves and the store is not full", len(acked))
	return nil
}

// readiness returns the status of /readyz and its body.
func readiness(t *testing.T, url string) (int, string) {
	t.Helper()
	status, b := jsonCall(t, http.MethodGet, url+"/readyz", nil)
	return status, string(b)
}

// allThere checks that every acknowledged plan reads back.
func allThere(t *testing.T, url string, acked []string) {
	t.Helper()
	for _, id := range acked {
		if status, b := jsonCall(t, http.MethodGet, url+"/v1/plans/"+id, nil); status != http.StatusOK {
			t.Fatalf("acknowledged plan %s: %d %.200s", id, status, b)
		}
	}
}

// storeConfig writes a configuration file that bounds the store.
func storeConfig(t *testing.T, maxBytes int) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "planner.yaml")
	body := fmt.Sprintf("listen: 127.0.0.1:0\nstore: {max_document_bytes: 65536, max_bytes: %d}\n", maxBytes)
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestServeOnFullStore fills a store capped by store.max_bytes (SQLite's
// own "database or disk is full") while a probe runs: no save answers
// 500, readiness fails while the store has too little room, a restart on
// the full store serves every acknowledged plan, and a restart with room
// takes saves again and still has them all. TestServeOnFullDisk does the
// same on a full file system.
func TestServeOnFullStore(t *testing.T) {
	cleanServeEnv(t)
	db := filepath.Join(t.TempDir(), "planner.db")
	tight := storeConfig(t, 1<<20)
	r := startServe(t, "serve", "--config", tight, "--db", db)
	if status, body := readiness(t, r.url); status != http.StatusOK {
		t.Fatalf("readyz on an empty store: %d %s", status, body)
	}
	status, b := jsonCall(t, http.MethodPost, r.url+"/v1/probes", longProbe(slowSimURL(t)))
	var probe probeView
	if status != http.StatusAccepted || json.Unmarshal(b, &probe) != nil {
		t.Fatalf("start the probe: %d %s", status, b)
	}
	acked := fillStore(t, r.url)
	if status, body := readiness(t, r.url); status != http.StatusServiceUnavailable || !strings.Contains(body, "free space") {
		t.Errorf("readyz on a full store: %d %s", status, body)
	}
	allThere(t, r.url, acked)
	r.stop()
	if code := r.wait(t); code != exitOK {
		t.Fatalf("stop on a full store: exit %d: %s", code, r.errOut)
	}

	r = startServe(t, "serve", "--config", tight, "--db", db)
	if status, body := readiness(t, r.url); status != http.StatusServiceUnavailable || !strings.Contains(body, "free space") {
		t.Errorf("readyz after a restart on the full store: %d %s", status, body)
	}
	allThere(t, r.url, acked)
	if status, _ := save(t, r.url, "on the full store"); status != http.StatusInsufficientStorage {
		t.Errorf("a save on the full store after the restart: %d", status)
	}
	r.stop()
	if code := r.wait(t); code != exitOK {
		t.Fatalf("exit %d: %s", code, r.errOut)
	}

	r = startServe(t, "serve", "--config", storeConfig(t, 4<<20), "--db", db)
	if status, body := readiness(t, r.url); status != http.StatusOK {
		t.Fatalf("readyz after a restart with room: %d %s", status, body)
	}
	status, id := save(t, r.url, "with room")
	if status != http.StatusOK {
		t.Fatalf("a save with room: %d", status)
	}
	acked = append(acked, id)
	allThere(t, r.url, acked)
	if p := getProbe(t, r.url, probe.ID); !store.Status(p.Status).Ended() {
		t.Errorf("the probe of the first run is %s", p.Status)
	}
	r.stop()
	if code := r.wait(t); code != exitOK {
		t.Fatalf("exit %d: %s", code, r.errOut)
	}
}

// TestServeRefusesDamagedStore starts the service on a store damaged in
// the middle of its file, which it used to serve until a read hit the
// damage: it exits 1 at once, naming the file, the damage and what to do.
func TestServeRefusesDamagedStore(t *testing.T) {
	cleanServeEnv(t)
	db := filepath.Join(t.TempDir(), "planner.db")
	r := startServe(t, "serve", "--listen", "127.0.0.1:0", "--db", db)
	for i := range 100 {
		if status, _ := save(t, r.url, fmt.Sprintf("plan %d", i)); status != http.StatusOK {
			t.Fatalf("save %d: %d", i, status)
		}
	}
	r.stop()
	if code := r.wait(t); code != exitOK {
		t.Fatalf("exit %d: %s", code, r.errOut)
	}
	info, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(db, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(strings.Repeat("\xa5", 8192)), info.Size()/2/4096*4096); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runBriefly("serve", "--listen", "127.0.0.1:0", "--db", db)
	if code != exitError || strings.Contains(out, "serving on") {
		t.Fatalf("serve on a damaged store: exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{db, "the file is damaged", "quick_check", "restore it from a backup, or move it aside"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the message lacks %q: %s", want, errOut)
		}
	}
}
