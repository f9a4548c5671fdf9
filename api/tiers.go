package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/plannerdev/planner/internal/config"
)

// TiersResponse is the quota-tier catalogue.
type TiersResponse struct {
	Tiers []config.Tier `json:"tiers" doc:"Every tier of the server's configuration, in its order."`
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
			"(rpm, tpm, itpm, otpm, rpd, tpd) and token accounting that what-if variations can put on a quota. " +
			"The operator maintains it; the built-in catalogue holds illustrative example numbers only, not " +
			"any provider's published limits.",
		Tags:   []string{tagTiers},
		Errors: []int{http.StatusUnauthorized},
	}, func(context.Context, *struct{}) (*tiersOutput, error) {
		return &tiersOutput{Body: TiersResponse{Tiers: s.tiers}}, nil
	})
}
