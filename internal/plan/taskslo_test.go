package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

// The prompt cache's prefill rule holds on each call of a task: with half
// of every call's input cached, a task's 7,000 input tokens cost
// 0.0001 × 0.5 × 7,000 = 0.35 s of prefill rather than 0.7 s, so Σ S =
// 10 + 0.35 = 10.35 s and T = 14.35 s. The calls' TTFTs, 500 ms plus
// 0.1 ms per uncached token of 1,000, 1,500, 2,000 and 2,500 tokens, are
// 550 to 625 ms warm and 600 to 750 ms cold; a pool that never waits has
// those largest as its p95.
func TestTaskCachedInputSkipsPrefillByHand(t *testing.T) {
	s := taskScenario(scenario.Quota{RPM: 600})
	s.Classes[0].CachedInputFraction = 0.5
	cp := mustPlan(t, s).Classes[0]
	if cp.Task.InputTokens != 7000 || cp.Task.CallTimeMs != 10350 || cp.Task.TimeMs != 14350 {
		t.Fatalf("task %+v, want 7,000 input tokens, 10,350 ms in calls and 14,350 ms a task", cp.Task)
	}
	pc := cp.PromptCache
	if pc == nil || pc.TTFTP95Ms == nil || pc.TTFTP95MsWithoutCache == nil || *pc.TTFTP95Ms != 625 || *pc.TTFTP95MsWithoutCache != 750 {
		t.Fatalf("prompt cache %+v, want a TTFT p95 of 625 ms warm and 750 ms cold", pc)
	}
}

// A task class's targets bind at its SLO's percentile: with everything
// fixed a task takes 14.7 s without queueing and its calls' TTFTs are
// 600 to 750 ms, so at p99 the plan predicts at least those, holds
// min_pool at least as high as at p95 for the same targets, and relaxes
// targets no pool meets where they are written.
func TestTaskTargetsAtPercentile99(t *testing.T) {
	at := func(slo scenario.SLO) ClassPlan {
		s := taskScenario(scenario.Quota{RPM: 600})
		s.Classes[0].Demand = &scenario.Demand{RPS: 0.5}
		s.Classes[0].SLO = &slo
		return mustPlan(t, s).Classes[0]
	}
	p99 := at(scenario.SLO{TTFTMs: 2000, TaskE2EMs: 16000, Percentile: 99})
	pr := p99.Predicted
	if pr.Percentile == nil || *pr.Percentile != 99 || pr.E2EMsAtPercentile == nil || pr.TTFTMsAtPercentile == nil {
		t.Fatalf("predicted %+v, want the values at p99", pr)
	}
	if *pr.E2EMsAtPercentile < 14700 || *pr.E2EMsAtPercentile > 16000*1.05 || *pr.TTFTMsAtPercentile < 750 {
		t.Fatalf("task E2E p99 %g ms and TTFT p99 %g ms, want at least 14,700 (within the 16,000 target) and 750", *pr.E2EMsAtPercentile, *pr.TTFTMsAtPercentile)
	}
	if *pr.E2EMsAtPercentile < *pr.E2EP95Ms || *pr.TTFTMsAtPercentile < *pr.TTFTP95Ms {
		t.Fatalf("p99s %g and %g ms below the p95s %g and %g", *pr.E2EMsAtPercentile, *pr.TTFTMsAtPercentile, *pr.E2EP95Ms, *pr.TTFTP95Ms)
	}
	p95 := at(scenario.SLO{TTFTMs: 2000, TaskE2EMs: 16000})
	if p99.MinPool == nil || p95.MinPool == nil || *p99.MinPool < *p95.MinPool {
		t.Fatalf("min_pool %v at p99 and %v at p95", p99.MinPool, p95.MinPool)
	}
	miss := at(scenario.SLO{TTFTMs: 500, TaskE2EMs: 10000, Percentile: 99})
	for _, path := range []string{"/classes/0/slo/ttft_ms", "/classes/0/slo/task_e2e_ms"} {
		if miss.Feasible || !slices.ContainsFunc(miss.Remedies, func(r Remedy) bool { return r.Path == path }) {
			t.Errorf("feasible %v, remedies %+v: want one at %s", miss.Feasible, miss.Remedies, path)
		}
	}
}

// A task class's prompt cache lowers its use of the key per task: with
// cache reads free for itpm, half of a task's 7,000 input tokens count.
func TestTaskPromptCacheUsePerTask(t *testing.T) {
	s := taskScenario(scenario.Quota{RPM: 600, ITPM: 1e6, CachedInputFree: true})
	s.Classes[0].CachedInputFraction = 0.5
	cp := mustPlan(t, s).Classes[0]
	if pc := cp.PromptCache; pc.UsePerRequest["itpm"] != 3500 || pc.UsePerRequestNoCache["itpm"] != 7000 {
		t.Fatalf("itpm per task %v with the cache, %v without; want 3,500 and 7,000", pc.UsePerRequest["itpm"], pc.UsePerRequestNoCache["itpm"])
	}
	if !strings.Contains(cp.Explanation, "its itpm per task from 7,000 to 3,500") {
		t.Fatalf("explanation: %s", cp.Explanation)
	}
}

// TestTaskE2EIsNamedSo: an agent task class's E2E target is on the whole
// task, and its explanation and its slo_e2e ceiling name the figure they
// give the task E2E, as its check does, not the E2E of a request.
func TestTaskE2EIsNamedSo(t *testing.T) {
	cp := mustPlan(t, example(t, "agent")).Classes[0]
	if !strings.Contains(cp.Explanation, " task E2E p95 is ") {
		t.Errorf("explanation %q does not name the task E2E", cp.Explanation)
	}
	if c := ceiling(cp, ConstraintSLOE2E); c == nil || !strings.Contains(c.Detail, "the task E2E p95 is ") {
		t.Errorf("slo_e2e ceiling %+v does not name the task E2E", c)
	}
}

// TestExplanationGivesThePredictionsItsSLOSets: a class that fits is
// told with its predictions of the metrics its SLO sets, each against
// its target: a chat with a TTFT target alone by its TTFT p95 (its E2E
// is no target of it), the three-class example's chat by both, and a
// batch without an SLO by its E2E p95.
func TestExplanationGivesThePredictionsItsSLOSets(t *testing.T) {
	chat := mustPlan(t, parse(t, `
quotas: [{name: key, rpm: 5000, tpm: 2000000}]
latency: {ttft_ms: {p50: 500, p95: 1200}, tpot_ms: {p50: 20, p95: 35}}
classes:
  - {name: chat, quota: key, mode: interactive, demand: {rps: 2}, input_tokens: {p50: 800, p95: 2000}, output_tokens: {p50: 150, p95: 400}, max_tokens: 600, slo: {ttft_p95_ms: 3000}}
`)).Classes[0]
	three := mustPlan(t, example(t, "three-classes")).Classes
	for _, tc := range []struct {
		cp       ClassPlan
		want     string
		wantNone string
	}{
		{chat, fmt.Sprintf("; predicted TTFT p95 is %s ms against a 3,000 ms SLO.", num(*chat.Predicted.TTFTP95Ms)), "E2E p95 is"},
		{three[0], fmt.Sprintf("; predicted TTFT p95 is %s ms against a 1,500 ms SLO and E2E p95 is %s ms against a 15,000 ms SLO.", num(*three[0].Predicted.TTFTP95Ms), num(*three[0].Predicted.E2EP95Ms)), ""},
		{three[2], fmt.Sprintf("; predicted E2E p95 is %s ms.", num(*three[2].Predicted.E2EP95Ms)), "TTFT p95 is"},
	} {
		if !tc.cp.Feasible || !strings.Contains(tc.cp.Explanation, tc.want) || tc.wantNone != "" && strings.Contains(tc.cp.Explanation, tc.wantNone) {
			t.Errorf("%s: feasible %v, explanation %q, want it to say %q and not %q", tc.cp.Name, tc.cp.Feasible, tc.cp.Explanation, tc.want, tc.wantNone)
		}
	}
}
