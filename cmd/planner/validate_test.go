package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/verify"
)

// validationScenario has the latency of the simulator of
// TestPlanValidate: TTFT 200 ms, TPOT 20 ms, 8 output tokens (long against
// the scheduling noise of a busy machine, which shows in a p95); the knee
// binds the pool at 4.
const validationScenario = `
quotas: [{name: k, rpm: 100000}]
latency: {ttft_ms: {fixed: 200}, tpot_ms: {fixed: 20}, knee: 4}
classes:
  - {name: jobs, quota: k, mode: batch, input_tokens: {fixed: 64}, output_tokens: {fixed: 8}, max_tokens: 8}
`

func TestPlanValidate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(file, []byte(validationScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := func(ttft, itl time.Duration) string {
		s, err := fakeendpoint.New(fakeendpoint.Config{MaxNumSeqs: 64, TTFT: ttft, ITL: itl, ITLGrowth: fakeendpoint.NoGrowth})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s)
		t.Cleanup(srv.Close)
		return srv.URL + "/v1"
	}
	matched := serve(200*time.Millisecond, 20*time.Millisecond)
	args := []string{"plan", "-f", file, "--validate", "--base-url", matched, "--model", fakeendpoint.DefaultModel}

	// The matched endpoint with the widest tolerance: a p95 measured on a
	// busy machine's real clock may stray far from the model (a stall of a
	// few hundred milliseconds in the tail), and this test is about the
	// command, not the measurement; internal/verify tests the rule under
	// a fake clock.
	code, out, errOut := execute(t, "", append(args, "--tolerance-pct", "999")...)
	if code != exitOK || !strings.Contains(out, "VALIDATION: OK") || !strings.Contains(out, "jobs (ok, prompts of 64 tokens, 8 output tokens)") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	slower := serve(300*time.Millisecond, 30*time.Millisecond)
	args[5] = slower
	// The budget stops it early in the step above the pool: the pool's
	// step alone shows the endpoint a third slower than the scenario.
	code, out, errOut = execute(t, "", append(args, "-o", "json", "--max-requests", "50")...)
	var doc struct {
		Plan       json.RawMessage `json:"plan"`
		Validation verify.Report   `json:"validation"`
	}
	if code != exitError || json.Unmarshal([]byte(out), &doc) != nil || doc.Validation.Verdict != "fails" || len(doc.Plan) == 0 || !strings.Contains(errOut, "the plan fails validation") {
		t.Fatalf("slower endpoint: exit %d: %s%s", code, out, errOut)
	}
	var md strings.Builder
	if err := writeValidation(&md, &doc.Validation, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "## Validation: fails") || strings.Count(md.String(), "| jobs | 4 |") != 2 {
		t.Errorf("Markdown:\n%s", md.String())
	}
}

func TestPlanValidateUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--example", "chat", "--base-url", "http://127.0.0.1:1/v1"}, "--base-url needs --validate"},
		{[]string{"plan", "--example", "chat", "--validate"}, "--validate needs --base-url and --model"},
		{[]string{"plan", "--example", "chat", "--validate", "--base-url", "ftp://x", "--model", "m"}, "http or https"},
		{[]string{"plan", "--example", "chat", "--deadline", "5s"}, "--deadline needs --validate"},
		{[]string{"plan", "--example", "chat", "--validate", "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--max-requests", "-1"},
			"planner: --max-requests: -1 requests, must be at least 1, or 0: only the steps bound them"},
	} {
		code, _, errOut := execute(t, "", tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d: %s", tc.args, code, errOut)
		}
	}
}

// TestPlanValidateStepTooSmall: a --requests-per-step too small for the
// plan's pools is a usage error named by its flag, found before anything
// is sent.
func TestPlanValidateStepTooSmall(t *testing.T) {
	ts, sent := countingEndpoint(t)
	code, out, errOut := execute(t, "", "plan", "--example", "chat", "--validate", "--base-url", ts.URL+"/v1", "--model", fakeendpoint.DefaultModel, "--requests-per-step", "1")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "planner: --requests-per-step: 1 requests with 0 warm-up leave 1 measured at concurrency 39") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// TestPlanValidateFlagsNeedValidate: every flag of plan that only a
// validation reads ("with --validate:" in its help) is refused without
// --validate, rather than dropped without a word.
func TestPlanValidateFlagsNeedValidate(t *testing.T) {
	values := map[string]string{"base-url": "http://127.0.0.1:1/v1", "api-key-header": "api-key", "deadline": "5s", "max-duration": "1m", "tolerance-pct": "5"}
	n := 0
	newPlanCmd(streams{}).Flags().VisitAll(func(f *pflag.Flag) {
		if !strings.HasPrefix(f.Usage, "with --validate:") {
			return
		}
		n++
		v, ok := values[f.Name]
		if !ok {
			v = "7"
		}
		code, out, errOut := execute(t, "", "plan", "--example", "chat", "--"+f.Name, v)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "--"+f.Name+" needs --validate") {
			t.Errorf("--%s %s without --validate: exit %d\n%s%s", f.Name, v, code, out, errOut)
		}
	})
	if n < 8 {
		t.Errorf("%d flags say they are read with --validate", n)
	}
}

// TestPlanValidateAgentTask validates an agent task class through the
// command line against planner sim on loopback: with the scenario's
// latency the tasks hold (the widest tolerance, as a busy machine's real
// clock may stretch a tail), and against an endpoint three times as
// slow to the first token the SLO that the plan met on paper fails,
// named by its metric (a slower clock only makes it slower).
func TestPlanValidateAgentTask(t *testing.T) {
	const text = `
quotas: [{name: k, rpm: 100000}]
latency: {ttft_ms: {fixed: 100}, tpot_ms: {fixed: 10}, knee: 4}
classes:
  - name: agent
    quota: k
    mode: batch
    input_tokens: {fixed: 64}
    output_tokens: {fixed: 8}
    max_tokens: 8
    task: {calls: {fixed: 2}, tool_ms: {fixed: 50}, tool_result_tokens: {fixed: 16}}
    slo: {ttft_ms: 250, task_e2e_ms: 750, percentile: 99}
`
	file := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := func(ttft time.Duration) string {
		s, err := fakeendpoint.New(fakeendpoint.Config{MaxNumSeqs: 64, TTFT: ttft, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s)
		t.Cleanup(srv.Close)
		return srv.URL + "/v1"
	}
	args := []string{"plan", "-f", file, "--validate", "--base-url", serve(100 * time.Millisecond), "--model", fakeendpoint.DefaultModel, "--tolerance-pct", "999", "--requests-per-step", "16"}
	code, out, errOut := execute(t, "", args...)
	if code != exitOK || !strings.Contains(out, "VALIDATION: OK") || !strings.Contains(out, "tasks of 2 calls, 50 ms of tool time after each, context accumulate") ||
		!strings.Contains(out, "TTFT p99 predicted 100 ms / measured") || !strings.Contains(out, "task E2E p99 predicted 440 ms") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	args[5] = serve(300 * time.Millisecond)
	code, out, errOut = execute(t, "", append(args, "-o", "json")...)
	var doc struct {
		Validation verify.Report `json:"validation"`
	}
	if code != exitError || json.Unmarshal([]byte(out), &doc) != nil || doc.Validation.Verdict != "fails" || !strings.Contains(errOut, "the plan fails validation") {
		t.Fatalf("slower endpoint: exit %d: %s%s", code, out, errOut)
	}
	c := doc.Validation.Classes[0]
	all := strings.Join(c.Reasons, "\n")
	for _, want := range []string{"TTFT p99 at the pool of", "above the SLO of 250 ms", "task E2E p99 at the pool of", "above the SLO of 750 ms"} {
		if !strings.Contains(all, want) {
			t.Errorf("reasons lack %q:\n%s", want, all)
		}
	}
	if c.Task == nil || c.Task.Measured == nil || c.Task.Measured.Goodput == nil || c.Task.Measured.Goodput.Met != 0 {
		t.Errorf("task %+v", c.Task)
	}
}

// countingEndpoint is the simulator of 8 slots on a loopback server that
// counts the requests it is sent, for tests of problems that must be
// found before anything is sent.
func countingEndpoint(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	srv, err := fakeendpoint.New(fakeendpoint.Config{MaxNumSeqs: 8, TTFT: time.Millisecond, ITL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sent := new(atomic.Int64)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, sent
}
