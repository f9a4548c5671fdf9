package plan

import (
	"context"
	"fmt"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// Prediction is what the model expects of a class's requests when exactly c
// of them are in flight, with no client-side queue, and load in all on its
// endpoint (c when the class is alone there): the conditions of a
// closed-loop probe at concurrency c beside the other classes of the
// endpoint at theirs, which is how a plan is validated.
type Prediction struct {
	Concurrency int `json:"concurrency"`
	// Load is the total in flight on the endpoint, every class's requests
	// together, at which the latency is predicted.
	Load          int     `json:"load" doc:"Requests in flight on the endpoint, every class's together, at which the latency is predicted: c when the class is alone on it."`
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
// (1 ≤ c ≤ 100,000), alone on its endpoint.
func (e *Engine) PredictAt(ctx context.Context, s scenario.Scenario, class string, c int) (Prediction, error) {
	return e.PredictShared(ctx, s, class, c, c)
}

// PredictShared predicts the named class of a valid scenario at
// concurrency c while its endpoint carries load in flight in all (c ≤
// load ≤ 100,000): the class's throughput is c / E[S(load)], its latency
// that of the endpoint at load (load does not matter to a latency
// profile that does not follow the load).
func (e *Engine) PredictShared(ctx context.Context, s scenario.Scenario, class string, c, load int) (Prediction, error) {
	if c < 1 || c > searchLimit {
		return Prediction{}, fmt.Errorf("concurrency %d is outside 1 to %d", c, searchLimit)
	}
	if load < c || load > searchLimit {
		return Prediction{}, fmt.Errorf("a load of %d in flight is outside %d to %d", load, c, searchLimit)
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
		sv := m.at(load)
		// The p95s, whatever percentile the class's SLO names.
		ttft, err := m.quantileAt(ctx, sv, nil, model.Wait{}, pctTTFT, 0.95)
		if err != nil {
			return Prediction{}, err
		}
		e2e, err := m.quantileAt(ctx, sv, nil, model.Wait{}, pctService, 0.95)
		if err != nil {
			return Prediction{}, err
		}
		return Prediction{
			Concurrency: c, Load: load, ThroughputRPS: signed.Round(model.LittleRate(float64(c), sv.mean), 4), MeanServiceMs: ms(sv.mean),
			TTFTP95Ms: ms(ttft), E2EP95Ms: ms(e2e), Extrapolated: sv.extrapolated,
			InputTokensP50: signed.Round(m.base.In.Quantile(0.5), 2), MeanOutputTokens: signed.Round(m.base.Out.Mean(), 2),
		}, nil
	}
	return Prediction{}, fmt.Errorf("no class named %q", class)
}

// PredictAt is Engine.PredictAt with a new engine.
func PredictAt(s scenario.Scenario, class string, c int) (Prediction, error) {
	return New(Options{}).PredictAt(context.Background(), s, class, c)
}

// PredictShared is Engine.PredictShared with a new engine.
func PredictShared(s scenario.Scenario, class string, c, load int) (Prediction, error) {
	return New(Options{}).PredictShared(context.Background(), s, class, c, load)
}
