package plan

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"maps"
	"slices"

	"github.com/plannerdev/planner/internal/scenario"
)

// minPools are least min_pools by class name: what a plan's check asks
// for where the plan's own simulation breaks at the analytic min_pool
// (docs/concepts.md, "The check").
type minPools map[string]int

// key mixes the floors into a plan's cache key; no floors leave it as
// it is.
func (f minPools) key(k [sha256.Size]byte) [sha256.Size]byte {
	if len(f) == 0 {
		return k
	}
	b := append([]byte{}, k[:]...)
	for _, name := range slices.Sorted(maps.Keys(f)) {
		b = binary.LittleEndian.AppendUint64(b, uint64(len(name)))
		b = append(b, name...)
		b = binary.LittleEndian.AppendUint64(b, uint64(f[name]))
	}
	return sha256.Sum256(b)
}

// A Replanner plans the scenario being checked again with each named
// class's min_pool at least the given pool, as the plan that is checked
// was planned (with remedies for a plan, without for a what-if cell).
type Replanner func(ctx context.Context, minPools map[string]int) (*Plan, error)

// A Checker completes a plan with what the engine cannot compute itself:
// its own simulation, in internal/app, which imports the simulation
// (package simulate imports this one). It returns the plan to give with
// its check (Plan.Check, ClassPlan.Check and Fits set), planned again by
// replan when raising a min_pool made the simulation hold. It must not
// modify p, which may be shared.
type Checker func(ctx context.Context, s scenario.Scenario, p *Plan, replan Replanner) (*Plan, error)

// PlanChecked plans a scenario (Plan) and checks the plan with check, all
// as one computation under the engine's limits. The checked plan of a
// scenario seen recently comes from the engine's cache, under name: one
// name for one way of checking. The result may be shared: callers must
// not modify it.
func (e *Engine) PlanChecked(ctx context.Context, s scenario.Scenario, name string, check Checker) (*Plan, error) {
	return e.planChecked(ctx, s, "checked by "+name, true, check)
}

// SweepChecked is Sweep with every valid cell's plan checked by check, as
// PlanChecked checks a plan; its cells then say whether each class fits.
func (e *Engine) SweepChecked(ctx context.Context, base scenario.Scenario, vars []Variation, check Checker) (*WhatIf, error) {
	return e.sweepWith(ctx, base, vars, check)
}

// PlanCheckedWithoutRemedies is PlanChecked of the plan of s without
// remedies, as a what-if cell is planned (its classes that do not fit
// carry none), checked by check: what a plan's remedies are checked
// with, written into its scenario.
func (e *Engine) PlanCheckedWithoutRemedies(ctx context.Context, s scenario.Scenario, name string, check Checker) (*Plan, error) {
	return e.planChecked(ctx, s, "checked without remedies by "+name, false, check)
}

// planChecked is the plan of s, with its remedies or without, checked by
// check and replanned the same way, cached under the scenario's key and
// tag.
func (e *Engine) planChecked(ctx context.Context, s scenario.Scenario, tag string, remedies bool, check Checker) (*Plan, error) {
	key, ok := planKey(s)
	key = sha256.Sum256(append(key[:], tag...))
	if ok {
		if c, hit := e.checked.Get(key); hit {
			return c.get(), nil
		}
	}
	var out *Plan
	err := e.Run(ctx, func(ctx context.Context) error {
		var p *Plan
		var err error
		if remedies {
			p, err = e.Plan(ctx, s)
		} else {
			p, err = e.plan(ctx, s, false, nil)
		}
		if err != nil {
			return err
		}
		out, err = check(ctx, s, p, func(ctx context.Context, floors map[string]int) (*Plan, error) {
			return e.plan(ctx, s, remedies, floors)
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	if ok {
		e.checked.Add(key, share(out))
	}
	return out, nil
}
