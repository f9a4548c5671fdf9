package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
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
	Variations []Variation       `json:"variations" nullable:"false" minItems:"1" maxItems:"2" doc:"One or two variations of different values (the second may vary a field inside the first's object, not the object that holds the first); the grid has one cell per combination of their values."`
	Check      bool              `json:"check,omitempty" doc:"Check every cell's plan by its own short simulation, as POST /v1/plans does: each class then says whether it fits (fits) and what breaks (misses). Off by default, since a check costs a simulation a cell; a sweep over tiers alone is always checked, as its ranking needs."`
}

// Variation varies one field of the scenario: over a list of values, or
// over quota tiers of the catalogue.
type Variation struct {
	Path   string   `json:"path" minLength:"1" maxLength:"256" pattern:"^/" doc:"JSON Pointer (RFC 6901) into the scenario, e.g. /quotas/0/tpm or /classes/1/output_tokens/p95; with tiers, a quota: /quotas/N." example:"/quotas/0/tpm"`
	Values []any    `json:"values,omitempty" minItems:"1" maxItems:"200" doc:"Values to put at the path; null leaves the field out (null at /quotas/0/tpm plans without a tpm limit). Give values or tiers, not both."`
	Tiers  []string `json:"tiers,omitempty" minItems:"1" maxItems:"200" doc:"Names of catalogue tiers (GET /v1/tiers): each puts the tier's limits, token_accounting and price on the quota at path, keeping its name, headroom and other settings. As the one variation, the tiers are ranked by cost."`
}

// WhatIfResponse is the grid of a what-if sweep.
type WhatIfResponse struct {
	Variations []Variation `json:"variations" doc:"The variations as requested."`
	Cells      []plan.Cell `json:"cells" doc:"One cell per combination, in row-major order (the last variation varies fastest). A cell's values are the variations' values, or tier names; its classes give each class's pool, binding constraint, min_pool and feasibility, or its errors say why that combination is not a valid scenario; its cost is the plan's at the demand."`
	// Ranking is set for a request whose one variation is over tiers.
	Ranking *plan.TierRanking `json:"ranking,omitempty" doc:"With one variation over tiers: the tiers ranked by what the plan costs a day with each, and the cheapest in which every class fits."`
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
		Errors: slices.Concat(errorStatuses, []int{http.StatusServiceUnavailable}),
	}
	register(s, op, s.createWhatIf)
	withExamples(s.OpenAPI(), op.Path, examplesOf[WhatIfResponse](op.OperationID))
	s.declareRetryAfter(op.Method, op.Path, http.StatusServiceUnavailable, computeBusy)
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
		var errs []error
		vars[i], errs = s.tierVariation(req.Scenario, i, v)
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
	out := &WhatIfResponse{Variations: req.Variations, Cells: grid.Cells, Ranking: grid.Ranking}
	return &whatIfOutput{Body: out}, nil
}

// tierVariation is variation i over catalogue tiers (plan.TierVariation),
// its problems located in the request.
func (s *Server) tierVariation(sc scenario.Scenario, i int, v Variation) (plan.Variation, []error) {
	pv, errs := plan.TierVariation(sc, v.Path, v.Tiers, s.tierQuotas())
	problems := make([]error, len(errs))
	for j, e := range errs {
		d := &huma.ErrorDetail{Location: fmt.Sprintf("body.variations[%d].%s", i, e.Path), Message: e.Message, Value: v.Path}
		if e.Path != "path" {
			d.Message += "; GET /v1/tiers lists the catalogue"
			if k, ok := tierIndex(e.Path); ok {
				d.Value = v.Tiers[k]
			}
		}
		problems[j] = d
	}
	return pv, problems
}

// tierIndex is j of "tiers[j]".
func tierIndex(path string) (int, bool) {
	n, ok := strings.CutPrefix(path, "tiers[")
	if !ok {
		return 0, false
	}
	k, err := strconv.Atoi(strings.TrimSuffix(n, "]"))
	return k, err == nil
}

// tierQuotas is the catalogue as the engine and what-if variations take it.
func (s *Server) tierQuotas() []scenario.Quota { return config.Quotas(s.tiers) }
