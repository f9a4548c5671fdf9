package plan

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
)

// Compute plans a scenario. The scenario must have passed validation
// (scenario.Parse or the API's schema); Compute checks the cross-field rules
// again and returns scenario.Errors when they fail. The same scenario always
// gives the same plan, to the byte once encoded.
func Compute(s scenario.Scenario) (*Plan, error) {
	return ComputeContext(context.Background(), s)
}

// ComputeContext is Compute that gives up when ctx is done, returning
// ctx.Err(): a large scenario (many classes, many draws, a measured curve)
// can take seconds, and a server bounds how long a request may plan.
//
// The plan of a scenario seen recently comes from a bounded cache (planning
// is deterministic), so the result may be shared: callers must not modify
// it.
func ComputeContext(ctx context.Context, s scenario.Scenario) (*Plan, error) {
	key, ok := planKey(s)
	if ok {
		if p, hit := planCache.Get(key); hit {
			return p, nil
		}
	}
	p, err := computeContext(ctx, s)
	if err == nil && ok {
		planCache.Add(key, p)
	}
	return p, err
}

// computeContext plans without the cache.
func computeContext(ctx context.Context, s scenario.Scenario) (p *Plan, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(cancelled)
			if !ok {
				panic(r)
			}
			p, err = nil, c.err
		}
	}()
	return compute(ctx, s)
}

// cancelled unwinds a plan whose context is done; ComputeContext recovers
// it. The searches check the context at each Monte Carlo evaluation, the
// unit of expensive work, and unwinding spares every search an error path.
type cancelled struct{ err error }

// checkContext stops the plan when its context is done.
func checkContext(ctx context.Context) {
	if err := ctx.Err(); err != nil {
		panic(cancelled{err})
	}
}

func compute(ctx context.Context, s scenario.Scenario) (*Plan, error) {
	if errs := s.Check(); len(errs) > 0 {
		return nil, errs
	}
	s = s.WithDefaults()
	draws := model.SharedDraws(*s.Policy.Seed, s.Policy.MonteCarloDraws)
	keys := map[string]quota.Key{}
	for _, q := range s.Quotas {
		keys[q.Name] = quota.Key{Quota: q}
	}
	models := make([]*classModel, len(s.Classes))
	cs := curves{}
	for i, c := range s.Classes {
		checkContext(ctx)
		m, err := newClassModel(c, keys[c.Quota], s.Policy, draws, cs)
		if err != nil {
			return nil, scenario.Errors{{Path: fmt.Sprintf("classes[%d]", i), Message: err.Error()}}
		}
		m.ctx = ctx
		m.findMinPool()
		models[i] = m
	}
	p := &Plan{Classes: make([]ClassPlan, len(models)), Warnings: []string{}}
	for _, q := range s.Quotas {
		var idx []int
		for i, m := range models {
			if m.spec.Quota == q.Name {
				idx = append(idx, i)
			}
		}
		sh := newShare(keys[q.Name], models, idx, s.Policy.Allocation)
		pools := make([]int, len(idx))
		for j, i := range idx {
			p.Classes[i] = planClass(models[i], sh, j)
			pools[j] = p.Classes[i].Pool
		}
		p.Quotas = append(p.Quotas, sh.summary(pools))
	}
	p.Warnings = planWarnings(s, p)
	return p, nil
}

// share is one key divided among the classes that use it.
type share struct {
	key    quota.Key
	models []*classModel // the key's classes
	claims []quota.Claim
	allot  []quota.Vector // units per second
	policy string
}

func newShare(k quota.Key, all []*classModel, idx []int, policy string) *share {
	sh := &share{key: k, policy: policy}
	for _, i := range idx {
		m := all[i]
		c := quota.Claim{Class: m.spec.Name, Mode: m.spec.Mode, Priority: m.spec.Priority, Weight: m.spec.Weight}
		if m.lambda > 0 {
			pool := searchLimit
			if m.minPool != nil {
				pool = *m.minPool
			}
			n := m.needAt(pool)
			c.Need = &n
		}
		sh.models = append(sh.models, m)
		sh.claims = append(sh.claims, c)
	}
	sh.allot = quota.Allocate(k, sh.claims, policy)
	return sh
}

// needAt is what a pool of c uses of each dimension running flat out, in
// units per second: the most it can send times the use per request.
func (m *classModel) needAt(c int) quota.Vector {
	var n quota.Vector
	x := m.peakRate(c)
	for d := range quota.NumDimensions {
		n[d] = x * m.use[d]
	}
	return n
}

// planClass computes everything for the j-th class of a key.
func planClass(m *classModel, sh *share, j int) ClassPlan {
	cp := ClassPlan{Name: m.spec.Name, Mode: m.spec.Mode, Quota: m.spec.Quota, MinPool: m.minPool, Warnings: []string{}, Remedies: []Remedy{}}
	for d := range quota.NumDimensions {
		if m.key.Limit(d) > 0 {
			cp.Ceilings = append(cp.Ceilings, m.quotaCeiling(d, sh.allot[j][d]))
		}
	}
	if m.knee != nil {
		cp.Ceilings = append(cp.Ceilings, m.kneeCeiling())
	}
	st, se := m.slo()
	if st > 0 {
		cp.Ceilings = append(cp.Ceilings, m.sloCeiling(ConstraintSLOTTFT, st, m.ttft95))
	}
	if se > 0 {
		cp.Ceilings = append(cp.Ceilings, m.sloCeiling(ConstraintSLOE2E, se, m.e2e95))
	}
	cp.Ceilings = append(cp.Ceilings, Ceiling{Constraint: ConstraintPolicy, MaxPool: intPtr(m.maxPool),
		Detail: fmt.Sprintf("policy_cap: policy.max_pool = %d", m.maxPool)})
	cp.Pool, cp.BindingConstraint, cp.TiedConstraints = bind(cp.Ceilings)
	if cp.BindingConstraint == ConstraintPolicy && everyUnbounded(cp.Ceilings) {
		cp.Warnings = append(cp.Warnings, fmt.Sprintf("nothing measured limits this class: the pool is policy.max_pool (%d)", m.maxPool))
	}
	cp.Feasible = cp.Pool >= 1 && m.minPool != nil && *m.minPool <= cp.Pool
	cp.TruncationRisk = 0
	if m.spec.MaxTokens > 0 {
		cp.TruncationRisk = roundTo(m.out.Exceed(float64(m.spec.MaxTokens)), 4)
	}
	cp.Predicted = m.predict(cp.Pool)
	cp.Pacing = m.pacing(cp.Pool, sh.allot[j])
	cp.Admission = m.admission(cp.Pool)
	cp.Retry = m.retry(cp.Pool)
	cp.Adaptive = adaptive(cp.Pool, cp.Ceilings)
	cp.Batch = m.batch(cp.Pool, sh.allot[j])
	if !cp.Feasible {
		cp.Remedies = m.remedies(cp.Ceilings, sh, j)
		cp.Shed = m.shed(cp.Pool)
	}
	cp.Warnings = append(cp.Warnings, m.warnings(cp)...)
	cp.Explanation = explain(m, cp)
	return cp
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

// summary shows the key's division and its expected use.
func (sh *share) summary(pools []int) QuotaPlan {
	k := sh.key
	qp := QuotaPlan{Name: k.Name, Limits: map[string]float64{}, Usable: map[string]float64{}, Utilization: map[string]float64{}, Allocations: []Allocation{}}
	var used quota.Vector
	for j, m := range sh.models {
		a := Allocation{Class: m.spec.Name, Allotted: map[string]float64{}}
		if sh.claims[j].Need != nil {
			a.Reserved = map[string]float64{}
		}
		r := m.runRate(pools[j])
		for d := range quota.NumDimensions {
			if k.Limit(d) <= 0 {
				continue
			}
			a.Allotted[d.String()] = roundTo(sh.allot[j][d]*k.Seconds(d), 2)
			if n := sh.claims[j].Need; n != nil {
				a.Reserved[d.String()] = roundTo(n[d]*k.Seconds(d), 2)
			}
			used[d] += r * m.use[d]
		}
		qp.Allocations = append(qp.Allocations, a)
	}
	for d := range quota.NumDimensions {
		if l := k.Limit(d); l > 0 {
			qp.Limits[d.String()] = l
			qp.Usable[d.String()] = roundTo(l*k.Headroom, 2)
			qp.Utilization[d.String()] = roundTo(used[d]*k.Seconds(d)/l, 4)
		}
	}
	return qp
}

// runRate is the rate the class is expected to run at: its demand when the
// pool serves it with a stable queue, otherwise its pool flat out.
func (m *classModel) runRate(pool int) float64 {
	if pool < 1 {
		return 0
	}
	x := m.rate(pool)
	if m.lambda > 0 && m.lambda < x {
		return m.lambda
	}
	return x
}
