package plan

import "github.com/plannerdev/planner/internal/scenario"

// prefillPerToken is the prefill slope that a class's request pays per
// input token, seconds: the latency's prefill_ms_per_1k_tokens on the
// uncached input only, since a token read from the prompt cache skips
// prefill (docs/concepts.md, "The prompt cache"). With k the slope and
// r = cached_input_fraction,
//
//	TTFT = base + k·(1 − r)·in/1000
//
// so that the cache lowers the mean TTFT by exactly k·r·E[in]/1000.
func prefillPerToken(l scenario.Latency, c scenario.Class) float64 {
	return l.PrefillMsPer1K / 1000 / 1000 * (1 - c.CachedInputFraction)
}
