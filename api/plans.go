package api

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/redact"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/store"
)

// PlanRequest is the body of POST /v1/plans.
type PlanRequest struct {
	Scenario scenario.Scenario `json:"scenario" doc:"The scenario to plan: quotas, latency, task classes and policy (the same document planner plan reads)."`
	Save     bool              `json:"save,omitempty" doc:"Store the plan with its scenario; the answer then carries its id and a Location header."`
	Name     string            `json:"name,omitempty" maxLength:"200" doc:"Name of the stored plan (with save)."`
	Labels   map[string]string `json:"labels,omitempty" maxProperties:"32" doc:"Labels of the stored plan (with save): at most 32, keys of 1 to 64 letters, digits and . _ / -, values of at most 256 characters, no credentials."`
	ProbeID  string            `json:"probe_id,omitempty" maxLength:"64" doc:"The probe whose measurements back the plan (with save); it must exist. The plan's report then shows the probe's curves."`
}

// PlanResponse is the engine's plan; a stored one also carries its id.
type PlanResponse struct {
	ID string `json:"id,omitempty" doc:"Id of the stored plan; only with save."`
	plan.Plan
}

// planInput is a plan request as huma decodes it; RawBody lets the resolver
// tell schema problems from rule problems.
type planInput struct {
	RawBody []byte
	Body    PlanRequest
}

var planSchema = sync.OnceValue(schemaOf[PlanRequest])

// Resolve adds the scenario's cross-field rules (p95 >= p50, known quota
// names, unique class names, ...) and the rules of a stored plan's name,
// labels and probe to huma's schema validation.
func (in *planInput) Resolve(huma.Context) []error {
	rules := scenarioRules(in.Body.Scenario, "body.scenario")
	rules = append(rules, saveRules(in.Body)...)
	return uncoveredRules(in.RawBody, planSchema(), rules)
}

// secretMessage refuses a text that looks like a credential.
const secretMessage = "looks like a credential (" + redact.Kinds + "); credentials are never stored"

// labelKey is the form of a label's key.
var labelKey = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,63}$`)

// saveRules checks what a stored plan carries besides its scenario.
func saveRules(r PlanRequest) []rule {
	var rules []rule
	if !r.Save {
		for _, f := range []struct {
			name string
			set  bool
		}{{"name", r.Name != ""}, {"labels", len(r.Labels) > 0}, {"probe_id", r.ProbeID != ""}} {
			if f.set {
				rules = append(rules, rule{location: "body." + f.name, message: "only a stored plan keeps it: set save to true"})
			}
		}
	}
	if redact.LooksLikeSecret(r.Name) {
		rules = append(rules, rule{location: "body.name", message: secretMessage, hide: true})
	}
	for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
		switch v := r.Labels[k]; {
		case redact.LooksLikeSecret(k):
			rules = append(rules, rule{location: "body.labels", message: "a label key " + secretMessage, hide: true})
		case !labelKey.MatchString(k):
			rules = append(rules, rule{location: "body.labels." + k, message: "a label key is 1 to 64 letters, digits and . _ / -, starting with a letter or digit"})
		case utf8.RuneCountInString(v) > 256:
			rules = append(rules, rule{location: "body.labels." + k, message: "a label value is at most 256 characters"})
		case redact.LooksLikeSecret(v):
			rules = append(rules, rule{location: "body.labels." + k, message: secretMessage, hide: true})
		}
	}
	return rules
}

type planOutput struct {
	Location string `header:"Location" doc:"Where the stored plan is (GET /v1/plans/{id}); only with save."`
	Body     *PlanResponse
}

func (s *Server) registerPlans() {
	op := huma.Operation{
		OperationID: "create-plan",
		Method:      http.MethodPost,
		Path:        "/v1/plans",
		Summary:     "Plan a scenario",
		Description: "Computes the plan of a scenario (docs/concepts.md): for every task class its pool, the constraint " +
			"that binds it, the ceilings with their derivations, the smallest pool its demand needs, predicted " +
			"latency and quota use, client settings (pacing, admission, retry, adaptive) and, when it does not " +
			"fit, the remedies; and its check, the plan's own short seeded simulation, by which a class fits only " +
			"when the queueing model and the simulation both hold. The same scenario always gives the same plan. Every problem in the scenario is " +
			"reported at once, each at its location. With save, the plan is also stored with its scenario, name, " +
			"labels and backing probe; the answer then carries its id and a Location header. A plan larger stored " +
			"than the server's store.max_document_bytes gets a 413, a store without room a 507, and a store that " +
			"cannot be written (its file removed, its start-up not completed) a 503: nothing is saved then.",
		Tags:   []string{tagPlans},
		Errors: slices.Concat(errorStatuses, saveStatuses),
	}
	register(s, op, s.createPlan)
	withExamples(s.OpenAPI(), op.Path, examplesOf[PlanResponse](op.OperationID))
	s.declareRetryAfter(op.Method, op.Path, http.StatusServiceUnavailable, computeBusy+
		" With save, also a store that cannot be written (its file removed, its start-up not completed): nothing is saved then.")
}

func (s *Server) createPlan(ctx context.Context, in *planInput) (*planOutput, error) {
	start := time.Now()
	p, err := s.app.Plan(ctx, in.Body.Scenario)
	s.metrics.planSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		return nil, s.computeError(ctx, err, "body.scenario")
	}
	out := &planOutput{Body: &PlanResponse{Plan: *p}}
	if !in.Body.Save {
		return out, nil
	}
	if err := s.needStore(); err != nil {
		return nil, err
	}
	id, err := s.store.SavePlan(ctx, store.StoredPlan{
		Name: in.Body.Name, Labels: in.Body.Labels, ProbeID: in.Body.ProbeID, Scenario: in.Body.Scenario, Plan: *p,
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, huma.Error422UnprocessableEntity("the request is invalid", &huma.ErrorDetail{
			Location: "body.probe_id", Message: "no probe has this id", Value: in.Body.ProbeID,
		})
	case errors.Is(err, store.ErrSecret):
		return nil, huma.Error422UnprocessableEntity("the request is invalid", &huma.ErrorDetail{Location: "body", Message: secretMessage})
	case err != nil:
		return nil, s.storeError(err, "plan", "")
	}
	out.Body.ID = id
	out.Location = "/v1/plans/" + id
	return out, nil
}
