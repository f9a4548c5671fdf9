package plan

import (
	"math"

	"github.com/plannerdev/planner/internal/scenario"
)

// PrefixCache is the prompt cache of an accumulating agent task's calls
// (docs/concepts.md, "The prompt cache of an agent task"). Call i ≥ 2
// carries the earlier context of its task, and the part a provider has
// already seen, the previous call's input and output (its prefix, as the
// probe's conversation mode measures its hit rate against), is what the
// cache can serve:
//
//	cached_i = max(r·in_i, h·prefix_i)   when prefix_i ≥ m
//	cached_i = r·in_i                    otherwise (and for call 1)
//	TTFT_i   = TTFT + max(0, k·in_i − s·cached_i)/1000   (ms, tokens in thousands)
//
// with h the hit rate (latency.cache.hit_rate, 1 without it), m the
// shortest prefix the endpoint caches (latency.cache.min_prefix_tokens),
// r the class's cached_input_fraction, k = prefill_ms_per_1k_tokens and
// s = ttft_saving_ms_per_1k, k without it (a cached token skips its
// prefill). The plan's Monte Carlo and the simulation draw every call so.
type PrefixCache struct {
	HitRate   float64 // h
	MinPrefix float64 // m, tokens
	Fraction  float64 // r
	Prefill   float64 // k, seconds per input token
	Saving    float64 // s, seconds per cached token
}

// newPrefixCache is the prefix cache of a class's calls: nil unless the
// class is an accumulating agent task and its latency profile l has a
// cache.
func newPrefixCache(l scenario.Latency, c scenario.Class) *PrefixCache {
	if c.Task == nil || !c.Task.Accumulates() || l.Cache == nil {
		return nil
	}
	k := l.PrefillMsPer1K / 1e6
	s := k
	if v := l.Cache.TTFTSavingMsPer1K; v > 0 {
		s = v / 1e6
	}
	return &PrefixCache{HitRate: l.Cache.Rate(), MinPrefix: l.Cache.MinPrefixTokens, Fraction: c.CachedInputFraction, Prefill: k, Saving: s}
}

// Cached is the input tokens of a call of in tokens read from the cache,
// prefix the previous call's input and output (0 for a task's first call).
func (p *PrefixCache) Cached(in, prefix float64) float64 {
	c := p.Fraction * in
	if prefix > 0 && prefix >= p.MinPrefix {
		c = math.Max(c, p.HitRate*prefix)
	}
	return math.Min(c, in)
}

// PrefillS is the prefill of a call of in input tokens, cached of them
// read from the cache, seconds.
func (p *PrefixCache) PrefillS(in, cached float64) float64 {
	return math.Max(0, p.Prefill*in-p.Saving*cached)
}
