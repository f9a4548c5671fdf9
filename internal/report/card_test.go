package report

import (
	"bytes"
	"context"
	"encoding/json"
	stdhtml "html"
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/scenario"
)

func exampleCardInput(t *testing.T) CardInput {
	sc, p := examplePlan(t, "measured-curve")
	return CardInput{
		ProbeID: "p7k2", PlanID: "q9m4",
		Probe: ProbeData{Result: syntheticResult(), Endpoint: "http://127.0.0.1:8000/v1", Model: "example-model",
			Date: exampleDate, DeadlineMs: exampleDeadlineMs},
		Scenario: &sc, Plan: p,
	}
}

func TestRecordCardWithPlan(t *testing.T) {
	card := NewRecordCard(exampleCardInput(t))
	if card.Knee == nil || *card.Knee != 24 || card.Collapse == nil || *card.Collapse != 48 || card.QuotaLimited {
		t.Fatalf("knee %v collapse %v quota-limited %v", card.Knee, card.Collapse, card.QuotaLimited)
	}
	if k := card.AtKnee; k == nil || k.E2EP95Ms != 5800 || k.TTFTP95Ms != 450 || k.GoodputRPS != 4.95 ||
		k.GoodputCI == nil || k.GoodputCI.Lo != 4.95*0.98 || k.E2EP95CI == nil || k.TTFTP95CI == nil {
		t.Fatalf("at the knee: %+v", card.AtKnee)
	}
	if len(card.Pools) != 2 {
		t.Fatalf("%d pools", len(card.Pools))
	}
	a := card.Pools[0]
	// Both classes share the endpoint's budget ⌊0.7 × 24⌋ = 16: the assistant
	// reserves its min_pool of 12, reports takes the other 4.
	if a.Class != "assistant" || a.Pool != 12 || a.BindingConstraint != "knee" || *a.KneeLimit != 12 ||
		a.Shedding.MaxQueueWaitMs == nil || a.Shedding.Status != 429 || a.SLOE2EP95Ms != 10000 || a.SLOTTFTP95Ms != 1000 || a.MaxTokens != 600 {
		t.Errorf("assistant: %+v", a)
	}
	if r := card.Pools[1]; r.Class != "reports" || *r.KneeLimit != 4 || r.Pool != 4 || r.BindingConstraint != "knee" {
		t.Errorf("reports: %+v", r)
	}
	wantSteps := map[string][]string{
		WhenRateLimited: {
			"assistant at most 750.53 req/s in bursts of 12",
			"assistant is bound by knee at a pool of 12 on key gpu-pool",
			"assistant: base 250 ms, cap 2,000 ms, at most 4 attempts",
			"If the 429s come at or below the knee (24 in flight), the quota is the bottleneck: raise the tier or split the load across keys.",
		},
		WhenSLOExceeded: {
			"assistant: shed a request that waits more than 2,365.1 ms for a slot, with 429 and Retry-After: 4.",
			"Reduce the pool toward the knee (24 in flight, where E2E p95 was 5,800 ms and TTFT p95 450 ms): assistant runs 12, knee limit 12; reports runs 4, knee limit 4.",
			"assistant caps at 600",
		},
		WhenGoodputFalls: {
			"You are past the knee: goodput peaks around 24 in flight (4.95 req/s within the 10,000 ms deadline) and fell at 48.",
			"Cut the pools back to their shares of the knee budget, ⌊0.7 × 24⌋ = 16 in flight for all of them together: assistant 12, reports 4.",
			"Re-probe",
		},
	}
	if len(card.Decisions) != 3 {
		t.Fatalf("%d decisions", len(card.Decisions))
	}
	for i, when := range []string{WhenRateLimited, WhenSLOExceeded, WhenGoodputFalls} {
		d := card.Decisions[i]
		if d.When != when {
			t.Errorf("decision %d is %q, want %q", i, d.When, when)
		}
		all := strings.Join(d.Do, "\n")
		for _, want := range wantSteps[when] {
			if !strings.Contains(all, want) {
				t.Errorf("when %s: lacks %q in\n%s", when, want, all)
			}
		}
	}
}

func TestRecordCardVariants(t *testing.T) {
	limited := syntheticResult()
	limited.QuotaLimited = true
	noKnee := analysis.Analyze([]measure.Step{{Concurrency: 4, Requests: 40, OK: 40, GoodputRPS: 1, ThroughputRPS: 1, E2EP95Ms: 9000}},
		analysis.Options{DeadlineMs: 10000})
	tests := []struct {
		name   string
		in     CardInput
		pools  int
		want   []string
		absent []string
	}{
		{
			name:   "without a plan",
			in:     CardInput{Probe: ProbeData{Result: syntheticResult(), Endpoint: "http://e/v1", Model: "m", DeadlineMs: 10000}},
			want:   []string{"interactive 16 (24 × 0.7), semi 19 (24 × 0.8), batch 24 (24 × 1)", "bring the requests in flight back under it"},
			absent: []string{"bound by"},
		},
		{
			name: "quota limited",
			in:   CardInput{Probe: ProbeData{Result: limited}},
			want: []string{"This endpoint answered 429 at or below its knee of 24 in flight: the quota is the bottleneck, not the model. Raise the tier or split the load across keys."},
		},
		{
			name:   "no knee",
			in:     CardInput{Probe: ProbeData{Result: noKnee}},
			want:   []string{"The probe found no knee", "probe again from a lower concurrency"},
			absent: []string{"past the knee"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			card := NewRecordCard(tc.in)
			if len(card.Pools) != tc.pools {
				t.Errorf("%d pools", len(card.Pools))
			}
			var all []string
			for _, d := range card.Decisions {
				all = append(all, d.Do...)
			}
			text := strings.Join(all, "\n")
			for _, want := range tc.want {
				if !strings.Contains(text, want) {
					t.Errorf("lacks %q in\n%s", want, text)
				}
			}
			for _, no := range tc.absent {
				if strings.Contains(text, no) {
					t.Errorf("has %q", no)
				}
			}
			var md bytes.Buffer
			if err := WriteRecordCardMarkdown(&md, card); err != nil {
				t.Fatal(err)
			}
			for _, h := range []string{"# Record card", "### When 429s appear", "### When p95 exceeds the SLO", "### When goodput falls"} {
				if !strings.Contains(md.String(), h) {
					t.Errorf("the Markdown lacks %q", h)
				}
			}
		})
	}
}

// TestRecordCardJSON pins the JSON names clients read.
func TestRecordCardJSON(t *testing.T) {
	b, err := json.Marshal(NewRecordCard(exampleCardInput(t)))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"probe_id", "plan_id", "endpoint", "model", "date", "deadline_ms", "knee", "at_knee", "collapse", "quota_limited", "pools", "decisions"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("no %q in %s", k, b)
		}
	}
	pool := doc["pools"].([]any)[0].(map[string]any)
	for _, k := range []string{"class", "pool", "binding_constraint", "knee_limit", "shedding", "pacing"} {
		if _, ok := pool[k]; !ok {
			t.Errorf("no pools[0].%s", k)
		}
	}
	shed := pool["shedding"].(map[string]any)
	if shed["max_queue_wait_ms"] == nil || shed["status"] != 429.0 || shed["retry_after_s"] == nil {
		t.Errorf("shedding %v", shed)
	}
	if d := doc["decisions"].([]any)[0].(map[string]any); d["when"] != WhenRateLimited || len(d["do"].([]any)) == 0 {
		t.Errorf("decision %v", d)
	}
	var back RecordCard
	if err := json.Unmarshal(b, &back); err != nil || *back.Knee != 24 || back.Pools[0].Pool != 12 {
		t.Errorf("round trip: %v %+v", err, back)
	}
}

func TestRecordCardMarkdownGolden(t *testing.T) {
	var md bytes.Buffer
	if err := WriteRecordCardMarkdown(&md, NewRecordCard(exampleCardInput(t))); err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/record-card.md", md.Bytes())
}

// injections are request texts written as Markdown links and images (one
// of them trying to undo the escape of its bracket with a backslash), as
// bare URLs, www. names and e-mail addresses that GFM links by itself, and
// with control characters.
var injections = []string{
	"[click me](javascript:alert(1))",
	"![](http://evil.example/pixel.png)",
	`x\](javascript:alert(2))`,
	"[ref]\n\n[ref]: javascript:alert(3)",
	"<javascript:alert(4)>",
	"see http://evil.example/login?next=/, then",
	"(https://evil.example/a_b) and www.evil.example/x",
	"write to admin@evil.example or mailto:root@evil.example",
	"ftp://evil.example/f xmpp:bot@evil.example",
	"`x` http://evil.example/`y`|z",
	"carriage\rreturn\r\nand tab\t",
	"esc \x1b[31mred\x1b[0m bell \a nul \x00 del \x7f",
	"c1 \u0085 \u009b31m sep \u2028 bad \xff byte",
}

// checkNoLinks renders Markdown as CommonMark and as GitHub-flavoured
// Markdown and fails on any link or image, and on any control character
// but the line break, in the HTML.
func checkNoLinks(t *testing.T, md []byte) {
	t.Helper()
	for _, tc := range []struct {
		name string
		gm   goldmark.Markdown
	}{{"CommonMark", goldmark.New()}, {"GFM", goldmark.New(goldmark.WithExtensions(extension.GFM))}} {
		var out bytes.Buffer
		if err := tc.gm.Convert(md, &out); err != nil {
			t.Fatal(err)
		}
		html := out.String()
		if strings.Contains(html, "<img") || strings.Contains(html, "<a ") {
			t.Errorf("%s: the Markdown makes an image or a link:\n%s", tc.name, html)
		}
		if i := strings.IndexFunc(html, func(r rune) bool { return (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) }); i >= 0 {
			t.Errorf("%s: the Markdown carries the control character %q: %q", tc.name, html[i], html[max(0, i-20):min(len(html), i+20)])
		}
	}
}

// shown is the text a reader sees in rendered HTML: without tags, with
// entities resolved.
func shown(html string) string {
	return stdhtml.UnescapeString(tag.ReplaceAllString(html, ""))
}

var tag = regexp.MustCompile(`<[^>]*>`)

// TestMarkdownInjectionIsEscaped puts link and image syntax in every text
// of a record card and a report that a request can set: rendered, the
// Markdown has no link or image, and shows the text as written.
func TestMarkdownInjectionIsEscaped(t *testing.T) {
	for i, bad := range injections {
		in := exampleCardInput(t)
		in.ProbeID, in.PlanID, in.Probe.Endpoint, in.Probe.Model = bad, bad, bad, bad
		var card bytes.Buffer
		if err := WriteRecordCardMarkdown(&card, NewRecordCard(in)); err != nil {
			t.Fatal(err)
		}
		checkNoLinks(t, card.Bytes())

		rin := exampleInput(t)
		rin.Title, rin.Probe.Endpoint, rin.Probe.Model, rin.Probe.Source = bad, bad, bad, bad
		rin.Probe.Result.Notes = []string{bad}
		md, _ := renderBoth(t, rin)
		checkNoLinks(t, md)

		var out bytes.Buffer
		if err := goldmark.New(goldmark.WithExtensions(extension.GFM)).Convert(card.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		if want := strings.ReplaceAll(bad, "\n", " "); i < 3 || (i >= 5 && i < 9) {
			if !strings.Contains(shown(out.String()), want) {
				t.Errorf("the card does not show %q as written:\n%s", bad, out.String())
			}
		}
	}
}

// TestRecordCardServedModelAndConnections: a probe whose answers named
// another model and whose connections were not reused gets both on its
// card, as fields and as lines of its Markdown, with the warnings; one
// that served a snapshot of its model says so without a warning.
func TestRecordCardServedModelAndConnections(t *testing.T) {
	in := exampleCardInput(t)
	var recs []measure.Record
	for i := range 40 {
		recs = append(recs, measure.Record{ServedModel: "gpt-4o-mini", Conn: measure.ConnNew, ConnWaitMs: 30, ConnectMs: 5, TLSMs: 25, TTFBMs: 80, Warmup: i < 2})
	}
	r := &in.Probe.Result
	r.Served = measure.SummarizeServed("gpt-4o", false, recs)
	r.Connections = measure.SummarizeConns(recs)
	r.Steps[0].Connections = measure.SummarizeConns(recs)
	card := NewRecordCard(in)
	if !card.Served.Switched() || card.Connections.New != 40 || len(card.Warnings) != 2 {
		t.Fatalf("served %+v, connections %+v, warnings %q", card.Served, card.Connections, card.Warnings)
	}
	var md bytes.Buffer
	if err := WriteRecordCardMarkdown(&md, card); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| Served model | **WARNING: the answers named another model than the one asked (gpt-4o): gpt-4o-mini (40 of 40 answers)** |",
		"| Connections | 40 new, 0 reused of 40 requests; a new one took 30 ms to set up (mean; DNS -, connect 5, TLS 25 ms); first byte p50 80 ms on a new connection, - on a reused one |",
		"## Warnings\n\n- WARNING: the answers named another model",
		"- WARNING: connections were not reused: measured requests that opened a new connection after the warm-up, at concurrency 1 (38 of 38); a new connection took 30.0 ms to set up",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the card lacks %q:\n%s", want, md.String())
		}
	}

	r.Served = measure.SummarizeServed("gpt-4o-mini", false, recs[:1])
	r.Connections, r.Steps[0].Connections = nil, nil
	card = NewRecordCard(in)
	md.Reset()
	if err := WriteRecordCardMarkdown(&md, card); err != nil {
		t.Fatal(err)
	}
	if len(card.Warnings) != 0 || !strings.Contains(md.String(), "| Served model | served gpt-4o-mini |") || strings.Contains(md.String(), "Warnings") ||
		strings.Contains(md.String(), "| Connections |") {
		t.Errorf("warnings %q:\n%s", card.Warnings, md.String())
	}
}

// TestRecordCardShowsEveryTarget: a plan whose classes give every SLO
// form at the 99th percentile puts each target on the card, with the
// plan's prediction there (an agent task's E2E is its task's), and none
// in the first form's p95 fields; the Markdown says each, and the
// decision table's symptom names the 99th percentile.
func TestRecordCardShowsEveryTarget(t *testing.T) {
	sc, err := scenario.Parse([]byte(`
quotas: [{name: k, rpm: 6000, tpm: 4000000}]
latency: {ttft_ms: {p50: 400, p95: 900}, tpot_ms: {p50: 15, p95: 25}, prefill_ms_per_1k_tokens: 20, knee: 64}
classes:
  - {name: chat, quota: k, mode: interactive, demand: {rps: 2}, input_tokens: {p50: 800, p95: 2000}, output_tokens: {p50: 150, p95: 400},
     slo: {ttft_ms: 2500, e2e_ms: 20000, tpot_ms: 60, percentile: 99}}
  - {name: coder, quota: k, mode: interactive, demand: {rps: 0.2}, input_tokens: {fixed: 2000}, output_tokens: {fixed: 200},
     task: {calls: {fixed: 4}, tool_ms: {fixed: 1000}}, slo: {ttft_ms: 3000, tpot_ms: 60, task_e2e_ms: 90000, percentile: 99}}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := newApp().Plan(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	in := exampleCardInput(t)
	in.Scenario, in.Plan = &sc, p
	card := NewRecordCard(in)
	chat, coder := p.Classes[0].Predicted, p.Classes[1].Predicted
	want := []CardSLO{
		{Class: "chat", Percentile: 99, Targets: []CardTarget{{MetricTTFT, 2500, chat.TTFTMsAtPercentile}, {MetricE2E, 20000, chat.E2EMsAtPercentile}, {MetricTPOT, 60, chat.TPOTMsAtPercentile}}},
		{Class: "coder", Percentile: 99, Targets: []CardTarget{{MetricTTFT, 3000, coder.TTFTMsAtPercentile}, {MetricTPOT, 60, coder.TPOTMsAtPercentile}, {MetricTaskE2E, 90000, coder.E2EMsAtPercentile}}},
	}
	var md bytes.Buffer
	if err := WriteRecordCardMarkdown(&md, card); err != nil {
		t.Fatal(err)
	}
	if len(card.SLOs) != len(want) {
		t.Fatalf("SLOs %+v", card.SLOs)
	}
	for i, pool := range card.Pools {
		got := card.SLOs[i]
		if pool.SLOTTFTP95Ms != 0 || pool.SLOE2EP95Ms != 0 || got.Class != want[i].Class || got.Percentile != want[i].Percentile || len(got.Targets) != len(want[i].Targets) {
			t.Fatalf("%s: %+v, SLO %+v", pool.Class, pool, got)
		}
		for k, tg := range got.Targets {
			w := want[i].Targets[k]
			if tg.Metric != w.Metric || tg.TargetMs != w.TargetMs || w.PredictedMs == nil || tg.PredictedMs == nil || *tg.PredictedMs != *w.PredictedMs {
				t.Errorf("%s target %d: %+v, want %+v", pool.Class, k, tg, w)
			}
		}
	}
	if d := card.Decisions[1]; d.When != "p99 exceeds the SLO" {
		t.Errorf("the decision on latency is headed %q, want p99's", d.When)
	}
	for _, s := range []string{
		"### When p99 exceeds the SLO",
		"- chat: p99: TTFT 2,500 ms (predicted " + fmtNum(*chat.TTFTMsAtPercentile) + " ms), E2E 20,000 ms (predicted " + fmtNum(*chat.E2EMsAtPercentile) + " ms), TPOT 60 ms (predicted " + fmtNum(*chat.TPOTMsAtPercentile) + " ms)",
		"- coder: p99: TTFT 3,000 ms (predicted " + fmtNum(*coder.TTFTMsAtPercentile) + " ms), TPOT 60 ms (predicted " + fmtNum(*coder.TPOTMsAtPercentile) + " ms), task E2E 90,000 ms (predicted " + fmtNum(*coder.E2EMsAtPercentile) + " ms)",
	} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("the Markdown lacks %q:\n%s", s, md.String())
		}
	}
}

// TestWhenSLOExceededNamesThePercentile: the latency symptom names the
// percentile every SLO binds, the p95 when there is none, and no single
// percentile when the SLOs bind several.
func TestWhenSLOExceededNamesThePercentile(t *testing.T) {
	for _, tc := range []struct {
		at   []float64
		want string
	}{
		{nil, "p95 exceeds the SLO"},
		{[]float64{95, 95}, "p95 exceeds the SLO"},
		{[]float64{99}, "p99 exceeds the SLO"},
		{[]float64{99.9, 99.9}, "p99.9 exceeds the SLO"},
		{[]float64{95, 99}, "a latency percentile exceeds its SLO"},
		{[]float64{99, 95}, "a latency percentile exceeds its SLO"},
	} {
		var slos []CardSLO
		for _, p := range tc.at {
			slos = append(slos, CardSLO{Percentile: p})
		}
		if got := whenSLOExceeded(slos); got != tc.want {
			t.Errorf("SLOs at %v: %q, want %q", tc.at, got, tc.want)
		}
	}
}
