package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/redact"
	"github.com/plannerdev/planner/internal/verify"
)

// validateMaxDuration bounds a validation, which runs while the client
// waits: below the server's write timeout.
const validateMaxDuration = 4 * time.Minute

// ValidateRequest is the body of POST /v1/plans/{id}/validate. Its bounds
// and defaults come from their owners (bounds.go).
type ValidateRequest struct {
	Target          ProbeTarget `json:"target"`
	RequestsPerStep int         `json:"requests_per_step,omitempty" minimum:"1"`
	TolerancePct    float64     `json:"tolerance_pct,omitempty" exclusiveMinimum:"0" maximum:"999" doc:"Relative error of throughput, TTFT p95 and E2E p95, in percent of the prediction, within which the model holds; default 25."`
	MaxTokens       int         `json:"max_tokens,omitempty" minimum:"1" doc:"Caps the output length asked per request (default: each class's mean output length); a class with a longer mean is validated, and predicted, at this length."`
	DeadlineMs      int         `json:"deadline_ms,omitempty" minimum:"1"`
	PauseMs         *int        `json:"pause_ms,omitempty" minimum:"0"`
	Budgets         *Budgets    `json:"budgets,omitempty"`
}

// ValidateResponse is the engine's validation report of a stored plan.
type ValidateResponse struct {
	PlanID string `json:"plan_id"`
	verify.Report
}

type validateInput struct {
	ID            string `path:"id" maxLength:"64" doc:"Id of a stored plan."`
	Authorization string `header:"X-Probe-Authorization" doc:"The API key for the target, as the whole Authorization header value to send, instead of a named credential; never stored, logged or echoed."`
	Body          ValidateRequest
}

type validateOutput struct {
	Body *ValidateResponse
}

// defaultValidatePause separates a validation's two steps: a closed loop
// leaves no queue behind, so a short pause does.
const defaultValidatePause = 500 * time.Millisecond

func (s *Server) registerValidate() {
	op := huma.Operation{
		OperationID: "validate-plan",
		Method:      http.MethodPost,
		Path:        "/v1/plans/{id}/validate",
		Summary:     "Validate a stored plan against its endpoint",
		Description: "Runs, while the client waits, a short closed-loop probe per class at its pool and at " +
			"ceil(1.25 × pool), with prompts of the class's input p50 and, with ignore_eos, outputs of its mean " +
			"length (so that the mean service time is the model's), and compares the measurements with the " +
			"model's predictions at the same concurrencies: throughput, TTFT p95, E2E p95 and 429s, with relative " +
			"errors. Verdict per class and overall: fails when, at the pool or at 1.25 × it, throughput, TTFT p95 " +
			"or E2E p95 is outside tolerance_pct (default 25 %) of the prediction, in either direction, or above " +
			"the SLO (above the pool: an SLO the model predicted to hold), or when a 429 or error appears at the " +
			"pool, the reasons saying which; degraded when nothing was measured at 1.25 × the pool or 429s appear " +
			"there though no quota binds the pool; ok otherwise. The target passes the same " +
			"allow-list, preflight and caps as a probe; the whole validation is bounded by its budgets and by " +
			"4 minutes, and takes one of the probe.max_running slots before anything is sent (a 429 with Retry-After " +
			"when none is free). A shutdown of the server stops it, with a 503.",
		Tags:   []string{tagPlans},
		Errors: []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}
	register(s, op, s.validatePlan)
	withExamples(s.OpenAPI(), op.Path, examplesOf[ValidateResponse](op.OperationID))
}

func (s *Server) validatePlan(ctx context.Context, in *validateInput) (*validateOutput, error) {
	if err := s.needJobs(); err != nil {
		return nil, err
	}
	sp, err := s.storedPlan(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	req := in.Body
	k, problems := s.probeKey(req.Target.Credential, in.Authorization, "body.target")
	durationCap := min(s.probe.MaxDuration, validateMaxDuration)
	budget, more := s.budget(req.Budgets, "body.budgets", durationCap)
	problems = append(problems, more...)
	if req.RequestsPerStep > s.probe.MaxRequests {
		problems = append(problems, capProblem("body.requests_per_step", req.RequestsPerStep, "max_requests", s.probe.MaxRequests))
	}
	var concs []int
	for _, c := range sp.Plan.Classes {
		if c.Pool >= 1 {
			concs = append(concs, verify.Concurrencies(c.Pool)...)
		}
	}
	if err := probe.CheckStepSize(concs, req.RequestsPerStep, 0); err != nil {
		problems = append(problems, &huma.ErrorDetail{Location: "body.requests_per_step", Value: req.RequestsPerStep, Message: err.Error()})
	}
	if req.MaxTokens > s.probe.MaxTokens {
		problems = append(problems, capProblem("body.max_tokens", req.MaxTokens, "max_tokens", s.probe.MaxTokens))
	}
	for _, c := range sp.Plan.Classes {
		if c.Pool < 1 {
			continue
		}
		if hi := verify.Concurrencies(c.Pool)[1]; hi > s.probe.MaxConcurrency {
			problems = append(problems, &huma.ErrorDetail{Location: "path.id", Value: in.ID, Message: fmt.Sprintf(
				"class %s would run at %d (1.25 × its pool of %d), above the server's limit probe.max_concurrency of %d",
				c.Name, hi, c.Pool, s.probe.MaxConcurrency)})
		}
	}
	if len(problems) > 0 {
		return nil, huma.Error422UnprocessableEntity("the request is invalid", problems...)
	}
	// The slot's context ends at shutdown, which stops the validation.
	slot, err := s.admit(ctx, req.Target.BaseURL, k)
	if err != nil {
		return nil, err
	}
	defer slot.Release()
	cfg := probe.Config{
		BaseURL: req.Target.BaseURL, Model: req.Target.Model, Deadline: time.Duration(req.DeadlineMs) * time.Millisecond,
		Pause: defaultValidatePause, Budget: budget, Seed: uint64(time.Now().UnixNano()),
	}
	if req.PauseMs != nil {
		cfg.Pause = time.Duration(*req.PauseMs) * time.Millisecond
		if *req.PauseMs == 0 {
			cfg.Pause = -1
		}
	}
	k.apply(&cfg)
	s.guarded(&cfg)
	ctx, cancel := context.WithTimeout(slot.Context(), durationCap+30*time.Second)
	defer cancel()
	rep, err := verify.Run(ctx, sp.Scenario, &sp.Plan, verify.Options{Probe: cfg, RequestsPerStep: req.RequestsPerStep, MaxTokens: req.MaxTokens, TolerancePct: req.TolerancePct})
	switch {
	case slot.ShutDown():
		return nil, huma.Error503ServiceUnavailable("the server is shutting down; the validation was stopped before it finished")
	case err != nil:
		s.log.Error("validate a plan", "plan", in.ID, "error", redact.New(cfg.APIKey).String(err.Error()))
		return nil, huma.Error500InternalServerError("the validation could not run; the server log has the cause")
	}
	return &validateOutput{Body: &ValidateResponse{PlanID: sp.ID, Report: *rep}}, nil
}
