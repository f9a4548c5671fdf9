package app

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dustin/go-humanize"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
	"github.com/plannerdev/planner/internal/simulate"
)

// The check's bounds (docs/concepts.md, "The check"). A run lasts long
// enough for its slowest class to send checkRequests requests, between
// checkMinS and checkMaxS of simulated time, and no longer than its share
// of checkEvents events: at about 0.2 µs an event on the project's
// machine, a check of three classes costs well under the 20 ms a plan may
// take with it, and 4,000 requests give each of 20 sections 200, enough
// for the sectioning interval of a p95.
const (
	checkRequests = 4000
	checkMinS     = 15 * 60.0
	checkMaxS     = 2 * 3600.0
	checkEvents   = 100_000
	// checkRounds bounds how often min_pools are raised and the plan made
	// again.
	checkRounds = 3
	// checkName names the check in the engine's cache of checked plans.
	checkName = "check v1"
)

// check is the plan.Checker of every plan the command line, the service
// and the page return: the plan's own short seeded simulation of the same
// plan, by which each class fits only when the analytic plan and the
// simulation both hold. Where the plan is feasible but its simulation
// breaks for a class on latency or on keeping pace, the class's min_pool
// is raised above its pool and the plan made again, at most checkRounds
// times, and the check keeps the plan in which the most classes fit (the
// first of those). A class that does not fit in the end has the metrics
// that break named, with their miss, and its remedies checked by the
// same simulation (checkRemedies).
func (a *App) check(ctx context.Context, s scenario.Scenario, p *plan.Plan, replan plan.Replanner) (*plan.Plan, error) {
	best, err := a.checkPools(ctx, s, p, replan)
	if err != nil {
		return nil, err
	}
	return a.checkRemedies(ctx, s, best)
}

// checkPools is check without the check of the remedies: the plan with
// its own simulation, min_pools raised where it breaks.
func (a *App) checkPools(ctx context.Context, s scenario.Scenario, p *plan.Plan, replan plan.Replanner) (*plan.Plan, error) {
	floors := map[string]int{}
	raisedFrom := map[string]int{}
	why := map[string]string{}
	var best *plan.Plan
	for round := 0; ; round++ {
		out, err := a.checked(ctx, s, p, round, raisedFrom, why)
		if err != nil {
			return nil, err
		}
		if best == nil || fitting(out) > fitting(best) {
			best = out
		}
		if round == checkRounds {
			return best, nil
		}
		raise := false
		for _, c := range out.Classes {
			if !c.Feasible || c.Check.Holds || !liftable(c.Check.Misses) {
				continue
			}
			step := max(1, int(math.Ceil(float64(c.Pool)*0.125*math.Pow(2, float64(round)))))
			f := max(c.Pool+step, floors[c.Name]+1)
			if _, ok := raisedFrom[c.Name]; !ok && c.MinPool != nil {
				raisedFrom[c.Name] = *c.MinPool
			}
			floors[c.Name] = f
			why[c.Name] = fmt.Sprintf("at a pool of %d its own simulation broke: %s", c.Pool, c.Check.Summary)
			raise = true
		}
		if !raise {
			return best, nil
		}
		if p, err = replan(ctx, floors); err != nil {
			return nil, err
		}
	}
}

// checkRemedies checks the remedies of every class that does not fit and
// whose remedies relax a target, by planning (without remedies) and
// checking the scenario with them written in, as a team applies them.
// The queueing model sizes a relaxed target at its own
// value at the percentile, which the simulation sees with its noise,
// often a little above: where the simulation of the changed scenario
// breaks a relaxed target, the target is raised to what it sees there,
// rounded up to the millisecond, and checked again, at most
// remedyChecks times. A class whose remedies still leave it unfit there
// says so in a warning.
func (a *App) checkRemedies(ctx context.Context, s scenario.Scenario, p *plan.Plan) (*plan.Plan, error) {
	out := p
	for i, c := range p.Classes {
		if c.Fitting() || !slices.ContainsFunc(c.Remedies, func(rm plan.Remedy) bool { return strings.Contains(rm.Path, "/slo/") }) {
			continue
		}
		rems, warning, err := a.checkedRemedies(ctx, s, i, c.Remedies)
		if err != nil {
			return nil, err
		}
		if warning == "" && slices.Equal(rems, c.Remedies) {
			continue
		}
		if out == p {
			cp := *p
			cp.Classes = slices.Clone(p.Classes)
			out = &cp
		}
		out.Classes[i].SetRemedies(rems, warning)
	}
	return out, nil
}

// remedyChecks bounds how often a class's relaxed targets are raised to
// what the simulation of the changed scenario sees.
const remedyChecks = 3

// checkedRemedies is class i's remedies rems once the simulation of the
// scenario with them written in has checked them, and a warning when the
// class does not fit there.
func (a *App) checkedRemedies(ctx context.Context, s scenario.Scenario, i int, rems []plan.Remedy) ([]plan.Remedy, string, error) {
	rems = slices.Clone(rems)
	for round := 0; ; round++ {
		changed, err := plan.WithRemedies(s, rems)
		if err != nil {
			return rems, "", nil // the engine wrote these remedies into the scenario when it made them
		}
		p, err := a.eng.PlanCheckedWithoutRemedies(ctx, changed, checkName, a.checkPools)
		if err != nil {
			if ctx.Err() != nil {
				return nil, "", ctx.Err()
			}
			return rems, "", nil
		}
		c := p.Classes[i]
		if c.Fitting() {
			return rems, "", nil
		}
		raised := false
		for k, rm := range rems {
			if v, ok := simulatedOver(p, rm); ok && round < remedyChecks {
				rems[k], raised = rm.RaisedTo(v), true
			}
		}
		if !raised {
			why := c.Check.Summary
			if !c.Feasible {
				why = "the queueing model gives it a pool of " + fmt.Sprint(c.Pool) + ", bound by " + c.BindingConstraint
			}
			return rems, "with its remedies written into the scenario it still does not fit: " + why, nil
		}
	}
}

// simulatedOver is the target that the SLO remedy rm must be raised to,
// in whole milliseconds, where the checked plan p of the scenario with rm
// written in breaks it: the largest value over it that the check (or the
// plan's predictions) of the remedy's class gives for its metric; false
// for a remedy of no target, a target that holds there, or a value the
// field may not take.
func simulatedOver(p *plan.Plan, rm plan.Remedy) (float64, bool) {
	_, field, ok := strings.Cut(rm.Path, "/slo/")
	if !ok || rm.Class == "" {
		return 0, false
	}
	metric := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(field, "_ms"), "task_"), "_p95") + "_"
	k := slices.IndexFunc(p.Classes, func(c plan.ClassPlan) bool { return c.Name == rm.Class })
	if k < 0 || p.Classes[k].Check == nil {
		return 0, false
	}
	v := 0.0
	for _, m := range p.Classes[k].Check.Misses {
		if strings.HasPrefix(strings.TrimPrefix(m.Metric, "predicted_"), metric) && m.Value != nil && m.Bound == rm.Value {
			v = math.Max(v, math.Max(math.Ceil(*m.Value), rm.Value+1))
		}
	}
	if v == 0 {
		return 0, false
	}
	ptr, err := scenario.ParsePointer(rm.Path)
	if err != nil || len(ptr.Check(v)) > 0 {
		return 0, false
	}
	return v, true
}

// fitting counts the classes of a checked plan that fit.
func fitting(p *plan.Plan) int {
	n := 0
	for _, c := range p.Classes {
		if c.Fitting() {
			n++
		}
	}
	return n
}

// liftable reports whether a larger pool may mend what broke: latency
// (the queue), shedding, or arrivals outpacing the pool. More slots do
// not mend 429s: they send more.
func liftable(ms []plan.Miss) bool {
	for _, m := range ms {
		switch m.Metric {
		case "ttft_p95_ms", "e2e_p95_ms", "ttft_ms_at_percentile", "e2e_ms_at_percentile", "backlog", "batch_hours", "lost_share":
			return true
		}
	}
	return false
}

// checked is the plan with its check: a copy of p (which may be shared)
// with every class judged on its own simulation.
func (a *App) checked(ctx context.Context, s scenario.Scenario, p *plan.Plan, rounds int, raisedFrom map[string]int, why map[string]string) (*plan.Plan, error) {
	runs, byClass, edges, err := a.simulateCheck(ctx, s, p)
	if err != nil {
		return nil, err
	}
	out := *p
	out.Classes = slices.Clone(p.Classes)
	out.Warnings = slices.Clone(p.Warnings)
	ch := &plan.Check{Holds: true, Runs: runs, Rounds: rounds}
	var broken []string
	for i := range out.Classes {
		c := &out.Classes[i]
		cc := byClass[i]
		if from, ok := raisedFrom[c.Name]; ok && c.MinPool != nil && *c.MinPool > from {
			cc.MinPoolRaisedFrom = &from
			c.Warnings = append(slices.Clone(c.Warnings), fmt.Sprintf("min_pool raised from %d to %d by the plan's check: %s", from, *c.MinPool, why[c.Name]))
		}
		analytic := predictedMisses(s.Classes[i], *c)
		fits := c.Feasible && len(analytic) == 0 && cc.Holds
		c.Fits = &fits
		if c.Feasible {
			cc.Misses = append(cc.Misses, analytic...)
		}
		c.Check = cc
		if !cc.Holds {
			ch.Holds = false
			broken = append(broken, fmt.Sprintf("%s (%s)", c.Name, cc.Summary))
		}
		if fits && len(edges[i]) > 0 {
			c.Warnings = append(slices.Clone(c.Warnings), fmt.Sprintf("fits at the edge of its SLO: in the check's run %s; a longer run may miss it (planner simulate --duration 4h tells more)", strings.Join(edges[i], "; ")))
		}
		if c.Feasible && !fits {
			c.NotFitting(cc.Summary)
			out.Warnings = append(out.Warnings, fmt.Sprintf("class %s is feasible by the queueing model but does not fit by its own simulation: %s", c.Name, cc.Summary))
		}
	}
	if ch.Holds {
		ch.Summary = "the plan's own simulation holds for every class"
	} else {
		ch.Summary = "the plan's own simulation breaks for " + strings.Join(broken, "; ")
	}
	out.Check = ch
	return &out, nil
}

// predictedMisses are the SLO targets the plan's own predictions at the
// pool do not meet, each held to the value at the SLO's percentile as the
// simulation's are (simulate.Targets).
func predictedMisses(spec scenario.Class, c plan.ClassPlan) []plan.Miss {
	var out []plan.Miss
	pr := c.Predicted
	at := simulate.Simulated{TTFTP95Ms: pr.TTFTP95Ms, E2EP95Ms: pr.E2EP95Ms,
		Percentile: pr.Percentile, TTFTMsAtPercentile: pr.TTFTMsAtPercentile, E2EMsAtPercentile: pr.E2EMsAtPercentile, TPOTMsAtPercentile: pr.TPOTMsAtPercentile}
	for _, t := range simulate.Targets(spec.SLO, at) {
		if t.Got != nil && *t.Got > t.Bound {
			out = append(out, plan.Miss{Metric: "predicted_" + t.Metric, Value: t.Got, Bound: t.Bound, OverPct: ptr(overPct(*t.Got, t.Bound)),
				Detail: fmt.Sprintf("the predicted %s %s %s ms is over the SLO of %s ms", t.Name, t.At, simulate.Num(*t.Got), simulate.Num(t.Bound))})
		}
	}
	return out
}

// simulateCheck runs the plan's check: one run for a plan of the whole
// day, or one for each window of the day from its start, each judging the
// classes that run then. byClass has every class's check: for a class in
// several windows, from its first run that breaks, else from the window
// that sets its pool; edges has, for each, the targets that check meets
// at their edge (judge).
func (a *App) simulateCheck(ctx context.Context, s scenario.Scenario, p *plan.Plan) (runs []plan.CheckRun, byClass []*plan.ClassCheck, edges [][]string, err error) {
	type window struct {
		start, hours float64
		active       []bool
		sets         []bool
	}
	wins := []window{{hours: 24, active: allTrue(len(p.Classes)), sets: allTrue(len(p.Classes))}}
	if len(p.Windows) > 0 {
		wins = nil
		for _, w := range p.Windows {
			win := window{start: w.StartHour, hours: w.Hours, active: make([]bool, len(p.Classes)), sets: make([]bool, len(p.Classes))}
			for _, wc := range w.Classes {
				if i := slices.IndexFunc(p.Classes, func(c plan.ClassPlan) bool { return c.Name == wc.Name }); i >= 0 {
					win.active[i], win.sets[i] = true, wc.SetsPool
				}
			}
			wins = append(wins, win)
		}
	}
	byClass = make([]*plan.ClassCheck, len(p.Classes))
	edges = make([][]string, len(p.Classes))
	budget := checkEvents / len(wins)
	for _, w := range wins {
		o := simulate.Options{DurationS: checkDuration(p, w.active, budget, w.hours), StartHour: w.start, MaxEvents: 3 * budget}
		o.IntervalS = math.Ceil(o.DurationS / 20)
		cr := plan.CheckRun{StartHour: w.start, DurationS: o.DurationS, MaxEvents: o.MaxEvents, Classes: []string{}}
		for i, c := range p.Classes {
			if w.active[i] {
				cr.Classes = append(cr.Classes, c.Name)
			}
		}
		sim, err := simulate.RunPlan(ctx, a.eng, s, p, o)
		var oe simulate.OptionErrors
		switch {
		case errors.As(err, &oe):
			// Retries took it past its events: a storm the plan did not
			// foresee breaks every class the run judges.
			for i := range p.Classes {
				if w.active[i] && (byClass[i] == nil || byClass[i].Holds) {
					byClass[i] = &plan.ClassCheck{StartHour: w.start, Summary: "its run stopped at its event cap: " + oe.Error(),
						Misses: []plan.Miss{{Metric: "events", Value: ptr(float64(o.MaxEvents)), Bound: float64(o.MaxEvents), OverPct: ptr(0.0), Detail: oe.Error()}}}
				}
			}
			runs = append(runs, cr)
			continue
		case err != nil:
			return nil, nil, nil, fmt.Errorf("check the plan: %w", err)
		}
		cr.Seed, cr.Events = sim.Settings.Seed, sim.Settings.Events
		runs = append(runs, cr)
		for i, run := range sim.Classes {
			if !w.active[i] {
				continue
			}
			cc, at := judge(s.Classes[i], run, w.start)
			switch prev := byClass[i]; {
			case prev == nil, prev.Holds && !cc.Holds, prev.Holds && cc.Holds && w.sets[i]:
				byClass[i], edges[i] = cc, at
			}
		}
	}
	for i := range byClass {
		if byClass[i] == nil { // runs in no window: no pool to check
			byClass[i] = &plan.ClassCheck{Holds: true, Summary: "not simulated: it runs at no time of day", Misses: []plan.Miss{}}
		}
	}
	return runs, byClass, edges, nil
}

func allTrue(n int) []bool {
	v := make([]bool, n)
	for i := range v {
		v[i] = true
	}
	return v
}

// checkDuration is how long a check's run lasts: long enough for the
// slowest of its classes to send checkRequests requests, within checkMinS
// and checkMaxS and the window's hours, and short enough for about
// 2.5 events a request (arrival, completion, pacing and retries; an agent
// task's, a call) to fit in its budget. A class without a pool sends
// nothing, but its arrivals still come, each shed as it comes: they count
// against the budget, at its demand.
func checkDuration(p *plan.Plan, active []bool, budget int, hours float64) float64 {
	total, slowest := 0.0, math.Inf(1)
	for i, c := range p.Classes {
		if !active[i] {
			continue
		}
		if c.Pool < 1 {
			total += c.Predicted.OfferedRPS
			continue
		}
		rate := c.Predicted.ThroughputRPS
		if d := c.Predicted.OfferedRPS; d > 0 && d < rate {
			rate = d
		}
		if rate > 0 {
			calls := 1.0 // an agent task's calls each make their events
			if c.Task != nil {
				calls = c.Task.Calls
			}
			total += rate * calls
			slowest = math.Min(slowest, rate)
		}
	}
	d := checkMinS
	if total > 0 {
		d = min(max(checkRequests/slowest, checkMinS), checkMaxS, float64(budget)/(2.5*total))
	}
	return math.Max(simulate.MinDurationS, math.Floor(min(d, hours*3600)))
}

// judge is a class's check from its run: its SLOs met at their
// percentile (simulate.Target.Met), at most 1 % of its sends answered
// 429, at most 1 % of its requests shed or given up, and its arrivals
// served (a batch done in its window), with what breaks and by how much;
// and, for a check that holds, the targets it meets at their edge
// (simulate.Target.AtEdge), in words.
func judge(spec scenario.Class, run simulate.ClassRun, start float64) (*plan.ClassCheck, []string) {
	sm := run.Simulated
	cc := &plan.ClassCheck{StartHour: start, Requests: sm.Requests, Completed: sm.Completed, Shed: sm.Shed,
		TTFTP95Ms: estimate(sm.TTFTP95Ms, sm.TTFTP95CI95Ms), E2EP95Ms: estimate(sm.E2EP95Ms, sm.E2EP95CI95Ms),
		TPOTP95Ms: estimate(sm.TPOTP95Ms, sm.TPOTP95CI95Ms), Misses: []plan.Miss{}}
	if sm.Sends > 0 {
		cc.QueueWaitP95Ms = estimate(&sm.QueueWaitP95Ms, sm.QueueWaitP95CI95Ms)
		cc.RateLimitedShare = signed.Round(float64(sm.RateLimited)/float64(sm.Sends), 4)
	}
	if sm.Requests > 0 {
		cc.LostShare = signed.Round(float64(sm.Shed+sm.GaveUp)/float64(sm.Requests), 4)
	}
	// miss records what breaks; value nil when nothing completed to give it.
	missAt := func(metric string, value *float64, bound float64, format string, args ...any) {
		m := plan.Miss{Metric: metric, Value: value, Bound: bound, Detail: fmt.Sprintf(format, args...)}
		if value != nil {
			m.OverPct = ptr(overPct(*value, bound))
		}
		cc.Misses = append(cc.Misses, m)
	}
	miss := func(metric string, value, bound float64, format string, args ...any) {
		missAt(metric, &value, bound, format, args...)
	}
	unit, one, rate := simulate.Units(spec)
	targets := simulate.Targets(spec.SLO, sm)
	var edges []string
	if sm.Requests > 0 {
		for _, t := range targets {
			got := estimate(t.Got, t.CI95)
			switch {
			case got == nil:
				missAt(t.Metric, nil, t.Bound, "no %s completed, so the %s SLO of %s ms is not met", one, t.Name, simulate.Num(t.Bound))
			case !t.Met():
				miss(t.Metric, got.Value, t.Bound, "%s %s %s%s ms is over the SLO of %s ms by %s %%", t.Name, t.At, simulate.Num(got.Value), within(got), simulate.Num(t.Bound), simulate.Num(overPct(got.Value, t.Bound)))
			case t.AtEdge():
				edges = append(edges, fmt.Sprintf("%s %s %s%s ms is within the SLO of %s ms, but its 95 %% interval reaches %s ms", t.Name, t.At, simulate.Num(got.Value), within(got), simulate.Num(t.Bound), simulate.Num(got.Value+*got.CI95)))
			}
		}
	}
	if cc.RateLimitedShare > simulate.MaxLimitedShare {
		miss("rate_limited_share", cc.RateLimitedShare, simulate.MaxLimitedShare, "%s of %s sends answered 429 (%.1f %%, over 1 %%)", count(sm.RateLimited), count(sm.Sends), 100*cc.RateLimitedShare)
	}
	if cc.LostShare > simulate.MaxLostShare {
		miss("lost_share", cc.LostShare, simulate.MaxLostShare, "%s of %s %s shed or given up (%.1f %%, over 1 %%)", count(sm.Shed+sm.GaveUp), count(sm.Requests), unit, 100*cc.LostShare)
	}
	if run.Arrivals != simulate.ArrivalsClosedLoop && !run.Idle {
		keeps := run.KeepsPace()
		if d := spec.Demand; d != nil && d.Requests > 0 {
			cc.BatchDone = &keeps
			if !keeps {
				hours := math.Inf(1)
				if sm.ThroughputRPS > 0 {
					hours = d.Requests / sm.ThroughputRPS / 3600
				}
				miss("batch_hours", math.Min(hours, 1e9), d.WithinHours, "at %s req/s the batch of %s requests takes %s h, over its %s h window", simulate.Num(sm.ThroughputRPS), count(int(d.Requests)), simulate.Num(math.Min(hours, 1e9)), simulate.Num(d.WithinHours))
			}
		} else if !keeps {
			bound := math.Max(float64(run.Pool), 0.01*float64(sm.Requests))
			miss("backlog", float64(sm.Backlog), bound, "fell behind: %s %s waiting at the end; it served %s %s of the %s %s that arrived", count(sm.Backlog), unit, simulate.Num(sm.ThroughputRPS), rate, simulate.Num(sm.OfferedRPS), rate)
		}
	}
	cc.Holds = len(cc.Misses) == 0
	cc.Summary = summary(cc, targets)
	if !cc.Holds {
		edges = nil
	}
	return cc, edges
}

// summary says what a class's check saw, in a line.
func summary(cc *plan.ClassCheck, targets []simulate.Target) string {
	if !cc.Holds {
		parts := make([]string, len(cc.Misses))
		for k, m := range cc.Misses {
			parts[k] = m.Detail
		}
		return strings.Join(parts, "; ")
	}
	var parts []string
	if cc.Requests == 0 {
		return "it sent nothing in its run"
	}
	for _, t := range targets {
		if got := estimate(t.Got, t.CI95); got != nil {
			parts = append(parts, fmt.Sprintf("%s %s %s%s ms within %s ms", t.Name, t.At, simulate.Num(got.Value), within(got), simulate.Num(t.Bound)))
		}
	}
	parts = append(parts, fmt.Sprintf("%.1f %% of sends answered 429", 100*cc.RateLimitedShare))
	if cc.BatchDone != nil {
		parts = append(parts, "its pool keeps pace with the batch")
	}
	return "holds: " + strings.Join(parts, ", ")
}

func estimate(v, hw *float64) *plan.Estimate {
	if v == nil {
		return nil
	}
	return &plan.Estimate{Value: *v, CI95: hw}
}

// within is " ± h" for an estimate with an interval.
func within(e *plan.Estimate) string {
	if e.CI95 == nil {
		return ""
	}
	return " ± " + simulate.Num(*e.CI95)
}

// overPct is how far v is over bound, in per cent, at most maxOverPct: a
// target near zero (an SLO of a fraction of a microsecond) would make
// any miss infinitely far over.
func overPct(v, bound float64) float64 {
	if !(bound > 0) {
		return 0
	}
	return math.Min(maxOverPct, math.Round((v-bound)/bound*1000)/10)
}

// ptr is a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// maxOverPct bounds a miss's over_pct: a billion per cent over.
const maxOverPct = 1e9

func count(n int) string { return humanize.Comma(int64(n)) }
