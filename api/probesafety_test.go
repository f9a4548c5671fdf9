package api

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/fakeendpoint"
)

// TestFullSlotsSendNothing holds the only probe.max_running slot and
// asks for 100 probes and 10 validations: each is refused with 429
// before anything leaves, so the target sees no request at all, not
// even the preflight GET /models. Once the slot is free, the same
// request reaches the target.
func TestFullSlotsSendNothing(t *testing.T) {
	pc := config.DefaultProbe()
	pc.MaxRunning = 1
	env := newProbeEnv(t, Options{Probe: pc})
	s, err := fakeendpoint.New(fastSim)
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	base := srv.URL + "/v1"
	plan := savePlan(t, env, matchedScenario)

	slot, err := env.jobs.Acquire(context.Background()) // as a running probe holds it
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		status, h, b := call(t, http.MethodPost, env.url+"/v1/probes", probeBody(base, []int{1}, 41))
		if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
			t.Fatalf("probe %d beside a full slot count: %d %s", i, status, b)
		}
	}
	for i := range 10 {
		status, _, b := call(t, http.MethodPost, env.url+"/v1/plans/"+plan+"/validate", map[string]any{
			"target": map[string]any{"base_url": base, "model": fakeendpoint.DefaultModel},
		})
		if status != http.StatusTooManyRequests {
			t.Fatalf("validation %d beside a full slot count: %d %s", i, status, b)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("refused probes and validations sent %d requests to the target", n)
	}
	slot.Release()
	id := startProbe(t, env, probeBody(base, []int{1}, 41))
	waitProbe(t, env, id, ended)
	if hits.Load() == 0 {
		t.Fatal("the target counted no request of an accepted probe")
	}
}

// TestEchoedKeyIsRedacted runs probes against an endpoint that answers
// every chat request 401 with the key echoed after 166 bytes (across the
// 200-character cut of an error text), verbatim, upper-cased, or inside
// an OpenAI-style error. No part of the key may be left anywhere the
// service writes: the store's rows and files, GET /v1/probes/{id}, the
// probe list, the event stream with its done event, the record cards,
// requests.csv and the log.
func TestEchoedKeyIsRedacted(t *testing.T) {
	key := "sk-" + strings.ToLower(rand.Text() + rand.Text())[:34] // 37 characters
	t.Setenv("PLANNER_TEST_ECHO_KEY", key)
	pad := strings.Repeat("x", 166)
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/models") {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"data":[]}`))
			return
		}
		sent := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.WriteHeader(http.StatusUnauthorized)
		switch {
		case strings.HasPrefix(r.URL.Path, "/plain/"):
			_, _ = w.Write([]byte(pad + sent + " is not a valid key"))
		case strings.HasPrefix(r.URL.Path, "/upper/"):
			_, _ = w.Write([]byte(pad + strings.ToUpper(sent) + " IS NOT A VALID KEY"))
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"error":{"message":"` + pad + strings.ToUpper(sent) + `","type":"invalid_request_error"}}`))
		}
	}))
	t.Cleanup(echo.Close)

	pc := config.DefaultProbe()
	pc.Credentials = []config.Credential{{Name: "lab", Env: "PLANNER_TEST_ECHO_KEY", Header: "Authorization"}}
	env := newProbeEnv(t, Options{Probe: pc})
	var seen []string
	for _, variant := range []string{"plain", "upper", "json"} {
		body := probeBody(echo.URL+"/"+variant+"/v1", []int{1}, 41)
		var header []string
		if variant == "json" {
			body["target"].(map[string]any)["credential"] = "lab"
		} else {
			header = []string{keyHeader, "Bearer " + key}
		}
		id := startProbe(t, env, body, header...)
		for _, ev := range readEvents(t, env.url+"/v1/probes/"+id+"/events") {
			seen = append(seen, ev.name+" "+ev.data)
		}
		p := waitProbe(t, env, id, ended)
		if p.Status != "failed" || !strings.Contains(p.Error, pad[:20]) || !strings.Contains(p.Error, "[redacted]") {
			t.Fatalf("%s: the echo did not reach the probe's error as expected: %s %q", variant, p.Status, p.Error)
		}
		run, err := env.st.GetProbe(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, run.Error, run.Result.StopDetail)
		for _, path := range []string{"/v1/probes/" + id, "/v1/probes", "/v1/probes/" + id + "/requests.csv", "/v1/records/" + id, "/v1/records/" + id + "?format=md", "/v1/records?format=md"} {
			_, _, b := call(t, http.MethodGet, env.url+path, nil)
			seen = append(seen, string(b))
		}
	}
	if err := env.st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(env.db + suffix)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		seen = append(seen, string(b))
	}
	seen = append(seen, env.logs.String())
	// Any 8 characters of the key's random part, in any case.
	random := key[len("sk-"):]
	for i, doc := range seen {
		lower := strings.ToLower(doc)
		for j := 0; j+8 <= len(random); j++ {
			if at := strings.Index(lower, random[j:j+8]); at >= 0 {
				t.Errorf("document %d holds part of the key: …%s…", i, doc[max(0, at-60):min(len(doc), at+40)])
				break
			}
		}
	}
}

// TestShutdownStopsValidation shuts the probe manager down, as SIGTERM
// does, while a validation runs: the validation stops at once and its
// client gets a 503 that says why, and the shutdown does not wait for the
// validation's budget.
func TestShutdownStopsValidation(t *testing.T) {
	env := newProbeEnv(t, Options{})
	s := newSim(t, slowSim)
	plan := savePlan(t, env, matchedScenario)
	type answer struct {
		status int
		body   []byte
	}
	done := make(chan answer, 1)
	go func() {
		status, _, b := call(t, http.MethodPost, env.url+"/v1/plans/"+plan+"/validate", map[string]any{
			"target": map[string]any{"base_url": s.url, "model": fakeendpoint.DefaultModel}, "requests_per_step": 1000, "pause_ms": 0,
		})
		done <- answer{status, b}
	}()
	for s.chats.Load() == 0 {
		select {
		case a := <-done:
			t.Fatalf("the validation ended before it ran: %d %s", a.status, a.body)
		case <-time.After(10 * time.Millisecond):
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := env.jobs.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown waited for the validation: %v", err)
	}
	a := <-done
	if a.status != http.StatusServiceUnavailable || !strings.Contains(string(a.body), "shutting down") {
		t.Fatalf("the validation's answer: %d %s", a.status, a.body)
	}
	if status, _, b := call(t, http.MethodPost, env.url+"/v1/plans/"+plan+"/validate", map[string]any{
		"target": map[string]any{"base_url": s.url, "model": fakeendpoint.DefaultModel},
	}); status != http.StatusServiceUnavailable {
		t.Errorf("a validation after the shutdown: %d %s", status, b)
	}
}
