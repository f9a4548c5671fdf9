package verify

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/optional"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/scenario"
)

// validation is one call of Run: the plan and its probes, the budget and
// what was spent of it, and the report it fills in.
type validation struct {
	sc     scenario.Scenario // the plan's scenario, for the SLOs
	shaped scenario.Scenario // its classes shaped as their probes send them, for the predictions
	plan   *plan.Plan
	probes []*classProbe
	opts   Options
	budget probe.Budget
	rep    *Report
	spend  spend
}

// groups are the classes with a probe, by the plan's endpoint, in the
// order the endpoints first appear among the classes; an agent task
// class is a group of its own, validated alone.
func groups(p *plan.Plan, probes []*classProbe) [][]int {
	var out [][]int
	at := map[string]int{}
	for i, cp := range p.Classes {
		if probes[i] == nil {
			continue
		}
		if probes[i].task != nil {
			out = append(out, []int{i})
			continue
		}
		k, ok := at[cp.Endpoint]
		if !ok {
			k = len(out)
			at[cp.Endpoint] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], i)
	}
	return out
}

// member is one class in one step of its endpoint's validation.
type member struct {
	class int          // index in the plan
	cfg   probe.Config // a one-step probe at its concurrency
	n     int          // requests of its step, warm-up included
	warm  int          // its warm-up requests
	pred  plan.Prediction
}

// members are the classes of group g in one step (0: at their pools, 1: at
// 1.25 × them), with their predictions at the endpoint's total.
func (v *validation) members(g []int, step int) ([]member, error) {
	load := 0
	for _, i := range g {
		load += Concurrencies(v.plan.Classes[i].Pool)[step]
	}
	out := make([]member, 0, len(g))
	for _, i := range g {
		cp := v.plan.Classes[i]
		c := Concurrencies(cp.Pool)[step]
		pred, err := plan.PredictShared(v.shaped, cp.Name, c, load)
		if err != nil {
			return nil, fmt.Errorf("class %s: %w", cp.Name, err)
		}
		cfg := v.probes[i].cfg
		cfg.Steps = []int{c}
		n := v.opts.RequestsPerStep.Or(analysis.MinMeasured(c) + c)
		out = append(out, member{class: i, cfg: cfg, n: n, warm: cfg.Warmup.Or(min(c, n/2)), pred: pred})
	}
	return out, nil
}

// runGroup validates the classes of one endpoint: all at their pools at
// once, then all at 1.25 × them, and judges each.
func (v *validation) runGroup(ctx context.Context, g []int) error {
	names := make([]string, len(g))
	for k, i := range g {
		names[k] = v.plan.Classes[i].Name
		cr := &v.rep.Classes[i]
		cr.InputTokens, cr.OutputTokens = v.probes[i].in, v.probes[i].out
		if v.probes[i].capped != "" {
			cr.Reasons = append(cr.Reasons, v.probes[i].capped)
		}
	}
	for k, i := range g {
		v.rep.Classes[i].Together = slices.Concat(names[:k], names[k+1:])
	}
	for step := range 2 {
		ms, err := v.members(g, step)
		if err != nil {
			return err
		}
		ran := false
		if step == 0 || probe.Sleep(ctx, ms[0].cfg.Pause.Or(DefaultPause)) {
			left, spent := v.spend.left(v.budget)
			if spent == "" {
				spent = enough(left, ms, v.probes, names)
			}
			switch {
			case spent != "" && step == 0:
				for _, i := range g {
					v.rep.Classes[i].Verdict = VerdictSkipped
					v.rep.Classes[i].Reasons = append(v.rep.Classes[i].Reasons, "not run: "+spent)
				}
				return nil
			case spent == "":
				if err := v.runStep(ctx, ms, left, step); err != nil {
					return err
				}
				ran = true
			}
		}
		if !ran {
			for _, m := range ms {
				cr := &v.rep.Classes[m.class]
				cr.Points = append(cr.Points, Point{Concurrency: m.pred.Concurrency, Load: m.pred.Load, Predicted: m.pred})
			}
		}
	}
	for _, i := range g {
		judge(v.sc, v.plan.Classes[i], &v.rep.Classes[i], v.opts.tolerancePct())
	}
	return nil
}

// enough says why the budget left cannot pay for a step of the members,
// each at its n requests (of about its prompt and answer in tokens), or
// "" when it can.
func enough(left probe.Budget, ms []member, probes []*classProbe, names []string) string {
	requests, tokens := 0, 0
	for _, m := range ms {
		requests += m.n
		tokens += m.n * (probes[m.class].in + probes[m.class].out)
	}
	who := "class " + names[0]
	if len(names) > 1 {
		who = "classes " + strings.Join(names, ", ") + " together"
	}
	if n, ok := left.MaxRequests.Get(); ok && n < requests {
		return fmt.Sprintf("the validation's request budget has %d requests left, fewer than the %d a step of %s needs", n, requests, who)
	}
	if n, ok := left.MaxTokens.Get(); ok && n < tokens {
		return fmt.Sprintf("the validation's token budget has %d tokens left, fewer than the about %d a step of %s needs", n, tokens, who)
	}
	return ""
}

// runStep runs one step of the members, together, and adds each one's
// point to its report and what it spent to the validation's.
func (v *validation) runStep(ctx context.Context, ms []member, left probe.Budget, step int) error {
	results, err := v.together(ctx, ms, left)
	if err != nil {
		return err
	}
	for k, m := range ms {
		res := results[k]
		v.spend.requests += res.Sent
		v.spend.tokens += res.TokensUsed
		cr := &v.rep.Classes[m.class]
		if step == 0 {
			cr.StopReason = res.StopReason
			if err := res.Failure(); err != nil {
				cr.Failure = err.Error()
			}
		}
		pt := Point{Concurrency: m.pred.Concurrency, Load: m.pred.Load, Predicted: m.pred}
		if meas, ok := measuredAt(res, pt.Concurrency); ok {
			meas.SLO = sloAttainment(v.sc, cr.Class, res, pt.Concurrency)
			pt.Measured = &meas
			pt.RelativeErrorPct = &Errors{
				ThroughputRPS: relPct(meas.ThroughputRPS, m.pred.ThroughputRPS),
				TTFTP95Ms:     relPct(meas.TTFTP95Ms, m.pred.TTFTP95Ms),
				E2EP95Ms:      relPct(meas.E2EP95Ms, m.pred.E2EP95Ms),
			}
			pt.IntervalErrorPct = intervalErrors(pt)
		}
		cr.Points = append(cr.Points, pt)
	}
	return nil
}

// together runs one step of each member at once and returns their
// results in order. A member alone runs its step of n requests as any
// probe does. Several keep their pools full until every one has measured
// its n − warm-up requests, and then all stop: each member's step may send
// up to twice what the slowest member takes, at the predicted rates, to
// keep its share of the load up meanwhile, within the budget left, which
// they share (every member's n first, the rest by what each may send
// beyond it).
func (v *validation) together(ctx context.Context, ms []member, left probe.Budget) ([]*probe.Result, error) {
	if len(ms) == 1 {
		cfg := ms[0].cfg
		cfg.Budget = left
		res, err := probe.Run(ctx, cfg, nil)
		if err != nil {
			return nil, err
		}
		return []*probe.Result{res}, nil
	}
	longest := 0.0 // seconds the slowest member takes for its n, as predicted
	for _, m := range ms {
		if m.pred.ThroughputRPS > 0 {
			longest = math.Max(longest, float64(m.n)/m.pred.ThroughputRPS)
		}
	}
	limit := probe.MaxRequestsPerStep
	if v.opts.Caps != nil {
		limit = min(limit, v.opts.Caps.MaxRequests)
	}
	caps := make([]int, len(ms))
	for k, m := range ms {
		caps[k] = max(m.n, min(limit, int(math.Ceil(2*longest*m.pred.ThroughputRPS))))
	}
	budgets := shareBudget(left, ms, caps, v.probes)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	co := &coordinator{need: make([]int, len(ms)), got: make([]int, len(ms)), ended: make([]bool, len(ms)), cancel: cancel}
	for k, m := range ms {
		co.need[k] = m.n - m.warm
	}
	results := make([]*probe.Result, len(ms))
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for k, m := range ms {
		cfg := m.cfg
		cfg.RequestsPerStep, cfg.Warmup, cfg.Budget = optional.Of(caps[k]), optional.Of(m.warm), budgets[k]
		wg.Go(func() {
			results[k], errs[k] = probe.Run(runCtx, cfg, memberObserver{co, k})
			co.end(k)
		})
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("class %s: %w", v.plan.Classes[ms[k].class].Name, err)
		}
	}
	if co.stopped() && ctx.Err() == nil {
		for _, res := range results {
			if res.StopReason == probe.StopCancelled {
				res.StopReason, res.StopDetail = probe.StopCompleted, "every class of the endpoint had measured its step"
			}
		}
	}
	return results, nil
}

// shareBudget divides the budget left among the members of a step: each
// gets its n requests first (the caller checked that they fit), and the
// rest in proportion to what it may send beyond its n (caps); tokens in
// proportion to each member's requests times its request's size. The time
// budget is every member's.
func shareBudget(left probe.Budget, ms []member, caps []int, probes []*classProbe) []probe.Budget {
	out := make([]probe.Budget, len(ms))
	base, beyond, weight := 0, 0, 0.0
	for k, m := range ms {
		base += m.n
		beyond += caps[k] - m.n
		weight += float64(caps[k] * (probes[m.class].in + probes[m.class].out))
	}
	for k, m := range ms {
		out[k].MaxDuration = left.MaxDuration
		if n, ok := left.MaxRequests.Get(); ok {
			extra := 0
			if beyond > 0 {
				extra = (n - base) * (caps[k] - m.n) / beyond
			}
			out[k].MaxRequests = optional.Of(m.n + extra)
		}
		if n, ok := left.MaxTokens.Get(); ok && weight > 0 {
			out[k].MaxTokens = optional.Of(max(1, int(float64(n)*float64(caps[k]*(probes[m.class].in+probes[m.class].out))/weight)))
		}
	}
	return out
}

// coordinator stops the members of a step once every one of them has
// measured what it needs, or has ended by itself.
type coordinator struct {
	mu     sync.Mutex
	need   []int // measured requests each member needs
	got    []int
	ended  []bool
	done   bool // it stopped them
	cancel context.CancelFunc
}

func (co *coordinator) measured(k int) {
	co.mu.Lock()
	defer co.mu.Unlock()
	co.got[k]++
	co.settle()
}

func (co *coordinator) end(k int) {
	co.mu.Lock()
	defer co.mu.Unlock()
	co.ended[k] = true
	co.settle()
}

// settle stops the members when none needs more; the caller holds mu.
func (co *coordinator) settle() {
	if co.done {
		return
	}
	stop, running := true, false
	for k := range co.need {
		if !co.ended[k] {
			running = true
			stop = stop && co.got[k] >= co.need[k]
		}
	}
	if stop && running {
		co.done = true
		co.cancel()
	}
}

func (co *coordinator) stopped() bool {
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.done
}

// memberObserver counts a member's measured requests for the coordinator.
type memberObserver struct {
	co *coordinator
	k  int
}

func (o memberObserver) StepStarted(int, int) {}

func (o memberObserver) Record(r measure.Record) {
	if !r.Warmup && r.ErrorClass != measure.ErrCancelled {
		o.co.measured(o.k)
	}
}

func (o memberObserver) StepDone(measure.Step) {}
