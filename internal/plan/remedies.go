package plan

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// remedyRounds bounds how often remedies are refined against a plan of the
// changed scenario.
const remedyRounds = 4

// refining is one class's remedies while they are refined: the class, the
// run its remedies start from (the plan's, or with schedules that of the
// window that sets its pool), its plan there, the set so far and, once it
// is decided, the answer.
type refining struct {
	i    int
	r    *run
	cp   ClassPlan
	rems []Remedy
	out  []Remedy
	done bool
}

// decide ends the refining of a class's remedies with rems.
func (f *refining) decide(rems []Remedy) { f.out, f.done = rems, true }

// remediesOf lists, for every class of cps that does not fit, the change
// that lifts each of its ceilings below its min_pool (docs/concepts.md,
// "Remedies"), by class (nil for a class that fits); runOf is the run a
// class's remedies start from. Applied together they make the class
// feasible: each set is checked by planning the scenario with the changes
// made and, when the class still does not fit there (lifting one limit
// moves the endpoint's load, and with it min_pool), refined from that
// plan, at most remedyRounds times; with schedules only the windows that
// hold the class are planned, and a set that does not make it fit there
// is not refined (no one run plans every window). When no set is found
// that makes it fit (on a saturated endpoint, a higher knee lets the
// other classes add load as fast as it adds room), there are none: an
// unchecked remedy would send a team to buy a tier that does not help.
//
// Whether a class fits in a plan depends on nothing but its own plan
// there, so the classes are refined round by round together: the classes
// whose changed scenarios are the same in a round share one solve of it
// (on a tight key, classes alike in demand often ask for the same limit),
// and each of them has only its own plan worked out in it.
func (e *Engine) remediesOf(ctx context.Context, in scenario.Scenario, cps []ClassPlan, runOf func(i int) *run) ([][]Remedy, error) {
	out := make([][]Remedy, len(cps))
	var active []*refining
	for i := range cps {
		if cps[i].Feasible {
			continue
		}
		f := &refining{i: i, r: runOf(i), cp: cps[i]}
		rems, err := f.r.remediesFor(ctx, f.r, i, f.cp, false)
		if err != nil {
			return nil, err
		}
		f.rems = rems
		if len(rems) == 0 {
			out[i] = rems
			continue
		}
		active = append(active, f)
	}
	for round := 0; round <= remedyRounds && len(active) > 0; round++ {
		if err := e.refineRound(ctx, in, active, round); err != nil {
			return nil, err
		}
		next := active[:0]
		for _, f := range active {
			if f.done {
				out[f.i] = f.out
			} else {
				next = append(next, f)
			}
		}
		active = next
	}
	for _, f := range active {
		out[f.i] = []Remedy{} // refined as often as allowed without a set that makes it fit
	}
	for i, rems := range out {
		if len(rems) == 0 {
			continue
		}
		tight, err := e.tightenLimits(ctx, in, i, runOf(i), rems)
		if err != nil {
			return nil, err
		}
		out[i] = tight
	}
	return out, nil
}

// limitMargin is what a tightened limit keeps above the least that makes
// its class fit by the queueing model: the plan's check, a simulation,
// sees a class planned at that edge break about as often as hold.
const limitMargin = 0.05

// tightenLimits lowers each limit that class i's remedies raise to what
// the class needs once the others are in place: a remedy is sized for
// min_pool at the limits as they are, and a class held back by a limit
// waits there, which raises its min_pool, so that the raise it asks for
// may be far more than it needs once raised (a chat at 2 req/s on a key
// of 1 rpm asked for 2,045 rpm and three times its tpm, where 224 rpm
// and its tpm serve it). The least value of each that keeps the class
// feasible, with the others as they are, is found by bisection to within
// 1 %, and raised by limitMargin; a raise the class fits without is
// dropped. rems make the class fit; so do the remedies returned.
func (e *Engine) tightenLimits(ctx context.Context, in scenario.Scenario, i int, r *run, rems []Remedy) ([]Remedy, error) {
	rems = slices.Clone(rems)
	fitsWith := func(rs []Remedy) (bool, error) {
		changed, err := withRemedies(in, rs)
		if err != nil {
			return false, nil
		}
		ok, err := e.fits(ctx, changed, i, r.floors, r.window)
		if err != nil && ctx.Err() != nil {
			return false, ctx.Err()
		}
		return err == nil && ok, nil
	}
	for k := 0; k < len(rems); k++ {
		key, d, ok := limitOf(rems[k].Path)
		if !ok || key >= len(r.keys) {
			continue
		}
		from := r.keys[key].Limit(d)
		if !(rems[k].Value > from) {
			continue
		}
		without := slices.Delete(slices.Clone(rems), k, k+1)
		fits, err := fitsWith(without)
		if err != nil {
			return nil, err
		}
		if fits {
			rems = without
			k--
			continue
		}
		lo, hi := from, rems[k].Value
		for hi-lo > math.Max(1, 0.01*hi) {
			mid := math.Ceil((lo + hi) / 2)
			if mid >= hi {
				break
			}
			trial := slices.Clone(rems)
			trial[k].Value = mid
			fits, err := fitsWith(trial)
			if err != nil {
				return nil, err
			}
			if fits {
				hi = mid
			} else {
				lo = mid
			}
		}
		if v := math.Ceil(hi * (1 + limitMargin)); v < rems[k].Value {
			rems[k].Value = v
			rems[k].Change = limitChange(rems[k].Constraint, r.keys[key].Name, from, v)
		}
	}
	return rems, nil
}

// limitOf is the key and dimension of a remedy's path that sets a key's
// limit, /quotas/N/tpm.
func limitOf(path string) (int, scenario.Dimension, bool) {
	rest, ok := strings.CutPrefix(path, "/quotas/")
	if !ok {
		return 0, 0, false
	}
	n, name, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, 0, false
	}
	key, err := strconv.Atoi(n)
	if err != nil || key < 0 {
		return 0, 0, false
	}
	d, ok := scenario.DimensionNamed(name)
	return key, d, ok
}

// limitChange is a remedy's words for raising a key's limit.
func limitChange(constraint, key string, from, to float64) string {
	return fmt.Sprintf("raise %s on key %s from %s to %s (a higher tier, or a second key for this class)", constraint, key, limitNum(from), limitNum(to))
}

// limitNum writes a key's limit: a whole one as a whole number ("218",
// where num writes "218.0"), any other as num does.
func limitNum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return commas(strconv.FormatFloat(v, 'f', 0, 64))
	}
	return num(v)
}

// refineRound checks each class's set of remedies by planning the changed
// scenario, one plan for the classes whose changed scenarios are the same,
// and decides the classes that fit there, or that no further round can
// make fit; the others have their sets refined from that plan for the
// next round.
func (e *Engine) refineRound(ctx context.Context, in scenario.Scenario, active []*refining, round int) error {
	type group struct {
		changed scenario.Scenario
		members []*refining
	}
	var groups []*group
	byKey := map[[sha256.Size]byte]*group{}
	for _, f := range active {
		changed, err := withRemedies(in, f.rems)
		if err != nil {
			f.decide([]Remedy{})
			continue
		}
		key, ok := planKey(changed)
		key = f.r.floors.key(key)
		if g := byKey[key]; ok && g != nil {
			g.members = append(g.members, f)
			continue
		}
		g := &group{changed: changed, members: []*refining{f}}
		groups = append(groups, g)
		if ok {
			byKey[key] = g
		}
	}
	for _, g := range groups {
		if err := e.refineGroup(ctx, g.changed, g.members, round); err != nil {
			return err
		}
	}
	return nil
}

// refineGroup is refineRound for the classes whose sets of remedies give
// the same changed scenario.
func (e *Engine) refineGroup(ctx context.Context, changed scenario.Scenario, members []*refining, round int) error {
	floors := members[0].r.floors
	if len(changed.Check()) > 0 {
		for _, f := range members {
			f.decide([]Remedy{})
		}
		return nil
	}
	if wins := windowsOf(changed); wins != nil {
		// Planned window by window: no one run to refine from, and only
		// the windows that hold the class bear on whether it fits.
		solved := make([]*run, len(wins))
		defer releaseAll(solved)
		for _, f := range members {
			fits, err := e.fitsInWindows(ctx, changed, wins, f.i, floors, f.r.window, solved)
			if ctx.Err() != nil {
				return ctx.Err() // a check cut short says nothing of the remedy
			}
			if err == nil && fits {
				f.decide(f.rems)
			} else {
				f.decide([]Remedy{})
			}
		}
		return nil
	}
	r2, err := e.solvedRun(ctx, changed, floors)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for _, f := range members {
			f.decide([]Remedy{})
		}
		return nil
	}
	defer r2.release()
	for _, f := range members {
		cp2, err := r2.classPlan(ctx, f.i)
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			f.decide([]Remedy{})
			continue
		case cp2.Feasible:
			f.decide(f.rems)
			continue
		case round == remedyRounds:
			f.decide([]Remedy{})
			continue
		}
		// The last round assumes that the other classes take all the
		// policy lets them, which lifting this class's limits may let them.
		more, err := r2.remediesFor(ctx, f.r, f.i, cp2, round == remedyRounds-1)
		if err != nil {
			return err
		}
		if len(more) == 0 {
			f.decide([]Remedy{})
			continue
		}
		f.rems = mergeRemedies(f.rems, more)
	}
	return nil
}

// fits reports whether class i is feasible in the plan of s without
// remedies, with the given least min_pools, as planRun would have it:
// whether it fits depends on nothing but its own plan, so only that is
// worked out, and with schedules only in the windows that hold it
// (fitsInWindows), from first. It fails as planRun does on a scenario
// that is not valid.
func (e *Engine) fits(ctx context.Context, s scenario.Scenario, i int, floors minPools, first *dayWindow) (bool, error) {
	if errs := s.Check(); len(errs) > 0 {
		return false, errs
	}
	if wins := windowsOf(s); wins != nil {
		solved := make([]*run, len(wins))
		defer releaseAll(solved)
		return e.fitsInWindows(ctx, s, wins, i, floors, first, solved)
	}
	r, err := e.solvedRun(ctx, s, floors)
	if err != nil {
		return false, err
	}
	defer r.release()
	cp, err := r.classPlan(ctx, i)
	if err != nil {
		return false, err
	}
	return cp.Feasible, nil
}

// releaseAll releases the runs that were made (run.release).
func releaseAll(runs []*run) {
	for _, r := range runs {
		if r != nil {
			r.release()
		}
	}
}

// planRun plans a scenario without remedies, with the given least
// min_pools, and returns its run too.
func (e *Engine) planRun(ctx context.Context, s scenario.Scenario, floors minPools) (*run, *Plan, error) {
	if errs := s.Check(); len(errs) > 0 {
		return nil, nil, errs
	}
	if wins := windowsOf(s); wins != nil {
		p, err := e.planWindows(ctx, s, wins, false, floors)
		return nil, p, err // no one run holds every class's window
	}
	r, err := e.solvedRun(ctx, s, floors)
	if err != nil {
		return nil, nil, err
	}
	p := &Plan{Classes: make([]ClassPlan, len(r.models))}
	for i := range r.models {
		if p.Classes[i], err = r.classPlan(ctx, i); err != nil {
			return nil, nil, err
		}
	}
	r.setCosts(p)
	return r, p, nil
}

// solvedRun is the run of a valid scenario without schedules, solved as a
// plan without remedies with the given least min_pools: what planRun
// works its classes' plans out from.
func (e *Engine) solvedRun(ctx context.Context, s scenario.Scenario, floors minPools) (*run, error) {
	r, err := e.newRun(ctx, s, nil)
	if err != nil {
		return nil, err
	}
	r.lean, r.floors = true, floors
	if err := r.solve(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// leanPlan is planRun from the engine's cache when the same changed
// scenario was planned before, and then without the run; its caller may
// not modify the plan.
func (e *Engine) leanPlan(ctx context.Context, s scenario.Scenario, floors minPools) (*run, *Plan, error) {
	key, ok := planKey(s)
	key = floors.key(key)
	if ok {
		if c, hit := e.leanPlans.Get(key); hit {
			return nil, c.get(), nil
		}
	}
	r, p, err := e.planRun(ctx, s, floors)
	if err == nil && ok {
		e.leanPlans.Add(key, share(p))
	}
	return r, p, err
}

// mergeRemedies keeps one remedy per field, the stronger where both name
// it: the larger value of a limit, a knee or a target, the smaller of a
// max_tokens or a cap on the prompt.
func mergeRemedies(a, b []Remedy) []Remedy {
	out := append([]Remedy{}, a...)
	for _, rb := range b {
		found := false
		for k := range out {
			if out[k].Path == rb.Path {
				found = true
				lowers := strings.HasSuffix(rb.Path, "/max_tokens") || strings.HasSuffix(rb.Path, "/input_tokens/max")
				if rb.Value > out[k].Value != lowers && rb.Value != out[k].Value {
					out[k] = rb
				}
			}
		}
		if !found {
			out = append(out, rb)
		}
	}
	return out
}

// remediesFor computes, from this run, the change that lifts each ceiling
// of class i that is below its min_pool to it; pessimistic assumes that the
// other classes sharing a limit grow as far as the policy lets them. given
// is the run of the scenario as it was given, whose limits the changes
// start from: this run's may already carry earlier remedies.
func (r *run) remediesFor(ctx context.Context, given *run, i int, cp ClassPlan, pessimistic bool) ([]Remedy, error) {
	out := []Remedy{}
	m := r.models[i]
	if cp.MinPool == nil {
		return out, nil
	}
	target := *cp.MinPool
	if cp.Pool >= target {
		// The pool reaches min_pool but a predicted p95 misses its target,
		// or its TPOT at the endpoint's load does (on a measured curve; with
		// load-independent latency slo_tpot binds at 0 instead): only a
		// looser target helps.
		for _, metric := range r.missedTargets(i, cp.Predicted) {
			v, err := m.p95(ctx, cp.Pool, r.load(i), pctOf(metric))
			if err != nil {
				return nil, err
			}
			out = append(out, r.relax(given, i, metric, v, cp.Pool))
		}
		if m.tpotMissed(r.load(i)) {
			out = append(out, r.relaxTPOT(given, i))
		}
		return r.dailyRemedies(given, i, cp, out), nil
	}
	for _, c := range cp.Ceilings {
		if c.MaxPool == nil || *c.MaxPool >= target {
			continue
		}
		switch c.Constraint {
		case ConstraintPolicy:
			out = append(out, Remedy{Constraint: c.Constraint, Value: float64(target), Path: "/policy/max_pool",
				Change: fmt.Sprintf("raise policy.max_pool from %d to %d", m.maxPool, target)})
		case ConstraintKnee:
			mb := findMembership(r.memberships[i], ConstraintKnee)
			budget := r.neededCapacity(mb, i, target, pessimistic)
			e := mb.res.ep
			need := math.Ceil(budget - tolerance)
			kf := math.Ceil(need/e.safety - tolerance)
			if !(kf <= maxKnee) { // NaN and +Inf too: with a tiny knee_safety no knee helps
				r.noFiniteRemedy(i, fmt.Sprintf("no knee of endpoint %s up to %d lifts its knee ceiling (knee_safety %s of it is usable): no finite knee helps", e.displayName(), maxKnee, num(e.safety)))
				continue
			}
			k := int(kf)
			for k < maxKnee && math.Floor(e.safety*float64(k)+tolerance) < need {
				k++ // at most a step or two: kf is the exact quotient, rounded
			}
			// The change starts from the knee the scenario gives, not from
			// one that an earlier remedy put in this run.
			from := e
			if g := findMembership(given.memberships[i], ConstraintKnee); g != nil {
				from = g.res.ep
			}
			out = append(out, Remedy{Constraint: c.Constraint, Value: float64(k), Path: from.kneePath(), Change: from.kneeChange(k)})
		case ConstraintSLOTPOT:
			out = append(out, r.relaxTPOT(given, i))
		case ConstraintSLOTTFT, ConstraintSLOE2E:
			rs, err := r.sloRemedies(ctx, given, i, c.Constraint, target, pessimistic)
			if err != nil {
				return nil, err
			}
			out = append(out, rs...)
		default:
			mb := findMembership(r.memberships[i], c.Constraint)
			capacity := r.neededCapacity(mb, i, target, pessimistic)
			d, k := mb.res.dim, r.keys[mb.res.key]
			var window []Remedy
			if r.overWindow(i, d) {
				// One window must allow a request's charge: h·L·w/60 ≥ k.
				capacity = math.Max(capacity, m.windowCharge(d)/k.BurstWindowS)
				window = r.windowRemedies(given, i, d)
			}
			l := math.Ceil(k.LimitFor(d, capacity) * (1 + tolerance))
			if !(l <= scenario.Bounds().LimitMax[d.String()]) {
				// No limit a key may have lifts the ceiling (a tiny
				// headroom, say): no finite limit helps.
				r.noFiniteRemedy(i, fmt.Sprintf("no %s on key %s up to %s, the most a key may have, lifts its %s ceiling (headroom %s of it is usable): no finite limit helps", c.Constraint, k.Name, num(scenario.Bounds().LimitMax[d.String()]), c.Constraint, num(k.Headroom)))
				continue
			}
			out = append(out, Remedy{Constraint: c.Constraint, Value: l, Path: fmt.Sprintf("/quotas/%d/%s", mb.res.key, d),
				Change: limitChange(c.Constraint, k.Name, given.keys[mb.res.key].Limit(d), l)})
			out = append(out, window...)
		}
	}
	return r.dailyRemedies(given, i, cp, out), nil
}

// dailyRemedies add to out, class i's remedies, the daily limit that
// carries its batch through its window wherever its share of one falls
// short (BatchPlan.DailyLimits): the limit scaled by what the batch needs
// over what the share allows, with 5 % over it, or the higher of that and
// a raise of the same limit out already holds.
func (r *run) dailyRemedies(given *run, i int, cp ClassPlan, out []Remedy) []Remedy {
	if cp.Batch == nil {
		return out
	}
	for _, d := range cp.Batch.DailyLimits {
		mb := findMembership(r.memberships[i], d.Constraint)
		if d.OK || mb == nil || !(d.Available > 0) {
			continue
		}
		k := r.keys[mb.res.key]
		l := math.Ceil(k.Limit(mb.res.dim) * d.Needed / d.Available * (1 + tolerance))
		if !(l <= scenario.Bounds().LimitMax[d.Constraint]) {
			r.noFiniteRemedy(i, fmt.Sprintf("no %s on key %s up to %s, the most a key may have, carries the batch through its window: no finite limit helps", d.Constraint, k.Name, num(scenario.Bounds().LimitMax[d.Constraint])))
			continue
		}
		path := fmt.Sprintf("/quotas/%d/%s", mb.res.key, mb.res.dim)
		change := limitChange(d.Constraint, k.Name, given.keys[mb.res.key].Limit(mb.res.dim), l)
		if j := slices.IndexFunc(out, func(x Remedy) bool { return x.Path == path }); j >= 0 {
			if out[j].Value < l {
				out[j].Value, out[j].Change = l, change
			}
			continue
		}
		out = append(out, Remedy{Constraint: d.Constraint, Value: l, Path: path, Change: change})
	}
	return out
}

// missedTargets are the metrics whose predicted percentile (p95, or the
// SLO's own) misses class i's target.
func (r *run) missedTargets(i int, pr Predicted) []int {
	m := r.models[i]
	var out []int
	vs := []*float64{pr.TTFTP95Ms, pr.E2EP95Ms}
	if pr.Percentile != nil {
		vs = []*float64{pr.TTFTMsAtPercentile, pr.E2EMsAtPercentile}
	}
	for metric, v := range vs {
		if m.hasSLO(metric) && (v == nil || *v > m.slo[metric]*1000*(1+tolerance)+0.05) {
			out = append(out, metric)
		}
	}
	return out
}

// windowRemedies are the changes to class i's requests that make their
// charge fit one window of dimension d (docs/concepts.md, "Per-window
// enforcement"): a lower max_tokens, where the key counts it at
// admission, and a cap on the prompt, where d counts it. Any one of them,
// or the higher limit they are listed with, lifts the window's ceiling;
// applied together, as every class's remedies are checked, they do too.
func (r *run) windowRemedies(given *run, i int, d scenario.Dimension) []Remedy {
	m := r.models[i]
	mt := float64(m.spec.MaxTokens)
	a0 := m.key.Admission(0, mt, m.cachedFraction())[d]
	a1 := m.key.Admission(1, mt, m.cachedFraction())[d] - a0
	b := bucketSize(m.key, d)
	in99 := m.inputP99()
	var out []Remedy
	if mt > 0 && m.key.Admission(0, 0, 0)[d] < a0 {
		// The key counts max_tokens at admission on d.
		if v := math.Floor(b - a1*in99 - (a0 - mt)); v >= 1 && v < mt {
			out = append(out, Remedy{Constraint: d.String(), Value: v, Path: fmt.Sprintf("/classes/%d/max_tokens", i),
				Change: fmt.Sprintf("lower max_tokens from %s to %.0f: one window of %s then holds a request's charge (longer answers are cut short)", num(float64(given.models[i].spec.MaxTokens)), v, d)})
		}
	}
	// An accumulating task's last call carries its earlier context
	// whatever its first input is, which is all input_tokens.max caps.
	if a1 > 0 && (m.task == nil || !m.task.spec.Accumulates()) {
		if v := math.Floor((b - a0) / a1); v >= 1 {
			out = append(out, Remedy{Constraint: d.String(), Value: v, Path: fmt.Sprintf("/classes/%d/input_tokens/max", i),
				Change: fmt.Sprintf("cap the prompt at %.0f input tokens (input_tokens.max): one window of %s then holds a request's charge", v, d)})
		}
	}
	return out
}

// maxKnee is the largest knee a scenario may give (latency.knee's
// maximum), which a knee remedy may not exceed.
const maxKnee = searchLimit

// noFiniteRemedy notes, as a warning of class i, a ceiling that no change
// within the scenario's bounds lifts.
func (r *run) noFiniteRemedy(i int, warning string) {
	if r.unliftable == nil {
		r.unliftable = map[int][]string{}
	}
	if !slices.Contains(r.unliftable[i], warning) {
		r.unliftable[i] = append(r.unliftable[i], warning)
	}
}

// kneeChange says how to get a knee of k on the endpoint: serving capacity
// for a knee that was measured, and for a lower bound, a probe to higher
// concurrency, since the endpoint may already serve k in flight.
func (e *endpoint) kneeChange(k int) string {
	switch {
	case e.lowerBound:
		return fmt.Sprintf("probe endpoint %s further, to at least %d in flight (planner probe --search --max-concurrency %d): its knee ≥ %d is a lower bound, never reached, and a knee of %d is what this class needs",
			e.displayName(), k, k, *e.knee, k)
	case e.kneeField == KneeFieldRefined:
		return fmt.Sprintf("serve a knee of at least %d in flight on endpoint %s (knee_refined %d): add serving capacity and measure again", k, e.displayName(), *e.knee)
	}
	return fmt.Sprintf("serve a knee of at least %d in flight on endpoint %s (measured %d): add serving capacity and measure again", k, e.displayName(), *e.knee)
}

// neededCapacity is the capacity of a resource at which class i's share
// lets a pool of target run: the inverse of the division, with nothing
// else holding class i and the other classes' claims as they are, or, when
// pessimistic, with nothing holding them either.
func (r *run) neededCapacity(mb *membership, i, target int, pessimistic bool) float64 {
	res := mb.res
	claims := slices.Clone(res.claims)
	if pessimistic {
		for j := range claims {
			claims[j].Cap = math.Inf(1)
		}
	}
	if !res.slots() && r.models[i].lambda > 0 {
		// Its quota ceiling is what the classes before it reserve.
		return math.Max(r.flatOut(res, i, target)+r.reservedBefore(res, mb.j), res.capacity)
	}
	need := r.use(res, i, target)
	claims[mb.j].Cap = math.Inf(1)
	if claims[mb.j].HasNeed {
		claims[mb.j].Need = math.Max(claims[mb.j].Need, need)
	}
	c := quota.CapacityFor(claims, mb.j, need, r.s.Policy.Allocation)
	if math.IsInf(c, 1) {
		return res.capacity
	}
	return math.Max(c, res.capacity)
}

// sloRemedies relaxes the targets that hold class i below min_pool. A
// class's own target with load-independent latency, or one no pool meets,
// is relaxed to the p95 that min_pool achieves. On a curve endpoint the SLO
// budget must grow to the total that gives class i its min_pool: every
// target on the metric that breaks at that total is relaxed to what the
// total achieves there (a higher knee, more serving capacity, would lower
// latency instead: measure again after adding it).
func (r *run) sloRemedies(ctx context.Context, given *run, i int, name string, target int, pessimistic bool) ([]Remedy, error) {
	metric := metricTTFT
	if name == ConstraintSLOE2E {
		metric = metricE2E
	}
	m := r.models[i]
	mb := findMembership(r.memberships[i], name)
	h, err := r.hopeless(ctx, i, metric)
	if err != nil {
		return nil, err
	}
	if mb == nil || h {
		v, err := m.p95(ctx, target, r.load(i), pctOf(metric))
		if err != nil {
			return nil, err
		}
		return []Remedy{r.relax(given, i, metric, v, target)}, nil
	}
	total := int(math.Ceil(r.neededCapacity(mb, i, target, pessimistic) - tolerance))
	var out []Remedy
	for _, j := range mb.res.ep.members {
		mj := r.models[j]
		if !mj.hasSLO(metric) || r.private[j] == 0 {
			continue
		}
		v, err := mj.pacedNoWait95(ctx, total, metric)
		if err != nil {
			return nil, err
		}
		pool := 0
		if mj.lambda > 0 {
			c, err := mj.minPoolAt(ctx, total)
			if err != nil {
				return nil, err
			}
			if c != nil {
				pool = *c
				if v, err = mj.p95(ctx, pool, total, pctOf(metric)); err != nil {
					return nil, err
				}
			}
		}
		if v > mj.slo[metric]*(1+tolerance) || (mj.lambda > 0 && pool == 0) {
			out = append(out, r.relax(given, j, metric, v, total))
		}
	}
	return out, nil
}

func pctOf(metric int) percentile {
	if metric == metricTTFT {
		return pctTTFT
	}
	return pctE2E
}

// relax is the remedy that sets class j's target on the metric to v
// seconds, what a pool (or an endpoint total) of at achieves, from the
// target of the scenario given (not a refinement's, which an earlier
// round relaxed).
func (r *run) relax(given *run, j, metric int, v float64, at int) Remedy {
	m := r.models[j]
	field, name := sloField(m.spec.SLO, metric), ConstraintSLOTTFT
	if metric == metricE2E {
		name = ConstraintSLOE2E
		if m.task != nil {
			field = "task_e2e_ms"
		}
	}
	msv := math.Ceil(v * 1000)
	if !finite(msv) || msv > 1e9 {
		msv = 1e9
	}
	return Remedy{Constraint: name, Value: msv, Class: m.spec.Name, Path: fmt.Sprintf("/classes/%d/slo/%s", j, field),
		Change: fmt.Sprintf("relax class %s's slo.%s from %s to %s ms (what %d in flight achieves), or shorten the answers", m.spec.Name, field, num(given.models[j].slo[metric]*1000), num(msv), at)}
}

// relaxTPOT is the remedy that sets class i's slo.tpot_ms to its TPOT at
// the SLO's percentile, rounded up to a whole millisecond: with
// load-independent latency what every pool gives (tpotCeiling), on a
// measured curve what the endpoint's load gives, from the target of the
// scenario given.
func (r *run) relaxTPOT(given *run, i int) Remedy {
	m := r.models[i]
	load := r.load(i)
	v := math.Ceil(signed.Round(m.tpotAt(load)*1000, 6))
	what := "what every pool achieves"
	if m.loadDependent() {
		what = fmt.Sprintf("what %d in flight on endpoint %s achieves; fewer in flight lower it", load, r.byClass[i].displayName())
	}
	return Remedy{Constraint: ConstraintSLOTPOT, Value: v, Class: m.spec.Name, Path: fmt.Sprintf("/classes/%d/slo/tpot_ms", i),
		Change: fmt.Sprintf("relax class %s's slo.tpot_ms from %s to %s ms (%s), or serve it from a faster endpoint or model", m.spec.Name, num(given.models[i].spec.SLO.TPOT()), num(v), what)}
}

func finite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }

// shedResolution is the precision of the sustainable rate, req/s.
const shedResolution = 1e-4

// floorShed is a sustainable rate v rounded down to shedResolution: a rate
// a class is told it sustains is never above what it does.
func floorShed(v float64) float64 { return math.Floor(v/shedResolution) / (1 / shedResolution) }

// shedMaxRounds bounds the bisection of the sustainable rate: 128 halvings
// take any interval narrower than 1e34 req/s to the resolution.
const shedMaxRounds = 128

// maxShedSearch is the largest demand whose bisection starts from the
// demand itself, req/s.
const maxShedSearch = 1e12

// shed is the largest arrival rate that class i's pool serves within its
// SLOs with a stable queue (A/pool at most policy.max_utilization), found
// by bisection, and the rate above it to shed.
func (r *run) shed(ctx context.Context, i, pool int) (*Shed, error) {
	m := r.models[i]
	if m.lambda == 0 {
		return nil, nil
	}
	if pool < 1 {
		return &Shed{SustainableRPS: 0, ShedRPS: signed.Round(m.lambda, 4)}, nil
	}
	s := m.pacedOf(m.at(r.load(i)))
	// A rate the pool serves within the SLO also sheds at most
	// maxShedShare of its requests (docs/concepts.md, "Shedding").
	tau, sheds, err := m.patience(ctx, r.load(i))
	if err != nil {
		return nil, err
	}
	var fail error
	ok := func(l float64) bool {
		if l*s.mean > m.rhoMax*float64(pool)*(1+tolerance) {
			return false
		}
		q := m.queue(pool, l, s)
		w := m.eng.wait(q)
		if !w.Stable() || sheds && q.ShedShare(w, tau) > maxShedShare {
			return false
		}
		for metric, which := range []percentile{pctTTFT, pctE2E} {
			if !m.hasSLO(metric) {
				continue
			}
			v, err := m.quantile(ctx, s, nil, m.waitOf(w, which), which)
			if err != nil {
				fail = err
				return false
			}
			if v > m.slo[metric] {
				return false
			}
		}
		return true
	}
	// A valid demand is at most about 1.67e7 req/s (scenario's maxRate);
	// a larger one, which only an unchecked scenario gives, is searched
	// from the pool's stable throughput, above which no rate passes.
	lo, hi := 0.0, m.lambda
	if !(hi <= maxShedSearch) {
		hi = math.Min(hi, m.rhoMax*float64(pool)/s.mean*(1+2*tolerance))
	}
	if !ok(lo) {
		if fail != nil {
			return nil, fail
		}
		return &Shed{SustainableRPS: 0, ShedRPS: signed.Round(m.lambda, 4)}, nil
	}
	// The resolution is reached within about 40 halvings from a valid
	// demand; the round bound holds whatever the numbers, and a midpoint
	// that floating point cannot tell from an end stops the search too.
	for range shedMaxRounds {
		if hi-lo <= shedResolution/2 {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		mid := (lo + hi) / 2
		if mid <= lo || mid >= hi {
			break
		}
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	if fail != nil {
		return nil, fail
	}
	sustainable := floorShed(lo)
	return &Shed{SustainableRPS: sustainable, ShedRPS: signed.Round(m.lambda-sustainable, 4)}, nil
}

// shedRounds bounds how often the sustainable rate is lowered until a plan
// with that demand fits.
const shedRounds = 8

// checkShed plans the scenario with class i's demand lowered to the
// sustainable rate: with less demand the class reserves less of what it
// shares, and on a curve endpoint the load moves, so the rate is lowered by
// 5 % at a time until the class fits there (only its own plan is worked
// out: fits).
func (r *run) checkShed(ctx context.Context, in scenario.Scenario, i int, sh *Shed) (*Shed, error) {
	if sh == nil || sh.SustainableRPS <= 0 {
		return sh, nil
	}
	demand := r.models[i].lambda
	rate := sh.SustainableRPS
	for range shedRounds {
		fits, err := r.eng.fits(ctx, withDemand(in, i, rate), i, r.floors, r.window)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return sh, nil
		}
		if fits {
			return &Shed{SustainableRPS: rate, ShedRPS: signed.Round(demand-rate, 4)}, nil
		}
		rate = floorShed(rate * 0.95)
		if rate <= 0 {
			break
		}
	}
	return &Shed{SustainableRPS: 0, ShedRPS: signed.Round(demand, 4)}, nil
}

// withDemand is the scenario with class i's demand set to rate req/s.
// Planning never writes into a scenario, so the copy shares all but the
// class list.
func withDemand(s scenario.Scenario, i int, rate float64) scenario.Scenario {
	out := s
	out.Classes = slices.Clone(s.Classes)
	out.Classes[i].Demand = &scenario.Demand{RPS: rate}
	return out
}
