package api

import (
	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/report"
	"github.com/plannerdev/planner/internal/simulate"
	"github.com/plannerdev/planner/internal/verify"
)

// The conversions from the engine's results to the API's documents
// (wire.go). A struct whose fields are all plain values converts with a Go
// conversion, which compiles only while both types have the same field
// names and types in the same order; the others are built field by field.
// Either way an engine change that would alter the API stops the build
// here.

// planOf is the API's document of a plan.
func planOf(p *plan.Plan) Plan {
	return Plan{
		Classes:   each(p.Classes, classPlanOf),
		Quotas:    each(p.Quotas, quotaPlanOf),
		Endpoints: each(p.Endpoints, endpointPlanOf),
		Warnings:  p.Warnings,
	}
}

func classPlanOf(c plan.ClassPlan) ClassPlan {
	return ClassPlan{
		Name:              c.Name,
		Mode:              c.Mode,
		Quota:             c.Quota,
		Endpoint:          c.Endpoint,
		Pool:              c.Pool,
		BindingConstraint: c.BindingConstraint,
		TiedConstraints:   c.TiedConstraints,
		Ceilings:          each(c.Ceilings, func(c plan.Ceiling) Ceiling { return Ceiling(c) }),
		MinPool:           c.MinPool,
		Feasible:          c.Feasible,
		Predicted:         Predicted(c.Predicted),
		Pacing:            Pacing(c.Pacing),
		Admission:         Admission(c.Admission),
		Retry:             Retry(c.Retry),
		Adaptive:          Adaptive(c.Adaptive),
		TruncationRisk:    c.TruncationRisk,
		Batch:             batchPlanOf(c.Batch),
		Shed:              (*Shed)(c.Shed),
		Remedies:          each(c.Remedies, func(r plan.Remedy) Remedy { return Remedy(r) }),
		Explanation:       c.Explanation,
		Warnings:          c.Warnings,
	}
}

func batchPlanOf(b *plan.BatchPlan) *BatchPlan {
	if b == nil {
		return nil
	}
	return &BatchPlan{
		Requests:        b.Requests,
		WithinHours:     b.WithinHours,
		CompletionHours: b.CompletionHours,
		MeetsWindow:     b.MeetsWindow,
		DailyLimits:     each(b.DailyLimits, func(d plan.DailyCheck) DailyCheck { return DailyCheck(d) }),
	}
}

func quotaPlanOf(q plan.QuotaPlan) QuotaPlan {
	return QuotaPlan{
		Name:        q.Name,
		Limits:      q.Limits,
		Usable:      q.Usable,
		Allocations: each(q.Allocations, func(a plan.Allocation) Allocation { return Allocation(a) }),
		Utilization: q.Utilization,
	}
}

func endpointPlanOf(e plan.EndpointPlan) EndpointPlan {
	return EndpointPlan{
		Name:             e.Name,
		Knee:             e.Knee,
		Safety:           e.Safety,
		Budget:           e.Budget,
		BudgetConstraint: e.BudgetConstraint,
		TotalPool:        e.TotalPool,
		Load:             e.Load,
		Allocations:      each(e.Allocations, func(a plan.EndpointAllocation) EndpointAllocation { return EndpointAllocation(a) }),
		TTFTP95Ms:        e.TTFTP95Ms,
		E2EP95Ms:         e.E2EP95Ms,
	}
}

// cellOf is the API's document of a what-if cell.
func cellOf(c plan.Cell) Cell {
	return Cell{
		Values:  c.Values,
		Classes: each(c.Classes, func(cc plan.CellClass) CellClass { return CellClass(cc) }),
		Errors:  each(c.Errors, func(e fieldpath.Error) FieldError { return FieldError(e) }),
	}
}

// validateResponseOf is the API's document of a validation of a stored plan.
func validateResponseOf(planID string, r *verify.Report) ValidateResponse {
	return ValidateResponse{
		PlanID:       planID,
		Verdict:      r.Verdict,
		Summary:      r.Summary,
		TolerancePct: r.TolerancePct,
		Classes:      each(r.Classes, classReportOf),
	}
}

func classReportOf(c verify.ClassReport) ClassReport {
	return ClassReport{
		Class:             c.Class,
		Pool:              c.Pool,
		BindingConstraint: c.BindingConstraint,
		Verdict:           c.Verdict,
		Reasons:           c.Reasons,
		InputTokens:       c.InputTokens,
		OutputTokens:      c.OutputTokens,
		Points: each(c.Points, func(p verify.Point) Point {
			return Point{
				Concurrency:      p.Concurrency,
				Predicted:        Prediction(p.Predicted),
				Measured:         (*Measured)(p.Measured),
				RelativeErrorPct: (*Errors)(p.RelativeErrorPct),
			}
		}),
		StopReason: c.StopReason,
	}
}

// simulationOf is the API's document of a simulated run.
func simulationOf(s *simulate.Simulation) SimulationResponse {
	return SimulationResponse{
		Settings: s.Settings,
		Classes: each(s.Classes, func(c simulate.ClassRun) ClassRun {
			return ClassRun{
				Name:      c.Name,
				Mode:      c.Mode,
				Quota:     c.Quota,
				Endpoint:  c.Endpoint,
				Arrivals:  c.Arrivals,
				Pool:      c.Pool,
				Feasible:  c.Feasible,
				Predicted: Predicted(c.Predicted),
				PlanShed:  (*Shed)(c.PlanShed),
				Simulated: c.Simulated,
				VsPlan:    c.VsPlan,
				Verdict:   c.Verdict,
				Series:    c.Series,
			}
		}),
		Quotas:   s.Quotas,
		Verdict:  s.Verdict,
		Warnings: s.Warnings,
	}
}

// recordCardOf is the API's document of a record card.
func recordCardOf(c report.RecordCard) RecordCard {
	return RecordCard{
		ProbeID:      c.ProbeID,
		PlanID:       c.PlanID,
		Endpoint:     c.Endpoint,
		Model:        c.Model,
		Date:         c.Date,
		DeadlineMs:   c.DeadlineMs,
		Knee:         c.Knee,
		AtKnee:       c.AtKnee,
		Collapse:     c.Collapse,
		QuotaLimited: c.QuotaLimited,
		Pools: each(c.Pools, func(p report.CardPool) CardPool {
			return CardPool{
				Class:             p.Class,
				Mode:              p.Mode,
				Quota:             p.Quota,
				Pool:              p.Pool,
				BindingConstraint: p.BindingConstraint,
				Feasible:          p.Feasible,
				KneeLimit:         p.KneeLimit,
				Shedding:          Admission(p.Shedding),
				Pacing:            Pacing(p.Pacing),
				Retry:             Retry(p.Retry),
				SLOE2EP95Ms:       p.SLOE2EP95Ms,
				SLOTTFTP95Ms:      p.SLOTTFTP95Ms,
				MaxTokens:         p.MaxTokens,
				TruncationRisk:    p.TruncationRisk,
			}
		}),
		Decisions: c.Decisions,
	}
}

// each converts a list element by element, keeping a nil list nil (JSON
// null) and an empty one empty ([]), as the engine made them.
func each[E, W any](in []E, f func(E) W) []W {
	if in == nil {
		return nil
	}
	out := make([]W, len(in))
	for i, e := range in {
		out[i] = f(e)
	}
	return out
}
