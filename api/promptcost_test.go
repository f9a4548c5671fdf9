package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/fakeendpoint"
)

// TestProbeCacheComparison: a probe body with cache runs the comparison
// against a simulator with a prefix cache; the stored probe carries what
// it measured and, as its latency block, the cache keys.
func TestProbeCacheComparison(t *testing.T) {
	env := newProbeEnv(t, Options{})
	sim := fastSim
	sim.PrefillPer1K, sim.PrefixCacheTokens = 5*time.Millisecond, 1_000_000
	s := newSim(t, sim)
	body := map[string]any{
		"target": map[string]any{"base_url": s.url, "model": fakeendpoint.DefaultModel},
		"cache":  map[string]any{"requests": 6}, "max_tokens": 4, "ignore_eos": true, "pause_ms": 0,
		"slo": map[string]any{"ttft_ms": 5000},
	}
	p := waitProbe(t, env, startProbe(t, env, body), ended)
	if p.Status != "succeeded" || p.Cache == nil || p.Cache.Repeated != 5 || p.Cache.Fresh != 5 || p.Mode != "cache" {
		t.Fatalf("probe %s (%s), cache %+v, mode %q", p.Status, p.Error, p.Cache, p.Mode)
	}
	if p.Latency == nil || p.Latency.Cache == nil || p.Latency.Cache.HitRate == nil || *p.Latency.Cache.HitRate != p.Cache.HitRate || len(p.Latency.Curve) != 0 {
		t.Errorf("latency %+v, want the cache keys and no curve", p.Latency)
	}
	if p.SLO == nil || p.SLO.TTFTMs != 5000 || len(p.Steps) != 1 || p.Steps[0].SLO == nil {
		t.Errorf("SLO %+v, steps %+v", p.SLO, p.Steps)
	}
	if c, ok := p.Config["cache"].(map[string]any); !ok || c["requests"] != 6.0 {
		t.Errorf("config %v: want cache.requests 6", p.Config)
	}
}

// TestProbePromptModeRules: the rules of the prompt-cost modes reach a
// probe request at the body's fields, before anything is sent.
func TestProbePromptModeRules(t *testing.T) {
	env := newProbeEnv(t, Options{Probe: smallCaps()})
	s := newSim(t, fastSim)
	target := map[string]any{"base_url": s.url, "model": fakeendpoint.DefaultModel}
	for _, tc := range []struct {
		name     string
		body     map[string]any
		location string
		says     string
	}{
		{"prefill with steps", map[string]any{"target": target, "steps": []int{1, 2}, "prefill": map[string]any{"input_tokens": []int{256, 512}}},
			"body.steps", "give steps or prefill"},
		{"prefill and conversation", map[string]any{"target": target, "prefill": map[string]any{"input_tokens": []int{256, 512}}, "conversation": map[string]any{"calls": 3}},
			"body.conversation", "give prefill or conversation, not both"},
		{"lengths not ascending", map[string]any{"target": target, "prefill": map[string]any{"input_tokens": []int{512, 256}}},
			"body.prefill.input_tokens[1]", "strictly ascending"},
		{"too much in flight", map[string]any{"target": target, "conversation": map[string]any{"calls": 3, "tasks_in_flight": 9}},
			"body.conversation.tasks_in_flight", "above the server's limit probe.max_concurrency of 8"},
		{"a tool time too long", map[string]any{"target": target, "conversation": map[string]any{"calls": 3, "tool_time_ms": 600_001}},
			"body.conversation.tool_time_ms", "expected number <= 600000"},
		{"an SLO out of range", map[string]any{"target": target, "slo": map[string]any{"e2e_ms": -1}},
			"body.slo.e2e_ms", "expected number >= 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, b := call(t, http.MethodPost, env.url+"/v1/probes", tc.body)
			if status != http.StatusUnprocessableEntity {
				t.Fatalf("status %d: %s", status, b)
			}
			found := false
			for _, e := range decode[problem](t, b).Errors {
				found = found || e.Location == tc.location && strings.Contains(strings.ToLower(e.Message), strings.ToLower(tc.says))
			}
			if !found {
				t.Errorf("no problem at %s saying %q in %s", tc.location, tc.says, b)
			}
		})
	}
	if n := s.chats.Load(); n != 0 {
		t.Errorf("refused probes sent %d requests", n)
	}
}

// TestAnalysisSLO: POST /v1/analyses with rows and an SLO counts the rows
// that met every target; an SLO with steps is refused at body.slo.
func TestAnalysisSLO(t *testing.T) {
	srv := newServer(t, Options{})
	var rows []map[string]any
	for i := range 44 {
		ttft := 100.0
		if i%4 == 0 {
			ttft = 300 // a quarter miss the TTFT target
		}
		rows = append(rows, map[string]any{"step": 1, "idx": i, "start_s": float64(i), "ttft_ms": ttft, "e2e_ms": 1000.0,
			"output_tokens": 10, "status": 200, "ok": true, "attempts": 1, "warmup": i < 4})
	}
	rec := send(srv, http.MethodPost, "/v1/analyses", mustJSON(t, map[string]any{"rows": rows, "slo": map[string]any{"ttft_ms": 200}}))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	out := decode[AnalysisResponse](t, rec.Body.Bytes())
	if len(out.Steps) != 1 || out.Steps[0].SLO == nil || out.Steps[0].SLO.Met != 30 || out.Steps[0].SLO.Attainment != 0.75 {
		t.Errorf("steps %+v: want 30 of 40 met", out.Steps)
	}
	rec = send(srv, http.MethodPost, "/v1/analyses", mustJSON(t, map[string]any{
		"steps": []map[string]any{{"concurrency": 1, "goodput_rps": 1}}, "slo": map[string]any{"ttft_ms": 200}}))
	if p := readProblem(t, rec); rec.Code != http.StatusUnprocessableEntity || !strings.Contains(strings.Join(p.locations(), ","), "body.slo") {
		t.Errorf("an SLO with steps: %d %s", rec.Code, rec.Body)
	}
}
