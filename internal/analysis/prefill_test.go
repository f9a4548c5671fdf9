package analysis

import (
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/scenario"
)

// TestFitPrefillByHand: two requests at each of 1,000, 2,000 and 4,000
// uncached input tokens, TTFT 220, 240 and 280 ms ± 1: the line is 200 +
// 20 · x exactly (the noise is symmetric in each group). SSE = 6 over
// n − 2 = 4, Sxx = 2 · 42/9 = 9.333 (x in thousands), so the slope's
// standard error is √(1.5 / 9.333) = 0.4009 and with t(4) = 2.7764 its
// interval is 20 ± 1.113; SST = 3,739.33, R² = 1 − 6/3,739.33 = 0.9984.
// The 2,000 group is sent as 3,000 tokens of which 1,000 were cached: the
// fit judges the uncached input.
func TestFitPrefillByHand(t *testing.T) {
	row := func(in, cached int, ttft float64) measure.Record {
		return measure.Record{Step: 1, OK: true, InputTokens: in, CachedTokens: cached, TTFTMs: ttft, E2EMs: ttft + 100, OutputTokens: 8}
	}
	recs := []measure.Record{
		row(1000, 0, 219), row(1000, 0, 221), row(3000, 1000, 239), row(3000, 1000, 241), row(4000, 0, 279), row(4000, 0, 281),
		{Step: 1, OK: true, Warmup: true, InputTokens: 1000, TTFTMs: 900}, // warm-up: left out
		{Step: 1, InputTokens: 1000, TTFTMs: 5, ErrorClass: measure.ErrServer},
	}
	fit, err := FitPrefill(recs)
	if err != nil {
		t.Fatal(err)
	}
	if fit.MsPer1K != 20 || fit.BaseMs != 200 || fit.Requests != 6 || fit.R2 != 0.9984 {
		t.Errorf("fit %+v, want slope 20, base 200, 6 requests, R² 0.9984", fit)
	}
	if iv := fit.MsPer1KCI; iv == nil || iv.Lo != 18.887 || iv.Hi != 21.113 {
		t.Errorf("slope interval %+v, want [18.887, 21.113]", iv)
	}
	want := []measure.PrefillPoint{
		{InputTokens: 1000, Requests: 2, TTFTP50Ms: 220, TTFTMeanMs: 220, FittedMs: 220},
		{InputTokens: 3000, CachedTokens: 1000, Requests: 2, TTFTP50Ms: 240, TTFTMeanMs: 240, FittedMs: 240},
		{InputTokens: 4000, Requests: 2, TTFTP50Ms: 280, TTFTMeanMs: 280, FittedMs: 280},
	}
	if len(fit.Points) != len(want) {
		t.Fatalf("points %+v, want %+v", fit.Points, want)
	}
	for i := range want {
		if fit.Points[i] != want[i] {
			t.Errorf("point %d: %+v, want %+v", i, fit.Points[i], want[i])
		}
	}
	if _, err := FitPrefill(recs[:2]); err == nil || !strings.Contains(err.Error(), "fewer than the 3") {
		t.Errorf("two rows: %v", err)
	}
	if _, err := FitPrefill([]measure.Record{row(1000, 0, 1), row(1000, 0, 2), row(1000, 0, 3)}); err == nil || !strings.Contains(err.Error(), "two input lengths") {
		t.Errorf("one length: %v", err)
	}
}

// TestMeasureCacheByHand: fresh prompts at 298 to 302 ms (mean 300,
// variance 8/3), repeated ones at 258 to 262 (mean 260, variance 8/3),
// four of each: the saving is 40 ms, Welch's standard error √(4/3) =
// 1.1547 on 6 degrees of freedom, t = 2.4469, so 40 ± 2.83. The repeated
// prompts had 1,920 of their 1,984 prefix tokens cached: a hit rate of
// 0.9677, and 40 ms per 1.92 thousand cached tokens is 20.833 ms per
// 1,000 (19.362 to 22.305).
func TestMeasureCacheByHand(t *testing.T) {
	var recs []measure.Record
	for i, d := range []float64{0, 2, -2, 0} {
		recs = append(recs,
			measure.Record{Step: 1, Index: 2 * i, OK: true, InputTokens: 2048, TTFTMs: 300 + d},
			measure.Record{Step: 1, Index: 2*i + 1, OK: true, InputTokens: 2048, PrefixTokens: 1984, CachedTokens: 1920, TTFTMs: 260 + d})
	}
	recs = append(recs, measure.Record{Step: 1, OK: true, Warmup: true, InputTokens: 2048, PrefixTokens: 1984, TTFTMs: 300})
	ce, err := MeasureCache(recs)
	if err != nil {
		t.Fatal(err)
	}
	if ce.Fresh != 4 || ce.Repeated != 4 || ce.SavingMs != 40 || ce.HitRate != 0.9677 || ce.CachedRepeated != 1920 || ce.CachedFresh != 0 ||
		ce.PrefixTokens != 1984 || ce.TTFTFreshMs != 300 || ce.TTFTRepeatedMs != 260 {
		t.Errorf("cache effect %+v", ce)
	}
	if iv := ce.SavingMsCI; iv == nil || iv.Lo != 37.17 || iv.Hi != 42.83 {
		t.Errorf("saving interval %+v, want [37.17, 42.83]", iv)
	}
	if ce.SavingMsPer1K == nil || *ce.SavingMsPer1K != 20.833 || ce.SavingMsPer1KCI == nil || ce.SavingMsPer1KCI.Lo != 19.362 || ce.SavingMsPer1KCI.Hi != 22.305 {
		t.Errorf("saving per 1k %v (%+v), want 20.833 in [19.362, 22.305]", ce.SavingMsPer1K, ce.SavingMsPer1KCI)
	}
	for i := range recs {
		recs[i].CachedTokens = 0
	}
	ce, err = MeasureCache(recs)
	if err != nil || ce.SavingMsPer1K != nil || ce.HitRate != 0 {
		t.Errorf("without cached tokens: %+v, %v; want no saving per 1k and a hit rate of 0", ce, err)
	}
	if l, ok := PromptLatency(measure.Result{Mode: "cache", Cache: ce}); ok || l.Cache != nil {
		t.Errorf("a cache that served nothing gives the latency keys %+v", l)
	}
}

// TestMeasureConversationByHand: tasks of three calls, each call 1 s with
// 0.5 s of tool time after it: a task takes 4 s, 3 s of it in calls (an
// LLM share of 0.75). Task 1 is warm-up, tasks 2 and 3 succeed, task 4
// fails at its second call. The calls after the first had 480 of their
// 500 prefix tokens cached: a hit rate of 0.96.
func TestMeasureConversationByHand(t *testing.T) {
	var recs []measure.Record
	for task := 1; task <= 4; task++ {
		t0 := float64(task * 10)
		for call := 1; call <= 3; call++ {
			r := measure.Record{Step: 1, Index: 3*(task-1) + call - 1, Task: task, Call: call, Warmup: task == 1,
				StartS: t0 + 1.5*float64(call-1), TTFTMs: 100 * float64(call), E2EMs: 1000, OK: true,
				InputTokens: 200 + 400*(call-1), OutputTokens: 50}
			if call > 1 {
				r.PrefixTokens, r.CachedTokens = 500, 480
			}
			if task == 4 && call == 2 {
				r.OK, r.ErrorClass, r.CachedTokens = false, measure.ErrServer, 0
			}
			recs = append(recs, r)
			if !r.OK {
				break
			}
		}
	}
	cs, err := MeasureConversation(recs)
	if err != nil {
		t.Fatal(err)
	}
	if cs.Tasks != 2 || cs.FailedTasks != 1 || cs.TaskP50Ms != 4000 || cs.TaskP95Ms != 4000 || cs.TaskMeanMs != 4000 || cs.LLMShare != 0.75 {
		t.Errorf("tasks %+v", cs)
	}
	if cs.HitRate == nil || *cs.HitRate != 0.96 {
		t.Errorf("hit rate %v, want 0.96", cs.HitRate)
	}
	want := []measure.CallStat{
		{Call: 1, Requests: 3, OK: 3, InputTokens: 200, OutputTokens: 50, TTFTP50Ms: 100, TTFTP95Ms: 100, E2EP50Ms: 1000, E2EP95Ms: 1000},
		{Call: 2, Requests: 3, OK: 2, InputTokens: 600, CachedTokens: 480, OutputTokens: 50, TTFTP50Ms: 200, TTFTP95Ms: 200, E2EP50Ms: 1000, E2EP95Ms: 1000},
		{Call: 3, Requests: 2, OK: 2, InputTokens: 1000, CachedTokens: 480, OutputTokens: 50, TTFTP50Ms: 300, TTFTP95Ms: 300, E2EP50Ms: 1000, E2EP95Ms: 1000},
	}
	if len(cs.Calls) != 3 {
		t.Fatalf("calls %+v", cs.Calls)
	}
	for i := range want {
		if cs.Calls[i] != want[i] {
			t.Errorf("call %d: %+v, want %+v", i+1, cs.Calls[i], want[i])
		}
	}
	if _, err := MeasureConversation(recs[:3]); err == nil {
		t.Error("warm-up tasks alone were measured")
	}
}

// TestPromptFileExtendsACurveFile: a prompt file's keys, appended to a
// curve file without their latency line, extend the curve file's latency
// block, and the scenario reads them back.
func TestPromptFileExtendsACurveFile(t *testing.T) {
	saving := 19.5
	res := measure.Result{Mode: "cache", Prefill: &measure.PrefillFit{MsPer1K: 20.25},
		Cache: &measure.CacheEffect{HitRate: 0.9677, SavingMsPer1K: &saving}}
	lat, err := Latency(res)
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := PromptFile(lat, []string{"Measured by a test."})
	if err != nil {
		t.Fatal(err)
	}
	knee := 8
	curve, err := CurveFile(scenario.Latency{Knee: &knee, Curve: []scenario.CurvePoint{
		{Concurrency: 1, TTFTP50Ms: 200, TTFTP95Ms: 210, TPOTP50Ms: 10, TPOTP95Ms: 11},
	}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, line := range strings.Split(string(prompt), "\n") {
		if line != "latency:" {
			keys = append(keys, line)
		}
	}
	doc := `quotas: [{name: prod, rpm: 600}]
classes:
  - {name: chat, quota: prod, mode: interactive, input_tokens: {fixed: 100}, output_tokens: {fixed: 10}, demand: {rps: 1}}
` + string(curve) + strings.Join(keys, "\n")
	sc, err := scenario.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("%v in\n%s", err, doc)
	}
	l := sc.Latency
	if l.PrefillMsPer1K != 20.25 || l.Cache == nil || l.Cache.HitRate == nil || *l.Cache.HitRate != 0.9677 || l.Cache.TTFTSavingMsPer1K != 19.5 || l.Knee == nil || len(l.Curve) != 1 {
		t.Errorf("latency %+v (cache %+v)", l, l.Cache)
	}
}
