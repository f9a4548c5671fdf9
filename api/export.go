package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/danielgtaylor/huma/v2"

	"github.com/plannerdev/planner/internal/export"
)

// exportInput asks for a stored plan as the file of a tool: the enum is
// export.Targets (a test keeps them one list).
type exportInput struct {
	ID    string `path:"id" maxLength:"64" doc:"Id of a stored plan."`
	To    string `query:"to" required:"true" enum:"prometheus-rules,litellm,client" doc:"prometheus-rules: Prometheus alerting rules on each class's TTFT and E2E p95 (its SLO), its 429 rate and each key's use, reading OpenTelemetry's GenAI metrics; litellm: LiteLLM router settings with each class's rpm, tpm and max_parallel_requests; client: each class's pool, pacing, admission, retry and AIMD settings as JSON (docs/exports.md)."`
	Model string `query:"model" maxLength:"256" doc:"litellm: the provider's model of every deployment, as LiteLLM names it (openai/gpt-4o-mini), one line without blank space around it; a placeholder when absent. Only with to=litellm (a 422 with another)."`
}

// Resolve refuses a model for a target that has none, as planner export
// refuses --model without --to litellm, rather than ignoring it, and a
// model that is not one line without blank space around it.
func (in *exportInput) Resolve(huma.Context) []error {
	if in.Model == "" {
		return nil
	}
	if in.To != export.ToLiteLLM && slices.Contains(export.Targets, in.To) {
		return []error{&huma.ErrorDetail{Location: "query.model", Message: "only to=litellm takes a model; " + in.To + " has none", Value: in.Model}}
	}
	if err := export.CheckModel(in.Model); err != nil {
		return []error{&huma.ErrorDetail{Location: "query.model", Value: in.Model, Message: err.Error()}}
	}
	return nil
}

// registerExport adds the export of a stored plan.
func (s *Server) registerExport() {
	register(s, huma.Operation{
		OperationID: "get-plan-export",
		Method:      http.MethodGet,
		Path:        "/v1/plans/{id}/export",
		Summary:     "Export a stored plan as alerting rules, gateway settings or client settings",
		Description: "Returns a stored plan as the file of a tool a team already runs, as planner export writes it: " +
			"Prometheus alerting rules (YAML) whose thresholds are the plan's numbers, read from the metric names " +
			"docs/exports.md lists; LiteLLM router settings (YAML) with a deployment per class; or the client " +
			"settings file (JSON) of every class.",
		Tags:   []string{tagPlans},
		Errors: notFoundStatuses,
		Responses: map[string]*huma.Response{"200": {
			Description: "The exported file.",
			Content: map[string]*huma.MediaType{
				"application/yaml": {Schema: &huma.Schema{Type: huma.TypeObject}},
				"application/json": {Schema: &huma.Schema{Type: huma.TypeObject}},
			},
		}},
	}, s.planExport)
}

func (s *Server) planExport(ctx context.Context, in *exportInput) (*documentOutput, error) {
	p, err := s.storedPlan(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := export.Write(&buf, in.To, p.Scenario, &p.Plan, export.Options{Model: in.Model}); err != nil {
		if clash, ok := errors.AsType[*export.KeyEnvClash](err); ok {
			return nil, huma.Error422UnprocessableEntity("the plan cannot be exported to "+in.To, &huma.ErrorDetail{
				Location: fmt.Sprintf("scenario.quotas[%d].name", clash.Quota[1]), Message: clash.Error(), Value: clash.Names[1]})
		}
		s.log.Error("export a plan", "plan", p.ID, "to", in.To, "error", err)
		return nil, huma.Error500InternalServerError("the export could not be rendered; the server log has the cause")
	}
	ct := export.ContentType(in.To)
	if ct == "application/yaml" {
		ct += "; charset=utf-8"
	}
	return &documentOutput{ContentType: ct, Body: buf.Bytes()}, nil
}
