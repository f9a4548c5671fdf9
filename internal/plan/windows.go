package plan

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// dayWindow is a span of the day in which one set of classes runs
// (docs/concepts.md, "Time windows"): from start, hours after midnight
// UTC, for hours, past midnight when it ends after 24:00.
type dayWindow struct {
	start, hours float64
	active       []bool // by class
}

// windowsOf cuts the day at every class's start and end and lists the
// spans in which some class runs, each with the classes that run in it,
// in the order of the day from midnight (a span that runs past midnight
// is one window, listed where it starts). It is nil when no class has a
// schedule shorter than a day: the plan is then one of the whole day.
func windowsOf(s scenario.Scenario) []dayWindow {
	cuts := []float64{0, 24}
	for _, c := range s.Classes {
		if sc := c.Schedule; sc != nil && sc.Hours < 24 {
			cuts = append(cuts, sc.StartHour, math.Mod(sc.StartHour+sc.Hours, 24))
		}
	}
	if len(cuts) == 2 {
		return nil
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	var spans []dayWindow
	for k := 0; k+1 < len(cuts); k++ {
		lo, hi := cuts[k], cuts[k+1]
		w := dayWindow{start: lo, hours: hi - lo, active: make([]bool, len(s.Classes))}
		for i, c := range s.Classes {
			w.active[i] = c.Schedule.Covers((lo + hi) / 2)
		}
		if n := len(spans); n > 0 && slices.Equal(spans[n-1].active, w.active) {
			spans[n-1].hours += w.hours
			continue
		}
		spans = append(spans, w)
	}
	// The span that ends at midnight continues into the one that starts it.
	if n := len(spans); n > 1 && slices.Equal(spans[0].active, spans[n-1].active) {
		spans[n-1].hours += spans[0].hours
		spans = spans[1:]
	}
	out := spans[:0]
	for _, w := range spans {
		if slices.Contains(w.active, true) {
			out = append(out, w)
		}
	}
	return out
}

// holds reports whether class i runs in the window.
func (w *dayWindow) holds(i int) bool { return w.active[i] }

// isolateIdle gives each class that does not run in the window an endpoint
// of its own, without a knee: it takes no part in the budgets or the load
// of the endpoints the window's classes share.
func (w *dayWindow) isolateIdle(eps []*endpoint, models []*classModel) []*endpoint {
	var out, idle []*endpoint
	for _, e := range eps {
		var members []int
		for _, i := range e.members {
			if w.holds(i) {
				members = append(members, i)
				continue
			}
			idle = append(idle, &endpoint{name: e.name, own: true, path: e.path, safety: models[i].safety,
				members: []int{i}, curve: e.curve, kneeBudget: -1})
		}
		if len(members) == 0 {
			continue
		}
		e.members = members
		e.safety = 1
		for _, i := range members {
			e.safety = math.Min(e.safety, models[i].safety)
		}
		if e.knee != nil {
			e.kneeBudget = int(math.Floor(e.safety*float64(*e.knee) + tolerance))
		}
		out = append(out, e)
	}
	return append(out, idle...)
}

// activeOnly is the members that run in the run's window (all of them for
// a plan of the whole day).
func (r *run) activeOnly(members []int) []int {
	if r.window == nil {
		return members
	}
	var out []int
	for _, i := range members {
		if r.window.holds(i) {
			out = append(out, i)
		}
	}
	return out
}

// shared reports whether the endpoint is one the window's classes send to
// (not one of an idle class's own).
func (r *run) shared(e *endpoint) bool {
	return r.window == nil || r.window.holds(e.members[0])
}

// profilePeak is the largest factor of a demand's profile, when it is
// above 1: the plan is sized at the profile's peak (docs/concepts.md,
// "Demand and min_pool").
func profilePeak(d *scenario.Demand) float64 {
	peak := 1.0
	if d != nil {
		for _, w := range d.Profile {
			peak = math.Max(peak, w.Factor)
		}
	}
	return peak
}

// profileVolume is the volume of the busiest day of a demand with a
// profile against its steady rate's over the key's active hours: 1 +
// Σ (factor − 1)·overlap/(active_hours·3600) over the windows that
// overlap a day of 86,400 s of simulated time, at the day where that is
// largest, never below 1 (a pause does not lower what a day may send:
// the days after the profile's windows run at the steady rate) and never
// above peak (no day sends more than its peak rate all its hours). A
// batch's volume is its requests, whatever the profile: 1.
func profileVolume(d *scenario.Demand, k quota.Key, peak float64) float64 {
	if d == nil || len(d.Profile) == 0 || d.Requests > 0 {
		return 1
	}
	const day = 86400.0
	// The busiest day starts a window, ends one or lies inside one: those
	// days are enough to look at.
	var days []float64
	for _, w := range d.Profile {
		first, last := math.Floor(w.StartS/day), math.Floor((w.StartS+w.DurationS)/day)
		days = append(days, first, math.Min(first+1, last), last)
	}
	best := 0.0
	for _, n := range days {
		lo, hi := n*day, (n+1)*day
		var extra float64
		for _, w := range d.Profile {
			if o := math.Min(hi, w.StartS+w.DurationS) - math.Max(lo, w.StartS); o > 0 {
				extra += (w.Factor - 1) * o
			}
		}
		best = math.Max(best, extra)
	}
	return math.Min(peak, 1+best/(k.ActiveHours*3600))
}

// windowRun is one window planned: its run and its classes' plans.
type windowRun struct {
	w       dayWindow
	r       *run
	classes []ClassPlan // by class; only those the window holds are set
}

// planWindows plans a scenario whose classes have schedules window by
// window (docs/concepts.md, "Time windows"): in each, the classes that run
// then share the per-minute limits and the endpoints, and every class of a
// key shares its daily limits, each counted over its own hours. A class
// that runs in several windows gets the pool that holds in all of them,
// the smallest, with the plan of the window that sets it; it fits when it
// fits in every one. quotas[] and endpoints[] show each key and endpoint
// at its busiest window, and windows[] every window.
func (e *Engine) planWindows(ctx context.Context, in scenario.Scenario, wins []dayWindow, withRemedies bool, floors minPools) (*Plan, error) {
	runs := make([]*windowRun, len(wins))
	for k, w := range wins {
		r, err := e.newRun(ctx, in, &w)
		if err != nil {
			return nil, err
		}
		r.lean, r.floors = !withRemedies, floors
		if err := r.solve(ctx); err != nil {
			return nil, err
		}
		wr := &windowRun{w: w, r: r, classes: make([]ClassPlan, len(in.Classes))}
		for i := range in.Classes {
			if w.holds(i) {
				if wr.classes[i], err = r.classPlan(ctx, i); err != nil {
					return nil, err
				}
			}
		}
		runs[k] = wr
	}
	p := &Plan{Classes: make([]ClassPlan, len(in.Classes)), Quotas: []QuotaPlan{}, Endpoints: []EndpointPlan{}, Warnings: []string{}}
	binding := make([]*windowRun, len(in.Classes))
	for i := range in.Classes {
		var mine []*windowRun
		for _, wr := range runs {
			if wr.w.holds(i) {
				mine = append(mine, wr)
			}
		}
		p.Classes[i], binding[i] = mergeClass(i, mine)
	}
	for _, wr := range runs {
		for i := range in.Classes {
			if wr.w.holds(i) {
				wr.r.pools[i] = p.Classes[i].Pool // what the class runs with there
			}
		}
	}
	var rems [][]Remedy
	if withRemedies {
		var err error
		if rems, err = e.remediesOf(ctx, in, p.Classes, func(i int) *run { return binding[i].r }); err != nil {
			return nil, err
		}
	}
	for i := range p.Classes {
		if cp := &p.Classes[i]; withRemedies && !cp.Feasible {
			r := binding[i].r
			cp.Remedies = rems[i]
			var err error
			cp.Warnings = append(cp.Warnings, r.unliftable[i]...)
			if cp.Shed, err = r.checkShed(ctx, in, i, cp.Shed); err != nil {
				return nil, err
			}
			cp.Explanation = r.explain(i, *cp)
		}
	}
	for _, wr := range runs {
		wp := WindowPlan{StartHour: wr.w.start, Hours: signed.Round(wr.w.hours, 6), Classes: []WindowClass{}, Quotas: []QuotaPlan{}, Endpoints: []EndpointPlan{}}
		for i, c := range wr.classes {
			if wr.w.holds(i) {
				wp.Classes = append(wp.Classes, WindowClass{Name: c.Name, Pool: c.Pool, BindingConstraint: c.BindingConstraint,
					MinPool: c.MinPool, Feasible: c.Feasible, SetsPool: binding[i] == wr})
			}
		}
		for ki := range wr.r.keys {
			wp.Quotas = append(wp.Quotas, wr.r.quotaPlan(ki))
		}
		for _, ep := range wr.r.endpoints {
			if wr.r.shared(ep) {
				epl, err := wr.r.endpointPlan(ctx, ep)
				if err != nil {
					return nil, err
				}
				wp.Endpoints = append(wp.Endpoints, epl)
			}
		}
		p.Windows = append(p.Windows, wp)
	}
	p.Quotas = busiestQuotas(p.Windows, runs)
	p.Endpoints = busiestEndpoints(p.Windows)
	// Each class costs what it uses in the window that sets its pool, over
	// its own hours of the day.
	uses, byRun := make([]classUse, len(in.Classes)), map[*windowRun][]classUse{}
	for i, wr := range binding {
		if byRun[wr] == nil {
			byRun[wr] = wr.r.uses()
		}
		uses[i] = byRun[wr][i]
	}
	setCosts(p, runs[0].r.quotas(), uses)
	p.Warnings = runs[0].r.planWarnings(p)
	return p, nil
}

// mergeClass is class i's plan from those of the windows that hold it
// (mine, in the order of the day), and the window that sets its pool: the
// one where it gets the least, the first on a tie. Its min_pool is the
// largest of the windows' (none when one has none), and it fits when it
// fits in every one.
func mergeClass(i int, mine []*windowRun) (ClassPlan, *windowRun) {
	b := mine[0]
	for _, wr := range mine[1:] {
		if wr.classes[i].Pool < b.classes[i].Pool {
			b = wr
		}
	}
	cp := b.classes[i]
	cp.Warnings = slices.Clone(cp.Warnings)
	min, fits := cp.MinPool, true
	for _, wr := range mine {
		c := wr.classes[i]
		fits = fits && c.Feasible
		if c.MinPool == nil || (min != nil && *c.MinPool > *min) {
			min = c.MinPool
		}
	}
	if min != cp.MinPool || fits != cp.Feasible {
		cp.MinPool = min
		cp.Feasible = fits && min != nil && *min <= cp.Pool && cp.Pool >= 1
		cp.Explanation = b.r.explain(i, cp)
	}
	if len(mine) > 1 {
		cp.Warnings = append(cp.Warnings, fmt.Sprintf("it runs in %d windows of the day with different classes beside it; the one from %s UTC, where it gets the least, sets its pool", len(mine), clock(b.w.start)))
	}
	return cp, b
}

// fitsInWindows reports whether class i fits in the plan of s window by
// window without remedies (planWindows), planning only the windows that
// hold it and, in each, only its own plan: whether it fits depends on
// nothing else. It does not fit when it does not in one of them, so the
// windows are planned from first (where it got the least before the
// change: the one that set its pool) and only while it fits. solved holds
// the runs of the windows of s solved so far, by window, which the checks
// of other classes in the same scenario share; it keeps those it solves.
func (e *Engine) fitsInWindows(ctx context.Context, s scenario.Scenario, wins []dayWindow, i int, floors minPools, first *dayWindow, solved []*run) (bool, error) {
	order := make([]int, 0, len(wins))
	for k := range wins {
		if wins[k].holds(i) {
			order = append(order, k)
		}
	}
	if first != nil {
		if at := slices.IndexFunc(order, func(k int) bool { return wins[k].start == first.start }); at > 0 {
			k := order[at]
			copy(order[1:at+1], order[:at])
			order[0] = k
		}
	}
	planned := make([]*windowRun, len(wins))
	for _, k := range order {
		r := solved[k]
		if r == nil {
			var err error
			if r, err = e.newRun(ctx, s, &wins[k]); err != nil {
				return false, err
			}
			r.lean, r.floors = true, floors
			if err := r.solve(ctx); err != nil {
				return false, err
			}
			solved[k] = r
		}
		wr := &windowRun{w: wins[k], r: r, classes: make([]ClassPlan, len(s.Classes))}
		var err error
		if wr.classes[i], err = r.classPlan(ctx, i); err != nil {
			return false, err
		}
		if !wr.classes[i].Feasible {
			return false, nil // one window where it does not fit is enough
		}
		planned[k] = wr
	}
	var mine []*windowRun // in the order of the day, as planWindows has them
	for _, wr := range planned {
		if wr != nil {
			mine = append(mine, wr)
		}
	}
	cp, _ := mergeClass(i, mine)
	return cp.Feasible, nil
}

// busiestQuotas shows each key at the window of the day where it is used
// most, with its daily limits' use over the whole day: every class at the
// rate it runs in each of its windows, for that window's hours.
func busiestQuotas(wins []WindowPlan, runs []*windowRun) []QuotaPlan {
	var out []QuotaPlan
	for ki := range wins[0].Quotas {
		best := 0
		for k := range wins {
			if peakUse(wins[k].Quotas[ki]) > peakUse(wins[best].Quotas[ki]) {
				best = k
			}
		}
		q := wins[best].Quotas[ki]
		q.Utilization = maps.Clone(q.Utilization)
		r0 := runs[0].r
		k := r0.keys[ki]
		for d := range scenario.NumDimensions {
			if !d.Daily() || k.Limit(d) <= 0 {
				continue
			}
			var used float64
			for _, wr := range runs {
				for i, m := range wr.r.models {
					if wr.w.holds(i) && m.spec.Quota == k.Name {
						// m.use counts the class's hours of the day (dailyScale),
						// and this window holds w.hours of its schedule's.
						used += wr.r.runRate(i, wr.r.pools[i]) * m.use[d] * k.ActiveHours * 3600 * wr.w.hours / wr.r.s.Classes[i].Schedule.HoursPerDay()
					}
				}
			}
			q.Utilization[d.String()] = signed.Round(used/k.Limit(d), 4)
		}
		out = append(out, q)
	}
	return out
}

// peakUse is the largest share of a limit a key uses.
func peakUse(q QuotaPlan) float64 {
	u := 0.0
	for _, v := range q.Utilization {
		u = math.Max(u, v)
	}
	return u
}

// busiestEndpoints shows each endpoint at the window where its classes'
// pools add up to the most.
func busiestEndpoints(wins []WindowPlan) []EndpointPlan {
	var out []EndpointPlan
	var names []string
	for _, w := range wins {
		for _, ep := range w.Endpoints {
			k := slices.Index(names, ep.Name)
			switch {
			case k < 0:
				names = append(names, ep.Name)
				out = append(out, ep)
			case ep.TotalPool > out[k].TotalPool:
				out[k] = ep
			}
		}
	}
	if out == nil {
		return []EndpointPlan{}
	}
	return out
}

// clock writes hours after midnight as HH:MM.
func clock(h float64) string {
	m := int(math.Round(h * 60))
	return fmt.Sprintf("%02d:%02d", m/60%24, m%60)
}
