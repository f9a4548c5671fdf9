package measure

import "math"

// Step is the summary of one step of a ramp. Requests, OK, RateLimitedFailed
// and Errors count the measured requests (warm-up excluded), so that
// Requests = OK + RateLimitedFailed + Errors; RateLimited and Answers count
// every answer of the step, warm-up and retries included. Latency
// percentiles are over the measured successful requests and are 0 when
// the step had none.
type Step struct {
	Concurrency       int     `json:"concurrency"`
	RateRPS           float64 `json:"rate_rps,omitempty"` // offered rate of an open-loop step
	Requests          int     `json:"requests"`
	OK                int     `json:"ok"`
	RateLimited       int     `json:"rate_limited" doc:"429 answers in the step, retried ones and warm-up included."`
	RateLimitedFailed int     `json:"rate_limited_failed,omitempty" doc:"Measured requests that still met a 429 when they gave up."`
	Errors            int     `json:"errors" doc:"Measured requests that failed otherwise than by 429."`
	Answers           int     `json:"answers,omitempty" doc:"HTTP answers in the step, retries and warm-up included: the denominator of the 429 rate."`
	WallS             float64 `json:"wall_s" doc:"The measuring window: a closed-loop step's steady state (all its slots busy, after warm-up, before the drain), else the step's wall time."`
	// WindowStartS and WindowEndS place a closed-loop step's steady-state
	// window in the run, seconds from its start; 0 for other steps.
	WindowStartS float64 `json:"window_start_s,omitempty"`
	WindowEndS   float64 `json:"window_end_s,omitempty"`

	GoodputRPS    float64   `json:"goodput_rps"`
	GoodputCI     *Interval `json:"goodput_ci,omitempty" doc:"95 % interval of the goodput (batch means)."`
	ThroughputRPS float64   `json:"throughput_rps"`
	OutputTPS     float64   `json:"output_tps,omitempty" doc:"Output tokens per second; absent where the rows do not count them."`

	TTFTP50Ms float64   `json:"ttft_p50_ms,omitempty" doc:"Absent where nothing measured it: no request succeeded, or the rows carry no TTFT (the workshop layout); so are the other percentiles."`
	TTFTP90Ms float64   `json:"ttft_p90_ms,omitempty"`
	TTFTP95Ms float64   `json:"ttft_p95_ms,omitempty"`
	TTFTP99Ms float64   `json:"ttft_p99_ms,omitempty"`
	TTFTP95CI *Interval `json:"ttft_p95_ci,omitempty" doc:"95 % interval of the TTFT p95 (order statistics)."`
	E2EP50Ms  float64   `json:"e2e_p50_ms,omitempty"`
	E2EP90Ms  float64   `json:"e2e_p90_ms,omitempty"`
	E2EP95Ms  float64   `json:"e2e_p95_ms,omitempty"`
	E2EP99Ms  float64   `json:"e2e_p99_ms,omitempty"`
	E2EP95CI  *Interval `json:"e2e_p95_ci,omitempty" doc:"95 % interval of the E2E p95 (order statistics)."`
	TPOTP50Ms float64   `json:"tpot_p50_ms,omitempty"`
	TPOTP90Ms float64   `json:"tpot_p90_ms,omitempty"`
	TPOTP95Ms float64   `json:"tpot_p95_ms,omitempty"`
	TPOTP99Ms float64   `json:"tpot_p99_ms,omitempty"`
	TPOTP95CI *Interval `json:"tpot_p95_ci,omitempty" doc:"95 % interval of the TPOT p95 (order statistics)."`
	// SLO is how the step's measured requests met the analysis's SLO
	// targets; nil without targets.
	SLO *SLOStats `json:"slo,omitempty" doc:"How the step's measured requests met the SLO targets given (docs/probe.md, \"SLO goodput\"): goodput_rps then counts only the requests that met every target at once."`
	// E2EWithRetriesP95Ms is the p95 of the time from the first send,
	// waits before retries included; set when a request was retried.
	E2EWithRetriesP95Ms float64 `json:"e2e_with_retries_p95_ms,omitempty"`

	// Refine marks a step of a knee search's refinement: it narrows down
	// knee_refined and adds a curve point, and takes no part in the knee
	// and collapse rules, which judge the doubling steps.
	Refine bool `json:"refine,omitempty"`
	// Efficiency is the scaling efficiency X(c)·S₀/c, the throughput
	// against c/S₀ with S₀ = 1/X(1) the unloaded service time measured at
	// concurrency 1; 0 without a step at 1.
	Efficiency float64 `json:"scaling_efficiency,omitempty"`

	// TooShort marks a step with fewer measured requests than a steady
	// state needs (MinAdaptive) or that never ran with all its slots busy
	// after its warm-up: its throughput is not a steady-state figure, and
	// the knee and collapse rules leave it out.
	TooShort bool `json:"too_short,omitempty"`

	// Connections is how the step's requests got their connections; nil
	// when its rows do not say (docs/probe.md, "Connections").
	Connections *ConnStats `json:"connections,omitempty" doc:"How the step's requests got their connections, new or reused, and what a new one cost."`

	// Set by importers when a figure was not measured but derived.
	ConcurrencyEstimated bool `json:"concurrency_estimated,omitempty"` // from Little's Law, throughput × mean E2E
	GoodputEstimated     bool `json:"goodput_estimated,omitempty"`     // no deadline data: goodput from throughput
	TTFTEstimated        bool `json:"ttft_estimated,omitempty"`        // a TTFT percentile stands in for another (the mean, a higher one)
	TPOTEstimated        bool `json:"tpot_estimated,omitempty"`        // TPOT derived from E2E and TTFT, or a stand-in percentile
	E2EEstimated         bool `json:"e2e_estimated,omitempty"`         // E2E derived from TTFT and TPOT, or a stand-in percentile
	CountsUnknown        bool `json:"counts_unknown,omitempty"`        // the source gave rates and percentiles but no request counts
}

// Estimated lists the names of the step's figures that were derived
// rather than measured, for marks in tables and curve files.
func (s Step) Estimated() []string {
	var out []string
	for _, e := range []struct {
		on   bool
		name string
	}{
		{s.ConcurrencyEstimated, "concurrency"}, {s.GoodputEstimated, "goodput"}, {s.TTFTEstimated, "ttft"},
		{s.TPOTEstimated, "tpot"}, {s.E2EEstimated, "e2e"},
	} {
		if e.on {
			out = append(out, e.name)
		}
	}
	return out
}

// Interval is a 95 % confidence interval.
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// HalfWidthRel is the interval's half-width relative to v, or +Inf.
func (iv *Interval) HalfWidthRel(v float64) float64 {
	if iv == nil || !(v > 0) {
		return math.Inf(1)
	}
	return (iv.Hi - iv.Lo) / 2 / v
}
