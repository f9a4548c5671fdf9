package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plannerdev/planner/internal/app"
	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/jobs"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/store"
	"github.com/plannerdev/planner/internal/target"
	"github.com/plannerdev/planner/internal/testutil"
	"github.com/plannerdev/planner/internal/verify"
)

// analysisExampleSteps is a ramp whose knee is at 8, the steps of the
// analysis example.
var analysisExampleSteps = []AnalysisStep{
	{Concurrency: 1, Requests: 40, OK: 40, GoodputRPS: 1.6, ThroughputRPS: 1.6, TTFTP50Ms: 200, TTFTP95Ms: 210, E2EP50Ms: 600, E2EP95Ms: 640, TPOTP50Ms: 20, TPOTP95Ms: 21},
	{Concurrency: 2, Requests: 40, OK: 40, GoodputRPS: 3.1, ThroughputRPS: 3.1, TTFTP50Ms: 205, TTFTP95Ms: 220, E2EP50Ms: 620, E2EP95Ms: 660, TPOTP50Ms: 20.5, TPOTP95Ms: 21.5},
	{Concurrency: 4, Requests: 40, OK: 40, GoodputRPS: 5.9, ThroughputRPS: 5.9, TTFTP50Ms: 215, TTFTP95Ms: 240, E2EP50Ms: 660, E2EP95Ms: 700, TPOTP50Ms: 21.5, TPOTP95Ms: 22.5},
	{Concurrency: 8, Requests: 40, OK: 40, GoodputRPS: 10.4, ThroughputRPS: 10.4, TTFTP50Ms: 240, TTFTP95Ms: 290, E2EP50Ms: 760, E2EP95Ms: 820, TPOTP50Ms: 24, TPOTP95Ms: 26},
	{Concurrency: 16, Requests: 64, OK: 64, GoodputRPS: 10.9, ThroughputRPS: 10.9, TTFTP50Ms: 700, TTFTP95Ms: 900, E2EP50Ms: 1450, E2EP95Ms: 1700, TPOTP50Ms: 30, TPOTP95Ms: 34},
}

// exampleCheck says how one response example of an operation is made:
// answer returns what the service answers for the request example of the
// same name (or, for operations that need an endpoint, what it would).
type exampleCheck struct {
	operation, example string
	// scenario names the shipped example the requests' scenario must be.
	scenario string
	answer   func(t *testing.T, s *Server, path string, request json.RawMessage) []byte
	// check, when set, checks what the file says in words or shares with
	// other tests.
	check func(t *testing.T, f exampleFile)
}

// post answers a request example through the API.
func post(t *testing.T, s *Server, path string, request json.RawMessage) []byte {
	t.Helper()
	rec := send(s, http.MethodPost, path, request)
	if rec.Code != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// TestOpenAPIExamples: the OpenAPI document's examples are static files
// (examples/OPERATION-ID.json), and each response example is what the
// service answers for the request example of the same name: the engine's
// plan, grid, analysis and simulation as POST answers them; the queued
// probe as a probe request is configured; the validation's predictions as
// the engine makes them, with illustrative measurements. Every request
// example is accepted (those of the probe and the validation by
// TestOpenAPIRequestExamplesRun, against an endpoint), and one that carries a shipped example scenario
// carries it as docs/examples has it. When the engine's numbers change,
// go test ./api -run TestOpenAPIExamples -update rewrites the responses;
// then regenerate openapi.yaml.
func TestOpenAPIExamples(t *testing.T) {
	t.Setenv("PLANNER_TEST_SIM_KEY", "sk-example-not-a-key")
	tiers, err := config.DefaultTiers()
	if err != nil {
		t.Fatal(err)
	}
	p := config.DefaultProbe()
	p.Credentials = []config.Credential{{Name: "sim", Env: "PLANNER_TEST_SIM_KEY", Header: config.DefaultCredentialHeader}}
	s := newChecked(t, Options{Tiers: tiers, Probe: p})
	for _, tc := range []exampleCheck{
		{operation: "create-plan", example: "chat", scenario: "chat", answer: post, check: func(t *testing.T, f exampleFile) {
			var p PlanResponse
			if err := json.Unmarshal(f.Response["chat"].Value, &p); err != nil {
				t.Fatal(err)
			}
			c := p.Classes[0]
			if want := fmt.Sprintf("a pool of %d, bound by %s", c.Pool, c.BindingConstraint); !strings.Contains(f.Response["chat"].Summary, want) {
				t.Errorf("the summary %q does not say %q", f.Response["chat"].Summary, want)
			}
		}},
		{operation: "create-what-if", example: "tpm", scenario: "chat", answer: post},
		{operation: "create-analysis", example: "steps", answer: post, check: func(t *testing.T, f exampleFile) {
			if !sameJSON(t, f.Request["steps"].Value, map[string]any{"steps": analysisExampleSteps, "deadline_ms": 12000}) {
				t.Error("the analysis request's steps are not analysisExampleSteps")
			}
		}},
		{operation: "create-simulation", example: "backfill", scenario: "backfill", answer: post},
		{operation: "create-probe", example: "sim", answer: queuedProbe},
		{operation: "validate-plan", example: "sim", answer: chatValidation},
	} {
		t.Run(tc.operation, func(t *testing.T) {
			file := "examples/" + tc.operation + ".json"
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var f exampleFile
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatal(err)
			}
			path := s.operationPath(t, tc.operation)
			for name, req := range f.Request {
				if tc.scenario != "" && !sameJSON(t, json.RawMessage(member(t, req.Value, "scenario")), exampleDoc(t, tc.scenario)) {
					t.Errorf("request %s: the scenario is not docs/examples/%s.yaml", name, tc.scenario)
				}
				if tc.operation != "create-probe" && tc.operation != "validate-plan" {
					post(t, s, path, req.Value) // accepted
				}
			}
			resp, ok := f.Response[exampleResponseName(tc)]
			if !ok {
				t.Fatalf("no response example %s", exampleResponseName(tc))
			}
			if tc.check != nil {
				tc.check(t, f)
			}
			got := indented(t, tc.answer(t, s, path, f.Request[tc.example].Value))
			if want := indented(t, resp.Value); !bytes.Equal(got, want) {
				if *update {
					resp.Value = got
					f.Response[exampleResponseName(tc)] = resp
					writeExamples(t, file, f)
					return
				}
				t.Errorf("%s: the response example %s is not what the service answers (-want +got); "+
					"run go test ./api -run TestOpenAPIExamples -update, review the diff and regenerate openapi.yaml:\n%s",
					file, exampleResponseName(tc), cmp.Diff(string(want), string(got)))
			}
		})
	}
}

// exampleResponseName is the response example that answers tc's request
// example: the same name, but for the probe (queued) and the validation (ok).
func exampleResponseName(tc exampleCheck) string {
	switch tc.operation {
	case "create-probe":
		return "queued"
	case "validate-plan":
		return "ok"
	}
	return tc.example
}

// operationPath is the path of the POST operation with the given id.
func (s *Server) operationPath(t *testing.T, id string) string {
	t.Helper()
	for path, item := range s.OpenAPI().Paths {
		if item.Post != nil && item.Post.OperationID == id {
			return path
		}
	}
	t.Fatalf("no POST operation %s", id)
	return ""
}

// indented is a JSON document indented as the examples files hold it.
func indented(t *testing.T, doc []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(doc), "", "  "); err != nil {
		t.Fatalf("%v: %.200s", err, doc)
	}
	return buf.Bytes()
}

func writeExamples(t *testing.T, file string, f exampleFile) {
	t.Helper()
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// exampleTime and exampleProbeID stand for what the service draws when a
// probe starts; exampleSeed for its seed.
var (
	exampleTime    = time.Date(2026, 1, 15, 9, 30, 0, 0, time.UTC)
	exampleProbeID = "x7k2m4q9r3t8v5w1y6z0a2b4c6"
	examplePlanID  = "p3n8c2x5v7b9m1q4w6e8r0t2y4"
)

const exampleSeed = 1

// queuedProbe is the probe that POST /v1/probes answers for a request
// when it queues it: the configuration is built, keyed and defaulted as
// createProbe does.
func queuedProbe(t *testing.T, s *Server, _ string, request json.RawMessage) []byte {
	t.Helper()
	var req ProbeRequest
	if err := json.Unmarshal(request, &req); err != nil {
		t.Fatal(err)
	}
	k, problems := s.probeKey(req.Target.Credential, "", "body.target")
	cfg, more := req.config(s.caps(s.probe.MaxDuration))
	if len(problems) > 0 || len(more) > 0 {
		t.Fatalf("the request example is refused: %v %v", problems, more)
	}
	k.apply(&cfg)
	cfg.Seed = exampleSeed
	stored, err := json.Marshal(cfg.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	resp := Probe{ID: exampleProbeID, Status: "queued", Label: req.Label, Target: ProbeEndpoint{BaseURL: cfg.BaseURL, Model: cfg.Model},
		CreatedAt: exampleTime, Result: measure.Result{Steps: []measure.Step{}}}
	if err := json.Unmarshal(stored, &resp.Config); err != nil {
		t.Fatal(err)
	}
	return mustJSON(t, resp)
}

// chatValidation is a validation of the chat example's plan that holds:
// the plan and the predictions are the engine's, the measurements
// illustrative (throughput 3 % and 5 % below the predictions, p95s 4 % and
// 3 % above).
func chatValidation(t *testing.T, _ *Server, _ string, _ json.RawMessage) []byte {
	t.Helper()
	sc := exampleScenario(t, "chat")
	p, err := app.New(plan.New(plan.Options{})).Plan(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	cp := p.Classes[0]
	cr := verify.ClassReport{Class: cp.Name, Endpoint: cp.Endpoint, Pool: cp.Pool, BindingConstraint: cp.BindingConstraint, Verdict: verify.VerdictOK,
		StopReason: "completed"}
	interval := func(v, lo, hi float64) *measure.Interval {
		return &measure.Interval{Lo: round2(v * lo), Hi: round2(v * hi)}
	}
	for i, c := range verify.Concurrencies(cp.Pool) {
		pred, err := plan.PredictAt(sc, cp.Name, c)
		if err != nil {
			t.Fatal(err)
		}
		cr.InputTokens, cr.OutputTokens = int(math.Round(pred.InputTokensP50)), int(math.Round(pred.MeanOutputTokens))
		f := 0.97 - 0.02*float64(i)
		m := &verify.Measured{
			Requests: 4 * c, OK: 4 * c, ThroughputRPS: round2(pred.ThroughputRPS * f), ThroughputCI: interval(pred.ThroughputRPS*f, 0.96, 1.04),
			TTFTP95Ms: round2(pred.TTFTP95Ms * 1.04), TTFTP95CI: interval(pred.TTFTP95Ms, 0.98, 1.12),
			E2EP95Ms: round2(pred.E2EP95Ms * 1.03), E2EP95CI: interval(pred.E2EP95Ms, 0.99, 1.08), MeanOutputTokens: float64(cr.OutputTokens),
		}
		cr.Points = append(cr.Points, verify.Point{Concurrency: c, Load: c, Predicted: pred, Measured: m,
			RelativeErrorPct: &verify.Errors{ThroughputRPS: round2((f - 1) * 100), TTFTP95Ms: 4, E2EP95Ms: 3},
			// The throughput's interval holds the prediction at the pool and
			// ends 1.2 % under it above the pool; the p95s' hold theirs.
			IntervalErrorPct: &verify.Errors{ThroughputRPS: math.Min(0, math.Round((f*1.04-1)*1000)/10)}})
	}
	concs := verify.Concurrencies(cp.Pool)
	cr.Reasons = []string{
		fmt.Sprintf("at the pool of %d, within 25 %% of the prediction beyond the 95 %% intervals: throughput -3.0 %%, TTFT p95 +4.0 %%, E2E p95 +3.0 %%", concs[0]),
		fmt.Sprintf("at %d (1.25 × the pool), within 25 %% of the prediction beyond the 95 %% intervals: throughput -5.0 %%, TTFT p95 +4.0 %%, E2E p95 +3.0 %%", concs[1]),
	}
	return mustJSON(t, ValidateResponse{PlanID: examplePlanID, Report: verify.Report{
		Verdict: verify.VerdictOK, TolerancePct: verify.DefaultTolerancePct, Classes: []verify.ClassReport{cr},
		Summary: "the plan holds: every class validated (1), beside the other classes of its endpoint, measured throughput, TTFT p95 and E2E p95 within the tolerance of the model beyond their 95 % intervals at its pool and 1.25 × it, without 429s at the pool",
	}})
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// TestOpenAPIRequestExamplesRun sends the request examples that need an
// endpoint to the service as a client would, every connection of the
// probes reaching an OpenAI-compatible endpoint in process: the probe
// example is accepted (202, queued, its Location) and runs to its end,
// and the validation example, against the stored plan of the plan
// example, is answered 200 with a report of that plan's classes at their
// pools. (TestOpenAPIExamples sends the others.)
func TestOpenAPIRequestExamplesRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t.Setenv("PLANNER_TEST_SIM_KEY", "sk-example-not-a-key")
		endpoint := &testutil.ChatEndpoint{TTFT: 200 * time.Millisecond, ITL: 20 * time.Millisecond, Tokens: 8}
		endpointNet := testutil.ServePipe(t, endpoint)
		st, err := store.Open(context.Background(), t.TempDir()+"/planner.db")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		m := jobs.New(st, jobs.Options{})
		p := config.DefaultProbe()
		p.Credentials = []config.Credential{{Name: "sim", Env: "PLANNER_TEST_SIM_KEY", Header: config.DefaultCredentialHeader}}
		const host = "planner.test"
		service := testutil.ServePipe(t, newChecked(t, Options{
			Store: st, Jobs: m, Probe: p, Hosts: []string{host},
			Network: target.Network{Dialer: endpointNet}, // the examples' 127.0.0.1:8000 is the endpoint
		}))
		client := &http.Client{Transport: &http.Transport{DialContext: service.DialContext}}
		t.Cleanup(client.CloseIdleConnections)
		do := func(method, path string, body []byte) (int, http.Header, []byte) {
			t.Helper()
			req, err := http.NewRequest(method, "http://"+host+path, bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, resp.Header, out
		}
		request := func(operation, name string) []byte {
			b, err := exampleFiles.ReadFile("examples/" + operation + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var f exampleFile
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatal(err)
			}
			return f.Request[name].Value
		}

		status, h, b := do(http.MethodPost, "/v1/probes", request("create-probe", "sim"))
		probe := decode[Probe](t, b)
		if status != http.StatusAccepted || probe.Status != "queued" || h.Get("Location") != "/v1/probes/"+probe.ID || probe.Label != "sim rehearsal" {
			t.Fatalf("the probe example: %d %s %s", status, h.Get("Location"), b)
		}
		for !store.Status(probe.Status).Ended() {
			time.Sleep(time.Second)
			_, _, b = do(http.MethodGet, "/v1/probes/"+probe.ID, nil)
			probe = decode[Probe](t, b)
		}
		if probe.Status != "succeeded" || len(probe.Steps) != 5 {
			t.Errorf("the probe example ended %s with %d steps: %s", probe.Status, len(probe.Steps), probe.Error)
		}

		var plan map[string]any
		if err := json.Unmarshal(request("create-plan", "chat"), &plan); err != nil {
			t.Fatal(err)
		}
		plan["save"] = true
		status, _, b = do(http.MethodPost, "/v1/plans", mustJSON(t, plan))
		saved := decode[PlanResponse](t, b)
		if status != http.StatusOK || saved.ID == "" {
			t.Fatalf("save the plan example: %d %s", status, b)
		}
		status, _, b = do(http.MethodPost, "/v1/plans/"+saved.ID+"/validate", request("validate-plan", "sim"))
		if status != http.StatusOK {
			t.Fatalf("the validation example: %d %s", status, b)
		}
		v := decode[ValidateResponse](t, b)
		c := saved.Classes[0]
		if v.PlanID != saved.ID || len(v.Classes) != 1 || v.Classes[0].Pool != c.Pool || len(v.Classes[0].Points) != 2 ||
			v.Classes[0].Points[0].Concurrency != c.Pool || v.Classes[0].Points[0].Measured == nil {
			t.Errorf("the validation example's report: %s", b)
		}
	})
}
