package plan

import (
	"fmt"
	"math"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/quota"
)

// remedies lists, for every ceiling below min_pool, the change that lifts it
// to min_pool (DESIGN §3.4). Applied together they make the class feasible.
// For a quota dimension the new limit is the one at which the key's
// allocation gives the class min_pool's flat-out use, L = capacity·period/h,
// rounded up; for the knee, the knee whose safe share reaches min_pool; for
// an SLO, the p95 that min_pool achieves; for the cap, max_pool = min_pool.
func (m *classModel) remedies(cs []Ceiling, sh *share, j int) []Remedy {
	out := []Remedy{}
	if m.minPool == nil {
		return out
	}
	target := *m.minPool
	need := m.needAt(target)
	for _, c := range cs {
		if c.MaxPool == nil || *c.MaxPool >= target {
			continue
		}
		switch c.Constraint {
		case ConstraintKnee:
			k := int(math.Ceil(float64(target)/m.safety - tolerance))
			for int(math.Floor(m.safety*float64(k)+tolerance)) < target {
				k++
			}
			out = append(out, Remedy{Constraint: c.Constraint, Value: float64(k),
				Change: fmt.Sprintf("serve a knee of at least %d in flight (measured %d): add serving capacity and measure again", k, *m.knee)})
		case ConstraintSLOTTFT, ConstraintSLOE2E:
			v, field, was := m.e2e95(target), "e2e_p95_ms", m.spec.SLO.E2EP95Ms
			if c.Constraint == ConstraintSLOTTFT {
				v, field, was = m.ttft95(target), "ttft_p95_ms", m.spec.SLO.TTFTP95Ms
			}
			ms := math.Ceil(v * 1000)
			out = append(out, Remedy{Constraint: c.Constraint, Value: ms,
				Change: fmt.Sprintf("relax slo.%s from %s to %s ms (what a pool of %d achieves), or shorten the answers", field, num(was), num(ms), target)})
		case ConstraintPolicy:
			out = append(out, Remedy{Constraint: c.Constraint, Value: float64(target),
				Change: fmt.Sprintf("raise policy.max_pool from %d to %d", m.maxPool, target)})
		default:
			d := dimensionNamed(c.Constraint)
			capacity := quota.CapacityFor(sh.claims, j, d, need[d], sh.policy)
			l := math.Ceil(m.key.LimitFor(d, capacity) * (1 + tolerance))
			out = append(out, Remedy{Constraint: c.Constraint, Value: l,
				Change: fmt.Sprintf("raise %s on key %s from %s to %s (a higher tier, or a second key for this class)", c.Constraint, m.key.Name, num(m.key.Limit(d)), num(l))})
		}
	}
	return out
}

func dimensionNamed(name string) quota.Dimension {
	for d := range quota.NumDimensions {
		if d.String() == name {
			return d
		}
	}
	panic("plan: unknown quota dimension " + name)
}

// shedResolution is the precision of the sustainable rate, req/s.
const shedResolution = 1e-4

// shed is the largest arrival rate that the pool serves within the SLO with
// a stable queue, found by bisection, and the rate above it to shed.
func (m *classModel) shed(pool int) *Shed {
	if m.lambda == 0 {
		return nil
	}
	if pool < 1 {
		return &Shed{SustainableRPS: 0, ShedRPS: roundTo(m.lambda, 4)}
	}
	s := m.at(pool)
	t, e := m.tails(s)
	st, se := m.slo()
	ok := func(l float64) bool {
		w := model.QueueWait(pool, l, s.mean, m.ca2, s.scv)
		if !w.Stable() {
			return false
		}
		return (se == 0 || e.Quantile(w) <= se) && (st == 0 || t.Quantile(w) <= st)
	}
	lo, hi := 0.0, m.lambda
	if !ok(lo) {
		return &Shed{SustainableRPS: 0, ShedRPS: roundTo(m.lambda, 4)}
	}
	// The answer is kept to 10⁻⁴ req/s, rounded down: bisect to that width.
	for hi-lo > shedResolution/2 {
		mid := (lo + hi) / 2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	sustainable := math.Floor(lo/shedResolution) / (1 / shedResolution)
	return &Shed{SustainableRPS: sustainable, ShedRPS: roundTo(m.lambda-sustainable, 4)}
}
