package probe

import (
	"context"
	"fmt"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/measure"
)

// cacheComparison alternates, at concurrency 1, prompts that repeat the
// run's shared prefix (then a short unique tail) with fresh prompts of the
// same length, and compares their TTFTs and cached tokens (docs/probe.md,
// "Prefill and the prompt cache"). The first round is warm-up: its
// repeated prompt fills the cache. The order within a round alternates, so
// that neither kind always follows the other.
type cacheComparison struct {
	CacheComparison
}

// cacheTailTokens is the unique tail of a repeated prompt of tokens
// tokens: 1/32 of it, at least 16 tokens.
func cacheTailTokens(tokens int) int { return max(16, tokens/32) }

// minTailChars is the shortest tail, in characters, whatever the
// calibration: room for its unique head.
const minTailChars = 48

func (k cacheComparison) check(c Config, p *problems) {
	notRamp(c, p, "a cache comparison", ModeCache)
	if n := c.inputTokens(); n < MinCacheInputTokens {
		p.add("input_tokens", "%d tokens is too short for a cache comparison: its prompts need at least %d, a prefix to repeat and a unique tail", n, MinCacheInputTokens)
	}
	c.checkMeasured(p, "cache.requests", k.Requests.IsSet(), 1, k.requests(), MinCacheMeasured, "requests of each kind")
}

func (k cacheComparison) concurrencies() []int { return []int{1} }

// run sends the rounds until they end, a budget is spent or a stop rule
// fires after a round. Every prompt has the length the synthetic text
// had at the start (its prefix must repeat byte for byte, so calibration
// cannot change it on the way).
func (k cacheComparison) run(ctx context.Context, r *runner) (reason, detail string) {
	n := k.requests()
	w := r.cfg.warmupFor(1, n)
	tokens := r.cfg.inputTokens()
	chars := r.prompts.charsFor(tokens)
	tail := max(r.prompts.charsFor(cacheTailTokens(tokens)), minTailChars)
	r.plan(stepKey{c: 1}, 2*n)
	var recs []measure.Record
	for round := range n {
		for i := range 2 {
			if ctx.Err() != nil || r.budget.exhausted() != "" {
				return r.endPromptStep(ctx, 1, recs)
			}
			seq := r.nextSeq()
			in := r.prompts.fresh(seq, chars)
			if (i+round)%2 == 0 {
				in = r.prompts.repeat(seq, chars, tail)
			}
			rec, ok := r.send(ctx, measure.Record{Step: 1, Index: len(recs), Warmup: round < w}, in)
			if !ok {
				return r.endPromptStep(ctx, 1, recs)
			}
			recs = append(recs, rec)
		}
		if round >= w {
			if reason, detail := r.stopAfter(ctx, 1, recs); reason != "" {
				r.finishStep(1, 0, recs)
				return reason, detail
			}
		}
	}
	return r.endPromptStep(ctx, 1, recs)
}

// judge compares the run's repeated and fresh prompts.
func (cacheComparison) judge(recs []measure.Record, an *measure.Result) {
	ce, err := analysis.MeasureCache(recs)
	if err != nil {
		an.Notes = append(an.Notes, "no cache comparison: "+err.Error())
		return
	}
	an.Cache = ce
	note := fmt.Sprintf("cache: a repeated prefix of %.0f tokens had %.0f cached (hit rate %.3g); TTFT %.1f ms against %.1f ms fresh, a saving of %.1f ms (95 %% interval %.1f to %.1f)",
		ce.PrefixTokens, ce.CachedRepeated, ce.HitRate, ce.TTFTRepeatedMs, ce.TTFTFreshMs, ce.SavingMs, ce.SavingMsCI.Lo, ce.SavingMsCI.Hi)
	if s := ce.SavingMsPer1K; s != nil {
		note += fmt.Sprintf(", %.3g ms per 1,000 cached tokens", *s)
	}
	an.Notes = append(an.Notes, note)
	if ce.CachedRepeated == 0 {
		an.Notes = append(an.Notes, "the endpoint reported no cached tokens (usage.prompt_tokens_details.cached_tokens): its cache did not serve the repeated prefix, or the endpoint does not say so; the TTFT saving above is what the prompts' shape made")
	}
}
