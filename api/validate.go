package api

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/optional"
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
	TolerancePct    float64     `json:"tolerance_pct,omitempty" exclusiveMinimum:"0" doc:"Relative error of throughput, TTFT p95 and E2E p95, in percent of the prediction, within which the model holds; default 25."`
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
	RawBody       []byte
	Body          ValidateRequest
}

var validateSchema = sync.OnceValue(schemaOf[ValidateRequest])

// Resolve adds the validation's rules and the server's caps to huma's
// schema validation, through verify.Options.Validate; the rules that the
// stored plan brings are the handler's (verify.Check).
func (in *validateInput) Resolve(ctx huma.Context) []error {
	return uncoveredRules(in.RawBody, validateSchema(), bodyRules(validateFields, in.Body.options(operationCaps(ctx)).Validate()))
}

// validateFields names a validation's settings (verify.Options.Validate's
// paths) as the fields of a validation request.
var validateFields = fieldpath.Names{Below: true, Other: "body", Fields: map[string]string{
	"tolerance_pct":                 "body.tolerance_pct",
	"requests_per_step":             "body.requests_per_step",
	"max_tokens":                    "body.max_tokens",
	"probe.base_url":                "body.target.base_url",
	"probe.model":                   "body.target.model",
	"probe.deadline":                "body.deadline_ms",
	"probe.pause":                   "body.pause_ms",
	"probe.budget.max_requests":     "body.budgets.max_requests",
	"probe.budget.max_tokens_total": "body.budgets.max_tokens",
	"probe.budget.max_duration":     "body.budgets.max_duration_s",
}}

// planProblems locates the problems that a stored plan brings
// (verify.Check's "classes[i]") at the plan's id, and the others in the
// body.
func planProblems(errs []fieldpath.Error, id string) []error {
	out := make([]error, 0, len(errs))
	for _, e := range errs {
		d := &huma.ErrorDetail{Location: validateFields.Of(e.Path), Message: e.Message}
		if strings.HasPrefix(e.Path, "classes[") {
			d.Location, d.Value = "path.id", id
		}
		out = append(out, d)
	}
	return out
}

// options are the validation the request asks for under caps. A field
// the body leaves out stays unset, so that its owner's default applies.
func (r ValidateRequest) options(caps probe.Caps) verify.Options {
	cfg := probe.Config{
		BaseURL: r.Target.BaseURL, Model: r.Target.Model, Deadline: givenMs(r.DeadlineMs),
		Budget: r.Budgets.budget(), Seed: uint64(time.Now().UnixNano()),
	}
	if r.PauseMs != nil {
		cfg.Pause = optional.Of(time.Duration(*r.PauseMs) * time.Millisecond)
	}
	return verify.Options{Probe: cfg, RequestsPerStep: given(r.RequestsPerStep), MaxTokens: given(r.MaxTokens),
		TolerancePct: given(r.TolerancePct), Caps: &caps}
}

// validationFinished counts a validation that ran: its verdict, or
// stopped (the server shut down) or error, and the requests and 429
// answers of its measurements.
func (s *Server) validationFinished(rep *verify.Report, err error, shutDown bool) {
	outcome, requests, rateLimited := "error", 0, 0
	if rep != nil {
		outcome = rep.Verdict
		for _, c := range rep.Classes {
			for _, p := range c.Points {
				if p.Measured != nil {
					requests += p.Measured.Requests
					rateLimited += p.Measured.RateLimited
				}
			}
		}
	}
	switch {
	case shutDown:
		outcome = "stopped"
	case err != nil:
		outcome = "error"
	}
	s.metrics.jobFinished(kindValidation, outcome, requests, rateLimited)
}

type validateOutput struct {
	Body *ValidateResponse
}

func (s *Server) registerValidate() {
	op := huma.Operation{
		Metadata:    map[string]any{capsKey: s.caps(min(s.probe.MaxDuration, validateMaxDuration))},
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
	s.declareRetryAfter(op.Method, op.Path, http.StatusTooManyRequests, probeBusy)
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
	durationCap := min(s.probe.MaxDuration, validateMaxDuration)
	opts := req.options(s.caps(durationCap))
	k, problems := s.probeKey(req.Target.Credential, in.Authorization, "body.target")
	// The plan is stored: every size it gives is bounded before anything
	// is sent (its prompts, its answers, its concurrencies).
	problems = append(problems, planProblems(verify.Check(sp.Scenario, &sp.Plan, opts), in.ID)...)
	if len(problems) > 0 {
		return nil, huma.Error422UnprocessableEntity("the request is invalid", problems...)
	}
	// The slot's context ends at shutdown, which stops the validation.
	slot, err := s.admit(ctx, req.Target.BaseURL, k)
	if err != nil {
		return nil, err
	}
	defer slot.Release()
	k.apply(&opts.Probe)
	s.guarded(&opts.Probe)
	ctx, cancel := context.WithTimeout(slot.Context(), durationCap+30*time.Second)
	defer cancel()
	running := s.metrics.jobsRunning.WithLabelValues(kindValidation)
	running.Inc()
	rep, err := verify.Run(ctx, sp.Scenario, &sp.Plan, opts)
	running.Dec()
	s.validationFinished(rep, err, slot.ShutDown())
	switch {
	case slot.ShutDown():
		return nil, huma.Error503ServiceUnavailable("the server is shutting down; the validation was stopped before it finished")
	case err != nil:
		s.log.Error("validate a plan", "plan", in.ID, "error", redact.New(opts.Probe.APIKey).String(err.Error()))
		return nil, huma.Error500InternalServerError("the validation could not run; the server log has the cause")
	}
	return &validateOutput{Body: &ValidateResponse{PlanID: sp.ID, Report: *rep}}, nil
}
