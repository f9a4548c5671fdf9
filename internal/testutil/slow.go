package testutil

import (
	"encoding/json"
	"fmt"
	"math"
)

// SlowScenario is a valid scenario (JSON) that takes the engine many
// seconds to plan on any machine: 32 classes, each with a measured curve of
// its own and a demand, at the largest number of Monte Carlo draws. Tests
// stop it midway, by a signal or a shutdown.
var SlowScenario = func() string {
	type point struct {
		Concurrency int     `json:"concurrency"`
		TTFTP50     float64 `json:"ttft_p50_ms"`
		TTFTP95     float64 `json:"ttft_p95_ms"`
		TPOTP50     float64 `json:"tpot_p50_ms"`
		TPOTP95     float64 `json:"tpot_p95_ms"`
	}
	var classes []map[string]any
	for i := range 32 {
		var curve []point
		for _, c := range []int{1, 2, 4, 8, 16, 32, 64} {
			r := math.Sqrt(float64(c))
			curve = append(curve, point{c, 100*r + float64(i), 300*r + float64(i), 10 + 0.3*float64(c), 20 + 0.5*float64(c)})
		}
		classes = append(classes, map[string]any{
			"name": fmt.Sprintf("c%d", i), "quota": "k", "mode": "interactive",
			"demand":        map[string]any{"rps": 1 + 0.37*float64(i)},
			"input_tokens":  map[string]any{"p50": 500 + i, "p95": 3000 + 7*i},
			"output_tokens": map[string]any{"p50": 200 + i, "p95": 900 + 3*i},
			"slo":           map[string]any{"ttft_p95_ms": 2000, "e2e_p95_ms": 20000 + i},
			"latency":       map[string]any{"curve": curve},
		})
	}
	b, err := json.Marshal(map[string]any{
		"quotas":  []map[string]any{{"name": "k", "rpm": 100000, "tpm": 1e8}},
		"classes": classes,
		"policy":  map[string]any{"monte_carlo_draws": 200000},
	})
	if err != nil {
		panic(err)
	}
	return string(b)
}()
