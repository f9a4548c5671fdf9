package simulate

import (
	"fmt"
	"sync"

	"github.com/plannerdev/planner/internal/signed"
)

// result assembles what the run measured, beside the plan.
func (s *sim) result() *Simulation {
	g := s.grid
	o := s.opts
	res := &Simulation{
		Settings: SimulationSettings{
			DurationS: o.DurationS, StartHour: o.StartHour, Seed: *o.Seed, Pacing: !o.NoPacing, AIMD: o.AIMD, Refill: o.Refill,
			RetryAfter: !o.NoRetryAfter, IntervalS: o.IntervalS, Intervals: g.n, MaxEvents: o.MaxEvents, Events: s.processed,
		},
		Classes:  make([]ClassRun, len(s.clients)),
		Quotas:   make([]KeyUse, len(s.keys)),
		Warnings: []string{},
	}
	// Each class's percentiles and intervals are selections over up to
	// options.Samples rows apiece, independent of the others': they are
	// worked out on every core.
	var wg sync.WaitGroup
	for i, c := range s.clients {
		for _, l := range []*level{&c.st.active, &c.st.queued, &c.st.window} {
			l.advance(g, s.end) // the grid is not safe for concurrent use
		}
		wg.Go(func() { res.Classes[i] = c.result() })
	}
	wg.Wait()
	for _, c := range s.clients {
		if d := c.spec.Demand; d != nil && len(d.Profile) > 0 && c.kind != ArrivalsReplay {
			res.Warnings = append(res.Warnings, fmt.Sprintf("class %s follows its demand profile: the plan's figures are for its steady rate", c.spec.Name))
		}
		if c.kind == ArrivalsReplay {
			res.Warnings = append(res.Warnings, fmt.Sprintf("class %s replays %s instead of its demand%s: the plan's figures are for its steady rate", c.spec.Name, c.replayed(), c.replayedAfter()))
		}
	}
	var overdrawn []string
	for i, k := range s.keys {
		q := KeyUse{Name: s.keyNames[i], RateLimited: k.limited, Dimensions: []LimitUse{}}
		for _, l := range k.limits {
			seconds := k.q.Seconds(l.dim)
			d := LimitUse{
				Dimension: l.dim.String(), Limit: l.limit, Allowance: signed.Round(l.allowance, 2), RateLimited: l.limited,
				Use: make([]float64, g.n), Peak: make([]float64, g.n),
			}
			var total float64
			for j := range g.n {
				total += l.use[j]
				d.Use[j] = signed.Round(l.use[j]*seconds/(l.limit*g.width(j)), 4)
				d.Peak[j] = signed.Round(l.peak(j), 4)
			}
			d.UseMean = signed.Round(total*seconds/(l.limit*s.end), 4)
			q.Dimensions = append(q.Dimensions, d)
			if why, over := dailyOverdrawn(s.keyNames[i], l, d.UseMean, seconds, s.end); over {
				overdrawn = append(overdrawn, why)
			}
		}
		res.Quotas[i] = q
	}
	unjudged := make([]bool, len(s.clients))
	for i, c := range s.clients {
		unjudged[i] = c.unjudged
	}
	res.Verdict = overall(res.Classes, unjudged, overdrawn)
	return res
}

// dailyOverdrawn says, of a daily limit that the run used at more than
// it allows over the key's active hours (use over 1) without meeting a
// 429 from it, when that pace spends it: the run ended before the
// limit ran out, but a day at its pace would answer the rest of its
// active hours with 429s, which the run is too short to show.
func dailyOverdrawn(name string, l *limit, use, activeS, end float64) (string, bool) {
	if !l.dim.Daily() || use <= 1 || l.limited > 0 {
		return "", false
	}
	return fmt.Sprintf("key %s: at this run's pace its %s of %s a day is spent after %s h of its %s active hours, and the rest of them would be answered 429, which this %s h run ends too soon to meet",
		name, l.dim, Num(l.limit), Num(activeS/3600/use), Num(activeS/3600), Num(end/3600)), true
}

// result is one class's figures, series and verdict, once its levels are
// advanced to the end of the run; it reads the run and writes nothing
// but the class's own rows, so that classes are worked out at once.
func (c *client) result() ClassRun {
	s := c.s
	g := s.grid
	st := &c.st
	var buf scratch
	cl := ClassRun{
		Name: c.spec.Name, Mode: c.spec.Mode, Quota: c.spec.Quota, Endpoint: c.w.Endpoint, Arrivals: c.kind,
		Pool: c.cp.Pool, Feasible: c.cp.Feasible, Predicted: c.cp.Predicted, PlanShed: c.cp.Shed,
		Idle: len(c.on) == 0 && c.kind != ArrivalsReplay,
	}
	cl.Counts, _, _ = Units(c.spec)
	T := s.end
	sm := Simulated{
		Requests: st.requests, Completed: st.completed, Sends: st.waitN + st.retries,
		OfferedRPS: signed.Round(float64(st.requests)/T, 4), ThroughputRPS: signed.Round(float64(st.completed)/T, 4),
		GoodputRPS: signed.Round(float64(st.good)/T, 4),
		Shed:       st.shed, RateLimited: st.limited, Retries: st.retries, GaveUp: st.gaveUp,
		Backlog: c.backlog(),
	}
	wait := func(v float64) float64 { return v }
	ttftOf := func(r [2]float64) float64 { return r[0] }
	e2eOf := func(r [2]float64) float64 { return r[1] }
	if st.waitN > 0 {
		sm.QueueWaitMeanMs = signed.Round(st.waitSum/float64(st.waitN)*1000, 1)
		sm.QueueWaitP95Ms = signed.Round(quantiles(&buf, st.waits.all(), wait, 0.95)[0]*1000, 1)
	}
	if hw, ok := st.waitBatches.halfWidth(); ok {
		sm.QueueWaitMeanCI95Ms = msPtr(hw)
	}
	ttft := quantiles(&buf, st.latency.all(), ttftOf, 0.5, 0.95, 0.99)
	e2e := quantiles(&buf, st.latency.all(), e2eOf, 0.5, 0.95, 0.99)
	if c.w.Task != nil {
		// An agent task's TTFT is its calls'; its E2E the whole task's.
		ttft = quantiles(&buf, st.callTTFT.all(), wait, 0.5, 0.95, 0.99)
	}
	sm.TTFTP50Ms, sm.TTFTP95Ms, sm.TTFTP99Ms = msPtr(ttft[0]), msPtr(ttft[1]), msPtr(ttft[2])
	sm.E2EP50Ms, sm.E2EP95Ms, sm.E2EP99Ms = msPtr(e2e[0]), msPtr(e2e[1]), msPtr(e2e[2])
	if hw, ok := sectionHalfWidth(&buf, &st.waits, wait, 0.95); ok {
		sm.QueueWaitP95CI95Ms = msPtr(hw)
	}
	ttftHW, ttftOK := sectionHalfWidth(&buf, &st.latency, ttftOf, 0.95)
	if c.w.Task != nil {
		ttftHW, ttftOK = sectionHalfWidth(&buf, &st.callTTFT, wait, 0.95)
	}
	if ttftOK {
		sm.TTFTP95CI95Ms = msPtr(ttftHW)
	}
	if hw, ok := sectionHalfWidth(&buf, &st.latency, e2eOf, 0.95); ok {
		sm.E2EP95CI95Ms = msPtr(hw)
	}
	tpot := quantiles(&buf, st.tpot.all(), wait, 0.5, 0.95, 0.99)
	sm.TPOTP50Ms, sm.TPOTP95Ms, sm.TPOTP99Ms = msPtr(tpot[0]), msPtr(tpot[1]), msPtr(tpot[2])
	if hw, ok := sectionHalfWidth(&buf, &st.tpot, wait, 0.95); ok {
		sm.TPOTP95CI95Ms = msPtr(hw)
	}
	c.atPercentile(&sm, &buf)
	var poolTime float64
	for _, v := range st.window.sum {
		poolTime += v
	}
	sm.PoolMean = signed.Round(poolTime/T, 2)
	cl.Simulated = sm
	cl.VsPlan = c.vsPlan(sm)
	cl.Series = ClassSeries{
		InFlight: st.active.means(g), Queued: st.queued.means(g),
		RateLimited: st.limitedIv, Shed: st.shedIv, Completed: st.doneIv,
	}
	if c.aimd {
		cl.Series.Pool = st.window.means(g)
	}
	cl.Verdict = c.verdict(sm)
	return cl
}

// backlog is the requests still waiting for a slot at the end of the run.
func (c *client) backlog() int {
	n := 0
	for _, r := range c.queue[c.head:] {
		if !r.gone {
			n++
		}
	}
	return n
}

// expectedRPS is the rate the plan expects the class to run at: its demand
// when the pool serves it with a stable queue, otherwise the pool's
// throughput flat out.
func (c *client) expectedRPS() float64 {
	x := c.cp.Predicted.ThroughputRPS
	if d := c.spec.Demand; d != nil && d.Rate() > 0 && d.Rate() < x {
		return d.Rate()
	}
	return x
}

func (c *client) vsPlan(sm Simulated) VsPlan {
	v := VsPlan{ExpectedRPS: signed.Round(c.expectedRPS(), 4)}
	rel := func(sim, plan float64) *float64 {
		if !(plan > 0) {
			return nil
		}
		e := signed.Round((sim-plan)/plan*100, 2)
		return &e
	}
	v.ThroughputErrorPct = rel(sm.ThroughputRPS, v.ExpectedRPS)
	if sm.TTFTP95Ms != nil && c.cp.Predicted.TTFTP95Ms != nil {
		v.TTFTP95ErrorPct = rel(*sm.TTFTP95Ms, *c.cp.Predicted.TTFTP95Ms)
	}
	if sm.E2EP95Ms != nil && c.cp.Predicted.E2EP95Ms != nil {
		v.E2EP95ErrorPct = rel(*sm.E2EP95Ms, *c.cp.Predicted.E2EP95Ms)
	}
	return v
}

// replayed counts a replaying class's arrivals in the run: "5 arrivals",
// or "5 of its 6 arrivals" when some of those given start after the run.
func (c *client) replayed() string {
	r := c.arr.(*replay)
	if r.given == len(r.times) {
		return fmt.Sprintf("%d arrivals", c.st.requests)
	}
	return fmt.Sprintf("%d of its %d arrivals", c.st.requests, r.given)
}

// replayedAfter says how many of a replaying class's given arrivals the
// run left out, starting after its end; "" when none.
func (c *client) replayedAfter() string {
	r := c.arr.(*replay)
	switch n := r.given - len(r.times); n {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(" (the other 1 starts after the run's %s s)", Num(c.s.end))
	default:
		return fmt.Sprintf(" (the other %d start after the run's %s s)", n, Num(c.s.end))
	}
}
