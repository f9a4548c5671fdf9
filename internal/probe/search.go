package probe

import (
	"context"
	"fmt"

	"github.com/plannerdev/planner/internal/analysis"
)

// search is the knee search: closed-loop steps at doubling concurrencies
// up to top, each ended by its precision, until the first step that fails
// the knee rule; then the knee is refined by bisection (docs/probe.md,
// "Knee search").
type search struct {
	top int
}

func (s search) check(c Config, p *problems) {
	if c.Steps != nil {
		p.add("steps", "a knee search chooses its own steps: give steps or a search, not both")
	}
	if s.top < 1 || s.top > MaxConcurrency {
		p.add("search_max_concurrency", "concurrency %d is outside 1..%d", s.top, MaxConcurrency)
	}
	if c.RequestsPerStep.IsSet() {
		p.add("requests_per_step", "a search sizes its steps itself (2c + 10 measured requests at least, max(40, 3c) at most): leave it unset")
	} else {
		c.checkStepSize(p, "warmup", false, s.concurrencies(), c.requestsFor)
	}
}

func (s search) concurrencies() []int { return doubling(s.top) }

// doubling is 1, 2, 4, … up to top, and top itself when it is not a power
// of two.
func doubling(top int) []int {
	var out []int
	for c := 1; c <= top; c *= 2 {
		out = append(out, c)
	}
	if len(out) == 0 || out[len(out)-1] != top {
		out = append(out, top)
	}
	return out
}

// run runs the doubling steps, each sized by its noise, until the first
// step that fails the knee rule, then the refinement.
func (s search) run(ctx context.Context, r *runner) (reason, detail string) {
	concs := s.concurrencies()
	for i, c := range concs {
		if i > 0 && !Sleep(ctx, r.cfg.pause()) {
			return r.stopInPause(ctx, stepName(concs[i-1], 0), stepName(c, 0))
		}
		recs := r.closedStep(ctx, c, stepSpec{n: r.cfg.requestsFor(c), precision: analysis.TargetPrecision})
		r.finishStep(c, 0, recs)
		if reason, detail := r.stopAfter(ctx, stepKey{c: c}, recs); reason != "" {
			return reason, detail
		}
		if an := r.analyze(); an.FirstFailing != nil {
			return refine(ctx, r, c)
		}
	}
	return StopCompleted, fmt.Sprintf("every step up to the search's maximum of %d passed the knee rule", s.top)
}

// refine narrows the knee down between the knee and the first failing
// step (see analysis.NextRefinement), one step at a time, each sized by
// its noise as a doubling step is: it ends once its goodput is known as
// precisely as the half slot it must resolve needs, never before the
// least a steady state needs nor beyond the ladder's N. What the doubling
// steps measured bounds the concurrencies that cannot reach the plateau,
// which are never measured, and the refinement ends as soon as the rule
// has its answer.
func refine(ctx context.Context, r *runner, last int) (reason, detail string) {
	for {
		c, precision, ok := analysis.NextRefinement(r.analyze())
		if !ok {
			return StopCompleted, ""
		}
		if !Sleep(ctx, r.cfg.pause()) {
			return r.stopInPause(ctx, stepName(last, 0), stepName(c, 0))
		}
		recs := r.closedStep(ctx, c, stepSpec{n: r.cfg.requestsFor(c), precision: precision, refine: true})
		r.finishStep(c, 0, recs)
		if reason, detail := r.stopAfter(ctx, stepKey{c: c}, recs); reason != "" {
			return reason, detail
		}
		last = c
	}
}
