package probe

import "context"

// ladder is the closed-loop ramp over a fixed list of concurrencies, each
// step N requests (doubled once when its gain is ambiguous, unless the
// run is exact).
type ladder struct {
	steps []int
}

func (l ladder) check(c Config, p *problems) {
	notSearch(c, p)
	checkConcurrencies(p, "steps", l.steps)
	if n, ok := c.RequestsPerStep.Get(); ok && (n < 1 || n > MaxRequestsPerStep) {
		p.add("requests_per_step", "%d requests is outside 1..%d", n, MaxRequestsPerStep)
		return
	}
	c.checkStepSize(p, "requests_per_step", c.RequestsPerStep.IsSet(), l.steps, c.requestsFor)
}

func (l ladder) concurrencies() []int { return l.steps }

// run measures each step in turn until the ladder ends or a stop rule
// fires.
func (l ladder) run(ctx context.Context, r *runner) (reason, detail string) {
	for i, c := range l.steps {
		if i > 0 && !Sleep(ctx, r.cfg.pause()) {
			return r.stopInPause(ctx, stepName(l.steps[i-1], 0), stepName(c, 0))
		}
		recs := r.closedStep(ctx, c, stepSpec{n: r.cfg.requestsFor(c), extend: !r.cfg.Exact})
		r.finishStep(c, 0, recs)
		if reason, detail := r.stopAfter(ctx, stepKey{c: c}, recs); reason != "" {
			return reason, detail
		}
	}
	return StopCompleted, ""
}
