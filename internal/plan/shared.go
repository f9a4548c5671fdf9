package plan

// cachedPlan is a plan in the engine's cache, shared by every caller that
// asks for its scenario: callers must not modify it. Copying it for each
// caller would cost more than the cache saves (a plan of three classes is
// some 170 allocations, several times the cost of finding it), so it is
// handed out as it is and kept honest where the tests run: under the race
// detector, which CI runs over every test, the cache keeps a pristine deep
// copy and checks, on every hit, that the plan still equals it
// (shared_race.go), failing at once with a panic that says so; elsewhere
// pristine is nil and the check costs nothing.
type cachedPlan struct {
	plan     *Plan
	pristine *Plan
}

// share wraps a plan for a cache.
func share(p *Plan) cachedPlan { return cachedPlan{plan: p, pristine: pristineCopy(p)} }

// get is the shared plan, checked against its pristine copy when there is one.
func (c cachedPlan) get() *Plan {
	checkUnchanged(c.plan, c.pristine)
	return c.plan
}

// cachedPlanBytes estimates the memory a cached plan holds.
func cachedPlanBytes(c cachedPlan) int { return 2 * planBytes(c.plan) }

// planBytes estimates the memory of a plan: its structures, the bytes of
// its strings, and the entries of its maps and lists. It is an estimate for
// the cache's bound, within a factor of two of what a copy allocates
// (TestPlanBytesEstimate).
func planBytes(p *Plan) int {
	const (
		str   = 16 // a string's header
		ptr   = 16 // what a pointer to a number takes on the heap
		entry = 48 // one entry of a small map
	)
	strs := func(v []string) int {
		n := 24
		for _, s := range v {
			n += str + len(s)
		}
		return n
	}
	n := 128 + strs(p.Warnings)
	for i := range p.Classes {
		c := &p.Classes[i]
		n += 640 + len(c.Name) + len(c.Mode) + len(c.Quota) + len(c.Endpoint) + len(c.BindingConstraint) + len(c.Explanation)
		n += strs(c.TiedConstraints) + strs(c.Warnings) + strs(c.Retry.HonorHeaders)
		n += 6*ptr + 48 + entry*len(c.Predicted.Utilization)
		for _, cl := range c.Ceilings {
			n += 40 + ptr + len(cl.Constraint) + len(cl.Detail)
		}
		for _, r := range c.Remedies {
			n += 72 + len(r.Constraint) + len(r.Change) + len(r.Path) + len(r.Class)
		}
		if c.Batch != nil {
			n += 96 + ptr + 56*len(c.Batch.DailyLimits)
		}
		if c.Shed != nil {
			n += 16
		}
	}
	for _, q := range p.Quotas {
		n += 104 + len(q.Name) + 3*48 + entry*(len(q.Limits)+len(q.Usable)+len(q.Utilization))
		for _, a := range q.Allocations {
			n += 40 + len(a.Class) + 2*48 + entry*(len(a.Allotted)+len(a.Reserved))
		}
	}
	for _, e := range p.Endpoints {
		n += 152 + len(e.Name) + len(e.BudgetConstraint) + 3*ptr
		for _, a := range e.Allocations {
			n += 40 + len(a.Class) + 2*ptr
		}
	}
	return n
}
