package plan

import (
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// cachedTaskScenario is taskScenario with a prompt cache on its endpoint
// (latency.cache: every call's earlier context a prefix the cache can
// serve), at 0.5 tasks/s, on a key with itpm whose cache reads are free
// for itpm (Anthropic's rule) and counted against tpm.
func cachedTaskScenario(c scenario.CacheProfile) scenario.Scenario {
	s := taskScenario(scenario.Quota{RPM: 600, TPM: 1e6, ITPM: 1e6, CachedInputFree: true})
	s.Latency.Cache = &c
	s.Classes[0].Demand = &scenario.Demand{RPS: 0.5}
	return s
}

// TestTaskPrefixCacheByHand (docs/concepts.md, "The prompt cache of an
// agent task"): the inputs of the 4 calls are 1,000, 1,500, 2,000 and
// 2,500 tokens, and the prefixes of calls 2 to 4, the previous call's
// input and output, 1,101, 1,601 and 2,101. With the hit rate at its
// default of 1 and a minimum prefix of 1,024 all three are cached:
// Σ cached = 4,803, and each of calls 2 to 4 prefills only its tool
// result of 399 tokens. TTFTs 600, 539.9, 539.9, 539.9 ms; Σ S = 4 × 2.5
// + 0.1 + 3 × 0.0399 = 10.2197 s; T = 14.2197 s. itpm counts
// 7,000 − 4,803 = 2,197 tokens a task: 0.5 × 2,197 × 60 / 1e6 = 6.59 %,
// ceiling ⌊0.9 × 1e6/60 ÷ 2,197 × 14.2197⌋ = 97; tpm counts all 7,404;
// rpm ⌊0.9 × 600/60 ÷ 4 × 14.2197⌋ = ⌊31.994⌋ = 31.
func TestTaskPrefixCacheByHand(t *testing.T) {
	cp := mustPlan(t, cachedTaskScenario(scenario.CacheProfile{MinPrefixTokens: 1024})).Classes[0]
	tk := cp.Task
	if tk == nil || tk.InputTokens != 7000 || tk.CachedTokens != 4803 || tk.OutputTokens != 404 || tk.CallTimeMs != 10219.7 || tk.TimeMs != 14219.7 {
		t.Fatalf("task %+v, want 7,000 input of which 4,803 cached, 404 output, 10,219.7 ms in calls of 14,219.7", tk)
	}
	if u := cp.Predicted.Utilization; u["itpm"] != 0.0659 || u["tpm"] != 0.2221 || u["rpm"] != 0.2 {
		t.Fatalf("utilization %v, want itpm 0.0659, tpm 0.2221, rpm 0.2", u)
	}
	if c := ceiling(cp, "itpm"); c == nil || c.MaxPool == nil || *c.MaxPool != 97 {
		t.Fatalf("itpm ceiling %+v, want 97", c)
	}
	// rpm: 0.9 × 600/60 = 9 calls/s ÷ 4 = 2.25 tasks/s × 14.2197 s =
	// 31.994 → 31, which the detail shows with the digits that read so.
	if c := ceiling(cp, "rpm"); c == nil || c.MaxPool == nil || *c.MaxPool != 31 ||
		c.Detail != "rpm: 0.9 × 600 requests/min = 9/s ÷ 4 requests/task = 2.25 tasks/s × E[T] 14.2 s = 31.99 → 31" {
		t.Fatalf("rpm ceiling %+v, want 31.99 → 31", c)
	}
	pc := cp.PromptCache
	if pc == nil || pc.TTFTP95Ms == nil || pc.TTFTP95MsWithoutCache == nil {
		t.Fatalf("prompt cache %+v", pc)
	}
	// A quarter of the calls are first calls at 600 ms, the rest 539.9:
	// the p95 is 600; without the cache the calls' TTFTs are 600 to 750.
	if *pc.TTFTP95Ms != 600 || *pc.TTFTP95MsWithoutCache != 750 || pc.CachedInputFraction != signed.Round(4803.0/7000, 4) {
		t.Fatalf("prompt cache TTFT p95 %v (want 600), without %v (want 750), cached share %v", *pc.TTFTP95Ms, *pc.TTFTP95MsWithoutCache, pc.CachedInputFraction)
	}
	if pc.UsePerRequest["itpm"] != 2197 || pc.UsePerRequestNoCache["itpm"] != 7000 || pc.UsePerRequest["tpm"] != 7404 {
		t.Fatalf("use per task %v, without the cache %v", pc.UsePerRequest, pc.UsePerRequestNoCache)
	}
}

// TestTaskPrefixBelowTheMinimumCachesNothing: with a minimum prefix of
// 1,700 tokens the prefixes of 1,101 and 1,601 are prefilled in full and
// only call 4's 2,101 is cached: Σ S = 10 + 0.1 + 0.15 + 0.2 + 0.0399 =
// 10.4899 s. A minimum above every prefix caches nothing: the task is the
// uncached one, 10.7 s in calls.
func TestTaskPrefixBelowTheMinimumCachesNothing(t *testing.T) {
	cp := mustPlan(t, cachedTaskScenario(scenario.CacheProfile{MinPrefixTokens: 1700})).Classes[0]
	if tk := cp.Task; tk.CachedTokens != 2101 || tk.CallTimeMs != 10489.9 {
		t.Fatalf("task %+v, want 2,101 cached and 10,489.9 ms in calls", tk)
	}
	cp = mustPlan(t, cachedTaskScenario(scenario.CacheProfile{MinPrefixTokens: 5000})).Classes[0]
	if tk := cp.Task; tk.CachedTokens != 0 || tk.CallTimeMs != 10700 || cp.PromptCache != nil {
		t.Fatalf("task %+v, prompt cache %+v: want nothing cached", tk, cp.PromptCache)
	}
}

// TestTaskPrefixCacheHitRateZeroCachesNothing: a hit rate of 0 given
// is a cache that serves nothing, not the default of 1.
func TestTaskPrefixCacheHitRateZeroCachesNothing(t *testing.T) {
	cp := mustPlan(t, cachedTaskScenario(scenario.CacheProfile{HitRate: new(0.0)})).Classes[0]
	if tk := cp.Task; tk.CachedTokens != 0 || tk.CallTimeMs != 10700 || cp.PromptCache != nil {
		t.Fatalf("task %+v, prompt cache %+v: want nothing cached", tk, cp.PromptCache)
	}
	sc, err := scenario.Parse([]byte("latency: {ttft_ms: {p50: 100, p95: 200}, tpot_ms: {p50: 10, p95: 20}, cache: {hit_rate: 0}}\nquotas: [{name: k, rpm: 60}]\nclasses: [{name: c, quota: k, mode: interactive, demand: {rps: 1}, input_tokens: {p50: 10, p95: 20}, output_tokens: {p50: 1, p95: 2}}]\n"))
	if err != nil || sc.Latency.Cache == nil || sc.Latency.Cache.Rate() != 0 {
		t.Fatalf("hit_rate: 0 reads as %+v (%v)", sc.Latency.Cache, err)
	}
}

// TestTaskPrefixCacheHitRateAndSaving: a measured hit rate of 0.5 caches
// half of each prefix, 550.5 + 800.5 + 1,050.5 = 2,401.5 tokens, and a
// measured saving of 50 ms per 1,000 cached tokens takes that off the
// prefill: calls 2 to 4 prefill 150 − 27.525, 200 − 40.025 and
// 250 − 52.525 ms, so Σ S = 10 + 0.1 + 0.479925 = 10.579925 s.
func TestTaskPrefixCacheHitRateAndSaving(t *testing.T) {
	cp := mustPlan(t, cachedTaskScenario(scenario.CacheProfile{HitRate: new(0.5), TTFTSavingMsPer1K: 50})).Classes[0]
	if tk := cp.Task; tk.CachedTokens != 2401.5 || tk.CallTimeMs != ms(10.579925) {
		t.Fatalf("task %+v, want 2,401.5 cached and %v ms in calls", tk, ms(10.579925))
	}
}

// TestTaskPrefixCacheCost: the cost bills each task's cached tokens at
// cached_input_per_mtok: (2,197 × 2 + 4,803 × 0.5 + 404 × 8)/10⁶ =
// 0.0100275 a task, 10.0275 per 1,000 tasks.
func TestTaskPrefixCacheCost(t *testing.T) {
	s := cachedTaskScenario(scenario.CacheProfile{MinPrefixTokens: 1024})
	s.Quotas[0].Price = &scenario.Price{InputPerMtok: new(2.0), CachedInputPerMtok: new(0.5), OutputPerMtok: new(8.0)}
	c := mustPlan(t, s).Classes[0].Cost
	if c == nil || c.Per1KRequests == nil || *c.Per1KRequests != 10.0275 {
		t.Fatalf("cost %+v, want 10.0275 per 1,000 tasks", c)
	}
}

// TestPrefixCacheFormula: call by call, the cached tokens and the TTFT
// of the fixed task, from the formula the plan and the simulation share.
func TestPrefixCacheFormula(t *testing.T) {
	pc := newPrefixCache(cachedTaskScenario(scenario.CacheProfile{MinPrefixTokens: 1024}).Latency, cachedTaskScenario(scenario.CacheProfile{}).Classes[0])
	in, prefix := []float64{1000, 1500, 2000, 2500}, []float64{0, 1101, 1601, 2101}
	wantCached, wantTTFT := []float64{0, 1101, 1601, 2101}, []float64{600, 539.9, 539.9, 539.9}
	for i := range in {
		c := pc.Cached(in[i], prefix[i])
		ttft := signed.Round(500+1000*pc.PrefillS(in[i], c), 6)
		if c != wantCached[i] || ttft != wantTTFT[i] {
			t.Errorf("call %d: cached %v, TTFT %v ms; want %v and %v", i+1, c, ttft, wantCached[i], wantTTFT[i])
		}
	}
	fresh := cachedTaskScenario(scenario.CacheProfile{}).Classes[0]
	fresh.Task.Context = scenario.ContextFresh
	if newPrefixCache(scenario.Latency{Cache: &scenario.CacheProfile{}}, fresh) != nil {
		t.Error("a fresh task has a prefix cache")
	}
}

// A task whose every input token is read from the cache (cached_input_fraction
// 1, and every earlier context a prefix of hit rate 1) reads exactly its
// input, never more: the cache's reads are the Monte Carlo's mean and the
// input the exact one, and the difference made the key's charges, and its
// tpm use, negative where cache reads are free.
func TestTaskWhollyCachedReadsItsInput(t *testing.T) {
	s := cachedTaskScenario(scenario.CacheProfile{})
	s.Quotas[0].CachedInputTPMFree = true
	s.Classes[0].CachedInputFraction = 1
	s.Classes[0].Task.Calls = scenario.Dist{P50: new(6.0), P95: new(30.0), Max: new(40.0)}
	s.Classes[0].InputTokens = scenario.Dist{P50: new(3000.0), P95: new(6000.0)}
	cp := mustPlan(t, s).Classes[0]
	if tk := cp.Task; tk == nil || tk.CachedTokens != tk.InputTokens {
		t.Fatalf("task %+v: want every input token cached", tk)
	}
	if u := cp.Predicted.Utilization; u["itpm"] != 0 || u["tpm"] <= 0 {
		t.Fatalf("utilization %v: want no itpm and the output's tpm", u)
	}
}
