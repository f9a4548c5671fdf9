package plan

import (
	"fmt"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
)

// Prediction is what the model expects of a class's requests when exactly c
// of them are in flight, with no client-side queue: the conditions of a
// closed-loop probe at concurrency c, which is how a plan is validated.
type Prediction struct {
	Concurrency   int     `json:"concurrency"`
	ThroughputRPS float64 `json:"throughput_rps" doc:"c / E[S(c)]."`
	MeanServiceMs float64 `json:"mean_service_ms"`
	TTFTP95Ms     float64 `json:"ttft_p95_ms"`
	E2EP95Ms      float64 `json:"e2e_p95_ms"`
	// InputTokensP50 and MeanOutputTokens describe the class's requests
	// (output capped at max_tokens), so that a probe can send requests of
	// the shape the prediction is for.
	InputTokensP50   float64 `json:"input_tokens_p50"`
	MeanOutputTokens float64 `json:"mean_output_tokens"`
	Extrapolated     bool    `json:"extrapolated,omitempty"`
}

// PredictAt predicts the named class of a valid scenario at concurrency c
// (1 ≤ c ≤ 100,000).
func PredictAt(s scenario.Scenario, class string, c int) (Prediction, error) {
	if c < 1 || c > searchLimit {
		return Prediction{}, fmt.Errorf("concurrency %d is outside 1 to %d", c, searchLimit)
	}
	if errs := s.Check(); len(errs) > 0 {
		return Prediction{}, errs
	}
	s = s.WithDefaults()
	for _, spec := range s.Classes {
		if spec.Name != class {
			continue
		}
		var key quota.Key
		for _, q := range s.Quotas {
			if q.Name == spec.Quota {
				key = quota.Key{Quota: q}
			}
		}
		m, err := newClassModel(spec, key, s.Policy, model.SharedDraws(*s.Policy.Seed, s.Policy.MonteCarloDraws), curves{})
		if err != nil {
			return Prediction{}, err
		}
		m.lambda = 0 // a closed loop keeps exactly c in flight: no client queue
		sv := m.at(c)
		return Prediction{
			Concurrency: c, ThroughputRPS: roundTo(m.rate(c), 4), MeanServiceMs: ms(sv.mean),
			TTFTP95Ms: ms(m.ttft95(c)), E2EP95Ms: ms(m.e2e95(c)), Extrapolated: sv.extrapolated,
			InputTokensP50: roundTo(m.base.In.Quantile(0.5), 2), MeanOutputTokens: roundTo(m.base.Out.Mean(), 2),
		}, nil
	}
	return Prediction{}, fmt.Errorf("no class named %q", class)
}
