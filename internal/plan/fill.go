package plan

import (
	"context"
	"math"
	"slices"

	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
)

// resource is one shared limit that classes divide (docs/concepts.md,
// "Shared quotas" and "Endpoints shared by classes"): a limit of a key, in
// units per second, or the slots of an endpoint (its knee budget, or an SLO
// budget of a curve endpoint).
type resource struct {
	name     string // the constraint it gives its classes
	capacity float64
	members  []int // the classes that use it, in priority order
	// A quota limit: the key (an index into run.keys) and its dimension.
	key int
	dim scenario.Dimension
	// Endpoint slots: the endpoint and, for an SLO budget, its metric.
	ep     *endpoint
	metric int

	shares, reserved []float64 // per member, set by fill
	caps             []float64
	claims           []quota.Claim
}

// slots reports whether the resource is an endpoint's in-flight budget.
func (res *resource) slots() bool { return res.ep != nil }

// membership is one resource a class uses and its index among the members.
type membership struct {
	res *resource
	j   int
}

// use is what a pool of c of class i takes of the resource: c slots of an
// endpoint; of a quota limit, X(c)·u running flat out, with X the most the
// pool can send (peakRate), or, for a class with demand, what its demand
// sends through the pool, min(λ, X(c))·u: the key's pacing buckets, not
// the pool, hold its sends to the key's limits, so it never sends faster
// than its arrivals on average (docs/concepts.md, "Sharing: keys and
// endpoints").
func (r *run) use(res *resource, i, c int) float64 {
	if res.slots() {
		return r.slotUse(i, c)
	}
	m := r.models[i]
	x := m.peakRate(c)
	if m.lambda > 0 {
		x = math.Min(x, m.lambda)
	}
	return x * m.use[res.dim]
}

// flatOut is what a pool of c of class i takes of a quota limit running
// flat out, X(c)·u: what its quota ceiling holds to its share.
func (r *run) flatOut(res *resource, i, c int) float64 {
	return r.models[i].peakRate(c) * r.models[i].use[res.dim]
}

// unbounded marks a ceiling that no pool up to the search limit reaches.
const unbounded = -1

// unboundedThreshold is the largest closed-form ceiling reported as a
// number; beyond it the ceiling is unbounded.
const unboundedThreshold = 1e9

// ceil is the largest pool of class i whose use of the resource stays
// within the allotment a, or unbounded. With load-independent latency a
// quota ceiling is ⌊a/u · E[S]⌋; with a curve it is searched, as X(c) need
// not grow with c (docs/concepts.md, "Ceilings"). It is at least 1 for a
// class whose demand fits the allotment, λ·u ≤ a, however fast one slot
// could send: its sends are its arrivals, which the key's pacing holds to
// the key's limits, so that one slot on a fast endpoint uses λ·u, not
// X(1)·u.
func (r *run) ceil(res *resource, i int, a float64) int {
	if res.slots() {
		return r.slotCeil(i, a)
	}
	m := r.models[i]
	if r.overWindow(i, res.dim) {
		return 0
	}
	u := m.use[res.dim]
	if u <= 0 || math.IsInf(a, 1) {
		return unbounded
	}
	if r.demandSetsVolume(i, res.dim, a) {
		return unbounded
	}
	least := 0
	if m.lambda > 0 && m.lambda*u <= a*(1+tolerance) {
		least = 1
	}
	if m.static != nil {
		v := math.Floor(a / u * m.static.mean * (1 + tolerance))
		if v > unboundedThreshold {
			return unbounded
		}
		return max(least, int(v))
	}
	if c, ok := m.firstAbove(a*(1+tolerance), u, searchLimit); ok {
		return max(least, c-1)
	}
	return unbounded
}

// demandSetsVolume reports whether dimension d is a daily limit that class
// i's demand fits within its share a (units per second): a daily limit
// counts the day's volume, which an open class's demand sets whatever its
// pool (a pool sends faster than the demand only while it clears a
// backlog, never for a day), so that it holds no pool back.
func (r *run) demandSetsVolume(i int, d scenario.Dimension, a float64) bool {
	m := r.models[i]
	return d.Daily() && m.lambda > 0 && m.lambda*m.use[d] <= a*(1+tolerance)
}

// minCeil is the smaller of two ceilings, unbounded counting as infinite.
func minCeil(a, b int) int {
	switch {
	case a == unbounded:
		return b
	case b == unbounded:
		return a
	}
	return min(a, b)
}

// maxFillRounds bounds progressive filling; it settles in a few rounds.
const maxFillRounds = 64

// fill divides every resource among its classes and sets the pools. It is
// progressive filling: each class's share of a resource is capped at what
// its other ceilings let it use, so that a share it cannot use goes to the
// classes that can still grow, round after round until no cap changes.
func (r *run) fill(ctx context.Context) error {
	r.unsettled = false
	for _, res := range r.resources {
		res.caps = make([]float64, len(res.members))
		for j := range res.caps {
			res.caps[j] = math.Inf(1)
		}
	}
	for range maxFillRounds {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, res := range r.resources {
			claims := make([]quota.Claim, len(res.members))
			for j, i := range res.members {
				m := r.models[i]
				claims[j] = quota.Claim{Class: m.spec.Name, Mode: m.spec.Mode, Priority: m.spec.Priority, Weight: m.spec.Weight, Cap: res.caps[j]}
				if m.lambda > 0 {
					claims[j].HasNeed, claims[j].Need = true, r.need(res, i)
				}
			}
			res.claims = claims
			res.shares, res.reserved = quota.Divide(res.capacity, claims, r.s.Policy.Allocation)
		}
		// Each class's ceiling on each resource from the share it would get
		// there with nothing else holding it; its cap on a resource is what
		// its ceilings elsewhere let it use.
		ceils := make([][]int, len(r.models))
		for i := range r.models {
			ceils[i] = make([]int, len(r.memberships[i]))
			for k, mb := range r.memberships[i] {
				ceils[i][k] = r.ceil(mb.res, i, r.ceilingShare(mb))
			}
		}
		changed := false
		for i := range r.models {
			for k, mk := range r.memberships[i] {
				other := r.private[i]
				for l := range r.memberships[i] {
					if l != k {
						other = minCeil(other, ceils[i][l])
					}
				}
				c := math.Inf(1)
				if other != unbounded {
					c = r.use(mk.res, i, other)
				}
				if c != mk.res.caps[mk.j] {
					mk.res.caps[mk.j], changed = c, true
				}
			}
		}
		if !changed {
			for i := range r.models {
				p := r.private[i]
				for _, c := range ceils[i] {
					p = minCeil(p, c)
				}
				r.pools[i] = max(0, min(p, searchLimit))
			}
			return nil
		}
	}
	// Not settled (it does in a few rounds, but a class whose use of a
	// resource grows in steps, as an agent task's calls in flight do, can
	// make two states follow each other for ever): every class keeps what
	// its actual shares allow, which the division keeps within capacity,
	// and its ceilings read those shares too where its use grows with its
	// pool (ceilingShare), so that the class's pool and its endpoint's
	// allocations agree.
	r.unsettled = true
	for i := range r.models {
		p := r.private[i]
		for _, mb := range r.memberships[i] {
			p = minCeil(p, r.ceil(mb.res, i, r.ceilingShare(mb)))
		}
		r.pools[i] = max(0, min(p, searchLimit))
	}
	return nil
}

// ceilingShare is what class i would get of the resource if nothing else
// held it: the division with its own cap lifted, the others' kept. It is
// the share a ceiling reports, so that a class held by its knee is not
// named bound by a quota whose share it gave up to others, and it is never
// less than the class's actual share. For a class with demand a quota's
// ceiling share is what the reservations of the classes before it in
// priority order leave of the capacity: its use is its demand's whatever
// its pool, and its pool may run flat out (to clear a backlog) on all the
// key's pacing buckets pass it, which is what they do not give the
// classes before it. Otherwise, when filling did not settle, it is the
// actual share: a pool's use of an endpoint's slots, or of a quota by a
// class without demand, grows with the pool, and the shares are what keeps
// them within capacity.
func (r *run) ceilingShare(mb membership) float64 {
	res := mb.res
	if !res.slots() && r.models[res.members[mb.j]].lambda > 0 {
		return math.Max(res.capacity-r.reservedBefore(res, mb.j), res.shares[mb.j])
	}
	if r.unsettled || math.IsInf(res.caps[mb.j], 1) {
		return res.shares[mb.j]
	}
	claims := slices.Clone(res.claims)
	claims[mb.j].Cap = math.Inf(1)
	shares, _ := quota.Divide(res.capacity, claims, r.s.Policy.Allocation)
	return math.Max(shares[mb.j], res.shares[mb.j])
}

// reservedBefore is what the members before member j of a resource, in
// priority order, reserve of it.
func (r *run) reservedBefore(res *resource, j int) float64 {
	var v float64
	for _, x := range res.reserved[:j] {
		v += x
	}
	return v
}

// need is what class i, which states a demand, reserves of a resource: of
// an endpoint, the slots of its min_pool; of a quota limit, its demand's
// use λ·u, which the key's pacing buckets pass it first when it comes
// first in priority order (docs/concepts.md, "Sharing: keys and
// endpoints").
func (r *run) need(res *resource, i int) float64 {
	if res.slots() {
		return r.slotUse(i, r.reservedPool(i))
	}
	m := r.models[i]
	return m.lambda * m.use[res.dim]
}

// reservedPool is the pool a class with demand reserves: its min_pool at
// its endpoint's load, or, when no pool serves the demand, the most it may
// have (its private ceiling), so that it takes what it can.
func (r *run) reservedPool(i int) int {
	if c := r.minPool[i]; c != nil {
		return *c
	}
	if r.private[i] == unbounded {
		return searchLimit
	}
	return r.private[i]
}

// maxLoadRounds bounds the search for an endpoint's load.
const maxLoadRounds = 40

// maxPacingRounds bounds how often the pacing waits are worked out again
// from the pools they led to; they settle in a round or two.
const maxPacingRounds = 4

// solve finds the pools and the pacing waits (docs/concepts.md, "The
// pacing wait"): the waits depend on what the classes send, and so on the
// pools of the classes without demand, which depend on min_pool and so on
// the waits; it plans with the waits of the last pools until they agree,
// and the last plan is made with the waits its predictions use.
func (r *run) solve(ctx context.Context) error {
	r.pacingLaws()
	if err := r.solveLoads(ctx); err != nil {
		return err
	}
	for range maxPacingRounds {
		if !r.pacingLaws() {
			return nil
		}
		if err := r.solveLoads(ctx); err != nil {
			return err
		}
	}
	r.pacingLaws()
	return r.setMinPoolsAndFill(ctx)
}

// solveLoads finds the pools and, for curve endpoints, the load their latency is
// predicted at: the sum of their classes' pools. min_pool depends on the
// load and the pools on min_pool, so it iterates load ← Σ pools from the
// endpoint's budget (or from below without one) until they agree. Latency
// grows with load, so a load at least Σ pools is on the safe side; when
// the iteration does not settle, the last such load is kept.
func (r *run) solveLoads(ctx context.Context) error {
	var curveEps []*endpoint
	for _, e := range r.endpoints {
		if !e.curve {
			continue
		}
		curveEps = append(curveEps, e)
		e.load = len(e.members)
		if b := e.budget(); b >= 0 {
			e.load = max(1, b)
		}
	}
	var safe []int
	for round := 0; ; round++ {
		if err := r.setMinPools(ctx); err != nil {
			return err
		}
		if err := r.fill(ctx); err != nil {
			return err
		}
		loads := make([]int, len(curveEps))
		settled, isSafe := true, true
		for k, e := range curveEps {
			loads[k] = e.load
			sum := 0
			for _, i := range e.members {
				sum += r.inFlight(i, e.load)
			}
			sum = max(1, sum)
			settled = settled && sum == e.load
			isSafe = isSafe && sum <= e.load
			e.load = sum
		}
		if isSafe && (safe == nil || sumInts(loads) <= sumInts(safe)) {
			safe = loads
		}
		if settled {
			for k, e := range curveEps {
				e.load = loads[k]
			}
			return nil
		}
		if round == maxLoadRounds {
			break
		}
	}
	if safe == nil {
		// Still rising: predict at the last sum, which the pools reach.
		return r.setMinPoolsAndFill(ctx)
	}
	// No load agrees with its pools exactly (integer pools can alternate
	// between two sums): keep the smallest load seen that is at least the
	// sum of the pools planned at it.
	for k, e := range curveEps {
		e.load = safe[k]
	}
	return r.setMinPoolsAndFill(ctx)
}

// inFlight is what class i keeps in flight on its endpoint at load
// (docs/concepts.md, "Endpoints shared by classes"): a class without
// demand its whole pool, one with demand its busy slots (busySlots).
func (r *run) inFlight(i, load int) int {
	m := r.models[i]
	pool := r.pools[i]
	if m.lambda == 0 || pool == 0 {
		return pool
	}
	return m.busySlots(pool, load)
}

func sumInts(v []int) int {
	t := 0
	for _, x := range v {
		t += x
	}
	return t
}

func (r *run) setMinPoolsAndFill(ctx context.Context) error {
	if err := r.setMinPools(ctx); err != nil {
		return err
	}
	return r.fill(ctx)
}

// setMinPools computes every class's min_pool at its endpoint's load
// where the division of the shared limits needs it (minPoolsDivided);
// otherwise it forgets those computed at earlier pacing waits and loads,
// and each is computed when the class's plan asks for it (minPoolOf).
func (r *run) setMinPools(ctx context.Context) error {
	clear(r.minPoolKnown)
	if !r.minPoolsDivided() {
		return nil
	}
	for i := range r.models {
		if _, err := r.minPoolOf(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// budget is the endpoint's tightest in-flight budget, −1 when it has none.
func (e *endpoint) budget() int {
	b := e.kneeBudget
	for _, s := range e.slo {
		if s.total != nil && (b < 0 || *s.total < b) {
			b = *s.total
		}
	}
	return b
}

// buildResources lists the shared limits: every limit of every key, and
// every endpoint's knee and SLO budgets.
func (r *run) buildResources() {
	r.resources = nil
	r.memberships = make([][]membership, len(r.models))
	add := func(res *resource) {
		r.resources = append(r.resources, res)
		for j, i := range res.members {
			r.memberships[i] = append(r.memberships[i], membership{res, j})
		}
	}
	for ki, k := range r.keys {
		var members []int
		for _, i := range r.order {
			if r.s.Classes[i].Quota == k.Name {
				members = append(members, i)
			}
		}
		for d := range scenario.NumDimensions {
			ms := members
			if !d.Daily() {
				ms = r.activeOnly(members) // a daily limit spans the day's windows
			}
			if k.Limit(d) > 0 && len(ms) > 0 {
				add(&resource{name: d.String(), capacity: k.Capacity(d), members: ms, key: ki, dim: d, metric: -1})
			}
		}
	}
	for _, e := range r.endpoints {
		if e.kneeBudget >= 0 {
			add(&resource{name: ConstraintKnee, capacity: float64(e.kneeBudget), members: e.members, ep: e, metric: -1})
		}
		for metric, b := range e.slo {
			if b.total != nil {
				add(&resource{name: sloConstraint(metric), capacity: float64(*b.total), members: e.members, ep: e, metric: metric})
			}
		}
	}
	// Memberships in table order, so that ceilings list in it.
	for i := range r.memberships {
		slices.SortStableFunc(r.memberships[i], func(a, b membership) int { return tableRank(a.res.name) - tableRank(b.res.name) })
	}
}

func sloConstraint(metric int) string {
	if metric == metricTTFT {
		return ConstraintSLOTTFT
	}
	return ConstraintSLOE2E
}

// tableRank is a constraint's place in the order that breaks ties: the
// quota dimensions in their order, then the endpoint's and the policy's.
func tableRank(name string) int {
	if d, ok := scenario.DimensionNamed(name); ok {
		return int(d)
	}
	if i := slices.Index([]string{ConstraintKnee, ConstraintSLOTTFT, ConstraintSLOE2E, ConstraintSLOTPOT, ConstraintPolicy}, name); i >= 0 {
		return int(scenario.NumDimensions) + i
	}
	return -1
}
