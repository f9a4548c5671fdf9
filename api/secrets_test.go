package api

import (
	"bytes"
	"crypto/rand"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/config"
)

// TestSecretsGoNowhere runs a probe with a key in the X-Probe-Authorization
// header and one with a named credential from the environment, then looks
// for the keys everywhere the service writes: every log line, every event,
// the SQLite files, the probe as JSON, requests.csv, the report of a plan
// the probe backs, and the record cards. The simulator requires the key,
// so each probe that succeeds proves that the key did reach the endpoint.
func TestSecretsGoNowhere(t *testing.T) {
	headerKey := "sk-test-" + strings.ToLower(rand.Text())
	envKey := "sk-env-" + strings.ToLower(rand.Text())
	t.Setenv("PLANNER_TEST_PROBE_KEY", envKey)
	pc := config.DefaultProbe()
	pc.Credentials = []config.Credential{{Name: "lab", Env: "PLANNER_TEST_PROBE_KEY", Header: "Authorization"}}
	env := newProbeEnv(t, Options{Probe: pc})

	var seen []string // every document the service handed out
	for _, tc := range []struct {
		key        string
		credential string
		header     []string
	}{
		{key: headerKey, header: []string{keyHeader, "Bearer " + headerKey}},
		{key: envKey, credential: "lab"},
	} {
		cfg := fastSim
		cfg.APIKey = tc.key
		s := newSim(t, cfg)
		body := probeBody(s.url, []int{1, 2}, 42)
		if tc.credential != "" {
			body["target"].(map[string]any)["credential"] = tc.credential
		}
		status, _, b := call(t, http.MethodPost, env.url+"/v1/probes", body, tc.header...)
		if status != http.StatusAccepted {
			t.Fatalf("start: %d %s", status, b)
		}
		seen = append(seen, string(b))
		id := decode[Probe](t, b).ID
		for _, ev := range readEvents(t, env.url+"/v1/probes/"+id+"/events") {
			seen = append(seen, ev.name+" "+ev.data)
		}
		p := waitProbe(t, env, id, ended)
		// 42 requests a step, or twice that for a step whose gain was
		// within its noise of the knee rule's threshold (a busy machine).
		if p.Status != "succeeded" || (p.Counts.OK != 84 && p.Counts.OK != 126) {
			t.Fatalf("the probe with the key did not succeed: %+v", p)
		}
		if got := s.auth.Load(); got != "Bearer "+tc.key {
			t.Fatalf("the simulator received Authorization %q", got)
		}
		for _, path := range []string{"/v1/probes/" + id, "/v1/probes/" + id + "/requests.csv", "/v1/probes", "/v1/records/" + id, "/v1/records/" + id + "?format=md"} {
			_, _, b := call(t, http.MethodGet, env.url+path, nil)
			seen = append(seen, string(b))
		}
		status, _, b = call(t, http.MethodPost, env.url+"/v1/plans", map[string]any{
			"scenario": exampleDoc(t, "chat"), "save": true, "name": "backed", "probe_id": id,
		})
		if status != http.StatusOK {
			t.Fatalf("save a plan: %d %s", status, b)
		}
		planID := decode[PlanResponse](t, b).ID
		for _, path := range []string{"/v1/plans/" + planID + "/report?format=md", "/v1/plans/" + planID + "/report?format=html", "/v1/records", "/v1/records?format=md"} {
			_, _, b := call(t, http.MethodGet, env.url+path, nil)
			seen = append(seen, string(b))
		}
		// A refused key is not echoed either.
		_, _, b = call(t, http.MethodPost, env.url+"/v1/probes", probeBody(s.url, []int{1}, 41), keyHeader, "Bearer "+tc.key+"-wrong")
		seen = append(seen, string(b))
	}
	// The database files as they are while the store is open (the log
	// holds the recent writes), then once it has closed and checkpointed.
	readFiles := func() {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			b, err := os.ReadFile(env.db + suffix)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			seen = append(seen, string(b))
		}
	}
	readFiles()
	if wal, err := os.Stat(env.db + "-wal"); err != nil || wal.Size() == 0 {
		t.Fatalf("no write-ahead log to read: %v", err)
	}
	if err := env.st.Close(); err != nil {
		t.Fatal(err)
	}
	readFiles()
	logs := env.logs.String()
	if !strings.Contains(logs, `"path":"/v1/probes"`) {
		t.Fatalf("the log was not captured: %.300s", logs)
	}
	seen = append(seen, logs)
	for _, key := range []string{headerKey, envKey} {
		for _, part := range []string{key, strings.TrimPrefix(key, "sk-test-"), strings.TrimPrefix(key, "sk-env-")} {
			for i, doc := range seen {
				if strings.Contains(doc, part) {
					at := strings.Index(doc, part)
					t.Errorf("document %d holds the key: …%s…", i, doc[max(0, at-80):min(len(doc), at+40)])
				}
			}
		}
	}
	if bytes.Contains([]byte(strings.Join(seen, "")), []byte("Bearer sk-")) {
		t.Error("a bearer token was written somewhere")
	}
}
