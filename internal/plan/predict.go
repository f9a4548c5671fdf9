package plan

import (
	"context"
	"fmt"

	"github.com/plannerdev/planner/internal/scenario"
)

// Prediction is what the model expects of a class's requests when exactly c
// of them are in flight on its endpoint, with no client-side queue: the
// conditions of a closed-loop probe at concurrency c, which is how a plan
// is validated.
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
func (e *Engine) PredictAt(ctx context.Context, s scenario.Scenario, class string, c int) (Prediction, error) {
	if c < 1 || c > searchLimit {
		return Prediction{}, fmt.Errorf("concurrency %d is outside 1 to %d", c, searchLimit)
	}
	ws, err := e.Workloads(ctx, s)
	if err != nil {
		return Prediction{}, err
	}
	for _, w := range ws {
		if w.Class != class {
			continue
		}
		m := w.m
		sv := m.at(c)
		ttft, err := m.noWait95(ctx, c, metricTTFT)
		if err != nil {
			return Prediction{}, err
		}
		e2e, err := m.noWait95(ctx, c, metricE2E)
		if err != nil {
			return Prediction{}, err
		}
		return Prediction{
			Concurrency: c, ThroughputRPS: roundTo(m.rate(c), 4), MeanServiceMs: ms(sv.mean),
			TTFTP95Ms: ms(ttft), E2EP95Ms: ms(e2e), Extrapolated: sv.extrapolated,
			InputTokensP50: roundTo(m.base.In.Quantile(0.5), 2), MeanOutputTokens: roundTo(m.base.Out.Mean(), 2),
		}, nil
	}
	return Prediction{}, fmt.Errorf("no class named %q", class)
}

// PredictAt is Engine.PredictAt with a new engine.
func PredictAt(s scenario.Scenario, class string, c int) (Prediction, error) {
	return New(Options{}).PredictAt(context.Background(), s, class, c)
}
