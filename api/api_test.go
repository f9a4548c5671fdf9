package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/app"
	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
)

// TestCreatePlanMatchesEngine plans every shipped example through the API
// and checks that the answer is the engine's plan of the same scenario:
// pools, binding constraints and every other field.
func TestCreatePlanMatchesEngine(t *testing.T) {
	s := newServer(t, Options{})
	for _, name := range planner.ExampleNames() {
		t.Run(name, func(t *testing.T) {
			rec := send(s, http.MethodPost, "/v1/plans", mustJSON(t, map[string]any{"scenario": exampleDoc(t, name)}))
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			var got plan.Plan
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			want, err := app.New(plan.New(plan.Options{})).Plan(context.Background(), exampleScenario(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Classes) != len(want.Classes) {
				t.Fatalf("%d classes, want %d", len(got.Classes), len(want.Classes))
			}
			for i, c := range got.Classes {
				w := want.Classes[i]
				if c.Name != w.Name || c.Pool != w.Pool || c.BindingConstraint != w.BindingConstraint || c.Feasible != w.Feasible {
					t.Errorf("class %s: pool %d bound by %s feasible %v; engine: %d by %s feasible %v",
						c.Name, c.Pool, c.BindingConstraint, c.Feasible, w.Pool, w.BindingConstraint, w.Feasible)
				}
			}
			if !sameJSON(t, got, want) {
				t.Errorf("the API's plan differs from the engine's")
			}
		})
	}
}

// TestCreatePlanThreeClasses pins the pools of the benchmark scenario.
func TestCreatePlanThreeClasses(t *testing.T) {
	s := newServer(t, Options{})
	rec := send(s, http.MethodPost, "/v1/plans", mustJSON(t, map[string]any{"scenario": exampleDoc(t, "three-classes")}))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("status %d %s: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	var got plan.Plan
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want, err := app.New(plan.New(plan.Options{})).Plan(context.Background(), exampleScenario(t, "three-classes"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i, c := range got.Classes {
		names = append(names, c.Name)
		if c.Pool != want.Classes[i].Pool || c.BindingConstraint != want.Classes[i].BindingConstraint || len(c.Ceilings) == 0 {
			t.Errorf("class %s: pool %d bound by %s, engine %d by %s", c.Name, c.Pool, c.BindingConstraint, want.Classes[i].Pool, want.Classes[i].BindingConstraint)
		}
	}
	if !slices.Equal(names, []string{"chat", "summarise", "nightly"}) || len(got.Quotas) != 1 || got.Quotas[0].Name != "prod" {
		t.Errorf("classes %v, quotas %+v", names, got.Quotas)
	}
}

// cellsOf decodes a what-if response.
func cellsOf(t *testing.T, body []byte) WhatIfResponse {
	t.Helper()
	var w WhatIfResponse
	if err := json.Unmarshal(body, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// checkCell compares one cell's classes with the engine's plan of sc.
func checkCell(t *testing.T, cell plan.Cell, sc scenario.Scenario) {
	t.Helper()
	want, err := app.New(plan.New(plan.Options{})).Plan(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	if len(cell.Errors) > 0 || len(cell.Classes) != len(want.Classes) {
		t.Fatalf("cell %v: classes %+v errors %+v", cell.Values, cell.Classes, cell.Errors)
	}
	for i, c := range cell.Classes {
		w := want.Classes[i]
		if c.Name != w.Name || c.Pool != w.Pool || c.BindingConstraint != w.BindingConstraint || c.Feasible != w.Feasible ||
			!sameMinPool(c.MinPool, w.MinPool) {
			t.Errorf("cell %v class %s: pool %d bound by %s feasible %v; engine %d by %s feasible %v",
				cell.Values, c.Name, c.Pool, c.BindingConstraint, c.Feasible, w.Pool, w.BindingConstraint, w.Feasible)
		}
	}
}

func sameMinPool(a, b *int) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// TestWhatIfGrid varies rpm and tpm of docs/examples/chat.yaml and checks
// each cell against the engine's plan of the changed scenario, and the
// row-major order of the cells.
func TestWhatIfGrid(t *testing.T) {
	s := newServer(t, Options{})
	rpms := []float64{100, 600, 3000}
	tpms := []float64{100000, 1000000}
	body := mustJSON(t, map[string]any{
		"scenario": exampleDoc(t, "chat"),
		"variations": []map[string]any{
			{"path": "/quotas/0/rpm", "values": rpms},
			{"path": "/quotas/0/tpm", "values": tpms},
		},
	})
	rec := send(s, http.MethodPost, "/v1/what-if", body)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	w := cellsOf(t, rec.Body.Bytes())
	if len(w.Cells) != len(rpms)*len(tpms) || len(w.Variations) != 2 {
		t.Fatalf("%d cells, %d variations", len(w.Cells), len(w.Variations))
	}
	base := exampleScenario(t, "chat")
	for i, cell := range w.Cells {
		rpm, tpm := rpms[i/len(tpms)], tpms[i%len(tpms)]
		if fmt.Sprint(cell.Values) != fmt.Sprint([]any{rpm, tpm}) {
			t.Errorf("cell %d values %v, want [%v %v]", i, cell.Values, rpm, tpm)
		}
		sc := base
		sc.Quotas = slices.Clone(base.Quotas)
		sc.Quotas[0].RPM, sc.Quotas[0].TPM = rpm, tpm
		checkCell(t, cell, sc)
	}
	// Known values (docs/concepts.md: E[S] = 3.88 s, 1,484 tokens a request,
	// min_pool 12): at rpm 100 and tpm 1,000,000 the rpm ceiling binds,
	// 0.9 × 100/60 × 3.88 = 5.8 → 5; at rpm 3000 tpm binds at 39.
	if c := w.Cells[1].Classes[0]; c.BindingConstraint != "rpm" || c.Pool != 5 || c.Feasible {
		t.Errorf("rpm 100, tpm 1e6: %+v", c)
	}
	if c := w.Cells[5].Classes[0]; c.BindingConstraint != "tpm" || c.Pool != 39 || !c.Feasible {
		t.Errorf("rpm 3000, tpm 1e6: %+v", c)
	}
	if got := testutil.ToFloat64(s.metrics.whatIfCells); got != 6 {
		t.Errorf("what-if cells counter %v, want 6", got)
	}
}

// TestWhatIfTiers puts catalogue tiers on the chat example's quota: each
// cell is the plan with the tier's limits and accounting, and names its tier.
func TestWhatIfTiers(t *testing.T) {
	s := newServer(t, Options{})
	body := mustJSON(t, map[string]any{
		"scenario":   exampleDoc(t, "chat"),
		"variations": []map[string]any{{"path": "/quotas/0", "tiers": []string{"small", "large"}}},
	})
	rec := send(s, http.MethodPost, "/v1/what-if", body)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	w := cellsOf(t, rec.Body.Bytes())
	if len(w.Cells) != 2 {
		t.Fatalf("%d cells", len(w.Cells))
	}
	base := exampleScenario(t, "chat")
	for i, tier := range testTiers {
		cell := w.Cells[i]
		if len(cell.Values) != 1 || cell.Values[0] != tier.Name {
			t.Errorf("cell %d values %v, want the tier name %s", i, cell.Values, tier.Name)
		}
		sc := base
		sc.Quotas = []scenario.Quota{base.Quotas[0].WithLimitsOf(tier.Quota)}
		if sc.Quotas[0].Name != "prod" || sc.Quotas[0].Headroom != 0.9 || sc.Quotas[0].ITPM != tier.ITPM {
			t.Fatalf("WithLimitsOf: %+v", sc.Quotas[0])
		}
		checkCell(t, cell, sc)
	}
	// The small tier's tpm binds: one window of 1 s allows 0.9 × 50,000/60 =
	// 750 tokens, less than one request's charge (3,994 tokens at the p99
	// of its input with max_tokens 700), so the class gets no pool.
	// The large tier counts actual tokens, so the pool grows past 39.
	if c := w.Cells[0].Classes[0]; c.BindingConstraint != "tpm" || c.Pool != 0 || c.Feasible {
		t.Errorf("small tier: %+v", c)
	}
	if c := w.Cells[1].Classes[0]; c.Pool <= 39 || !c.Feasible {
		t.Errorf("large tier: %+v", c)
	}
}

func TestListTiers(t *testing.T) {
	tiers, err := config.DefaultTiers()
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, Options{Tiers: tiers})
	rec := send(s, http.MethodGet, "/v1/tiers", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var got TiersResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Tiers, tiers) {
		t.Errorf("tiers:\n got %+v\nwant %+v", got.Tiers, tiers)
	}

	empty := newChecked(t, Options{})
	if rec := send(empty, http.MethodGet, "/v1/tiers", nil); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"tiers":[]`) {
		t.Errorf("empty catalogue: %d %s", rec.Code, rec.Body)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	for _, tc := range []struct {
		name      string
		store     Store
		wantReady int
	}{
		{"store answers", fakeStore{}, http.StatusOK},
		{"store fails", fakeStore{err: errPing}, http.StatusServiceUnavailable},
		{"no store", nil, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newChecked(t, Options{Store: tc.store})
			if rec := send(s, http.MethodGet, "/healthz", nil); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"ok"`) {
				t.Errorf("healthz: %d %s", rec.Code, rec.Body)
			}
			rec := send(s, http.MethodGet, "/readyz", nil)
			if rec.Code != tc.wantReady {
				t.Errorf("readyz: %d %s, want %d", rec.Code, rec.Body, tc.wantReady)
			}
			if rec.Code != http.StatusOK {
				p := readProblem(t, rec)
				if strings.Contains(p.Detail, errPing.Error()) {
					t.Errorf("readyz leaks the store's error: %q", p.Detail)
				}
			}
		})
	}
}

// TestMetrics checks the counters and histograms after known traffic, and
// that /metrics exposes them with the Go and process collectors.
func TestMetrics(t *testing.T) {
	s := newServer(t, Options{})
	good := mustJSON(t, map[string]any{"scenario": exampleDoc(t, "chat")})
	for range 3 {
		send(s, http.MethodPost, "/v1/plans", good)
	}
	send(s, http.MethodPost, "/v1/plans", []byte(`{"scenario": 1}`))
	send(s, http.MethodGet, "/nowhere", nil)

	for _, tc := range []struct {
		op, class string
		want      float64
	}{
		{"create-plan", "2xx", 3},
		{"create-plan", "4xx", 1},
		{"unmatched", "4xx", 1},
	} {
		if got := testutil.ToFloat64(s.metrics.requests.WithLabelValues(tc.op, tc.class)); got != tc.want {
			t.Errorf("requests{%s,%s} = %v, want %v", tc.op, tc.class, got, tc.want)
		}
	}
	if n := testutil.CollectAndCount(s.metrics.duration, "planner_http_request_duration_seconds"); n != 3 {
		t.Errorf("%d latency series, want 3 (one per operation and class)", n)
	}
	families, err := s.metrics.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "planner_plan_compute_seconds" {
			if n := f.GetMetric()[0].GetHistogram().GetSampleCount(); n != 3 {
				t.Errorf("plan compute samples %d, want 3 (the refused body never reached the engine)", n)
			}
		}
	}

	rec := send(s, http.MethodGet, "/metrics", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	for _, want := range []string{
		`planner_http_requests_total{operation="create-plan",status_class="2xx"} 3`,
		`planner_http_request_duration_seconds_bucket{operation="create-plan",status_class="2xx",le="+Inf"} 3`,
		`planner_plan_compute_seconds_count 3`,
		`planner_whatif_cells_total 0`,
		`planner_http_panics_total 0`,
		`go_goroutines `,
		`process_cpu_seconds_total `,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestPanicBecomesProblem checks the last resort: a panicking handler gets
// a 500 problem, is counted, and the server goes on answering.
func TestPanicBecomesProblem(t *testing.T) {
	var logs bytes.Buffer
	s := newServer(t, Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	s.handle("GET /boom", "boom", func(http.ResponseWriter, *http.Request) { panic("boom") })
	rec := send(s, http.MethodGet, "/boom", nil)
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("status %d", rec.Code)
	}
	readProblem(t, rec)
	if got := testutil.ToFloat64(s.metrics.panics); got != 1 {
		t.Errorf("panics counter %v", got)
	}
	if got := testutil.ToFloat64(s.metrics.requests.WithLabelValues("boom", "5xx")); got != 1 {
		t.Errorf("requests{boom,5xx} = %v", got)
	}
	if !strings.Contains(logs.String(), "handler panicked") {
		t.Errorf("panic not logged: %s", logs.String())
	}
	if rec := send(s, http.MethodGet, "/healthz", nil); rec.Code != http.StatusOK {
		t.Errorf("after a panic: %d", rec.Code)
	}
}

func TestUnknownRoutesAreProblems(t *testing.T) {
	s := newServer(t, Options{})
	rec := send(s, http.MethodGet, "/v2/plans", nil)
	if rec.Code != http.StatusNotFound {
		t.Fatalf("status %d", rec.Code)
	}
	readProblem(t, rec)
	rec = send(s, http.MethodPut, "/v1/plans", nil)
	if rec.Code != http.StatusMethodNotAllowed || !strings.Contains(rec.Header().Get("Allow"), http.MethodPost) {
		t.Fatalf("PUT /v1/plans: %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
	readProblem(t, rec)
}

// TestNonCanonicalPathsAreProblems checks that a path with an empty, . or
// .. segment (a client that joined a base URL ending in / with /v1/plans)
// is answered with a 404 problem naming the operation's path, not with
// the mux's 307 redirect and its HTML or empty body, which a POST then
// sends again elsewhere; and that it is counted as unmatched.
func TestNonCanonicalPathsAreProblems(t *testing.T) {
	s := newServer(t, Options{})
	body := mustJSON(t, map[string]any{"scenario": exampleDoc(t, "chat")})
	for _, tc := range []struct{ method, path, detail string }{
		{http.MethodPost, "//v1//plans", "no operation at //v1//plans: a path has no empty, . or .. segment; did you mean /v1/plans?"},
		{http.MethodPost, "/v1//plans?x=1", "no operation at /v1//plans: a path has no empty, . or .. segment; did you mean /v1/plans?"},
		{http.MethodGet, "/v1/plans/./abc", "no operation at /v1/plans/./abc: a path has no empty, . or .. segment; did you mean /v1/plans/abc?"},
		{http.MethodGet, "/v1/probes/../plans", "no operation at /v1/probes/../plans: a path has no empty, . or .. segment; did you mean /v1/plans?"},
		{http.MethodGet, "//nowhere", "no operation at //nowhere; the operations are listed at /openapi.yaml"},
	} {
		var b []byte
		if tc.method == http.MethodPost {
			b = body
		}
		rec := send(s, tc.method, tc.path, b)
		if rec.Code != http.StatusNotFound || rec.Header().Get("Location") != "" {
			t.Errorf("%s %s: %d, Location %q; want 404 without a redirect", tc.method, tc.path, rec.Code, rec.Header().Get("Location"))
			continue
		}
		if p := readProblem(t, rec); p.Detail != tc.detail {
			t.Errorf("%s %s: detail %q, want %q", tc.method, tc.path, p.Detail, tc.detail)
		}
	}
	rec := send(s, http.MethodGet, "/metrics", nil)
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "planner_http_requests_total{") && strings.Contains(line, `operation="create-plan"`) {
			t.Errorf("a non-canonical path was counted as its operation: %s", line)
		}
	}
}

// TestAccessLog checks the access log's fields, and that it holds neither
// the body nor the Authorization header.
func TestAccessLog(t *testing.T) {
	var logs bytes.Buffer
	token := "secret-token-0123456789"
	s := newServer(t, Options{Tokens: []string{token}, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	body := mustJSON(t, map[string]any{"scenario": exampleDoc(t, "chat")})
	send(s, http.MethodPost, "/v1/plans", body, "Authorization", "Bearer "+token)
	send(s, http.MethodGet, "/v1/tiers", nil, "Authorization", "Bearer wrong-token-that-is-long")

	var lines []map[string]any
	for line := range strings.Lines(logs.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("%d log lines:\n%s", len(lines), logs.String())
	}
	want := []map[string]any{
		{"method": "POST", "path": "/v1/plans", "status": 200.0, "operation": "create-plan"},
		{"method": "GET", "path": "/v1/tiers", "status": 401.0, "operation": "list-tiers"},
	}
	for i, w := range want {
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("line %d: %s = %v, want %v", i, k, lines[i][k], v)
			}
		}
		if _, ok := lines[i]["duration_ms"]; !ok {
			t.Errorf("line %d has no duration_ms", i)
		}
	}
	for _, secret := range []string{token, "wrong-token-that-is-long", "Bearer", "input_tokens"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
}

// TestBodyLimit checks that a body of exactly the limit is read and one
// byte more is refused with 413.
func TestBodyLimit(t *testing.T) {
	const limit = 4096
	s := newServer(t, Options{MaxBodyBytes: limit})
	body := mustJSON(t, map[string]any{"scenario": exampleDoc(t, "chat")})
	atLimit := append(body, bytes.Repeat([]byte(" "), limit-len(body))...)
	if rec := send(s, http.MethodPost, "/v1/plans", atLimit); rec.Code != http.StatusOK {
		t.Errorf("a body of exactly %d bytes: %d %s", limit, rec.Code, rec.Body)
	}
	rec := send(s, http.MethodPost, "/v1/plans", append(atLimit, ' '))
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body of %d bytes: %d", limit+1, rec.Code)
	}
	p := readProblem(t, rec)
	if !slices.Equal(p.locations(), []string{"body"}) || !strings.Contains(p.Detail, "4096") {
		t.Errorf("413 problem: %+v", p)
	}
}

// TestPlanTimeoutIsA422 checks that a plan that outlasts the server's limit
// is refused with a problem that says what to reduce.
func TestPlanTimeoutIsA422(t *testing.T) {
	h := newServer(t, Options{PlanTimeout: time.Nanosecond})
	doc := exampleDoc(t, "measured-curve")
	doc["policy"] = map[string]any{"seed": 987654} // not in the plan cache
	rec := send(h, http.MethodPost, "/v1/plans", mustJSON(t, map[string]any{"scenario": doc}))
	if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "too large to plan in time") {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
}
