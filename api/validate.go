package api

import (
	"cmp"
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
	"github.com/plannerdev/planner/internal/store"
	"github.com/plannerdev/planner/internal/verify"
)

// validateMaxDuration bounds a validation, which runs while the client
// waits: below the server's write timeout.
const validateMaxDuration = 4 * time.Minute

// ValidateRequest is the body of POST /v1/plans/{id}/validate. Its bounds
// and defaults come from their owners (bounds.go).
type ValidateRequest struct {
	Target          ValidateTarget `json:"target,omitzero" doc:"The endpoint to validate against; its base_url and model default to those of the probe the plan was saved with (probe_id)."`
	RequestsPerStep int            `json:"requests_per_step,omitempty" minimum:"1"`
	TolerancePct    float64        `json:"tolerance_pct,omitempty" exclusiveMinimum:"0" doc:"How far, in percent of the prediction, throughput, TTFT p95 and E2E p95 may lie beyond the measurement's 95 % interval: an allowance for the model's own error on top of the sampling noise; default 25."`
	MaxTokens       int            `json:"max_tokens,omitempty" minimum:"1" doc:"Caps the output length asked per request (default: each class's mean output length); a class with a longer mean is validated, and predicted, at this length."`
	DeadlineMs      int            `json:"deadline_ms,omitempty" minimum:"1"`
	PauseMs         *int           `json:"pause_ms,omitempty" minimum:"0"`
	Budgets         *Budgets       `json:"budgets,omitempty"`
}

// ValidateTarget is a probe target whose base URL and model may be left
// out for a plan saved with a probe: they are the probe's. The key still
// comes from a named credential or the X-Probe-Authorization header; the
// store keeps none.
type ValidateTarget struct {
	BaseURL    string `json:"base_url,omitempty" minLength:"1" maxLength:"2048" doc:"API root, as a probe's target.base_url; default: that of the probe the plan was saved with." example:"http://127.0.0.1:8000/v1"`
	Model      string `json:"model,omitempty" minLength:"1" maxLength:"256" doc:"Model (or Azure deployment) name sent in each request; default: that of the probe the plan was saved with." example:"sim-model"`
	Credential string `json:"credential,omitempty" maxLength:"64" doc:"Name of a credential of the server's configuration (probe.credentials), as a probe's target.credential."`
}

// defaultTarget fills the base URL and the model that the request leaves
// out from the probe the stored plan was saved with (the store keeps a
// plan's probe as long as the plan), or says why it cannot: the plan names
// no probe.
func (s *Server) defaultTarget(ctx context.Context, t *ValidateTarget, sp store.StoredPlan) error {
	if t.BaseURL != "" && t.Model != "" {
		return nil
	}
	missing := "body.target.base_url"
	if t.BaseURL != "" {
		missing = "body.target.model"
	}
	if sp.ProbeID == "" {
		return huma.Error422UnprocessableEntity("the request is invalid", &huma.ErrorDetail{Location: missing,
			Message: "required: the plan was saved without a probe (probe_id) whose target it could default to"})
	}
	run, err := s.store.GetProbe(ctx, sp.ProbeID)
	if err != nil {
		return s.storeError(err, "probe", sp.ProbeID)
	}
	t.BaseURL, t.Model = cmp.Or(t.BaseURL, run.BaseURL), cmp.Or(t.Model, run.Model)
	return nil
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
	var errs []fieldpath.Error
	for _, e := range in.Body.options(operationCaps(ctx)).Validate() {
		// A target left out defaults to the plan's probe's, which the
		// handler reads and checks.
		if (e.Path == "probe.base_url" && in.Body.Target.BaseURL == "") || (e.Path == "probe.model" && in.Body.Target.Model == "") {
			continue
		}
		errs = append(errs, e)
	}
	return uncoveredRules(in.RawBody, validateSchema(), bodyRules(validateFields, errs))
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
		Budget: r.Budgets.budget(), Seed: probe.NewSeed(),
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
			if c.Task != nil && c.Task.Measured != nil {
				requests += c.Task.Measured.Calls
				rateLimited += c.Task.Measured.RateLimited
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
		Description: "Runs, while the client waits, the classes of each of the plan's endpoints together, so that " +
			"the endpoint carries the plan's total: each class a short closed-loop probe at its pool (then all at " +
			"ceil(1.25 × pool)), with prompts of the class's input p50 and, with ignore_eos, outputs of its mean " +
			"length (so that the mean service time is the model's), every class keeping its pool full until all " +
			"have measured their step. It compares the measurements with the model's predictions at the same " +
			"concurrencies and total: throughput, TTFT p95, E2E p95 and 429s, with relative errors and the " +
			"measurement's 95 % intervals. Verdict per class and overall: fails when, at the pool or at 1.25 × " +
			"it, throughput, TTFT p95 or E2E p95 lies more than tolerance_pct (default 25 %) of the prediction " +
			"beyond its measured interval, in either direction, or above the SLO beyond its interval (above the " +
			"pool: an SLO the model predicted to hold), or when a 429 or error appears at the pool, the reasons " +
			"saying which; degraded when nothing was measured at 1.25 × the pool, 429s appear there though no " +
			"quota binds the pool, or a p95 at the pool is above the SLO within its noise; ok otherwise. " +
			"An agent task class is validated alone, its tasks replayed call by call at its pool of tasks in flight " +
			"(its mean calls, tool time and tool result, with its context), each call's TTFT and the task's E2E at " +
			"the SLO's percentile compared in the same way, with the share of tasks that met every target (task). " +
			"An empty target takes the base_url and model of the probe the plan was saved with (probe_id); " +
			"the key comes from target.credential or X-Probe-Authorization. The target passes the same " +
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
	if err := s.defaultTarget(ctx, &req.Target, sp); err != nil {
		return nil, err
	}
	durationCap := min(s.probe.MaxDuration, validateMaxDuration)
	opts := req.options(s.caps(durationCap))
	k, problems := s.probeKey(req.Target.Credential, in.Authorization, "body.target")
	// The plan is stored: every size it gives is bounded before anything
	// is sent (its prompts, its answers, its concurrencies).
	problems = append(problems, planProblems(verify.Check(sp.Scenario, &sp.Plan, opts), in.ID)...) // the defaulted target's problems too
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
