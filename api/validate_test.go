package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/jobs"
	"github.com/plannerdev/planner/internal/store"
	"github.com/plannerdev/planner/internal/target"
	"github.com/plannerdev/planner/internal/testutil"
)

// matchedScenario has the latency of matchedSim: TTFT 200 ms and TPOT 20
// ms at any load, 8 output tokens; a knee of 4 binds the pool at 4. The
// times are long against the scheduling noise of a busy machine, which
// shows in a p95.
const matchedScenario = `
quotas: [{name: k, rpm: 100000}]
latency: {ttft_ms: {fixed: 200}, tpot_ms: {fixed: 20}, knee: 4}
classes:
  - {name: jobs, quota: k, mode: batch, input_tokens: {fixed: 64}, output_tokens: {fixed: 8}, max_tokens: 8}
`

var matchedSim = fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 200 * time.Millisecond, ITL: 20 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth}

func savePlan(t *testing.T, env *probeEnv, text string) string {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	status, _, b := call(t, http.MethodPost, env.url+"/v1/plans", map[string]any{"scenario": doc, "save": true})
	if status != http.StatusOK {
		t.Fatalf("save: %d %s", status, b)
	}
	return decode[PlanResponse](t, b).ID
}

// TestValidatePlan validates a stored plan against an endpoint that
// matches its scenario: predicted and measured throughput agree within
// 15 % at the pool and 1.25 × it, and the verdict is ok. It runs in a
// testing/synctest bubble, the service and the endpoint on in-memory
// pipes, so that what the validation measures is exactly the endpoint's
// timing however loaded the machine is.
func TestValidatePlan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		endpoint := &testutil.ChatEndpoint{TTFT: 200 * time.Millisecond, ITL: 20 * time.Millisecond, Tokens: 8} // matchedSim's timing
		endpointNet := testutil.ServePipe(t, endpoint)
		st, err := store.Open(context.Background(), t.TempDir()+"/planner.db")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		m := jobs.New(st, jobs.Options{})
		const host = "planner.test"
		api := newChecked(t, Options{
			Store: st, Jobs: m, Hosts: []string{host},
			Network: target.Network{Dialer: endpointNet}, // every probe connection reaches the endpoint
		})
		service := testutil.ServePipe(t, api)
		client := &http.Client{Transport: &http.Transport{DialContext: service.DialContext}}
		t.Cleanup(client.CloseIdleConnections)
		post := func(path string, body any) []byte {
			t.Helper()
			b, _ := json.Marshal(body)
			resp, err := client.Post("http://"+host+path, "application/json", bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST %s: %d %s", path, resp.StatusCode, out)
			}
			return out
		}
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(matchedScenario), &doc); err != nil {
			t.Fatal(err)
		}
		id := decode[PlanResponse](t, post("/v1/plans", map[string]any{"scenario": doc, "save": true})).ID
		b := post("/v1/plans/"+id+"/validate", map[string]any{
			// Any loopback address passes the allow-list; the dialer takes
			// every connection to the endpoint's pipe.
			"target": map[string]any{"base_url": "http://127.0.0.1:9/v1", "model": fakeendpoint.DefaultModel}, "pause_ms": 0,
		})
		v := decode[ValidateResponse](t, b)
		if v.PlanID != id || v.Verdict != "ok" || len(v.Classes) != 1 || len(v.Classes[0].Points) != 2 {
			t.Fatalf("validation %s", b)
		}
		for _, pt := range v.Classes[0].Points {
			if pt.Measured == nil || pt.RelativeErrorPct.ThroughputRPS < -15 || pt.RelativeErrorPct.ThroughputRPS > 15 {
				t.Errorf("at %d: %+v %+v", pt.Concurrency, pt.Measured, pt.RelativeErrorPct)
			}
		}
		if got := endpoint.Chats(); got != 89 {
			t.Errorf("the endpoint got %d chat requests, want 2 steps of max(40, 3c) + c: 44 at the pool of 4, 45 at 5", got)
		}
		// The metrics count the validation by its verdict, with its
		// measured requests (the 40 of each step, warm-up left out).
		mt := api.metrics
		if got := promtestutil.ToFloat64(mt.jobsFinished.WithLabelValues(kindValidation, "ok")); got != 1 {
			t.Errorf("finished{validation,ok} = %v", got)
		}
		if got := promtestutil.ToFloat64(mt.jobRequests.WithLabelValues(kindValidation)); got != 80 {
			t.Errorf("validation requests %v, want 80", got)
		}
		if got := promtestutil.ToFloat64(mt.jobsRunning.WithLabelValues(kindValidation)); got != 0 {
			t.Errorf("validations running %v after the answer", got)
		}

		// A plan saved with its probe validates with an empty body against
		// the probe's target.
		ctx := context.Background()
		probeID, err := st.CreateProbe(ctx, store.ProbeRun{BaseURL: "http://127.0.0.1:9/v1", Model: fakeendpoint.DefaultModel})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SetProbeStatus(ctx, probeID, store.StatusSucceeded, ""); err != nil {
			t.Fatal(err)
		}
		withProbe := decode[PlanResponse](t, post("/v1/plans", map[string]any{"scenario": doc, "save": true, "probe_id": probeID})).ID
		v = decode[ValidateResponse](t, post("/v1/plans/"+withProbe+"/validate", map[string]any{}))
		if v.PlanID != withProbe || v.Verdict != "ok" || len(v.Classes) != 1 || v.Classes[0].Points[0].Measured == nil {
			t.Fatalf("validation with the probe's target: %+v", v)
		}
		if got := endpoint.Chats(); got != 2*89 {
			t.Errorf("the endpoint got %d chat requests in all, want the second validation's 89 too", got-89)
		}
	})
}

// TestValidateTargetDefaults: a body without a target, or without its
// model, is refused for a plan saved without a probe, naming the field and
// why.
func TestValidateTargetDefaults(t *testing.T) {
	env := newProbeEnv(t, Options{})
	bare := savePlan(t, env, matchedScenario)
	for _, tc := range []struct {
		name     string
		body     map[string]any
		location string
		message  string
	}{
		{"no target", map[string]any{}, "body.target.base_url", "required: the plan was saved without a probe (probe_id)"},
		{"no model", map[string]any{"target": map[string]any{"base_url": "http://127.0.0.1:9/v1"}}, "body.target.model", "required: the plan was saved without a probe (probe_id)"},
		{"an empty base URL", map[string]any{"target": map[string]any{"base_url": ""}}, "body.target.base_url", "expected length >= 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, b := call(t, http.MethodPost, env.url+"/v1/plans/"+bare+"/validate", tc.body)
			if status != http.StatusUnprocessableEntity || !strings.Contains(string(b), `"location":"`+tc.location+`"`) || !strings.Contains(string(b), tc.message) {
				t.Fatalf("%d %s; want 422 with %q at %s", status, b, tc.message, tc.location)
			}
		})
	}
}

func TestValidatePlanProblems(t *testing.T) {
	pc := smallCaps()
	env := newProbeEnv(t, Options{Probe: pc})
	s := newSim(t, matchedSim)
	big := savePlan(t, env, strings.Replace(matchedScenario, "knee: 4", "knee: 8", 1)) // pool 8, 1.25 × 8 = 10 > 8
	small := savePlan(t, env, matchedScenario)
	// A stored plan whose prompts pass the probe's bound: building one took
	// the service's memory.
	huge := savePlan(t, env, strings.Replace(matchedScenario, "input_tokens: {fixed: 64}", "input_tokens: {fixed: 300000000}", 1))
	long := savePlan(t, env, strings.Replace(matchedScenario, "output_tokens: {fixed: 8}, max_tokens: 8", "output_tokens: {fixed: 5000000}", 1))
	target := map[string]any{"base_url": s.url, "model": fakeendpoint.DefaultModel}
	for _, tc := range []struct {
		name     string
		path     string
		body     map[string]any
		status   int
		location string
		message  string
	}{
		{"unknown plan", "/v1/plans/nope/validate", map[string]any{"target": target}, 404, "path.id", "no plan has this id"},
		{"over the concurrency cap", "/v1/plans/" + big + "/validate", map[string]any{"target": target}, 422, "path.id", "class jobs: it would run at 8 and 10 (its pool and 1.25 × it): 10 is above the server's limit probe.max_concurrency of 8"},
		{"over the duration bound", "/v1/plans/" + big + "/validate", map[string]any{"target": target, "budgets": map[string]any{"max_duration_s": 90}}, 422, "body.budgets.max_duration_s", "above the server's limit of 60 s"},
		{"prompts past the probe's bound", "/v1/plans/" + huge + "/validate", map[string]any{"target": target}, 422, "path.id",
			"class jobs: prompts of its input p50: 300000000 tokens, above the most a probe sends, 1000000"},
		{"answers past the cap", "/v1/plans/" + long + "/validate", map[string]any{"target": target, "max_tokens": 20000}, 422, "body.max_tokens",
			"20000 is above the server's limit probe.max_tokens of 10000"},
		{"answers past the probe's bound", "/v1/plans/" + long + "/validate", map[string]any{"target": target}, 422, "path.id",
			"class jobs: answers of its mean output length: 5000000 tokens, above the most a probe asks for, 1000000"},
		{"steps too short", "/v1/plans/" + small + "/validate", map[string]any{"target": target, "requests_per_step": 41}, 422, "body.requests_per_step",
			"41 requests with 4 warm-up leave 37 measured at concurrency 4"},
		{"a tolerance past the bound", "/v1/plans/" + small + "/validate", map[string]any{"target": target, "tolerance_pct": 999.5}, 422, "body.tolerance_pct", "999"},
		{"forbidden target", "/v1/plans/" + small + "/validate", map[string]any{"target": map[string]any{"base_url": "http://10.0.0.1/v1", "model": "m"}}, 422, "body.target.base_url", "not in the probe allow-list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, b := call(t, http.MethodPost, env.url+tc.path, tc.body)
			if status != tc.status || !strings.Contains(string(b), `"location":"`+tc.location+`"`) || !strings.Contains(string(b), tc.message) {
				t.Fatalf("%d %s; want %d with %q at %s", status, b, tc.status, tc.message, tc.location)
			}
		})
	}
	if s.chats.Load() != 0 {
		t.Errorf("refused validations sent %d requests", s.chats.Load())
	}
}

// TestValidateAgentTask validates stored plans of an agent task class
// against planner sim on in-memory pipes under testing/synctest: with the
// scenario's latency the tasks hold at their pool, each call's TTFT and
// the task's E2E at p99 as the model predicts them; against an endpoint
// three times as slow to the first token, the SLO that the plan met on
// paper fails, named by its metric.
func TestValidateAgentTask(t *testing.T) {
	const text = `
quotas: [{name: k, rpm: 100000}]
latency: {ttft_ms: {fixed: 100}, tpot_ms: {fixed: 10}, knee: 8}
classes:
  - name: agent
    quota: k
    mode: batch
    input_tokens: {fixed: 64}
    output_tokens: {fixed: 8}
    max_tokens: 8
    task: {calls: {fixed: 3}, tool_ms: {fixed: 200}, tool_result_tokens: {fixed: 16}}
    slo: {ttft_ms: 250, task_e2e_ms: 1500, percentile: 99}
`
	validate := func(t *testing.T, ttft time.Duration) ValidateResponse {
		sim, err := fakeendpoint.New(fakeendpoint.Config{MaxNumSeqs: 64, TTFT: ttft, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth, TimersOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		endpointNet := testutil.ServePipe(t, sim)
		st, err := store.Open(context.Background(), t.TempDir()+"/planner.db")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		const host = "planner.test"
		api := newChecked(t, Options{Store: st, Jobs: jobs.New(st, jobs.Options{}), Hosts: []string{host}, Network: target.Network{Dialer: endpointNet}})
		service := testutil.ServePipe(t, api)
		client := &http.Client{Transport: &http.Transport{DialContext: service.DialContext}}
		t.Cleanup(client.CloseIdleConnections)
		post := func(path string, body any) []byte {
			t.Helper()
			b, _ := json.Marshal(body)
			resp, err := client.Post("http://"+host+path, "application/json", bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST %s: %d %s", path, resp.StatusCode, out)
			}
			return out
		}
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
			t.Fatal(err)
		}
		id := decode[PlanResponse](t, post("/v1/plans", map[string]any{"scenario": doc, "save": true})).ID
		b := post("/v1/plans/"+id+"/validate", map[string]any{
			"target": map[string]any{"base_url": "http://127.0.0.1:9/v1", "model": fakeendpoint.DefaultModel}, "pause_ms": 0,
		})
		v := decode[ValidateResponse](t, b)
		if v.PlanID != id || len(v.Classes) != 1 || v.Classes[0].Task == nil || v.Classes[0].Task.Measured == nil || len(v.Classes[0].Points) != 0 {
			t.Fatalf("validation %s", b)
		}
		// 40 tasks measured after a round of 12, 3 calls each.
		if got := promtestutil.ToFloat64(api.metrics.jobRequests.WithLabelValues(kindValidation)); got != 120 {
			t.Errorf("validation requests %v, want the 120 measured calls", got)
		}
		return v
	}
	synctest.Test(t, func(t *testing.T) {
		v := validate(t, 100*time.Millisecond)
		c := v.Classes[0]
		if m := c.Task.Measured; v.Verdict != "ok" || c.Task.Predicted.TTFTMs != 100 || c.Task.Predicted.TaskE2EMs != 1110 || m.TTFTMs != 100 || m.TaskE2EMs != 1110 || m.Goodput.Met != 40 {
			t.Errorf("matched: %s %+v measured %+v: %v", v.Verdict, c.Task, m, c.Reasons)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		v := validate(t, 300*time.Millisecond)
		c := v.Classes[0]
		all := strings.Join(c.Reasons, "\n")
		if v.Verdict != "fails" || !strings.Contains(all, "TTFT p99 at the pool of 12 tasks is 300 ms, above the SLO of 250 ms") ||
			!strings.Contains(all, "task E2E p99 at the pool of 12 tasks is 1710 ms, above the SLO of 1500 ms") {
			t.Errorf("slower: %s: %s", v.Verdict, all)
		}
	})
}
