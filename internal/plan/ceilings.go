package plan

import (
	"fmt"
	"math"

	"github.com/plannerdev/planner/internal/quota"
)

// tolerance absorbs floating-point error when a pool uses exactly its share.
const tolerance = 1e-9

// quotaCeiling is the largest pool whose flat-out use of dimension d stays
// within the class's allotment a (units per second), DESIGN §3.3:
// X(c)·u ≤ a with X(c) = c/E[S(c)]. With load-independent latency that is
// ⌊a/u · E[S]⌋; with a curve it is found by scanning pools upward to the
// first that breaks it, as X(c) need not grow with c.
func (m *classModel) quotaCeiling(d quota.Dimension, a float64) Ceiling {
	u := m.use[d]
	name := d.String()
	limit, perS := m.key.Limit(d), m.key.Capacity(d)
	if u <= 0 {
		return Ceiling{Constraint: name, Detail: fmt.Sprintf("%s: a request uses none of it", name)}
	}
	allowed := a / u
	head := fmt.Sprintf("%s: %s × %s %s/%s = %s/s", name, num(m.key.Headroom), num(limit), d.Unit(), periodName(d), num(perS))
	if a < perS*(1-tolerance) {
		head += fmt.Sprintf(", this class's share %s/s", num(a))
	}
	if d == quota.RPM || d == quota.RPD {
		head += fmt.Sprintf(" → %s req/s", num(allowed))
	} else {
		head += fmt.Sprintf(" ÷ %s %s/request = %s req/s", num(u), d.Unit(), num(allowed))
	}
	if m.static != nil {
		v := allowed * m.static.mean
		c := math.Floor(v * (1 + tolerance))
		if c > unboundedThreshold {
			return Ceiling{Constraint: name, Detail: head + "; no pool reaches it"}
		}
		return Ceiling{Constraint: name, MaxPool: intPtr(int(c)),
			Detail: fmt.Sprintf("%s × E[S] %s s = %s → %d", head, num(m.static.mean), num(v), int(c))}
	}
	top := max(m.maxPool, deref(m.minPool))
	if c, ok := m.firstAbove(a*(1+tolerance), u, top); ok {
		return Ceiling{Constraint: name, MaxPool: intPtr(c - 1),
			Detail: fmt.Sprintf("%s; at %d in flight the curve gives E[S] %s s and %s req/s, over the limit → %d", head, c, num(m.at(c).mean), num(m.rate(c)), c-1)}
	}
	return Ceiling{Constraint: name, Detail: fmt.Sprintf("%s; the measured endpoint never sends that fast with up to %d in flight", head, top)}
}

// kneeCeiling is ⌊safety·knee⌋ (DESIGN §3.3).
func (m *classModel) kneeCeiling() Ceiling {
	k := *m.knee
	c := int(math.Floor(m.safety*float64(k) + tolerance))
	return Ceiling{Constraint: ConstraintKnee, MaxPool: intPtr(c),
		Detail: fmt.Sprintf("knee: %s safety %s × measured knee %d = %d", m.spec.Mode, num(m.safety), k, c)}
}

// sloCeiling is the largest pool whose predicted p95 (queue wait included
// when demand is given) meets the target. Load-independent latency only
// improves as the pool grows (the queue shrinks towards nothing), so the
// ceiling is unbounded when the p95 without queueing meets the target, and
// 0 when it does not. With a curve the p95 eventually grows with the pool:
// the search starts at min_pool (or 1 without demand), and the boundary is
// bracketed and bisected.
func (m *classModel) sloCeiling(name string, target float64, p95 func(c int) float64) Ceiling {
	label := "TTFT"
	if name == ConstraintSLOE2E {
		label = "E2E"
	}
	if m.static != nil {
		alone := m.noWait95(name == ConstraintSLOTTFT)
		if alone > target*(1+tolerance) {
			return Ceiling{Constraint: name, MaxPool: intPtr(0),
				Detail: fmt.Sprintf("%s: the %s p95 is %s ms without any queueing, over the %s ms target at every pool", name, label, num(alone*1000), num(target*1000))}
		}
		return Ceiling{Constraint: name,
			Detail: fmt.Sprintf("%s: the %s p95 is %s ms without queueing and the queue only shrinks as the pool grows, so the %s ms target holds from min_pool up", name, label, num(alone*1000), num(target*1000))}
	}
	from := 1
	if m.lambda > 0 && m.minPool != nil {
		from = *m.minPool
	}
	if m.minPool == nil && m.lambda > 0 {
		return Ceiling{Constraint: name, MaxPool: intPtr(0), Detail: fmt.Sprintf("%s: the demand keeps the queue unstable at every pool up to %d", name, searchLimit)}
	}
	v := p95(from)
	if v > target*(1+tolerance) {
		return Ceiling{Constraint: name, MaxPool: intPtr(0),
			Detail: fmt.Sprintf("%s: predicted %s p95 %s ms at %d in flight exceeds the %s ms target at every pool", name, label, num(v*1000), from, num(target*1000))}
	}
	top := max(m.maxPool, from)
	if from >= top {
		return Ceiling{Constraint: name,
			Detail: fmt.Sprintf("%s: predicted %s p95 %s ms at %d in flight meets the %s ms target", name, label, num(v*1000), from, num(target*1000))}
	}
	ok := func(c int) bool { return p95(c) <= target*(1+tolerance) }
	good, bad := from, 0
	for step := 1; ; step *= 2 {
		c := min(from+step, top)
		if !ok(c) {
			bad = c
			break
		}
		good = c
		if c == top {
			return Ceiling{Constraint: name,
				Detail: fmt.Sprintf("%s: predicted %s p95 meets the %s ms target at every pool up to %d", name, label, num(target*1000), top)}
		}
	}
	for bad-good > 1 {
		mid := good + (bad-good)/2
		if ok(mid) {
			good = mid
		} else {
			bad = mid
		}
	}
	return Ceiling{Constraint: name, MaxPool: intPtr(good),
		Detail: fmt.Sprintf("%s: predicted %s p95 %s ms at %d in flight meets the %s ms target; at %d it is %s ms",
			name, label, num(p95(good)*1000), good, num(target*1000), bad, num(p95(bad)*1000))}
}

func periodName(d quota.Dimension) string {
	if d.Daily() {
		return "day"
	}
	return "min"
}

func intPtr(v int) *int { return &v }

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
