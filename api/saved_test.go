package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/app"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/report"
	"github.com/plannerdev/planner/internal/report/reportcheck"
)

// TestSavedPlans stores plans and reads them back: the answer carries the
// id and a Location; the list pages newest first; a stored plan has its
// scenario, name, labels (as written: keys in two cases are two labels)
// and probe; unknown ids are 404 problems.
func TestSavedPlans(t *testing.T) {
	env := newProbeEnv(t, Options{})
	var ids []string
	for i, name := range []string{"chat", "chat-and-batch", "three-classes"} {
		status, h, b := call(t, http.MethodPost, env.url+"/v1/plans", map[string]any{
			"scenario": exampleDoc(t, name), "save": true, "name": name, "labels": map[string]string{"team": "search", "Team": "ads", "n": string(rune('0' + i))},
		})
		resp := decode[PlanResponse](t, b)
		if status != http.StatusOK || resp.ID == "" || h.Get("Location") != "/v1/plans/"+resp.ID || len(resp.Classes) == 0 {
			t.Fatalf("save %s: %d Location %q %.300s", name, status, h.Get("Location"), b)
		}
		ids = append(ids, resp.ID)
	}
	status, h, b := call(t, http.MethodPost, env.url+"/v1/plans", map[string]any{"scenario": exampleDoc(t, "chat")})
	if status != http.StatusOK || h.Get("Location") != "" || strings.Contains(string(b), `"id"`) {
		t.Fatalf("unsaved plan: %d Location %q", status, h.Get("Location"))
	}

	status, _, b = call(t, http.MethodGet, env.url+"/v1/plans?limit=2", nil)
	page := decode[PlanList](t, b)
	if status != http.StatusOK || len(page.Items) != 2 || page.Items[0].ID != ids[2] || page.Items[1].ID != ids[1] || page.NextCursor == "" {
		t.Fatalf("first page: %d %s", status, b)
	}
	if c := page.Items[0]; c.Name != "three-classes" || len(c.Classes) != 3 || c.Classes[0].BindingConstraint == "" || c.Labels["team"] != "search" {
		t.Errorf("summary %+v", c)
	}
	_, _, b = call(t, http.MethodGet, env.url+"/v1/plans?limit=2&cursor="+page.NextCursor, nil)
	if page = decode[PlanList](t, b); len(page.Items) != 1 || page.Items[0].ID != ids[0] || page.NextCursor != "" {
		t.Fatalf("second page: %s", b)
	}

	status, _, b = call(t, http.MethodGet, env.url+"/v1/plans/"+ids[0], nil)
	sp := decode[StoredPlan](t, b)
	if status != http.StatusOK || sp.ID != ids[0] || sp.Name != "chat" || sp.Labels["n"] != "0" || sp.Labels["Team"] != "ads" || sp.Labels["team"] != "search" || sp.CreatedAt.IsZero() ||
		len(sp.Scenario.Classes) != 1 || len(sp.Plan.Classes) != 1 || sp.ProbeID != "" {
		t.Fatalf("stored plan: %d %.400s", status, b)
	}
	if again, err := app.New(plan.New(plan.Options{})).Plan(context.Background(), sp.Scenario); err != nil || !sameJSON(t, again, sp.Plan) {
		t.Errorf("the stored scenario does not plan to the stored plan: %v", err)
	}
	if sp.Scenario.Quotas[0].TPM != exampleScenario(t, "chat").Quotas[0].TPM {
		t.Error("the stored scenario is not the one sent")
	}
	for _, path := range []string{"/v1/plans/nope", "/v1/plans/nope/report"} {
		if status, _, b := call(t, http.MethodGet, env.url+path, nil); status != http.StatusNotFound || !strings.Contains(string(b), `"location":"path.id"`) {
			t.Errorf("%s: %d %s", path, status, b)
		}
	}
}

func TestSavePlanProblems(t *testing.T) {
	env := newProbeEnv(t, Options{})
	for _, tc := range []struct {
		name     string
		body     map[string]any
		location string
		message  string
	}{
		{"name without save", map[string]any{"name": "x"}, "body.name", "set save to true"},
		{"unknown probe", map[string]any{"save": true, "probe_id": "nope"}, "body.probe_id", "no probe has this id"},
		{"bad label key", map[string]any{"save": true, "labels": map[string]string{"-x": "y"}}, "body.labels.-x", "a label key"},
		{"long label", map[string]any{"save": true, "labels": map[string]string{"x": strings.Repeat("y", 257)}}, "body.labels.x", "at most 256"},
		{"secret label", map[string]any{"save": true, "labels": map[string]string{"key": "Bearer sk-abcdefghijklmnopqrstuv"}}, "body.labels.key", "looks like a credential"},
		{"secret name", map[string]any{"save": true, "name": "sk-abcdefghijklmnopqrstuvwxyz"}, "body.name", "looks like a credential"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{"scenario": exampleDoc(t, "chat")}
			for k, v := range tc.body {
				body[k] = v
			}
			status, _, b := call(t, http.MethodPost, env.url+"/v1/plans", body)
			p := decode[problem](t, b)
			if status != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Location != tc.location || !strings.Contains(p.Errors[0].Message, tc.message) {
				t.Fatalf("%d %s; want %q at %s", status, b, tc.message, tc.location)
			}
			if strings.Contains(string(b), "sk-abc") {
				t.Errorf("the problem echoes a credential: %s", b)
			}
		})
	}
	_, _, b := call(t, http.MethodGet, env.url+"/v1/plans", nil)
	if n := len(decode[PlanList](t, b).Items); n != 0 {
		t.Fatalf("%d plans stored by refused requests", n)
	}
}

// TestPlanReport renders the report of a plan backed by a probe: the HTML
// passes the check that every chart is an inline SVG with labelled axes,
// and holds the ceilings of each class and the probe's curves.
func TestPlanReport(t *testing.T) {
	env := newProbeEnv(t, Options{})
	s := newSim(t, fastSim)
	probeID := startProbe(t, env, probeBody(s.url, []int{1, 2, 4}, 44))
	waitProbe(t, env, probeID, ended)
	_, _, b := call(t, http.MethodPost, env.url+"/v1/plans", map[string]any{
		"scenario": exampleDoc(t, "three-classes"), "save": true, "name": "Search team capacity", "probe_id": probeID,
	})
	planID := decode[PlanResponse](t, b).ID

	status, h, page := call(t, http.MethodGet, env.url+"/v1/plans/"+planID+"/report", nil)
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		t.Fatalf("HTML report: %d %s", status, h.Get("Content-Type"))
	}
	charts, err := reportcheck.CheckHTML(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("the report fails the check: %v", err)
	}
	kinds := map[string]int{}
	for _, c := range charts {
		kinds[c.Kind]++
	}
	if kinds["ceilings"] != 3 || kinds["throughput"] != 1 || kinds["latency"] < 1 {
		t.Fatalf("charts by kind %v", kinds)
	}
	if !strings.Contains(string(page), "Search team capacity") || !strings.Contains(string(page), probeID) {
		t.Error("the report lacks its title or the probe")
	}
	status, h, md := call(t, http.MethodGet, env.url+"/v1/plans/"+planID+"/report?format=md", nil)
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/markdown") || !strings.Contains(string(md), "Knee") || !strings.Contains(string(md), "| 4 ") {
		t.Fatalf("Markdown report: %d %s\n%s", status, h.Get("Content-Type"), md)
	}
	// markdown is md's other name, as for the command line's -o.
	status, h, long := call(t, http.MethodGet, env.url+"/v1/plans/"+planID+"/report?format=markdown", nil)
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/markdown") || !strings.Contains(string(long), "Knee") || !strings.Contains(string(long), "| 4 ") {
		t.Fatalf("Markdown report by its long name: %d %s\n%s", status, h.Get("Content-Type"), long)
	}
	if status, _, _ := call(t, http.MethodGet, env.url+"/v1/plans/"+planID+"/report?format=pdf", nil); status != http.StatusUnprocessableEntity {
		t.Errorf("unknown format: %d", status)
	}
	status, _, b = call(t, http.MethodGet, env.url+"/v1/records/"+probeID, nil)
	if card := decode[report.RecordCard](t, b); status != http.StatusOK || card.PlanID != planID || len(card.Pools) != 3 {
		t.Fatalf("record card with the plan: %d %s", status, b)
	}
}

// TestPlanReportWithSimulation adds a simulated run to a stored plan's
// report: a time-series chart per class in HTML, the section in Markdown,
// and the server's cap on simulated time at query.simulate_s.
func TestPlanReportWithSimulation(t *testing.T) {
	env := newProbeEnv(t, Options{SimulationMaxDuration: 2 * time.Hour})
	_, _, b := call(t, http.MethodPost, env.url+"/v1/plans", map[string]any{
		"scenario": exampleDoc(t, "three-classes"), "save": true, "name": "Peak hour",
	})
	planID := decode[PlanResponse](t, b).ID
	url := env.url + "/v1/plans/" + planID + "/report"

	status, _, page := call(t, http.MethodGet, url+"?simulate_s=3600", nil)
	if status != http.StatusOK {
		t.Fatalf("HTML report with a simulation: %d %s", status, page)
	}
	simulated := 0
	for _, c := range mustCheck(t, page) {
		if c.Kind == report.ChartSimulation {
			simulated++
		}
	}
	if simulated != 3 {
		t.Fatalf("%d simulation charts, want one per class", simulated)
	}
	_, _, plain := call(t, http.MethodGet, url, nil)
	for _, c := range mustCheck(t, plain) {
		if c.Kind == report.ChartSimulation {
			t.Fatal("a report without simulate_s has a simulation chart")
		}
	}
	status, _, md := call(t, http.MethodGet, url+"?format=md&simulate_s=600", nil)
	if status != http.StatusOK || !strings.Contains(string(md), "\n## Simulation\n") || !strings.Contains(string(md), "600 s") {
		t.Fatalf("Markdown report with a simulation: %d\n%s", status, md)
	}
	for _, q := range []string{"simulate_s=7201", "simulate_s=-1", "simulate_s=many", "simulate_s=NaN", "simulate_s=Inf", "simulate_s=-Inf", "simulate_s=0.5"} {
		status, _, b := call(t, http.MethodGet, url+"?"+q, nil)
		if p := decode[problem](t, b); status != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Location != "query.simulate_s" {
			t.Errorf("%s: %d %s", q, status, b)
		}
	}
}

func mustCheck(t *testing.T, page []byte) []reportcheck.ChartInfo {
	t.Helper()
	charts, err := reportcheck.CheckHTML(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("the report fails the check: %v", err)
	}
	return charts
}

// TestAnalyses analyses rows, a step table, a benchmark tool's real
// result file (as text and as base64) and a ramp CSV; a broken file is a
// 422 at body.file with the importer's message.
func TestAnalyses(t *testing.T) {
	env := newProbeEnv(t, Options{})
	aiperf, err := os.ReadFile("../internal/importer/testdata/aiperf/examples-run1/profile_export_aiperf.json")
	if err != nil {
		t.Fatal(err)
	}
	workshop, err := os.ReadFile("../internal/importer/testdata/handmade/workshop_ramp.csv")
	if err != nil {
		t.Fatal(err)
	}
	// A closed loop of c workers, 30 requests per step, the first round
	// warm-up: enough for a steady state (2c + 10 measured) at 1, 2 and 4.
	var rows []map[string]any
	for c := 1; c <= 4; c *= 2 {
		e2e := 500 + 50*float64(c)
		for i := range 30 {
			rows = append(rows, map[string]any{"step": c, "idx": i, "ok": true, "status": 200, "start_s": float64(i/c) * e2e / 1000,
				"ttft_ms": 100 * float64(c), "e2e_ms": e2e, "output_tokens": 20, "warmup": i < c})
		}
	}
	for _, tc := range []struct {
		name   string
		body   map[string]any
		format string
		knee   bool
	}{
		{"rows", map[string]any{"rows": rows, "deadline_ms": 10000}, "rows", true},
		{"steps", map[string]any{"steps": analysisExampleSteps, "deadline_ms": 12000}, "steps", true},
		{"AIPerf file", map[string]any{"file": map[string]any{"name": "profile_export_aiperf.json", "content": string(aiperf)}}, "aiperf-json", false},
		{"base64 file", map[string]any{"file": map[string]any{"name": "profile_export_aiperf.json", "content": base64.StdEncoding.EncodeToString(aiperf), "encoding": "base64"}}, "aiperf-json", false},
		{"ramp CSV", map[string]any{"file": map[string]any{"name": "workshop_ramp.csv", "content": string(workshop)}, "deadline_ms": 30000, "min_gain_pct": 10}, "workshop-ramp-csv", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, b := call(t, http.MethodPost, env.url+"/v1/analyses", tc.body)
			if status != http.StatusOK {
				t.Fatalf("%d %s", status, b)
			}
			a := decode[AnalysisResponse](t, b)
			if a.Format != tc.format || len(a.Steps) == 0 || (tc.knee && a.Knee == nil) || a.Latency == nil {
				t.Fatalf("analysis %.600s", b)
			}
		})
	}
	status, _, b := call(t, http.MethodPost, env.url+"/v1/analyses", map[string]any{"steps": analysisExampleSteps, "deadline_ms": 12000})
	if a := decode[AnalysisResponse](t, b); status != http.StatusOK || *a.Knee != 8 || a.Collapse != nil || a.USL == nil {
		t.Errorf("the example's knee: %s", b)
	}
	for _, tc := range []struct {
		name     string
		body     map[string]any
		location string
		message  string
	}{
		{"truncated file", map[string]any{"file": map[string]any{"name": "profile_export_aiperf.json", "content": string(aiperf[:len(aiperf)/2])}}, "body.file", "AIPerf"},
		{"unknown file", map[string]any{"file": map[string]any{"name": "notes.txt", "content": "hello"}}, "body.file", "not a result file"},
		{"bad base64", map[string]any{"file": map[string]any{"name": "x.json", "content": "@@@", "encoding": "base64"}}, "body.file.content", "base64"},
		{"nothing", map[string]any{"deadline_ms": 1000}, "body", "exactly one of rows, steps or file"},
		{"no steps", map[string]any{"steps": []any{}}, "body.steps", "is empty: give at least one step"},
		{"no rows", map[string]any{"rows": []any{}}, "body.rows", "is empty: give at least one row"},
		{"two inputs", map[string]any{"rows": rows, "steps": analysisExampleSteps}, "body", "exactly one"},
		{"bad error class", map[string]any{"rows": []map[string]any{{"step": 1, "ok": false, "error": "oops"}}}, "body.rows[0].error", "expected value to be one of"},
		{"p95 below p50", map[string]any{"steps": []map[string]any{{"concurrency": 1, "goodput_rps": 1, "ttft_p50_ms": 300, "ttft_p95_ms": 200}}}, "body.steps[0].ttft_p95_ms", "must be >= ttft_p50_ms"},
		{"more ok than requests", map[string]any{"steps": []map[string]any{{"concurrency": 1, "goodput_rps": 1, "requests": 1, "ok": 1000}}}, "body.steps[0].ok", "at most requests"},
		{"more 429s than answers", map[string]any{"steps": []map[string]any{{"concurrency": 1, "goodput_rps": 1, "requests": 5, "ok": 5, "answers": 5, "rate_limited": 9}}}, "body.steps[0].rate_limited", "at most answers"},
		{"E2E below TTFT", map[string]any{"steps": []map[string]any{{"concurrency": 1, "goodput_rps": 1, "ttft_p50_ms": 5000, "e2e_p50_ms": 1000}}}, "body.steps[0].e2e_p50_ms", "must be >= ttft_p50_ms"},
		{"goodput above throughput", map[string]any{"steps": []map[string]any{{"concurrency": 1, "goodput_rps": 100, "throughput_rps": 1}}}, "body.steps[0].goodput_rps", "at most throughput_rps"},
		{"goodput without an ok", map[string]any{"steps": []map[string]any{{"concurrency": 1, "goodput_rps": 100, "requests": 10, "errors": 10}}}, "body.steps[0].goodput_rps", "no request was ok"},
		{"interval upside down", map[string]any{"steps": []map[string]any{{"concurrency": 1, "goodput_rps": 1, "goodput_ci": map[string]any{"lo": 2, "hi": 0.5}}}}, "body.steps[0].goodput_ci", "lo must be at most hi"},
		{"row E2E below TTFT", map[string]any{"rows": []map[string]any{{"step": 1, "ok": true, "ttft_ms": 10, "e2e_ms": 20}, {"step": 1, "ok": true, "ttft_ms": 1000, "e2e_ms": 10}}}, "body.rows[1].e2e_ms", "must be >= ttft_ms: a request ends after its first token"},
		{"row ok with an error", map[string]any{"rows": []map[string]any{{"step": 1, "ok": true, "e2e_ms": 20}, {"step": 1, "ok": true, "status": 429, "error": "429", "e2e_ms": 20}}}, "body.rows[1].error", "a row that is ok has no error class"},
		{"row ok with a 500", map[string]any{"rows": []map[string]any{{"step": 1, "ok": true, "status": 500, "e2e_ms": 20}}}, "body.rows[0].status", "a row that is ok was answered 2xx"},
		{"row of status 999", map[string]any{"rows": []map[string]any{{"step": 1, "ok": false, "status": 999, "error": "5xx", "e2e_ms": 20}}}, "body.rows[0].status", "expected number <= 599"},
		{"row of status 42", map[string]any{"rows": []map[string]any{{"step": 1, "ok": true, "e2e_ms": 20}, {"step": 1, "ok": false, "status": 42, "error": "transport", "e2e_ms": 20}}}, "body.rows[1].status", "42 is not an HTTP status"},
		{"workshop code 999", map[string]any{"file": map[string]any{"name": "ramp.csv", "content": "step,idx,ok,code,ms,wall_s\n1,0,1,200,1000,1\n1,1,0,999,1000,1\n"}}, "body.file", `line 3: code "999" is not an HTTP status`},
		{"row at step 0", map[string]any{"rows": []map[string]any{{"step": 0, "ok": true, "e2e_ms": 20}}}, "body.rows[0].step", "expected number >= 1"},
		{"one concurrency twice", map[string]any{"steps": []map[string]any{{"concurrency": 1, "goodput_rps": 1}, {"concurrency": 2, "goodput_rps": 2}, {"concurrency": 1, "goodput_rps": 1}}}, "body.steps[2].concurrency", "steps[0] has the same concurrency"},
		// Rows without a TTFT cannot judge a TTFT target, nor rows without
		// output tokens a TPOT one: every request would count as meeting it.
		{"TTFT target of rows without a TTFT", map[string]any{"rows": []map[string]any{{"step": 1, "ok": true, "e2e_ms": 1000}}, "slo": map[string]any{"ttft_ms": 100}}, "body.slo.ttft_ms", "cannot be judged: no row that is ok has a ttft_ms"},
		{"TPOT target of rows without tokens", map[string]any{"rows": []map[string]any{{"step": 1, "ok": true, "ttft_ms": 50, "e2e_ms": 1000}}, "slo": map[string]any{"tpot_ms": 10}}, "body.slo.tpot_ms", "cannot be judged: no row that is ok has a ttft_ms and output_tokens"},
		{"TTFT target of a workshop CSV", map[string]any{"file": map[string]any{"name": "ramp.csv", "content": "step,idx,ok,code,ms,wall_s\n1,0,1,200,1000,1\n2,0,1,200,1000,1\n"}, "slo": map[string]any{"ttft_ms": 100}}, "body.file", "the SLO's TTFT target (100 ms) cannot be judged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, b := call(t, http.MethodPost, env.url+"/v1/analyses", tc.body)
			p := decode[problem](t, b)
			if status != http.StatusUnprocessableEntity || len(p.Errors) == 0 || p.Errors[0].Location != tc.location || !strings.Contains(p.Errors[0].Message, tc.message) {
				t.Fatalf("%d %s; want %q at %s", status, b, tc.message, tc.location)
			}
		})
	}
}

// TestSavedPlanListSaysWhetherEachClassFits: the list of stored plans
// says of each class whether it fits (its plan's fits: feasible and its
// check holds), as the stored plan does, beside its feasibility.
func TestSavedPlanListSaysWhetherEachClassFits(t *testing.T) {
	env := newProbeEnv(t, Options{})
	tight := exampleDoc(t, "chat")
	tight["quotas"].([]any)[0].(map[string]any)["tpm"] = 300000 // a pool of 11 where 12 are needed
	want := map[string]bool{}
	for name, doc := range map[string]map[string]any{"roomy": exampleDoc(t, "chat"), "tight": tight} {
		status, _, b := call(t, http.MethodPost, env.url+"/v1/plans", map[string]any{"scenario": doc, "save": true, "name": name})
		resp := decode[PlanResponse](t, b)
		if status != http.StatusOK || resp.Classes[0].Fits == nil {
			t.Fatalf("save %s: %d %.300s", name, status, b)
		}
		want[name] = *resp.Classes[0].Fits
	}
	if want["roomy"] == want["tight"] {
		t.Fatalf("both plans fit alike (%v); the test wants one that does not", want)
	}
	_, _, b := call(t, http.MethodGet, env.url+"/v1/plans", nil)
	page := decode[PlanList](t, b)
	for _, p := range page.Items {
		c := p.Classes[0]
		if c.Fits == nil || *c.Fits != want[p.Name] {
			t.Errorf("%s: the list's class %+v, want fits %v", p.Name, c, want[p.Name])
		}
	}
}
