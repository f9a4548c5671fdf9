package report

import (
	"github.com/plannerdev/planner/internal/report/reportcheck"

	"bufio"
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files (docs/report-example.*, testdata/*)")

// exampleSource is printed with the synthetic measurements of the docs
// example, so that no reader takes them for a real probe.
const exampleSource = "The probe data in this example are synthetic: a ramp made up to match the latency curve of " +
	"docs/examples/measured-curve.yaml, not a measurement of a real endpoint."

// exampleInput is the report of docs/report-example.*: the measured-curve
// example with a synthetic probe behind it.
func exampleInput(t *testing.T) ReportInput {
	sc, p := examplePlan(t, "measured-curve")
	return ReportInput{
		Title:     "Example capacity report: a self-hosted model server",
		Generated: exampleDate,
		Scenario:  sc,
		Plan:      p,
		Probe: &ProbeData{
			Result: syntheticResult(), Endpoint: "http://127.0.0.1:8000/v1", Model: "example-model",
			Date: exampleDate, DeadlineMs: exampleDeadlineMs, Source: exampleSource,
		},
	}
}

// golden compares got with a golden file, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/report -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the rendering (run go test ./internal/report -update and review the diff)", path)
	}
}

func renderBoth(t *testing.T, in ReportInput) (md, page []byte) {
	t.Helper()
	var m, h bytes.Buffer
	if err := WriteReportMarkdown(&m, in); err != nil {
		t.Fatal(err)
	}
	if err := WriteReportHTML(&h, in); err != nil {
		t.Fatal(err)
	}
	return m.Bytes(), h.Bytes()
}

// TestReportGolden renders the shipped example (docs/report-example.md and
// .html) and a plan without a probe (testdata), and checks the HTML.
func TestReportGolden(t *testing.T) {
	noProbe := func() ReportInput {
		sc, p := examplePlan(t, "three-classes")
		return ReportInput{Title: "Three classes on one key", Generated: exampleDate, Scenario: sc, Plan: p}
	}
	tests := []struct {
		name   string
		in     ReportInput
		md     string
		html   string
		charts []string
	}{
		{
			name: "docs example", in: exampleInput(t),
			md: "../../docs/report-example.md", html: "../../docs/report-example.html",
			// Two classes, the throughput chart, one latency chart per SLO.
			charts: []string{ChartCeilings, ChartCeilings, ChartThroughput, ChartLatency, ChartLatency},
		},
		{
			name: "no probe", in: noProbe(),
			md: "testdata/three-classes.md", html: "testdata/three-classes.html",
			charts: []string{ChartCeilings, ChartCeilings, ChartCeilings},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			md, page := renderBoth(t, tc.in)
			charts, err := reportcheck.CheckHTML(bytes.NewReader(page))
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, c := range charts {
				kinds = append(kinds, c.Kind)
			}
			if strings.Join(kinds, ",") != strings.Join(tc.charts, ",") {
				t.Errorf("charts %v, want %v", kinds, tc.charts)
			}
			md2, page2 := renderBoth(t, tc.in)
			if !bytes.Equal(md, md2) || !bytes.Equal(page, page2) {
				t.Error("two renderings of the same input differ")
			}
			golden(t, tc.md, md)
			golden(t, tc.html, page)
		})
	}
}

func TestReportContent(t *testing.T) {
	in := exampleInput(t)
	md, page := renderBoth(t, in)
	for _, want := range []string{
		"Key gpu-pool: 100,000 requests/min; the plan uses 90 % of each limit",
		"assistant (interactive, key gpu-pool): demand 2 req/s; input p50 500, p95 1,500 tokens; output p50 180, p95 400 tokens, capped by max_tokens 600; SLO TTFT p95 1,000 ms, E2E p95 10,000 ms",
		"a measured curve of 7 points from 1 to 48 in flight",
		"Knee: 24 requests in flight, where E2E p95 was 5,800 ms, TTFT p95 450 ms and goodput 4.95 req/s.",
		"The probe data in this example are synthetic",
		"Goodput fell first at 48 in flight",
	} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("the Markdown lacks %q", want)
		}
		if !bytes.Contains(page, []byte(strings.ReplaceAll(want, "'", "&#39;"))) {
			t.Errorf("the HTML lacks %q", want)
		}
	}
	if !bytes.Contains(md, []byte("| 24 (knee) | 96 |")) || !bytes.Contains(md, []byte("## Charts")) {
		t.Error("the Markdown lacks the steps table or the charts note")
	}
}

// TestReportMarkdownReusesPlanMarkdown checks that the plan part of the
// report is WriteMarkdown's, headings one level down.
func TestReportMarkdownReusesPlanMarkdown(t *testing.T) {
	in := exampleInput(t)
	md, _ := renderBoth(t, in)
	var plan bytes.Buffer
	if err := WriteMarkdown(&plan, in.Plan); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	sc := bufio.NewScanner(&plan)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			line = "#" + line
		}
		want.WriteString(line + "\n")
	}
	if !strings.Contains(string(md), want.String()) {
		t.Error("the report does not contain the plan's Markdown")
	}
}

func TestReportEscapesUserText(t *testing.T) {
	in := exampleInput(t)
	in.Title = `<script>alert("t")</script>`
	in.Probe.Endpoint = `http://127.0.0.1/v1"><img src=x onerror=alert(1)>`
	in.Probe.Model = "<b>m</b>"
	in.Probe.Source = "<iframe src=//evil></iframe>"
	in.Probe.Result.Notes = []string{"<style>@import 'x'</style> | pipe"}
	md, page := renderBoth(t, in)
	if _, err := reportcheck.CheckHTML(bytes.NewReader(page)); err != nil {
		t.Fatalf("user text made the page unsafe: %v", err)
	}
	for _, raw := range []string{"<script", "<img", "<iframe", "<b>", "<style>@"} {
		if bytes.Contains(page, []byte(raw)) {
			t.Errorf("the HTML contains %q", raw)
		}
		if bytes.Contains(md, []byte(raw)) {
			t.Errorf("the Markdown contains %q", raw)
		}
	}
	if !bytes.Contains(page, []byte("&lt;script&gt;alert(&#34;t&#34;)&lt;/script&gt;")) {
		t.Error("the title is not shown escaped")
	}
	if !bytes.Contains(md, []byte(`&lt;style&gt;@import 'x'&lt;/style&gt; \| pipe`)) {
		t.Error("the note is not escaped for Markdown")
	}
}

func TestReportNeedsAPlan(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteReportMarkdown(&buf, ReportInput{}); err == nil {
		t.Error("Markdown report without a plan")
	}
	if err := WriteReportHTML(&buf, ReportInput{}); err == nil {
		t.Error("HTML report without a plan")
	}
	if buf.Len() != 0 {
		t.Error("a failed report wrote output")
	}
}

func TestReportProbeWithoutSteps(t *testing.T) {
	in := exampleInput(t)
	in.Probe.Result = syntheticResult()
	in.Probe.Result.Steps = nil
	in.Probe.Result.Knee, in.Probe.Result.Collapse, in.Probe.Result.USL = nil, nil, nil
	md, page := renderBoth(t, in)
	charts, err := reportcheck.CheckHTML(bytes.NewReader(page))
	if err != nil || len(charts) != len(in.Plan.Classes) {
		t.Fatalf("%d charts (%v); want only the ceilings", len(charts), err)
	}
	if !bytes.Contains(md, []byte("No knee")) {
		t.Error("the report does not say that there is no knee")
	}
}

func TestSLOGroups(t *testing.T) {
	slo := func(e2e, ttft float64) *scenario.SLO { return &scenario.SLO{E2EP95Ms: e2e, TTFTP95Ms: ttft} }
	tests := []struct {
		name    string
		classes []scenario.Class
		want    []string
	}{
		{"no SLO anywhere", []scenario.Class{{Name: "a"}, {Name: "b", SLO: &scenario.SLO{}}}, []string{"Latency by concurrency; no class states an SLO."}},
		{"shared and distinct", []scenario.Class{{Name: "a", SLO: slo(1000, 0)}, {Name: "b", SLO: slo(2000, 300)}, {Name: "c", SLO: slo(1000, 0)}, {Name: "d"}},
			[]string{"Latency by concurrency against the SLO of a, c: E2E p95 1,000 ms.", "Latency by concurrency against the SLO of b: TTFT p95 300 ms, E2E p95 2,000 ms."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, g := range sloGroups(scenario.Scenario{Classes: tc.classes}) {
				got = append(got, g.caption())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		got, want string
	}{
		{describeDist(scenario.Dist{Fixed: f(200)}, "tokens"), "fixed at 200 tokens"},
		{describeDist(scenario.Dist{P50: f(800), P95: f(2400), Max: f(4000)}, "tokens"), "p50 800, p95 2,400 tokens, clipped at 4,000"},
		{describeDist(scenario.Dist{Mean: f(500), Stddev: f(120.5)}, "ms"), "mean 500, sd 120.5 ms"},
		{describeDist(scenario.Dist{Samples: []float64{9, 1, 5, 3}}, "tokens"), "4 samples with median 4 tokens"},
		{describeDemand(nil, false), "no stated demand (runs as fast as its share allows)"},
		{describeDemand(&scenario.Demand{RPS: 3}, false), "demand 3 req/s"},
		{describeDemand(&scenario.Demand{RPM: 180}, false), "demand 180 req/min (3 req/s)"},
		{describeDemand(&scenario.Demand{Requests: 36000, WithinHours: 2}, false), "a batch of 36,000 requests within 2 h (5 req/s)"},
		{describeQuota(scenario.Quota{Name: "k", RPM: 60, TPD: 1e6, Headroom: 0.8, TokenAccounting: "max_tokens", BurstWindowS: 10, ActiveHours: 8, CachedInputFree: true}),
			"Key k: 60 requests/min, 1,000,000 tokens/day; the plan uses 80 % of each limit; output counts as max_tokens at admission; " +
				"per-minute limits are enforced over 10 s; daily limits are spread over 8 active hours; cached input tokens do not count against itpm."},
		{describeLatency(scenario.Latency{}), "none given"},
		{describeLatency(scenario.Latency{Curve: []scenario.CurvePoint{{Concurrency: 16, TTFTP95Ms: 1396.6, TPOTP95Ms: 20.2}}}),
			"a measured curve of one point, at 16 in flight (TTFT p95 1,396.6 ms, TPOT p95 20.2 ms per token)"},
		// A probe's curve keeps two decimals; the words give 0.1 ms, as the
		// plan's figures are.
		{describeLatency(scenario.Latency{Curve: []scenario.CurvePoint{{Concurrency: 1, TTFTP95Ms: 57.98, TPOTP95Ms: 2.004}, {Concurrency: 8, TTFTP95Ms: 196.36, TPOTP95Ms: 2.126}}}),
			"a measured curve of 2 points from 1 to 8 in flight (TTFT p95 58 to 196.4 ms, TPOT p95 2 to 2.1 ms per token)"},
		{describeLatency(scenario.Latency{TTFTMs: &scenario.Dist{P50: f(400), P95: f(900)}, TPOTMs: &scenario.Dist{Fixed: f(20)}, PrefillMsPer1K: 30}),
			"TTFT p50 400, p95 900 ms; TPOT fixed at 20 ms per token; prefill adds 30 ms per 1,000 input tokens"},
		{describeLatency(scenario.Latency{TTFTMs: &scenario.Dist{Fixed: f(500)}, Cache: &scenario.CacheProfile{MinPrefixTokens: 1024}}),
			"TTFT fixed at 500 ms; a prompt cache that serves 100 % of a repeated prefix (no hit_rate given) of at least 1,024 tokens"},
		{describeLatency(scenario.Latency{Cache: &scenario.CacheProfile{HitRate: f(0.8), TTFTSavingMsPer1K: 95}}),
			"a prompt cache that serves 80 % of a repeated prefix, saving 95 ms of TTFT per 1,000 cached tokens"},
		{describeDemand(&scenario.Demand{RPS: 0.5}, true), "demand 0.5 tasks/s"},
		{describeDemand(&scenario.Demand{RPM: 30}, true), "demand 30 tasks/min (0.5 tasks/s)"},
		{describeDemand(&scenario.Demand{Requests: 3600, WithinHours: 2}, true), "a batch of 3,600 tasks within 2 h (0.5 tasks/s)"},
		{describeSLO(nil), "none"},
		{describeSLO(&scenario.SLO{}), "none"},
		{describeSLO(&scenario.SLO{TTFTP95Ms: 1500, E2EP95Ms: 9000}), "TTFT p95 1,500 ms, E2E p95 9,000 ms"},
		{describeSLO(&scenario.SLO{Percentile: 99, TPOTMs: 15}), "TPOT p99 15 ms"},
		{describeSLO(&scenario.SLO{TaskE2EMs: 30000}), "task E2E p95 30,000 ms"},
		{describeSLO(&scenario.SLO{Percentile: 99.9, TTFTMs: 800, E2EMs: 5000, TPOTMs: 40, TaskE2EMs: 60000}),
			"TTFT p99.9 800 ms, E2E p99.9 5,000 ms, TPOT p99.9 40 ms, task E2E p99.9 60,000 ms"},
		{describeTask(scenario.Task{Calls: scenario.Dist{Fixed: f(4)}, ToolMs: &scenario.Dist{Fixed: f(1000)}, ToolResultTokens: &scenario.Dist{Fixed: f(399)}}),
			"each task makes fixed at 4 calls, a tool run after each call fixed at 1,000 ms, tool results fixed at 399 tokens, " +
				"each call's input carries the task's earlier outputs and tool results (context accumulate)"},
		{describeTask(scenario.Task{Calls: scenario.Dist{P50: f(3), P95: f(8)}, Context: scenario.ContextFresh}),
			"each task makes p50 3, p95 8 calls, each call's input is drawn afresh (context fresh)"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got  %q\nwant %q", tc.got, tc.want)
		}
	}
}

// TestClassShedRuleTellsTheShareShed: the admission rule says what share
// of its requests the plan predicts the class sheds, and nothing of it
// when none is shed or there is no rule.
func TestClassShedRuleTellsTheShareShed(t *testing.T) {
	tau := 828.2
	c := plan.ClassPlan{Pool: 12, Admission: plan.Admission{MaxQueueWaitMs: &tau, Status: 429, RetryAfterS: 3}}
	c.Predicted.ShedShare = 0.0482
	want := "Shed a request that waits more than 828.2 ms for a slot, with 429 and Retry-After: 3. Predicted to shed 4.82 % of its requests (its percentiles are over those served)."
	if got := classShedRule(c); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	c.Predicted.ShedShare = 0
	if got := classShedRule(c); strings.Contains(got, "Predicted") {
		t.Errorf("nothing shed: %q", got)
	}
	c.Admission.MaxQueueWaitMs = nil
	c.Predicted.ShedShare = 0.0482
	if got := classShedRule(c); got != "" {
		t.Errorf("no rule: %q", got)
	}
}

// TestReportTellsEachClassItsEndpoint: a scenario's endpoints are told
// with their latency, and a class that sends to one of them is said to,
// not to take the default profile's latency.
func TestReportTellsEachClassItsEndpoint(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	sc := testutil.Example(t, "chat")
	sc.Endpoints = []scenario.Endpoint{{Name: "big-gpu", Latency: scenario.Latency{
		TTFTMs: &scenario.Dist{Fixed: f(300)}, TPOTMs: &scenario.Dist{Fixed: f(20)}}}}
	other := sc.Classes[0]
	other.Name, other.Endpoint = "offload", "big-gpu"
	sc.Classes = append(sc.Classes, other)
	p, err := newApp().Plan(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	md, page := renderBoth(t, ReportInput{Scenario: sc, Plan: p})
	for _, want := range []string{
		"Endpoint big-gpu: TTFT fixed at 300 ms; TPOT fixed at 20 ms per token.",
		"chat (interactive, key prod): demand 2 req/s; input p50 600, p95 2,000 tokens; output p50 150, p95 450 tokens, capped by max_tokens 700; SLO TTFT p95 1,500 ms, E2E p95 12,000 ms; latency from the default profile.",
		"offload (interactive, key prod): demand 2 req/s; input p50 600, p95 2,000 tokens; output p50 150, p95 450 tokens, capped by max_tokens 700; SLO TTFT p95 1,500 ms, E2E p95 12,000 ms; latency of endpoint big-gpu.",
	} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md)
		}
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the HTML lacks %q", want)
		}
	}
}

// TestReportStatesWhatThePlanUsed: the scenario in words states each
// key's price and which limits its cached input is free of, and each
// class's hours of the day and the share of its input written into the
// prompt cache, all of which change the plan or its cost.
func TestReportStatesWhatThePlanUsed(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	sc := testutil.Example(t, "chat")
	sc.Quotas[0].Price = &scenario.Price{Currency: "EUR", InputPerMtok: f(2.5), OutputPerMtok: f(10)}
	sc.Quotas[0].CachedInputTPMFree = true
	sc.Classes[0].Schedule = &scenario.Schedule{StartHour: 22.5, Hours: 6}
	sc.Classes[0].CachedInputFraction, sc.Classes[0].CacheWriteFraction = 0.5, 0.1
	p, err := newApp().Plan(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	md, page := renderBoth(t, ReportInput{Scenario: sc, Plan: p})
	for _, want := range []string{
		"cached input tokens do not count against tpm and tpd; price EUR 2.50 in, 10.00 out /Mtok.",
		"runs 22:30–04:30 UTC each day (6 h); 50 % of input served from the prompt cache; 10 % of input written into the prompt cache.",
	} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md)
		}
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the HTML lacks %q", want)
		}
	}
}

// TestReportClassWithoutAPool: a class that gets no pool sends nothing,
// and the report says so rather than giving it client settings of 0
// req/s, a backoff capped below its base and a rule to shed what waits
// more than 0 ms.
func TestReportClassWithoutAPool(t *testing.T) {
	sc := testutil.Example(t, "chat")
	sc.Quotas[0].TPM = 100000 // one window allows less than a request's charge
	p, err := newApp().Plan(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	if p.Classes[0].Pool != 0 {
		t.Fatalf("pool %d, want 0", p.Classes[0].Pool)
	}
	md, page := renderBoth(t, ReportInput{Scenario: sc, Plan: p})
	want := "Client settings: none, as it gets no pool: it sends nothing (max_in_flight 0)."
	for name, out := range map[string][]byte{"Markdown": md, "HTML": page} {
		if !bytes.Contains(out, []byte(want)) || bytes.Contains(out, []byte("pacing 0 req/s")) || bytes.Contains(out, []byte("waits more than 0 ms")) {
			t.Errorf("the %s does not say %q:\n%s", name, want, out)
		}
	}
}

// TestReportStatesTheLoadMinPoolAccepts: the policy in words states the
// largest load per pool slot that min_pool accepts (max_utilization),
// which sets every class's min_pool, as it does the other settings.
func TestReportStatesTheLoadMinPoolAccepts(t *testing.T) {
	sc := testutil.Example(t, "chat")
	sc.Policy.MaxUtilization = 0.8
	p, err := newApp().Plan(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	md, page := renderBoth(t, ReportInput{Scenario: sc, Plan: p})
	want := "min_pool keeps each pool slot at most 80 % busy (max_utilization)"
	for name, out := range map[string][]byte{"Markdown": md, "HTML": page} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("the %s lacks %q", name, want)
		}
	}
}

// TestAgentShedRuleShedsTasks: an agent task class's pool counts tasks,
// and what its admission rule sheds is a task that waits for a slot, as
// its simulation counts what it sheds in tasks.
func TestAgentShedRuleShedsTasks(t *testing.T) {
	sc, p := examplePlan(t, "agent")
	md, page := renderBoth(t, ReportInput{Scenario: sc, Plan: p})
	for name, out := range map[string][]byte{"Markdown": md, "HTML": page} {
		if !bytes.Contains(out, []byte("Shed a task that waits more than")) || bytes.Contains(out, []byte("Shed a request")) {
			t.Errorf("the %s does not shed tasks:\n%s", name, out)
		}
	}
	c := plan.ClassPlan{Pool: 12, Task: &plan.TaskPlan{Calls: 4}, Admission: plan.Admission{MaxQueueWaitMs: new(1000.0), Status: 429, RetryAfterS: 3}}
	c.Predicted.ShedShare = 0.02
	if got, want := classShedRule(c), "Shed a task that waits more than 1,000 ms for a slot, with 429 and Retry-After: 3. Predicted to shed 2 % of its tasks (its percentiles are over those served)."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
