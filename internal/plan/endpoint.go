package plan

import (
	"context"
	"fmt"
	"math"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/scenario"
)

// endpoint is one latency profile and the classes that send to it
// (docs/concepts.md, "Endpoints shared by classes"): its knee is one budget
// for all of them, and with a measured curve their latency follows the
// total in flight on it.
type endpoint struct {
	name string
	own  bool   // a class's own latency profile: no other class shares it
	path string // JSON Pointer of its latency block in the scenario
	// knee is the knee its budget uses: knee_refined when the latency
	// block gives one, else knee (kneeField names which); lowerBound marks
	// a knee the probe never reached, which the plan holds pools to but
	// never asks to add serving capacity for.
	knee       *int
	kneeField  string
	lowerBound bool
	safety     float64 // the smallest knee safety among its classes
	members    []int   // indices of its classes, in priority order
	curve      bool

	kneeBudget int // ⌊safety·knee⌋; −1 without a knee
	slo        [2]sloBudget
	// load is the total in flight at which its classes' latency is
	// predicted: with a curve, the sum of their pools (docs/concepts.md).
	load int
}

// sloBudget is the largest total in flight on a curve endpoint at which
// every target on one metric can hold: every class's p95 without queueing
// meets its target, and the min_pools that the classes with demand need at
// that load fit in it.
type sloBudget struct {
	active bool // a class on the endpoint has a target on the metric
	total  *int // nil: no total up to the search bound breaks a target
	// breaker is the class whose target breaks first beyond total, and why.
	breaker int
	reason  string
}

// curve returns the interpolation and USL fit of a measured curve, from the
// cache when a plan has fitted the same points (a curve is immutable).
func (e *Engine) curve(points []scenario.CurvePoint) (*model.Curve, error) {
	key := fmt.Sprint(points)
	if c, ok := e.curves.Get(key); ok {
		return c, nil
	}
	pts := make([]model.LatencyPoint, len(points))
	for i, c := range points {
		pts[i] = model.LatencyPoint{
			Concurrency: float64(c.Concurrency),
			TTFTP50:     c.TTFTP50Ms / 1000, TTFTP95: c.TTFTP95Ms / 1000,
			TPOTP50: c.TPOTP50Ms / 1000, TPOTP95: c.TPOTP95Ms / 1000,
			Throughput: c.ThroughputRPS, Weight: float64(c.Requests),
		}
		if pts[i].Throughput == 0 && c.E2EP50Ms > 0 {
			pts[i].Throughput = model.LittleRate(float64(c.Concurrency), c.E2EP50Ms/1000)
		}
	}
	c, err := model.NewCurve(pts)
	if err != nil {
		return nil, err
	}
	e.curves.Add(key, c)
	return c, nil
}

// endpointsOf groups the classes of a scenario with defaults by endpoint,
// in the order endpoints first appear among the classes.
func endpointsOf(s scenario.Scenario, models []*classModel, order []int) []*endpoint {
	paths := map[string]string{scenario.DefaultEndpoint: "/latency"}
	for i, e := range s.Endpoints {
		paths[e.Name] = fmt.Sprintf("/endpoints/%d/latency", i)
	}
	var out []*endpoint
	byName := map[string]*endpoint{}
	for _, i := range order {
		c := s.Classes[i]
		name, own := c.Endpoint, c.Endpoint == ""
		if own {
			name = "class:" + c.Name
		}
		e, ok := byName[name]
		if !ok {
			e = &endpoint{name: name, own: own, path: paths[name], knee: c.Latency.PlanningKnee(), kneeField: KneeFieldKnee,
				lowerBound: c.Latency.KneeLowerBound, safety: 1, curve: models[i].loadDependent(), kneeBudget: -1}
			if c.Latency.KneeRefined != nil {
				e.kneeField = KneeFieldRefined
			}
			if own {
				e.path = fmt.Sprintf("/classes/%d/latency", i)
			}
			byName[name] = e
			out = append(out, e)
		}
		e.members = append(e.members, i)
		e.safety = math.Min(e.safety, models[i].safety)
	}
	for _, e := range out {
		if e.knee != nil {
			e.kneeBudget = int(math.Floor(e.safety*float64(*e.knee) + tolerance))
		}
	}
	return out
}

// The latency block's fields that an endpoint's knee budget can use.
const (
	KneeFieldKnee    = "knee"
	KneeFieldRefined = "knee_refined"
)

// kneeText names the knee that the endpoint's budget uses, for the
// ceilings' details: measured, refined by a knee search, or a lower bound;
// caveat follows the detail for a lower bound.
func (e *endpoint) kneeText() (name, caveat string) {
	switch {
	case e.lowerBound:
		return fmt.Sprintf("knee %d", *e.knee), fmt.Sprintf(" (knee ≥ %d: a lower bound, the probe never reached the knee)", *e.knee)
	case e.kneeField == KneeFieldRefined:
		return fmt.Sprintf("refined knee %d (knee_refined)", *e.knee), ""
	}
	return fmt.Sprintf("measured knee %d", *e.knee), ""
}

// kneePath is the JSON Pointer of the field that holds the endpoint's knee.
func (e *endpoint) kneePath() string { return e.path + "/" + e.kneeField }

// hopeless reports whether a class's target on the metric fails even with
// one request in flight and no queue: no pool meets it, so its SLO ceiling
// is 0 and it takes no part in its endpoint's SLO budget.
func (r *run) hopeless(ctx context.Context, i, metric int) (bool, error) {
	m := r.models[i]
	if !m.hasSLO(metric) {
		return false, nil
	}
	// The closed form settles clear cases without drawing.
	if m.loadDependent() && m.approxNoWait95(1, metric) < 0.8*m.slo[metric] {
		return false, nil
	}
	v, err := m.noWait95(ctx, 1, metric)
	return v > m.slo[metric]*(1+tolerance), err
}

// sloBudgets sets the SLO budgets of a curve endpoint: for each metric on
// which a class has a target, the largest total T up to bound such that
// every target on the metric holds without queueing at T, and the min_pools
// of the classes with demand at T add up to at most T (they can all be
// served within their targets at that load). Latency grows with T, so the
// first condition holds up to some T; the second fails at small T (too few
// slots for the offered load) and again near that limit (where min_pool
// grows without bound), so the search walks down from the first limit.
func (r *run) sloBudgets(ctx context.Context, e *endpoint, bound int) error {
	for metric := range 2 {
		b := &e.slo[metric]
		var judged []int
		for _, i := range e.members {
			h, err := r.hopelessAny(ctx, i)
			if err != nil {
				return err
			}
			if h {
				continue
			}
			judged = append(judged, i)
			if r.models[i].hasSLO(metric) {
				b.active = true
			}
		}
		if !b.active {
			continue
		}
		// The largest T at which every target holds without a queue: found
		// with the closed-form stand-ins, then settled with the Monte Carlo.
		noWait := func(t int, exact bool) (bool, int, error) {
			for _, i := range judged {
				m := r.models[i]
				if !m.hasSLO(metric) {
					continue
				}
				v := 0.0
				if exact {
					var err error
					if v, err = m.noWait95(ctx, t, metric); err != nil {
						return false, i, err
					}
				} else {
					v = m.approxNoWait95(t, metric)
				}
				if v > m.slo[metric]*(1+tolerance) {
					return false, i, nil
				}
			}
			return true, -1, nil
		}
		guess, _ := lastTrue(1, bound+1, func(t int) (bool, error) { ok, _, err := noWait(t, false); return ok, err })
		top, err := refineLast(guess, 1, bound, func(t int) (bool, error) { ok, _, err := noWait(t, true); return ok, err })
		if err != nil {
			return err
		}
		if top < bound {
			_, breaker, err := noWait(top+1, true)
			if err != nil {
				return err
			}
			b.total, b.breaker, b.reason = intPtr(top), breaker, "noWait"
		}
		// The largest T up to top at which the min_pools of the classes
		// with demand fit in T, bracketed and settled the same way.
		fits := func(t int, exact bool) (bool, error) {
			sum := 0
			for _, i := range judged {
				m := r.models[i]
				if m.lambda == 0 {
					continue
				}
				if !exact {
					c, ok := m.approxMinPoolAt(t)
					if !ok {
						return false, nil
					}
					sum += c
					continue
				}
				c, err := m.minPoolAt(ctx, t)
				if err != nil || c == nil {
					return false, err
				}
				sum += *c
			}
			return sum <= t, nil
		}
		ok, err := fits(top, true)
		if err != nil || ok {
			if err != nil {
				return err
			}
			continue
		}
		guess = walkDown(top, func(t int) bool { ok, _ := fits(t, false); return ok })
		good, err := refineLast(max(guess, 1), 1, top, func(t int) (bool, error) { return fits(t, true) })
		if err != nil {
			return err
		}
		if good < 1 {
			continue // the demand does not fit at any total: the classes say so
		}
		b.total, b.breaker, b.reason = intPtr(good), r.demandBreaker(e, metric), "minPool"
	}
	return nil
}

// walkDown is the largest t ≤ top with ok(t), walking down in doubling
// steps from top and bisecting; 0 when ok(1) fails too. ok holds on an
// interval that top lies above.
func walkDown(top int, ok func(int) bool) int {
	bad := top
	for step := 1; ; step *= 2 {
		t := max(1, bad-step)
		if ok(t) {
			for bad-t > 1 {
				mid := t + (bad-t)/2
				if ok(mid) {
					t = mid
				} else {
					bad = mid
				}
			}
			return t
		}
		if t == 1 {
			return 0
		}
		bad = t
	}
}

// refineLast is the largest t in [lo, hi] with exact(t), for a predicate
// that holds up to some t and fails after, starting from a guess that an
// approximation gave: it gallops away from the guess until the answer is
// bracketed, then bisects, so that a good guess costs two or three exact
// evaluations. It is lo − 1 when exact(lo) fails.
func refineLast(guess, lo, hi int, exact func(int) (bool, error)) (int, error) {
	g := max(lo, min(guess, hi))
	ok, err := exact(g)
	if err != nil {
		return 0, err
	}
	good, bad := g, hi+1
	if ok {
		for step := 1; good < hi; step *= 2 {
			t := min(hi, good+step)
			ok, err := exact(t)
			if err != nil {
				return 0, err
			}
			if !ok {
				bad = t
				break
			}
			good = t
		}
		if good == hi {
			return hi, nil
		}
	} else {
		bad = g
		good = lo - 1
		for step := 1; bad > lo; step *= 2 {
			t := max(lo, bad-step)
			ok, err := exact(t)
			if err != nil {
				return 0, err
			}
			if ok {
				good = t
				break
			}
			bad = t
		}
		if good < lo {
			return lo - 1, nil
		}
	}
	for bad-good > 1 {
		mid := good + (bad-good)/2
		ok, err := exact(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			good = mid
		} else {
			bad = mid
		}
	}
	return good, nil
}

// hopelessAny reports whether a class fails one of its targets at any pool.
func (r *run) hopelessAny(ctx context.Context, i int) (bool, error) {
	if m := r.models[i]; !m.loadDependent() && m.tpotMissed(1) {
		return true, nil // its TPOT ceiling is 0 (tpotCeiling)
	}
	for metric := range 2 {
		h, err := r.hopeless(ctx, i, metric)
		if err != nil || h {
			return h, err
		}
	}
	return false, nil
}

// demandBreaker names the class that an SLO budget set by min_pools is
// charged to: the first class, in priority order, with demand and a target
// on the metric, else the first with demand.
func (r *run) demandBreaker(e *endpoint, metric int) int {
	first := -1
	for _, i := range e.members {
		m := r.models[i]
		if m.lambda == 0 {
			continue
		}
		if m.hasSLO(metric) {
			return i
		}
		if first < 0 {
			first = i
		}
	}
	return first
}

// lastTrue is the largest t in [lo, hi) with ok(t), for a predicate that
// holds up to some t and fails after, given that ok(hi) fails; lo − 1
// when ok(lo) fails. It gallops up from lo and bisects.
func lastTrue(lo, hi int, ok func(int) (bool, error)) (int, error) {
	good, err := ok(lo)
	if err != nil || !good {
		return lo - 1, err
	}
	g, b := lo, hi
	for step := 1; g+step < b; step *= 2 {
		t := g + step
		good, err := ok(t)
		if err != nil {
			return 0, err
		}
		if !good {
			b = t
			break
		}
		g = t
	}
	for b-g > 1 {
		mid := g + (b-g)/2
		good, err := ok(mid)
		if err != nil {
			return 0, err
		}
		if good {
			g = mid
		} else {
			b = mid
		}
	}
	return g, nil
}
