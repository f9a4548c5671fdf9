package simulate

import (
	"context"
	"fmt"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
)

// planner plans and models scenarios, as a plan.Engine does.
type planner interface {
	Plan(ctx context.Context, s scenario.Scenario) (*plan.Plan, error)
	Modeller
}

// Run plans a scenario with eng, without a check, and simulates the plan
// (RunPlan), checking the scenario and the options first as RunPlan does.
func Run(ctx context.Context, eng planner, sc scenario.Scenario, opts Options) (*Simulation, error) {
	if errs := sc.Check(); len(errs) > 0 {
		return nil, errs
	}
	if errs := CheckOptions(sc, opts); len(errs) > 0 {
		return nil, errs
	}
	p, err := eng.Plan(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("plan the scenario: %w", err)
	}
	return RunPlan(ctx, eng, sc, p, opts)
}
