package plan

import (
	"context"
	"fmt"

	"github.com/plannerdev/planner/internal/scenario"
)

// tolerance absorbs floating-point error when a pool uses exactly its share.
const tolerance = 1e-9

// ceilings lists class i's ceilings in table order, each with its value and
// how it was derived (docs/concepts.md, "Ceilings").
func (r *run) ceilings(ctx context.Context, i int) ([]Ceiling, error) {
	m := r.models[i]
	var out []Ceiling
	for _, mb := range r.memberships[i] {
		if !mb.res.slots() {
			out = append(out, r.quotaCeiling(i, mb))
		}
	}
	if knee := findMembership(r.memberships[i], ConstraintKnee); knee != nil {
		out = append(out, r.kneeCeiling(i, *knee))
	}
	for metric := range 2 {
		c, err := r.sloCeiling(ctx, i, metric)
		if err != nil {
			return nil, err
		}
		if c != nil {
			out = append(out, *c)
		}
	}
	if c := r.tpotCeiling(i); c != nil {
		out = append(out, *c)
	}
	out = append(out, Ceiling{Constraint: ConstraintPolicy, MaxPool: intPtr(m.maxPool),
		Detail: fmt.Sprintf("policy_cap: policy.max_pool = %d", m.maxPool)})
	return out, nil
}

func findMembership(ms []membership, name string) *membership {
	for k := range ms {
		if ms[k].res.name == name {
			return &ms[k]
		}
	}
	return nil
}

// quotaCeiling is the largest pool whose flat-out use of one limit of the
// key stays within the class's share a (units per second):
// X(c)·u ≤ a with X(c) = c/E[S(c)], the pool alone on its endpoint.
func (r *run) quotaCeiling(i int, mb membership) Ceiling {
	m := r.models[i]
	d := mb.res.dim
	a := r.ceilingShare(mb)
	u := m.use[d]
	name := d.String()
	limit, perS := m.key.Limit(d), m.key.Capacity(d)
	if r.overWindow(i, d) && d.Charge() == scenario.ChargeRequest {
		// A request's charge of a request limit is one, whatever its input.
		return Ceiling{Constraint: name, MaxPool: intPtr(0), Detail: fmt.Sprintf(
			"%s: one request exceeds one window's allowance, %s × %s %s/%s × %s s window = %s: it can never pass without waiting for a full window",
			name, num(m.key.Headroom), num(limit), d.Unit(), d.Period(), num(m.key.BurstWindowS), num(bucketSize(m.key, d)))}
	}
	if r.overWindow(i, d) {
		return Ceiling{Constraint: name, MaxPool: intPtr(0), Detail: fmt.Sprintf(
			"%s: one request's charge, %s %s at the p99 of its input, exceeds one window's allowance, %s × %s %s/%s × %s s window = %s: it can never pass without waiting for a full window",
			name, num(m.windowCharge(d)), d.Unit(), num(m.key.Headroom), num(limit), d.Unit(), d.Period(), num(m.key.BurstWindowS), num(bucketSize(m.key, d)))}
	}
	if u <= 0 {
		return Ceiling{Constraint: name, Detail: fmt.Sprintf("%s: a request uses none of it", name)}
	}
	allowed := a / u
	head := fmt.Sprintf("%s: %s × %s %s/%s = %s/s", name, num(m.key.Headroom), num(limit), d.Unit(), d.Period(), num(perS))
	if a < perS*(1-tolerance) {
		head += fmt.Sprintf(", this class's share %s/s", num(a))
	}
	if d.Daily() && r.dailyScale[i] != 1 {
		// u counts the class's hours of the day: a request uses u/scale,
		// and the class may send a/scale a second while it runs.
		scale := r.dailyScale[i]
		head += fmt.Sprintf(" over %s h a day; this class runs %s h of them, %s/s while it runs", num(m.key.ActiveHours), num(m.key.ActiveHours*scale), num(a/scale))
		u /= scale
	}
	if d.Daily() && r.dailyVolume[i] != 1 {
		// Sized at its profile's peak, the class sends the volume of its
		// busiest day: a request at the peak rate counts u/volume.
		head += fmt.Sprintf(", its busiest day under its demand profile sending %s of a day at its peak rate", num(r.dailyVolume[i]))
		u /= r.dailyVolume[i]
	}
	switch {
	case m.task != nil:
		head += fmt.Sprintf(" ÷ %s %s/task = %s tasks/s", num(u), d.Unit(), num(allowed))
	case d.Charge() == scenario.ChargeRequest:
		head += fmt.Sprintf(" → %s req/s", num(allowed))
	default:
		head += fmt.Sprintf(" ÷ %s %s/request = %s req/s", num(u), d.Unit(), num(allowed))
	}
	if r.demandSetsVolume(i, d, a) {
		return Ceiling{Constraint: name, Detail: fmt.Sprintf("%s; its demand of %s %s is within it, and a daily limit counts the day's volume, which the demand sets whatever the pool (a pool sends faster only while it clears a backlog), so it holds no pool back", head, num(m.lambda), m.rateUnit())}
	}
	c := r.ceil(mb.res, i, a)
	// One slot that could send faster than the share still gets the
	// pool of 1 that its demand needs (ceil).
	oneSlot := fmt.Sprintf(" → 1: one slot could send faster, but its demand of %s %s is within it and the key's pacing holds its sends to it", num(m.lambda), m.rateUnit())
	if m.static != nil {
		if c == unbounded {
			return Ceiling{Constraint: name, Detail: head + "; no pool reaches it"}
		}
		if c == 1 && allowed*m.static.mean*(1+tolerance) < 1 {
			return Ceiling{Constraint: name, MaxPool: intPtr(c),
				Detail: fmt.Sprintf("%s × %s %s s = %s%s", head, m.serviceName(), num(m.static.mean), num(allowed*m.static.mean), oneSlot)}
		}
		return Ceiling{Constraint: name, MaxPool: intPtr(c),
			Detail: fmt.Sprintf("%s × %s %s s = %s → %d", head, m.serviceName(), num(m.static.mean), floorNum(allowed*m.static.mean, c), c)}
	}
	if c == unbounded {
		return Ceiling{Constraint: name, Detail: fmt.Sprintf("%s; the measured endpoint never sends that fast with up to %s in flight", head, num(searchLimit))}
	}
	if c == 1 && m.rate(1)*u > a*(1+tolerance) {
		return Ceiling{Constraint: name, MaxPool: intPtr(c),
			Detail: fmt.Sprintf("%s; at 1 in flight the curve gives E[S] %s s and %s req/s%s", head, num(m.at(1).mean), num(m.rate(1)), oneSlot)}
	}
	return Ceiling{Constraint: name, MaxPool: intPtr(c),
		Detail: fmt.Sprintf("%s; at %d in flight the curve gives E[S] %s s and %s req/s, over it → %d", head, c+1, num(m.at(c+1).mean), num(m.rate(c+1)), c)}
}

// kneeCeiling is the class's share of its endpoint's knee budget
// ⌊s·knee⌋, s the smallest knee safety among the endpoint's classes and
// knee the endpoint's knee_refined when given, else its knee.
func (r *run) kneeCeiling(i int, mb membership) Ceiling {
	m := r.models[i]
	e := mb.res.ep
	share := r.ceilingShare(mb)
	c := r.ceil(mb.res, i, share)
	knee, caveat := e.kneeText()
	caveat = r.taskKneeText(i, c) + caveat
	if len(e.members) == 1 {
		return Ceiling{Constraint: ConstraintKnee, MaxPool: intPtr(c),
			Detail: fmt.Sprintf("knee: %s safety %s × %s = %d%s", m.spec.Mode, num(e.safety), knee, e.kneeBudget, caveat)}
	}
	return Ceiling{Constraint: ConstraintKnee, MaxPool: intPtr(c),
		Detail: fmt.Sprintf("knee: endpoint %s holds ⌊%s × %s⌋ = %d in flight for its %d classes (the smallest knee safety among them); this class's share is %s → %d%s",
			e.displayName(), num(e.safety), knee, e.kneeBudget, len(e.members), floorNum(share, c), c, caveat)}
}

// sloCeiling is the class's SLO ceiling on one metric, or nil when neither
// the class nor its endpoint has a target on it. With load-independent
// latency, the p95 only improves as the pool grows (the queue shrinks
// towards nothing), so the ceiling is unbounded when the p95 without
// queueing meets the target, and 0 when it does not. On a curve endpoint
// the ceiling is the class's share of the endpoint's SLO budget: the
// largest total in flight at which every target on the metric holds.
func (r *run) sloCeiling(ctx context.Context, i, metric int) (*Ceiling, error) {
	m := r.models[i]
	e := r.byClass[i]
	name, label := sloConstraint(metric), m.metricLabel(metric)
	if m.hasSLO(metric) && (m.static != nil || r.private[i] == 0) {
		alone, err := m.noWait95(ctx, 1, metric)
		if err != nil {
			return nil, err
		}
		target := m.slo[metric]
		if alone > target*(1+tolerance) {
			return &Ceiling{Constraint: name, MaxPool: intPtr(0),
				Detail: fmt.Sprintf("%s: the %s %s is %s ms without any queueing, over the %s ms target at every pool", name, label, m.pctLabel(), num(alone*1000), num(target*1000))}, nil
		}
		if m.static != nil {
			return &Ceiling{Constraint: name,
				Detail: fmt.Sprintf("%s: the %s %s is %s ms without queueing and the queue only shrinks as the pool grows, so the %s ms target holds from min_pool up", name, label, m.pctLabel(), num(alone*1000), num(target*1000))}, nil
		}
	}
	if m.static != nil || !e.slo[metric].active {
		return nil, nil
	}
	b := e.slo[metric]
	if b.total == nil {
		why := ""
		if bound := r.sloBound(e); bound == e.kneeBudget {
			why = ", its knee budget"
		}
		return &Ceiling{Constraint: name,
			Detail: fmt.Sprintf("%s: every %s target on endpoint %s holds with up to %d in flight%s", name, label, e.displayName(), r.sloBound(e), why)}, nil
	}
	mb := findMembership(r.memberships[i], name)
	share := r.ceilingShare(*mb)
	c := r.ceil(mb.res, i, share)
	who := r.models[b.breaker]
	why := fmt.Sprintf("beyond it %s's %s %s without queueing exceeds its %s ms target", who.spec.Name, label, who.pctLabel(), num(who.slo[metric]*1000))
	if b.reason == "minPool" {
		why = fmt.Sprintf("beyond it the pools that the classes' demand needs within their targets (%s's first) no longer fit", who.spec.Name)
	}
	if len(e.members) == 1 {
		v, err := m.noWait95(ctx, *b.total, metric)
		if err != nil {
			return nil, err
		}
		return &Ceiling{Constraint: name, MaxPool: intPtr(c),
			Detail: fmt.Sprintf("%s: predicted %s %s %s ms at %d in flight meets the %s ms target; %s", name, label, m.pctLabel(), num(v*1000), *b.total, num(m.slo[metric]*1000), why)}, nil
	}
	return &Ceiling{Constraint: name, MaxPool: intPtr(c),
		Detail: fmt.Sprintf("%s: endpoint %s keeps every %s target with up to %d in flight (%s); this class's share is %s → %d",
			name, e.displayName(), label, *b.total, why, floorNum(share, c), c)}, nil
}

// tpotCeiling is the class's TPOT ceiling, or nil when it has no TPOT
// target or its endpoint's latency depends on its load. A request's TPOT
// does not include its wait for a slot, so with load-independent latency
// no pool changes it: the ceiling is unbounded when the TPOT at the SLO's
// percentile meets the target and 0 when it does not (tpotMissed).
func (r *run) tpotCeiling(i int) *Ceiling {
	m := r.models[i]
	if !m.hasTPOTTarget() || m.loadDependent() {
		return nil
	}
	v, target := m.tpotAt(r.load(i))*1000, m.spec.SLO.TPOT()
	if m.tpotMissed(r.load(i)) {
		return &Ceiling{Constraint: ConstraintSLOTPOT, MaxPool: intPtr(0),
			Detail: fmt.Sprintf("slo_tpot: the TPOT %s is %s ms at every pool, over the %s ms target: a pool changes only the wait for a slot, which TPOT does not include", m.pctLabel(), num(v), num(target))}
	}
	return &Ceiling{Constraint: ConstraintSLOTPOT,
		Detail: fmt.Sprintf("slo_tpot: the TPOT %s is %s ms at every pool, within the %s ms target: a pool changes only the wait for a slot, which TPOT does not include", m.pctLabel(), num(v), num(target))}
}

// sloBound is how far an endpoint's SLO budget is searched: as far as its
// classes' pools could reach, and no further than its knee budget, which
// the load never exceeds (so a target that holds there cannot bind).
func (r *run) sloBound(e *endpoint) int {
	bound := 0
	for _, i := range e.members {
		bound += r.private[i]
	}
	if e.kneeBudget >= 0 {
		bound = min(bound, e.kneeBudget)
	}
	return max(1, min(bound, searchLimit))
}

func metricLabel(metric int) string {
	if metric == metricTTFT {
		return "TTFT"
	}
	return "E2E"
}

// metricLabel names the metric for the class: an agent task class's E2E
// target is on the whole task (slo.task_e2e_ms), not on a call.
func (m *classModel) metricLabel(metric int) string {
	if metric == metricE2E && m.task != nil {
		return "task E2E"
	}
	return metricLabel(metric)
}

func intPtr(v int) *int { return &v }

func ptrTo[T any](v T) *T { return &v }
