// Package app is what the command line and the service both do with a
// scenario: plan it, sweep it over varied fields (what-if), and simulate
// its plan. Each is one computation under the planning engine's limits
// (plan.Options: a deadline, compute slots and a bounded queue of waiting
// computations), whose panics come back as errors, and no answer carries a
// number that JSON cannot hold. cmd/planner and the API call these and
// render what they return; they hold no rule of their own about them. The
// other things both do with a plan (probing its endpoint, verifying it)
// belong here too, as more methods of App.
package app

import (
	"context"
	"fmt"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/simulate"
)

// App plans, sweeps and simulates scenarios with one engine, whose caches
// its computations share. It is safe for concurrent use.
type App struct {
	eng *plan.Engine
}

// New returns an App that computes with eng, under its limits.
func New(eng *plan.Engine) *App {
	return &App{eng: eng}
}

// NonFiniteError is an answer that would carry NaN or an infinity: JSON has
// no such number, and a plan that holds one says nothing true there.
type NonFiniteError struct {
	// What is "plan" or "simulation".
	What string
	// Path is the JSON path of the number, such as
	// "classes[0].predicted.e2e_p95_ms".
	Path string
}

func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("the %s of this scenario holds a non-finite %s", e.What, e.Path)
}

// Plan plans a valid scenario (plan.Engine.Plan) and checks the plan by its
// own simulation (check), in one computation slot. Errors: scenario.Errors
// for a scenario that breaks a cross-field rule, *NonFiniteError, and the
// engine's: plan.ErrBusy, plan.ErrClosed, *plan.PanicError, and the
// context's when it ends or the deadline passes. The plan may be shared
// with other callers: it must not be modified.
func (a *App) Plan(ctx context.Context, s scenario.Scenario) (*plan.Plan, error) {
	p, err := a.eng.PlanChecked(ctx, s, checkName, a.check)
	if err != nil {
		return nil, err
	}
	if path := NonFinite(p); path != "" {
		return nil, &NonFiniteError{What: "plan", Path: path}
	}
	return p, nil
}

// WhatIf plans every combination of one or two variations of a valid
// scenario (plan.Engine.Sweep), with Plan's errors; a variation's problems
// are scenario.Errors at "variations[i]...". With check, every cell's plan
// is checked as Plan checks a plan, and its classes say whether they fit.
// A sweep over catalogue tiers alone (plan.TierVariation) is always
// checked, since a tier is ranked by whether every class fits in it, and
// ranked by cost (plan.RankTiers) once its cells are final.
func (a *App) WhatIf(ctx context.Context, s scenario.Scenario, vars []plan.Variation, check bool) (*plan.WhatIf, error) {
	var g *plan.WhatIf
	var err error
	if check || plan.IsTierSweep(vars) {
		g, err = a.eng.SweepChecked(ctx, s, vars, a.check)
	} else {
		g, err = a.eng.Sweep(ctx, s, vars)
	}
	if err != nil {
		return nil, err
	}
	g.Ranking = plan.RankTiers(s, g)
	return g, nil
}

// Simulate runs the plan of a valid scenario, checked as Plan checks it,
// as a simulation (simulate.RunPlan), all in one computation slot.
// Errors: Plan's, and simulate.OptionErrors for options the scenario
// cannot run with.
func (a *App) Simulate(ctx context.Context, s scenario.Scenario, o simulate.Options) (*simulate.Simulation, error) {
	var r *simulate.Simulation
	err := a.eng.Run(ctx, func(ctx context.Context) error {
		if errs := s.Check(); len(errs) > 0 {
			return errs
		}
		if errs := simulate.CheckOptions(s, o); len(errs) > 0 {
			return errs
		}
		p, err := a.Plan(ctx, s)
		if err != nil {
			return fmt.Errorf("plan the scenario: %w", err)
		}
		r, err = simulate.RunPlan(ctx, a.eng, s, p, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	if path := NonFinite(r); path != "" {
		return nil, &NonFiniteError{What: "simulation", Path: path}
	}
	return r, nil
}
