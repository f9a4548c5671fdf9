package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/danielgtaylor/huma/v2"

	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
)

// WhatIfRequest is the body of POST /v1/what-if.
type WhatIfRequest struct {
	Scenario   scenario.Scenario `json:"scenario" doc:"The scenario to vary."`
	Variations []Variation       `json:"variations" minItems:"1" maxItems:"2" doc:"One or two variations; the grid has one cell per combination of their values."`
	Check      bool              `json:"check,omitempty" doc:"Check every cell's plan by its own short simulation, as POST /v1/plans does: each class then says whether it fits (fits) and what breaks (misses). Off by default: a check costs a simulation a cell."`
}

// Variation varies one field of the scenario: over a list of values, or
// over quota tiers of the catalogue.
type Variation struct {
	Path   string   `json:"path" minLength:"1" maxLength:"256" pattern:"^/" doc:"JSON Pointer (RFC 6901) into the scenario, e.g. /quotas/0/tpm or /classes/1/output_tokens/p95; with tiers, a quota: /quotas/N." example:"/quotas/0/tpm"`
	Values []any    `json:"values,omitempty" minItems:"1" maxItems:"200" doc:"Values to put at the path. Give values or tiers, not both."`
	Tiers  []string `json:"tiers,omitempty" minItems:"1" maxItems:"200" doc:"Names of catalogue tiers (GET /v1/tiers): each puts the tier's limits and token_accounting on the quota at path, keeping its name, headroom and other settings."`
}

// WhatIfResponse is the grid of a what-if sweep.
type WhatIfResponse struct {
	Variations []Variation `json:"variations" doc:"The variations as requested."`
	Cells      []plan.Cell `json:"cells" doc:"One cell per combination, in row-major order (the last variation varies fastest). A cell's values are the variations' values, or tier names; its classes give each class's pool, binding constraint, min_pool and feasibility, or its errors say why that combination is not a valid scenario."`
}

type whatIfInput struct {
	RawBody []byte
	Body    WhatIfRequest
}

var whatIfSchema = sync.OnceValue(schemaOf[WhatIfRequest])

// Resolve adds the scenario's cross-field rules and the rule that a
// variation gives values or tiers, not both.
func (in *whatIfInput) Resolve(huma.Context) []error {
	rules := scenarioRules(in.Body.Scenario, "body.scenario")
	for i, v := range in.Body.Variations {
		if (len(v.Values) == 0) == (len(v.Tiers) == 0) {
			rules = append(rules, rule{location: fmt.Sprintf("body.variations[%d]", i), message: "give either values or tiers"})
		}
	}
	return uncoveredRules(in.RawBody, whatIfSchema(), rules)
}

type whatIfOutput struct {
	Body *WhatIfResponse
}

func (s *Server) registerWhatIf() {
	op := huma.Operation{
		OperationID: "create-what-if",
		Method:      http.MethodPost,
		Path:        "/v1/what-if",
		Summary:     "Compare plans over varied fields or quota tiers",
		Description: "Plans every combination of one or two variations of a scenario and returns the grid: for " +
			"each combination, every class's pool, binding constraint, min_pool and feasibility, and with check whether " +
			"it fits by its plan's own simulation. A variation puts " +
			"a list of values at a JSON Pointer path, or puts catalogue tiers' limits on a quota. A value that " +
			"makes the scenario invalid marks only its cell. At most " + strconv.Itoa(plan.MaxWhatIfCells) +
			" cells per request.",
		Tags:   []string{tagWhatIf},
		Errors: errorStatuses,
	}
	register(s, op, s.createWhatIf)
	withExamples(s.OpenAPI(), op.Path, examplesOf[WhatIfResponse](op.OperationID))
}

func (s *Server) createWhatIf(ctx context.Context, in *whatIfInput) (*whatIfOutput, error) {
	req := in.Body
	vars := make([]plan.Variation, len(req.Variations))
	var problems []error
	for i, v := range req.Variations {
		vars[i] = plan.Variation{Path: v.Path, Values: v.Values}
		if len(v.Tiers) == 0 {
			continue
		}
		values, errs := s.tierValues(req.Scenario, i, v)
		vars[i].Values = values
		problems = append(problems, errs...)
	}
	if len(problems) > 0 {
		return nil, huma.Error422UnprocessableEntity("the request is invalid", problems...)
	}
	grid, err := s.app.WhatIf(ctx, req.Scenario, vars, req.Check)
	if err != nil {
		return nil, s.computeError(ctx, err, "body")
	}
	s.metrics.whatIfCells.Add(float64(len(grid.Cells)))
	out := &WhatIfResponse{Variations: req.Variations, Cells: grid.Cells}
	nameTierCells(out)
	return &whatIfOutput{Body: out}, nil
}

// tierValues turns the tiers of variation i into quota values: the quota
// at the variation's path with the tier's limits and token accounting.
func (s *Server) tierValues(sc scenario.Scenario, i int, v Variation) ([]any, []error) {
	n := -1
	if p, err := scenario.ParsePointer(v.Path); err == nil {
		if i, ok := p.QuotaIndex(); ok {
			n = i
		}
	}
	var q scenario.Quota
	var problems []error
	if n < 0 || n >= len(sc.Quotas) {
		problems = append(problems, &huma.ErrorDetail{
			Location: fmt.Sprintf("body.variations[%d].path", i),
			Message:  fmt.Sprintf("a tier variation must point at a quota of the scenario: /quotas/N with N below %d", len(sc.Quotas)),
			Value:    v.Path,
		})
	} else {
		q = sc.Quotas[n]
	}
	values := make([]any, len(v.Tiers))
	for j, name := range v.Tiers {
		t, ok := s.tier(name)
		if !ok {
			problems = append(problems, &huma.ErrorDetail{
				Location: fmt.Sprintf("body.variations[%d].tiers[%d]", i, j),
				Message:  fmt.Sprintf("no tier named %q; GET /v1/tiers lists the catalogue (%s)", name, s.tierNames()),
				Value:    name,
			})
			continue
		}
		values[j] = q.WithLimitsOf(t.Quota)
	}
	return values, problems
}

func (s *Server) tier(name string) (config.Tier, bool) {
	for _, t := range s.tiers {
		if t.Name == name {
			return t, true
		}
	}
	return config.Tier{}, false
}

// tierNames lists the catalogue for a problem message, shortened when long.
func (s *Server) tierNames() string {
	const most = 10
	names := make([]string, 0, most)
	for i, t := range s.tiers {
		if i == most {
			names = append(names, fmt.Sprintf("and %d more", len(s.tiers)-most))
			break
		}
		names = append(names, t.Name)
	}
	if len(names) == 0 {
		return "it is empty"
	}
	return strings.Join(names, ", ")
}

// nameTierCells shows a tier variation's value in each cell as the tier's
// name rather than the whole quota it produced.
func nameTierCells(w *WhatIfResponse) {
	for i := range w.Cells {
		rest := i
		for j := len(w.Variations) - 1; j >= 0; j-- {
			v := w.Variations[j]
			n := max(len(v.Values), len(v.Tiers))
			if len(v.Tiers) > 0 {
				w.Cells[i].Values[j] = v.Tiers[rest%n]
			}
			rest /= n
		}
	}
}
