package probe

import (
	"context"
	"fmt"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/measure"
)

// prefillLadder runs rounds of one request at each input length in turn,
// at concurrency 1, and fits the prefill line to them (docs/probe.md,
// "Prefill and the prompt cache"). The lengths alternate within each
// round, so that a drift of the endpoint over the run falls on every
// length alike; the first round (the warm-up) opens the connection.
type prefillLadder struct {
	PrefillLadder
}

func (l prefillLadder) check(c Config, p *problems) {
	notRamp(c, p, "a prefill ladder", ModePrefill)
	if c.InputTokens.IsSet() {
		p.add("input_tokens", "a prefill ladder's lengths are prefill.input_tokens: leave it unset")
	}
	if n := len(l.InputTokens); n < 2 || n > MaxSteps {
		p.add("prefill.input_tokens", "%d lengths, want 2 to %d: a slope needs two lengths or more", n, MaxSteps)
	}
	for i, n := range l.InputTokens {
		at := fieldpath.Index("prefill.input_tokens", i)
		switch {
		case n < 1 || n > MaxInputTokens:
			p.add(at, "%d tokens is outside 1..%d", n, MaxInputTokens)
		case i > 0 && n <= l.InputTokens[i-1]:
			p.add(at, "the lengths must be strictly ascending (%d after %d)", n, l.InputTokens[i-1])
		}
	}
	c.checkMeasured(p, "prefill.requests", l.Requests.IsSet(), 1, l.requests(), MinPrefillMeasured, "requests per length")
}

func (l prefillLadder) concurrencies() []int { return []int{1} }

// run sends the rounds until they end, a budget is spent or a stop rule
// fires after a round.
func (l prefillLadder) run(ctx context.Context, r *runner) (reason, detail string) {
	n := l.requests()
	w := r.cfg.warmupFor(1, n)
	r.plan(stepKey{c: 1}, n*len(l.InputTokens))
	return r.promptRounds(ctx, n, w, len(l.InputTokens), func(_, i int) input {
		return r.prompts.sized(r.nextSeq(), l.InputTokens[i])
	})
}

// judge fits the prefill line to the run's rows.
func (prefillLadder) judge(recs []measure.Record, an *measure.Result) {
	fit, err := analysis.FitPrefill(recs)
	if err != nil {
		an.Notes = append(an.Notes, "no prefill line: "+err.Error())
		return
	}
	an.Prefill = fit
	note := fmt.Sprintf("prefill: TTFT = %.1f ms + %.3g ms per 1,000 uncached input tokens (95 %% interval %.3g to %.3g, R² %.3f, %d requests)",
		fit.BaseMs, fit.MsPer1K, fit.MsPer1KCI.Lo, fit.MsPer1KCI.Hi, fit.R2, fit.Requests)
	an.Notes = append(an.Notes, note, "the prefill ladder runs at concurrency 1 with prompts of several lengths: its step makes no latency curve and no knee")
}

// promptRounds sends n rounds of perRound prompts at concurrency 1 (the
// first w rounds a warm-up), prompt(round, i) giving each one's input,
// until they end, a budget is spent, a send fails for good or a stop rule
// fires after a round: the one step of a prompt-cost mode.
func (r *runner) promptRounds(ctx context.Context, n, w, perRound int, prompt func(round, i int) input) (reason, detail string) {
	var recs []measure.Record
	for round := range n {
		for i := range perRound {
			if ctx.Err() != nil || r.budget.exhausted() != "" {
				return r.endPromptStep(ctx, 1, recs)
			}
			rec, ok := r.send(ctx, measure.Record{Step: 1, Index: len(recs), Warmup: round < w}, prompt(round, i))
			if !ok {
				return r.endPromptStep(ctx, 1, recs)
			}
			recs = append(recs, rec)
		}
		if round >= w {
			if reason, detail := r.stopAfter(ctx, stepKey{c: 1}, recs); reason != "" {
				r.finishStep(1, 0, recs)
				return reason, detail
			}
		}
	}
	return r.endPromptStep(ctx, 1, recs)
}

// endPromptStep summarises the one step of a prompt-cost mode at
// concurrency c and applies the stop rules to it.
func (r *runner) endPromptStep(ctx context.Context, c int, recs []measure.Record) (reason, detail string) {
	r.finishStep(c, 0, recs)
	if reason, detail := r.stopAfter(ctx, stepKey{c: c}, recs); reason != "" {
		return reason, detail
	}
	return StopCompleted, ""
}
