package plan

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

// TestCacheLowersTTFTByTheCachedPrefill holds the plan to TTFT = base +
// k·(1 − r)·in/1000: with fixed tokens and latency the TTFT p95 falls by
// exactly k·r·in/1000, and with distributions the mean TTFT falls by
// exactly k·r·E[in]/1000.
func TestCacheLowersTTFTByTheCachedPrefill(t *testing.T) {
	const k, in = 40.0, 3000.0 // ms per 1,000 input tokens; input tokens
	for _, r := range []float64{0.25, 0.5, 0.9} {
		s := handScenario(scenario.Quota{RPM: 600})
		s.Latency.PrefillMsPer1K = k
		s.Classes[0].InputTokens = fixed(in)
		cold := mustPlan(t, s).Classes[0].Predicted
		s.Classes[0].CachedInputFraction = r
		warm := mustPlan(t, s).Classes[0].Predicted
		// 500 ms + 40 × 3 = 620 ms cold; warm 620 − 40·r·3.
		if *cold.TTFTP95Ms != 620 || *warm.TTFTP95Ms != 620-k*r*in/1000 {
			t.Errorf("r=%g: TTFT p95 %g ms cold, %g ms warm; want 620 and %g", r, *cold.TTFTP95Ms, *warm.TTFTP95Ms, 620-k*r*in/1000)
		}
		if d := cold.MeanServiceMs - warm.MeanServiceMs; math.Abs(d-k*r*in/1000) > 1e-9 {
			t.Errorf("r=%g: mean service time falls by %g ms, want %g", r, d, k*r*in/1000)
		}
	}
	ctx := context.Background()
	s := sloScenario(scenario.SLO{TTFTMs: 1e6})
	cold, err := testEngine.Workloads(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	const r = 0.6
	s.Classes[0].CachedInputFraction = r
	warm, err := testEngine.Workloads(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	c, w := cold[0].At(1), warm[0].At(1)
	want := s.Latency.PrefillMsPer1K * r * c.In.Mean() / 1000 / 1000 // seconds
	if d := c.MeanTTFT() - w.MeanTTFT(); math.Abs(d-want) > 1e-12 {
		t.Errorf("mean TTFT falls by %g s, want k·r·E[in]/1000 = %g s", d, want)
	}
}

// TestPromptCacheEffect: the plan shows TTFT p95 and the key's use with
// the cache and without it, by hand: 3,000 input tokens of which r = 0.5
// cached, 101 output tokens, prefill 40 ms per 1,000.
func TestPromptCacheEffect(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 600, ITPM: 1e6, TPM: 2e6, CachedInputFree: true})
	s.Latency.PrefillMsPer1K = 40
	s.Classes[0].InputTokens = fixed(3000)
	s.Classes[0].Demand = &scenario.Demand{RPS: 1}
	if cp := mustPlan(t, s).Classes[0]; cp.PromptCache != nil {
		t.Fatalf("a class that reads nothing from the cache shows its effect: %+v", cp.PromptCache)
	}
	s.Classes[0].CachedInputFraction = 0.5
	cp := mustPlan(t, s).Classes[0]
	pc := cp.PromptCache
	if pc == nil || pc.CachedInputFraction != 0.5 {
		t.Fatalf("no prompt cache effect: %+v", pc)
	}
	// 500 + 40 × 1.5 = 560 ms with the cache, 500 + 40 × 3 = 620 without.
	if *pc.TTFTP95Ms != 560 || *pc.TTFTP95MsWithoutCache != 620 || *cp.Predicted.TTFTP95Ms != 560 {
		t.Errorf("TTFT p95 %v with the cache, %v without; want 560 and 620", *pc.TTFTP95Ms, *pc.TTFTP95MsWithoutCache)
	}
	// itpm: cache reads free, 1,500 with and 3,000 without; tpm counts
	// them: 3,101 either way.
	if pc.UsePerRequest["itpm"] != 1500 || pc.UsePerRequestNoCache["itpm"] != 3000 || pc.UsePerRequest["tpm"] != 3101 || pc.UsePerRequestNoCache["tpm"] != 3101 {
		t.Errorf("use per request %v with the cache, %v without", pc.UsePerRequest, pc.UsePerRequestNoCache)
	}
	// 1 req/s × 1,500 × 60 / 10⁶ = 0.09 of itpm; 0.18 without.
	if pc.Utilization["itpm"] != 0.09 || pc.UtilizationNoCache["itpm"] != 0.18 || pc.UtilizationNoCache["rpm"] != pc.Utilization["rpm"] {
		t.Errorf("utilization %v with the cache, %v without", pc.Utilization, pc.UtilizationNoCache)
	}
	s.Quotas[0].CachedInputTPMFree = true
	pc = mustPlan(t, s).Classes[0].PromptCache
	if pc.UsePerRequest["tpm"] != 1601 || pc.UsePerRequestNoCache["tpm"] != 3101 {
		t.Errorf("tpm per request %v with cache reads free for tpm, %v without; want 1601 and 3101", pc.UsePerRequest["tpm"], pc.UsePerRequestNoCache["tpm"])
	}
}

// TestPromptCacheWorkedExample is the worked example of docs/concepts.md
// ("The prompt cache").
func TestPromptCacheWorkedExample(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 600, ITPM: 1e6, TPM: 2e6, CachedInputFree: true})
	s.Latency = scenario.Latency{TTFTMs: fixedMs(400), TPOTMs: fixedMs(20), PrefillMsPer1K: 40}
	s.Classes[0].InputTokens, s.Classes[0].OutputTokens = fixed(4000), fixed(250)
	s.Classes[0].CachedInputFraction = 0.75
	pc := mustPlan(t, s).Classes[0].PromptCache
	if *pc.TTFTP95Ms != 440 || *pc.TTFTP95MsWithoutCache != 560 || pc.UsePerRequest["itpm"] != 1000 || pc.UsePerRequest["tpm"] != 4250 {
		t.Errorf("TTFT %v and %v ms, use %v; want 440 and 560 ms, itpm 1,000, tpm 4,250", *pc.TTFTP95Ms, *pc.TTFTP95MsWithoutCache, pc.UsePerRequest)
	}
	s.Quotas[0].CachedInputTPMFree = true
	if pc := mustPlan(t, s).Classes[0].PromptCache; pc.UsePerRequest["tpm"] != 1250 {
		t.Errorf("tpm per request %v with cache reads free for tpm, want 1,250", pc.UsePerRequest["tpm"])
	}
}

func TestPromptCacheInTheExplanation(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 600, ITPM: 1e6, TPM: 2e6, CachedInputFree: true})
	s.Latency = scenario.Latency{TTFTMs: fixedMs(400), TPOTMs: fixedMs(20), PrefillMsPer1K: 40}
	s.Classes[0].InputTokens, s.Classes[0].OutputTokens = fixed(4000), fixed(250)
	s.Classes[0].CachedInputFraction = 0.75
	want := "Its prompt cache (75 % of the input) lowers its TTFT p95 from 560 to 440 ms and its itpm per request from 4,000 to 1,000."
	if e := mustPlan(t, s).Classes[0].Explanation; !strings.HasSuffix(e, want) {
		t.Errorf("explanation %q does not end %q", e, want)
	}
}

// TestPromptCacheWithoutAColdPlan: an agent task whose prompts only its
// cache makes plannable (a lognormal input of p50 0.0001 and p95 6,000
// tokens, whose mean without the cache is beyond what the planner
// accepts) is planned with its cache, and says that there is no
// comparison without it, rather than failing the plan.
func TestPromptCacheWithoutAColdPlan(t *testing.T) {
	s := example(t, "agent")
	s.Classes = slices.Clone(s.Classes)
	i := slices.IndexFunc(s.Classes, func(c scenario.Class) bool { return c.Task != nil })
	s.Classes[i].InputTokens = scenario.Dist{P50: new(0.0001), P95: new(6000.0)}
	p := mustPlan(t, s)
	cp := p.Classes[i]
	if cp.PromptCache != nil || !slices.ContainsFunc(cp.Warnings, func(w string) bool {
		return strings.HasPrefix(w, "without its prompt cache the mean service time") && strings.HasSuffix(w, "no comparison without the cache")
	}) {
		t.Errorf("%s: prompt cache %+v, warnings %q", cp.Name, cp.PromptCache, cp.Warnings)
	}
}

// TestPromptCacheOfAClassWithoutAPool: a class whose TTFT target no pool
// meets has no TTFT p95 to compare with and without its cache, and its
// explanation does not say that the cache leaves its TTFT as it is (the
// cache takes 120 ms of prefill off every request).
func TestPromptCacheOfAClassWithoutAPool(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 600, TPM: 2e6})
	s.Latency = scenario.Latency{TTFTMs: fixedMs(400), TPOTMs: fixedMs(20), PrefillMsPer1K: 40}
	s.Classes[0].InputTokens, s.Classes[0].OutputTokens = fixed(4000), fixed(250)
	s.Classes[0].CachedInputFraction = 0.75
	s.Classes[0].SLO = &scenario.SLO{TTFTP95Ms: 300}
	cp := mustPlan(t, s).Classes[0]
	if cp.Pool != 0 || cp.PromptCache == nil || cp.PromptCache.TTFTP95MsWithoutCache != nil {
		t.Fatalf("pool %d, prompt cache %+v: want no pool and no TTFT to compare", cp.Pool, cp.PromptCache)
	}
	if strings.Contains(cp.Explanation, "TTFT nor") {
		t.Errorf("explanation %q says the cache leaves its TTFT as it is", cp.Explanation)
	}
	if want := "Its prompt cache (75 % of the input) does not change its use of the key."; !strings.HasSuffix(cp.Explanation, want) {
		t.Errorf("explanation %q does not end %q", cp.Explanation, want)
	}
}

// TestPromptCacheCountsDailyLimitsPerRequest: a class's use of a daily
// limit is counted over the hours it runs, but its prompt cache's use per
// request is per request: a batch of 80,000 within 6 h with half its input
// cached uses 1 rpd a request with the cache and without it, and 80 % of
// the key's rpd either way, where the cache was said to lower its rpd per
// request from 1 to 0.25 (the batch's 6 h of the day) and its use without
// the cache was 320 %. A scheduled class's tpd likewise, on a key that
// counts cached tokens against tpd.
func TestPromptCacheCountsDailyLimitsPerRequest(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 10000, TPM: 5e6, RPD: 100000})
	s.Classes[0].Mode = scenario.ModeBatch
	s.Classes[0].Demand = &scenario.Demand{Requests: 80000, WithinHours: 6}
	s.Classes[0].CachedInputFraction = 0.5
	cp := mustPlan(t, s).Classes[0]
	pc := cp.PromptCache
	if pc == nil {
		t.Fatal("no prompt_cache")
	}
	if pc.UsePerRequest["rpd"] != 1 || pc.UsePerRequestNoCache["rpd"] != 1 {
		t.Errorf("rpd per request %g with the cache, %g without: want 1 and 1", pc.UsePerRequest["rpd"], pc.UsePerRequestNoCache["rpd"])
	}
	if pc.UtilizationNoCache["rpd"] != pc.Utilization["rpd"] || math.Abs(pc.Utilization["rpd"]-0.8) > 1e-3 {
		t.Errorf("rpd use %g with the cache, %g without: want 0.8 both", pc.Utilization["rpd"], pc.UtilizationNoCache["rpd"])
	}
	if strings.Contains(cp.Explanation, "its rpd per") {
		t.Errorf("explanation %q: the cache does not lower a request's rpd", cp.Explanation)
	}

	s = handScenario(scenario.Quota{RPM: 10000, TPM: 5e6, TPD: 1e9})
	s.Classes[0].Demand = &scenario.Demand{RPS: 1}
	s.Classes[0].CachedInputFraction = 0.5
	s.Classes[0].Schedule = &scenario.Schedule{StartHour: 8, Hours: 8}
	other := s.Classes[0]
	other.Name, other.CachedInputFraction, other.Schedule = "night", 0, &scenario.Schedule{StartHour: 20, Hours: 4}
	s.Classes = append(s.Classes, other)
	cp = mustPlan(t, s).Classes[0]
	if pc := cp.PromptCache; pc == nil || pc.UsePerRequest["tpd"] != pc.UsePerRequestNoCache["tpd"] || pc.UsePerRequest["tpd"] != pc.UsePerRequest["tpm"] {
		t.Errorf("prompt cache %+v: want tpd per request as tpm's, with and without the cache (the key counts cached tokens)", cp.PromptCache)
	}
}
