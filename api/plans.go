package api

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
)

// PlanRequest is the body of POST /v1/plans.
type PlanRequest struct {
	Scenario scenario.Scenario `json:"scenario" doc:"The scenario to plan: quotas, latency, task classes and policy (the same document planner plan reads)."`
}

// planInput is a plan request as huma decodes it; RawBody lets the resolver
// tell schema problems from rule problems.
type planInput struct {
	RawBody []byte
	Body    PlanRequest
}

var planSchema = sync.OnceValue(schemaOf[PlanRequest])

// Resolve adds the scenario's cross-field rules (p95 >= p50, known quota
// names, unique class names, ...) to huma's schema validation.
func (in *planInput) Resolve(huma.Context) []error {
	return uncoveredRules(in.RawBody, planSchema(), scenarioRules(in.Body.Scenario, "body.scenario"))
}

type planOutput struct {
	Body *plan.Plan
}

func (s *Server) registerPlans() {
	ex := specExamples()
	op := huma.Operation{
		OperationID: "create-plan",
		Method:      http.MethodPost,
		Path:        "/v1/plans",
		Summary:     "Plan a scenario",
		Description: "Computes the plan of a scenario (DESIGN §3): for every task class its pool, the constraint " +
			"that binds it, the ceilings with their derivations, the smallest pool its demand needs, predicted " +
			"latency and quota use, client settings (pacing, admission, retry, adaptive) and, when it does not " +
			"fit, the remedies. The same scenario always gives the same plan. Every problem in the scenario is " +
			"reported at once, each at its location.",
		Tags:   []string{tagPlans},
		Errors: errorStatuses,
	}
	register(s, op, s.createPlan)
	withExamples(s.OpenAPI(), op.Path, ex.planRequest, ex.planResponse)
}

func (s *Server) createPlan(ctx context.Context, in *planInput) (*planOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	start := time.Now()
	p, err := plan.ComputeContext(ctx, in.Body.Scenario)
	s.metrics.planSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		return nil, s.scenarioProblem(err, "body.scenario")
	}
	if path := nonFinite(p); path != "" {
		s.log.Error("the plan holds a non-finite number", "at", path)
		return nil, huma.Error422UnprocessableEntity("the scenario cannot be planned", &huma.ErrorDetail{
			Location: "body.scenario",
			Message:  "planning this scenario gives a non-finite " + path + " (is a service time zero?)",
		})
	}
	return &planOutput{Body: p}, nil
}
