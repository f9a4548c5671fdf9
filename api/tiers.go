package api

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/scenario"
)

// TiersResponse is the quota-tier catalogue.
type TiersResponse struct {
	Tiers []config.Tier `json:"tiers" doc:"Every tier of the server's configuration, in its order."`
}

// TransformSchema publishes a tier as the catalogue holds it: of the
// fields of the quota it is (config.Tier), only its name, limits, token
// accounting and price, beside its description and provider.
func (TiersResponse) TransformSchema(r huma.Registry, s *huma.Schema) *huma.Schema {
	tier := r.Map()["Tier"]
	if tier == nil {
		return s
	}
	keep := append([]string{"description", "provider"}, config.TierQuotaKeys...)
	for name := range tier.Properties {
		if !slices.Contains(keep, name) {
			delete(tier.Properties, name)
		}
	}
	if name := tier.Properties["name"]; name != nil {
		name.Description, name.Examples = "Name that what-if variations refer to.", []any{"example-small"}
	}
	return s
}

type tiersOutput struct {
	Body TiersResponse
}

func (s *Server) registerTiers() {
	register(s, huma.Operation{
		OperationID: "list-tiers",
		Method:      http.MethodGet,
		Path:        "/v1/tiers",
		Summary:     "List the quota tiers",
		Description: "Returns the quota-tier catalogue of the server's configuration: named sets of limits " +
			"(" + strings.Join(scenario.DimensionNames(), ", ") + "), token accounting and prices that what-if variations can put on a quota, " +
			"ranked by cost, and that remedies name. The operator maintains it; the built-in catalogue holds illustrative " +
			"example numbers only, not any provider's published limits or prices (its prices are dated examples).",
		Tags:   []string{tagTiers},
		Errors: []int{http.StatusUnauthorized},
	}, func(context.Context, *struct{}) (*tiersOutput, error) {
		return &tiersOutput{Body: TiersResponse{Tiers: s.tiers}}, nil
	})
}
