package plan

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// Plan plans a scenario (docs/concepts.md) as one computation under the
// engine's limits (Engine.Run). The scenario must have passed validation
// (scenario.Parse or the API's schema); Plan checks the cross-field rules
// again and returns scenario.Errors when they fail. The same scenario
// always gives the same plan, to the byte once encoded. It gives up when
// ctx is done or the engine's deadline passes and returns the context's
// error: a large scenario (many classes, many draws, a measured curve) can
// take a while.
//
// The plan of a scenario seen recently comes from the engine's cache
// without taking a slot, so the result may be shared: callers must not
// modify it (tests under the race detector check that none does; see
// cachedPlan).
func (e *Engine) Plan(ctx context.Context, s scenario.Scenario) (*Plan, error) {
	key, ok := planKey(s)
	if ok {
		if c, hit := e.plans.Get(key); hit {
			return c.get(), nil
		}
	}
	var p *Plan
	err := e.Run(ctx, func(ctx context.Context) error {
		var err error
		p, err = e.plan(ctx, s, true, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	if ok {
		e.plans.Add(key, share(p))
	}
	return p, nil
}

// run is one plan being computed.
type run struct {
	eng         *Engine
	s           scenario.Scenario // with defaults
	keys        []quota.Key
	models      []*classModel
	order       []int // every class in priority order
	endpoints   []*endpoint
	byClass     []*endpoint
	resources   []*resource
	memberships [][]membership
	private     []int  // each class's ceiling of its own: policy cap, SLOs no pool meets
	minPool     []*int // at its endpoint's load, once minPoolKnown
	// minPoolKnown says, by class, whether minPool is computed at the
	// run's pacing waits and loads (setMinPools).
	minPoolKnown []bool
	pools        []int
	// unsettled says that the last progressive filling did not settle
	// (fill): the pools are what the actual shares allow, and the
	// ceilings of uses that grow with the pool read those shares too
	// (ceilingShare).
	unsettled bool
	// lean plans leave out what a what-if cell does not show: remedies
	// and the sustainable rate of a class that does not fit.
	lean bool
	// unliftable holds, by class, the ceilings that no change within the
	// scenario's bounds lifts, as warnings.
	unliftable map[int][]string
	// window is the window of the day this run plans when classes have
	// schedules (docs/concepts.md, "Time windows"), nil for the whole day.
	window *dayWindow
	// dailyScale is, by class, the share of its key's active hours that
	// it runs (dailyScale): its use of a daily limit is counted over its
	// own hours.
	dailyScale []float64
	// peak is, by class, the largest factor of its demand profile above 1
	// that its demand was sized at; 1 without one.
	peak []float64
	// dailyVolume is, by class, the volume of its busiest day under its
	// demand profile over what its rate at the peak would send in a day
	// (profileVolume/peak): a daily limit counts the day's requests, not
	// the peak's rate all day. 1 without a profile.
	dailyVolume []float64
	// floors are the least min_pools the plan's check asked for, by class.
	floors minPools
}

// plan computes a plan, each class's min_pool at least its floor; remedies
// are worked out (and checked by planning the changed scenario) only when
// withRemedies is set.
func (e *Engine) plan(ctx context.Context, in scenario.Scenario, withRemedies bool, floors minPools) (*Plan, error) {
	if errs := in.Check(); len(errs) > 0 {
		return nil, errs
	}
	if wins := windowsOf(in); wins != nil {
		return e.planWindows(ctx, in, wins, withRemedies, floors)
	}
	r, err := e.newRun(ctx, in, nil)
	if err != nil {
		return nil, err
	}
	defer r.release()
	r.lean, r.floors = !withRemedies, floors
	if err := r.solve(ctx); err != nil {
		return nil, err
	}
	p := &Plan{Classes: make([]ClassPlan, len(r.models)), Quotas: []QuotaPlan{}, Endpoints: []EndpointPlan{}, Warnings: []string{}}
	for i := range r.models {
		cp, err := r.classPlan(ctx, i)
		if err != nil {
			return nil, err
		}
		p.Classes[i] = cp
	}
	for ki := range r.keys {
		p.Quotas = append(p.Quotas, r.quotaPlan(ki))
	}
	r.setCosts(p)
	for _, ep := range r.endpoints {
		epl, err := r.endpointPlan(ctx, ep)
		if err != nil {
			return nil, err
		}
		p.Endpoints = append(p.Endpoints, epl)
	}
	if withRemedies {
		rems, err := e.remediesOf(ctx, in, p.Classes, func(int) *run { return r })
		if err != nil {
			return nil, err
		}
		for i := range p.Classes {
			cp := &p.Classes[i]
			if cp.Feasible {
				continue
			}
			cp.Remedies = rems[i]
			if err := r.costRemedies(ctx, in, i, cp.Remedies, p); err != nil {
				return nil, err
			}
			cp.Warnings = append(cp.Warnings, r.unliftable[i]...)
			if cp.Shed, err = r.checkShed(ctx, in, i, cp.Shed); err != nil {
				return nil, err
			}
			if len(cp.Remedies) == 0 && cp.MinPool != nil && len(r.unliftable[i]) == 0 {
				cp.Warnings = append(cp.Warnings, fmt.Sprintf("no change of a limit, the knee or a target found makes %s fit: the endpoint cannot carry its demand beside the other classes' pools; shed load, or give it an endpoint of its own", cp.Name))
			}
			cp.Explanation = r.explain(i, *cp)
		}
	}
	p.Warnings = r.planWarnings(p)
	return p, nil
}

// release hands the run's scratch buffers back to the engine's pool: the
// run is done with them.
func (r *run) release() {
	for _, m := range r.models {
		if m.buf != nil {
			b := m.buf
			r.eng.scratch.Put(&b)
			m.buf = nil
		}
	}
}

// newRun builds the models, the endpoints, their budgets and the shared
// resources of a valid scenario, for one window of the day when w is not
// nil: the classes it does not hold share only daily limits there.
func (e *Engine) newRun(ctx context.Context, in scenario.Scenario, w *dayWindow) (*run, error) {
	s := in.WithDefaults()
	r := &run{eng: e, s: s, window: w}
	draws := e.drawsFor(*s.Policy.Seed, s.Policy.MonteCarloDraws)
	for _, q := range s.Quotas {
		r.keys = append(r.keys, quota.Key{Quota: q})
	}
	claims := make([]quota.Claim, len(s.Classes))
	for i, c := range s.Classes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, err := newClassModel(e, c, r.keyOf(c.Quota), s.Policy, draws)
		if err != nil {
			return nil, scenario.Errors{{Path: fmt.Sprintf("classes[%d]", i), Message: err.Error()}}
		}
		r.models = append(r.models, m)
		claims[i] = quota.Claim{Class: c.Name, Mode: c.Mode, Priority: c.Priority}
		r.peak = append(r.peak, profilePeak(c.Demand))
		m.lambda *= r.peak[i]
		r.dailyScale = append(r.dailyScale, dailyScale(c, m.key, w != nil))
		r.dailyVolume = append(r.dailyVolume, profileVolume(c.Demand, m.key, r.peak[i])/r.peak[i])
		for d := range scenario.NumDimensions {
			if d.Daily() {
				m.use[d] *= r.dayShare(i)
			}
		}
	}
	r.order = quota.Order(claims)
	r.endpoints = endpointsOf(s, r.models, r.order)
	if w != nil {
		r.endpoints = w.isolateIdle(r.endpoints, r.models)
	}
	r.byClass = make([]*endpoint, len(r.models))
	for _, ep := range r.endpoints {
		for _, i := range ep.members {
			r.byClass[i] = ep
		}
	}
	r.private = make([]int, len(r.models))
	r.minPool = make([]*int, len(r.models))
	r.minPoolKnown = make([]bool, len(r.models))
	r.pools = make([]int, len(r.models))
	if err := r.prepare(ctx, draws); err != nil {
		return nil, err
	}
	for i, m := range r.models {
		r.private[i] = m.maxPool
		h, err := r.hopelessAny(ctx, i)
		if err != nil {
			return nil, err
		}
		if h {
			r.private[i] = 0
		}
		for _, d := range pacingDims(m.key) {
			if r.overWindow(i, d) {
				r.private[i] = 0 // no pool: its share flows to the others
			}
		}
	}
	for _, ep := range r.endpoints {
		if !ep.curve {
			continue
		}
		if err := r.sloBudgets(ctx, ep, r.sloBound(ep)); err != nil {
			return nil, err
		}
	}
	r.buildResources()
	return r, nil
}

// prepare draws and sorts, on every core, what the classes with
// load-independent latency need before planning: first each distinct
// part's sample (classes share TTFT and TPOT), then each class's tails,
// the TTFT tail once for the classes that share it. Every plan of such a
// class queries both tails, and the engine keeps them for the next plan.
// A panic in one of its goroutines is a *PanicError of the plan.
func (r *run) prepare(ctx context.Context, draws *model.Draws) error {
	var static []*classModel
	for _, m := range r.models {
		s := m.static
		if s != nil && (draws.N > tailCacheMaxDraws ||
			!r.eng.tails.Contains(tailKey{s.ttftKey, metricTTFT, m.pct}) || !r.eng.tails.Contains(tailKey{s.key, metricE2E, m.pct})) {
			static = append(static, m)
		}
	}
	if len(static) < 2 {
		return nil // nothing to share out among cores
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	seen := map[sampleKey]bool{}
	for _, m := range static {
		for _, p := range partsOf(m.static.svc, draws) {
			if !seen[p.key] {
				seen[p.key] = true
				g.Go(func() error { return recovered(func() error { r.eng.sampled(p); return gctx.Err() }) })
			}
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	ttft := map[serviceKey]bool{}
	for _, m := range static {
		withTTFT := !ttft[m.static.ttftKey]
		ttft[m.static.ttftKey] = true
		g.Go(func() error {
			return recovered(func() error {
				if withTTFT {
					if _, err := m.tail(gctx, m.static, metricTTFT); err != nil {
						return err
					}
				}
				_, err := m.tail(gctx, m.static, metricE2E)
				return err
			})
		})
	}
	return g.Wait()
}

func (r *run) keyOf(name string) quota.Key {
	for _, k := range r.keys {
		if k.Name == name {
			return k
		}
	}
	return quota.Key{}
}

// load is the load class i's latency is predicted at.
func (r *run) load(i int) int { return r.byClass[i].load }

// minPoolOf is class i's min_pool at its endpoint's load, at least its
// floor, computed on first use at the run's pacing waits and loads.
func (r *run) minPoolOf(ctx context.Context, i int) (*int, error) {
	if r.minPoolKnown[i] {
		return r.minPool[i], nil
	}
	m := r.models[i]
	c, err := m.minPoolAt(ctx, r.byClass[i].load)
	if err != nil {
		return nil, err
	}
	if f := r.floors[m.spec.Name]; c != nil && *c < f {
		c = &f // raised by the plan's check (Engine.PlanWithMinPools)
	}
	r.minPool[i], r.minPoolKnown[i] = c, true
	return c, nil
}

// minPoolsDivided reports whether dividing the shared limits needs the
// classes' min_pools: an endpoint's slots, of which a class with demand
// reserves its min_pool's (need). A key's limits are reserved by the
// demand's use alone, so where they are all that is shared, min_pool
// bears on no pool, and a class's is worked out only for its own plan:
// the check of a remedy, which plans the changed scenario, asks for one.
func (r *run) minPoolsDivided() bool {
	for _, res := range r.resources {
		if !res.slots() {
			continue
		}
		for _, i := range res.members {
			if r.models[i].lambda > 0 {
				return true
			}
		}
	}
	return false
}

// classPlan assembles everything for one class but its remedies.
func (r *run) classPlan(ctx context.Context, i int) (ClassPlan, error) {
	m := r.models[i]
	minPool, err := r.minPoolOf(ctx, i)
	if err != nil {
		return ClassPlan{}, err
	}
	cp := ClassPlan{Name: m.spec.Name, Mode: m.spec.Mode, Quota: m.spec.Quota, Endpoint: r.byClass[i].displayName(), MinPool: minPool, Warnings: []string{}, Remedies: []Remedy{}}
	cs, err := r.ceilings(ctx, i)
	if err != nil {
		return cp, err
	}
	cp.Ceilings = cs
	cp.Pool, cp.BindingConstraint, cp.TiedConstraints = bind(cp.Ceilings)
	if cp.BindingConstraint == ConstraintPolicy && everyUnbounded(cp.Ceilings) {
		cp.Warnings = append(cp.Warnings, fmt.Sprintf("nothing measured limits this class: the pool is policy.max_pool (%d)", m.maxPool))
	}
	cp.Feasible = cp.Pool >= 1 && cp.MinPool != nil && *cp.MinPool <= cp.Pool
	if !cp.Feasible && m.loadDependent() && m.lambda > 0 {
		// min_pool at the planned load undercounts a pool that does not
		// reach it: the slots it lacks would add to the endpoint's load.
		shared, err := m.minPoolShared(ctx, r.load(i)-r.pools[i])
		if err != nil {
			return cp, err
		}
		if shared == nil || *shared > cp.Pool {
			cp.MinPool = shared
		}
	}
	if m.spec.MaxTokens > 0 {
		cp.TruncationRisk = signed.Round(m.out.Exceed(float64(m.spec.MaxTokens)), 4)
	}
	allot := r.allotment(i)
	if cp.Predicted, err = r.predict(ctx, i, cp.Pool); err != nil {
		return cp, err
	}
	if len(pacingDims(m.key)) > 0 {
		wp := r.withoutPacing(i)
		cp.Predicted.WithoutPacing = &wp
	}
	if cp.Feasible && len(r.missedTargets(i, cp.Predicted)) > 0 {
		// Feasible never contradicts the plan's own predictions: a pool at
		// min_pool whose p95 is over its target (no pool does better
		// than within 5 % of it) does not fit.
		cp.Feasible = false
	}
	if cp.Predicted.ShedShare > maxShedShare {
		// Nor does a pool that sheds more of its requests than a plan may
		// lose, however fast it serves the rest.
		cp.Feasible = false
	}
	r.tpotTarget(i, &cp)
	if cp.PromptCache, err = r.promptCache(ctx, i, cp.Pool, cp.Predicted); err != nil {
		noCold, ok := errors.AsType[errNoColdModel](err)
		if !ok {
			return cp, err
		}
		cp.Warnings = append(cp.Warnings, noCold.Error()+"; the plan has no comparison without the cache")
	}
	cp.Pacing = r.pacing(i, cp.Pool, allot)
	if cp.Admission, err = r.admission(ctx, i, cp.Pool); err != nil {
		return cp, err
	}
	if cp.Retry, err = r.retry(ctx, i, cp.Pool); err != nil {
		return cp, err
	}
	cp.Adaptive = adaptive(cp.Pool, cp.Ceilings)
	cp.Batch = r.batch(i, cp.Pool, allot)
	if cp.Batch.dailyShort() {
		// Nor does a batch that its share of a daily limit cannot carry
		// through its window, however fast its pool would go.
		cp.Feasible = false
	}
	cp.Task = r.taskPlan(i, cp.Pool)
	if !cp.Feasible && !r.lean {
		if cp.Shed, err = r.shed(ctx, i, cp.Pool); err != nil {
			return cp, err
		}
		cp.Shed = cp.Batch.withinDaily(cp.Shed, m.lambda)
	}
	if pk := r.peak[i]; pk > 1 {
		cp.Warnings = append(cp.Warnings, fmt.Sprintf("sized at the peak of its demand profile: %s × its steady %s %s, %s %s", num(pk), num(m.lambda/pk), m.rateUnit(), num(m.lambda), m.rateUnit()))
	}
	cp.Warnings = append(cp.Warnings, r.warnings(i, cp)...)
	cp.Explanation = r.explain(i, cp)
	return cp, nil
}

// allotment is class i's share of each limit of its key, units per second
// (+Inf where the key has no limit).
func (r *run) allotment(i int) quota.Vector {
	var v quota.Vector
	for d := range v {
		v[d] = math.Inf(1)
	}
	for _, mb := range r.memberships[i] {
		if !mb.res.slots() {
			v[mb.res.dim] = mb.res.shares[mb.j]
		}
	}
	return v
}

// bind picks the pool: the smallest finite ceiling, the first in table
// order on a tie, and lists the others that tie.
func bind(cs []Ceiling) (pool int, binding string, tied []string) {
	pool = math.MaxInt
	for _, c := range cs {
		if c.MaxPool != nil && *c.MaxPool < pool {
			pool, binding = *c.MaxPool, c.Constraint
		}
	}
	for _, c := range cs {
		if c.MaxPool != nil && *c.MaxPool == pool && c.Constraint != binding {
			tied = append(tied, c.Constraint)
		}
	}
	return max(pool, 0), binding, tied
}

func everyUnbounded(cs []Ceiling) bool {
	return !slices.ContainsFunc(cs, func(c Ceiling) bool { return c.MaxPool != nil && c.Constraint != ConstraintPolicy })
}

// quotaPlan shows key ki's division and its expected use.
func (r *run) quotaPlan(ki int) QuotaPlan {
	k := r.keys[ki]
	qp := QuotaPlan{Name: k.Name, Limits: map[string]float64{}, Usable: map[string]float64{}, Utilization: map[string]float64{}, Allocations: []Allocation{}}
	var used quota.Vector
	var members []int
	for _, res := range r.resources {
		if !res.slots() && res.key == ki {
			members = r.activeOnly(res.members)
			break
		}
	}
	for _, i := range members {
		m := r.models[i]
		a := Allocation{Class: m.spec.Name, Allotted: map[string]float64{}}
		if m.lambda > 0 {
			a.Reserved = map[string]float64{}
		}
		run := r.runRate(i, r.pools[i])
		for _, mb := range r.memberships[i] {
			res := mb.res
			if res.slots() || res.key != ki {
				continue
			}
			d := res.dim
			a.Allotted[d.String()] = signed.Round(res.shares[mb.j]*k.Seconds(d), 2)
			if a.Reserved != nil {
				a.Reserved[d.String()] = signed.Round(res.reserved[mb.j]*k.Seconds(d), 2)
			}
			used[d] += run * m.use[d]
		}
		qp.Allocations = append(qp.Allocations, a)
	}
	for d := range scenario.NumDimensions {
		if l := k.Limit(d); l > 0 {
			qp.Limits[d.String()] = l
			qp.Usable[d.String()] = signed.Round(l*k.Headroom, 2)
			qp.Utilization[d.String()] = signed.Round(used[d]*k.Seconds(d)/l, 4)
		}
	}
	qp.Pacing = r.keyPacing(ki)
	return qp
}

// dailyScale is the share of its key's active hours that class c runs
// at its rate: a batch its within_hours of each day it spreads over (it
// runs once, its requests a day are the batch's over batchDays), another
// class its schedule's hours when the plan has windows, else all of them.
func dailyScale(c scenario.Class, k quota.Key, windows bool) float64 {
	if d := c.Demand; d != nil && d.Requests > 0 {
		return d.WithinHours / batchDays(*d) / k.ActiveHours
	}
	if windows && c.Schedule != nil {
		return c.Schedule.HoursPerDay() / k.ActiveHours
	}
	return 1
}

// dayShare is what class i's use of a daily limit at its planned rate
// is counted at: the share of its key's active hours that it runs
// (dailyScale) times its busiest day's volume under its demand profile
// against its peak rate's (dailyVolume). m.use of a daily limit carries
// it; divided out, m.use is one request's.
func (r *run) dayShare(i int) float64 { return r.dailyScale[i] * r.dailyVolume[i] }

// runRate is the rate class i is expected to run at: its demand when the
// pool serves it with a stable queue, otherwise its pool flat out at its
// endpoint's load.
func (r *run) runRate(i, pool int) float64 {
	if pool < 1 {
		return 0
	}
	m := r.models[i]
	x := float64(pool) / m.at(r.load(i)).mean
	if m.lambda > 0 && m.lambda < x {
		return m.lambda
	}
	return x
}

// displayName is the endpoint's name in a plan.
func (e *endpoint) displayName() string { return e.name }

// endpointPlan summarises one endpoint: its budget, its classes' pools and
// the latency at their total.
func (r *run) endpointPlan(ctx context.Context, e *endpoint) (EndpointPlan, error) {
	ep := EndpointPlan{Name: e.displayName(), Safety: e.safety, Allocations: []EndpointAllocation{}}
	if e.knee != nil {
		ep.Knee = intPtr(*e.knee) // a copy: the plan is cached, the scenario is the caller's
		ep.KneeField, ep.KneeLowerBound = e.kneeField, e.lowerBound
	}
	if b := e.budget(); b >= 0 {
		ep.Budget = intPtr(b)
	}
	var tightest *resource
	for _, res := range r.resources {
		if res.ep == e && (tightest == nil || res.capacity < tightest.capacity) {
			tightest = res
		}
	}
	if tightest != nil {
		ep.BudgetConstraint = tightest.name
	}
	load := 0
	for j, i := range e.members {
		load += r.pools[i]
		a := EndpointAllocation{Class: r.models[i].spec.Name, Pool: r.pools[i]}
		if tightest != nil {
			a.Allotted = ptrTo(signed.Round(tightest.shares[j], 2))
			if r.models[i].lambda > 0 {
				a.Reserved = ptrTo(signed.Round(tightest.reserved[j], 2))
			}
		}
		ep.Allocations = append(ep.Allocations, a)
	}
	ep.TotalPool = load
	if e.curve {
		load = e.load
		ep.Load = intPtr(e.load)
	}
	for _, i := range e.members {
		m := r.models[i]
		for metric, dst := range []*float64{&ep.TTFTP95Ms, &ep.E2EP95Ms} {
			v, err := m.noWait95(ctx, max(1, load), metric)
			if err != nil {
				return ep, err
			}
			*dst = math.Max(*dst, ms(v))
		}
	}
	return ep, nil
}
