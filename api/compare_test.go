package api

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2/humatest"

	"github.com/plannerdev/planner/internal/compare"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/store"
)

// storeProbe stores a probe that ended as status with the given analysis
// and returns its id.
func storeProbe(t *testing.T, st *store.Store, model string, status store.Status, r *measure.Result) string {
	t.Helper()
	ctx := context.Background()
	id, err := st.CreateProbe(ctx, store.ProbeRun{BaseURL: "http://127.0.0.1:8000/v1", Model: model, Status: store.StatusRunning,
		StartedAt: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if r != nil {
		if err := st.SaveProbeResult(ctx, id, store.ProbeResult{Analysis: *r, StopReason: "completed"}); err != nil {
			t.Fatal(err)
		}
	}
	if status != store.StatusRunning {
		if err := st.SetProbeStatus(ctx, id, status, ""); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// kneeResult is a ramp whose knee is at knee, where it measured the given
// p95s and goodput.
func kneeResult(knee int, ttft, e2e, goodput float64, served string) *measure.Result {
	r := &measure.Result{Knee: &knee, Steps: []measure.Step{
		{Concurrency: 1, Requests: 40, OK: 40, Answers: 41, GoodputRPS: 1, TTFTP95Ms: 100, E2EP95Ms: 400},
		{Concurrency: knee, Requests: 40, OK: 40, Answers: 44, RateLimited: 4, GoodputRPS: goodput, TTFTP95Ms: ttft, E2EP95Ms: e2e},
	}}
	if served != "" {
		r.Served = measure.SummarizeServed("gpt-4o", false, []measure.Record{{ServedModel: served}})
	}
	return r
}

// TestCompareProbes compares two stored probes through the operation:
// gpt-4o-mini's knee of 6 against gpt-4o's 12 is −50 %, its TTFT p95 of
// 300 ms against 400 ms −25 %, its E2E p95 of 2,200 ms against 2,000 ms
// +10 %, its goodput of 5 req/s against 4 req/s +25 %.
func TestCompareProbes(t *testing.T) {
	st := openStore(t)
	srv := newServer(t, Options{Store: st})
	api := humatest.Wrap(t, srv.api)
	big := storeProbe(t, st, "gpt-4o", store.StatusSucceeded, kneeResult(12, 400, 2000, 4, "gpt-4o-2024-08-06"))
	small := storeProbe(t, st, "gpt-4o-mini", store.StatusCancelled, kneeResult(6, 300, 2200, 5, ""))

	resp := api.Get("/v1/compare?probes=" + big + "," + small)
	if resp.Code != http.StatusOK || resp.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", resp.Code, resp.Body)
	}
	var c compare.Comparison
	if err := json.Unmarshal(resp.Body.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	if c.Baseline != big || len(c.Runs) != 2 || c.Runs[0].Name != big || c.Runs[1].Name != small || c.Runs[0].Drift != nil {
		t.Fatalf("%s", resp.Body)
	}
	r := c.Runs[1]
	if *r.Knee != 6 || r.Model != "gpt-4o-mini" || r.Endpoint != "http://127.0.0.1:8000/v1" || r.RateLimited != 4 || r.Answers != 85 ||
		*r.AtKnee != (compare.AtKnee{TTFTP95Ms: 300, E2EP95Ms: 2200, GoodputRPS: 5}) || !r.Date.Equal(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("the second run: %s", resp.Body)
	}
	if d := r.Drift; *d.KneePct != -50 || *d.TTFTP95Pct != -25 || *d.E2EP95Pct < 10-1e-9 || *d.E2EP95Pct > 10+1e-9 || *d.GoodputPct != 25 {
		t.Errorf("drift %+v", *d)
	}
	if s := c.Runs[0].Served; s == nil || s.Names() != "gpt-4o-2024-08-06" || s.Check != measure.ServedMatch {
		t.Errorf("served %+v", s)
	}

	resp = api.Get("/v1/compare?probes=" + big + "," + small + "&baseline=" + small + "&format=csv")
	rows, err := csv.NewReader(resp.Body).ReadAll()
	if resp.Code != http.StatusOK || !strings.HasPrefix(resp.Header().Get("Content-Type"), "text/csv") || err != nil || len(rows) != 3 {
		t.Fatalf("csv: %d %v %q", resp.Code, err, rows)
	}
	// gpt-4o against gpt-4o-mini: knee (12 − 6)/6 = +100 %, TTFT p95
	// (400 − 300)/300 = +33.3 %, E2E p95 (2000 − 2200)/2200 = −9.09 %,
	// goodput (4 − 5)/5 = −20 %.
	for i, want := range []float64{100, 100.0 / 3, -200.0 / 22, -20} {
		got, err := strconv.ParseFloat(rows[1][15+i], 64)
		if err != nil || math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: %s, want %v", rows[0][15+i], rows[1][15+i], want)
		}
	}
	resp = api.Get("/v1/compare?probes=" + big + "," + small + "&format=md")
	if resp.Code != http.StatusOK || !strings.Contains(resp.Body.String(), "| "+small+" | gpt-4o-mini | - | 2026-03-02 09:00 UTC | 6 | - | 300.0 | 2200.0 | 5.000 | 4 of 85 | no | -50.0 % | -25.0 % | +10.0 % | +25.0 % |") {
		t.Errorf("md: %d %s", resp.Code, resp.Body)
	}
}

func TestCompareProbesRefuses(t *testing.T) {
	st := openStore(t)
	srv := newServer(t, Options{Store: st})
	api := humatest.Wrap(t, srv.api)
	done := storeProbe(t, st, "m", store.StatusSucceeded, kneeResult(4, 100, 500, 2, ""))
	running := storeProbe(t, st, "m", store.StatusRunning, nil)
	empty := storeProbe(t, st, "m", store.StatusCancelled, nil)
	for _, c := range []struct {
		query    string
		status   int
		location string
	}{
		{"probes=" + done + ",nope", http.StatusNotFound, "query.probes[1]"},
		{"probes=" + running + "," + done, http.StatusConflict, "query.probes[0]"},
		{"probes=" + done + "," + empty, http.StatusUnprocessableEntity, "query.probes[1]"},
		{"probes=" + done + "," + done, http.StatusUnprocessableEntity, "query.probes[1]"},
		{"probes=" + done + "&baseline=other", http.StatusUnprocessableEntity, "query.baseline"},
		{"probes=" + strings.Repeat(done+",", 16) + done, http.StatusUnprocessableEntity, "query.probes"},
		{"", http.StatusUnprocessableEntity, "query.probes"},
		{"probes=" + done + "&format=yaml", http.StatusUnprocessableEntity, "query.format"},
		// probes is one comma-separated value: given twice, the second is
		// not dropped but refused, before any probe is looked up.
		{"probes=" + done + "&probes=nope", http.StatusUnprocessableEntity, "query.probes"},
		{"probes=" + done + "&format=json&format=csv", http.StatusUnprocessableEntity, "query.format"},
		{"probes=" + done + "&baseline=" + done + "&baseline=" + done, http.StatusUnprocessableEntity, "query.baseline"},
		// an empty id (two commas, one at the end) or one longer than any id
		// is a mistake in the list, not an unknown probe
		{"probes=" + done + ",,nope", http.StatusUnprocessableEntity, "query.probes[1]"},
		{"probes=" + done + ",", http.StatusUnprocessableEntity, "query.probes[1]"},
		{"probes=" + done + "," + strings.Repeat("x", 65), http.StatusUnprocessableEntity, "query.probes[1]"},
	} {
		resp := api.Get("/v1/compare?" + c.query)
		var problem struct {
			Errors []struct {
				Location string `json:"location"`
			} `json:"errors"`
		}
		_ = json.Unmarshal(resp.Body.Bytes(), &problem)
		if resp.Code != c.status || len(problem.Errors) == 0 || problem.Errors[0].Location != c.location {
			t.Errorf("%s: %d %s; want %d at %s", c.query, resp.Code, resp.Body, c.status, c.location)
		}
	}
	// Through the whole server: the operation is behind the token.
	secured := newServer(t, Options{Store: st, Tokens: []string{"compare-test-token-0123456789"}})
	if rec := send(secured, http.MethodGet, "/v1/compare?probes="+done, nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("without the token: %d", rec.Code)
	}
	if rec := send(secured, http.MethodGet, "/v1/compare?probes="+done, nil, "Authorization", "Bearer compare-test-token-0123456789"); rec.Code != http.StatusOK {
		t.Errorf("with the token: %d %s", rec.Code, rec.Body)
	}
}
