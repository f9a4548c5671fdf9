package api

import (
	"fmt"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/dustin/go-humanize"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/verify"
)

// The bounds and defaults that the probe and validation requests publish
// are declared once, by their owners: a probe's shape and budget bounds and
// its defaults in package probe, the server's default caps in package
// config, the bounds below for what only the API limits. The request types
// put them into their schemas (huma's SchemaTransformer) instead of
// repeating the numbers in struct tags.
const (
	// maxDeadlineMs bounds the per-request deadline, maxPauseMs the pause
	// between steps.
	maxDeadlineMs = 600_000
	maxPauseMs    = 60_000
)

// TransformSchema puts the probe's bounds and defaults into the schema of
// a probe request.
func (ProbeRequest) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	p := s.Properties
	p["steps"].MaxItems = ptr(probe.MaxSteps)
	// Each step within the probe's bounds, so that a whole number no int
	// holds (1e20) is refused at its element before it is decoded.
	p["steps"].Items.Minimum, p["steps"].Items.Maximum = ptr(1.0), ptr(float64(probe.MaxConcurrency))
	p["steps"].Description = fmt.Sprintf("Concurrency ladder, strictly ascending, each at most the server's "+
		"probe.max_concurrency (%d unless configured). Default %s.", config.DefaultProbeMaxConcurrency, ints(probe.DefaultSteps))
	requestsPerStep(p["requests_per_step"])
	bound(p["max_tokens"], probe.MaxOutputTokens, fmt.Sprintf("max_tokens of each request; default %d.", probe.DefaultMaxTokens))
	bound(p["input_tokens"], probe.MaxInputTokens, fmt.Sprintf(
		"Length of the synthetic prompt in tokens, calibrated on the first answers; default %d.", probe.DefaultInputTokens))
	bound(p["deadline_ms"], maxDeadlineMs, fmt.Sprintf("Per-request deadline, retries included; a response is good "+
		"only when it ends within it. Default %s.", humanize.Comma(probe.DefaultDeadline.Milliseconds())))
	bound(p["pause_ms"], maxPauseMs, fmt.Sprintf(
		"Pause between steps, which lets the endpoint's queues drain; default %s.", humanize.Comma(probe.DefaultPause.Milliseconds())))
	return s
}

// TransformSchema puts a prefill ladder's bounds and defaults into its
// schema.
func (ProbePrefill) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	p := s.Properties
	p["input_tokens"].MaxItems = ptr(probe.MaxSteps)
	p["input_tokens"].Items.Minimum, p["input_tokens"].Items.Maximum = ptr(1.0), ptr(float64(probe.MaxInputTokens))
	bound(p["requests"], probe.MaxRequestsPerStep, fmt.Sprintf("Requests at each length, one round of warm-up included; "+
		"at least %d measured at each. Default %d.", probe.MinPrefillMeasured, probe.DefaultPrefillRequests))
	return s
}

// TransformSchema puts a cache comparison's bounds and defaults into its
// schema.
func (ProbeCache) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	bound(s.Properties["requests"], probe.MaxRequestsPerStep, fmt.Sprintf("Requests of each kind (repeated and fresh), one of "+
		"warm-up included; at least %d measured of each. Default %d.", probe.MinCacheMeasured, probe.DefaultCacheRequests))
	return s
}

// TransformSchema puts a conversation's bounds and defaults into its
// schema.
func (ProbeConversation) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	p := s.Properties
	bound(p["calls"], probe.MaxCalls, "")
	bound(p["tasks"], probe.MaxRequestsPerStep, "")
	bound(p["tasks_in_flight"], probe.MaxConcurrency, "")
	bound(p["tool_time_ms"], probe.MaxToolTime.Milliseconds(), "")
	bound(p["tool_result_tokens"], probe.MaxInputTokens, fmt.Sprintf("Length of each tool result in tokens; default %d.", probe.DefaultToolResultTokens))
	return s
}

// TransformSchema puts the probe's default stop rule into its schema.
func (ProbeStop) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	s.Properties["max_429_ratio"].Description = fmt.Sprintf(
		"Stop after a step in which more than this fraction of the answers were 429; default %g.", probe.DefaultMax429Ratio)
	return s
}

// TransformSchema puts the bounds of any probe's budget and the server's
// default caps into the schema of a request's budgets.
func (Budgets) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	p := s.Properties
	bound(p["max_requests"], probe.MaxBudgetRequests, fmt.Sprintf("HTTP requests sent, retries included. Default and "+
		"upper bound: the server's probe.max_requests (%s unless configured).", humanize.Comma(config.DefaultProbeMaxRequests)))
	bound(p["max_tokens"], probe.MaxBudgetTokens, fmt.Sprintf("Input plus output tokens. Default and upper bound: "+
		"the server's probe.max_tokens (%s unless configured).", humanize.Comma(config.DefaultProbeMaxTokens)))
	bound(p["max_duration_s"], probe.MaxBudgetDuration.Seconds(), fmt.Sprintf("Wall time in seconds, pauses included. "+
		"Default and upper bound: the server's probe.max_duration (%g minutes unless configured).", config.DefaultProbeMaxDuration.Minutes()))
	return s
}

// TransformSchema puts the bounds and defaults of a validation's probes
// into the schema of a validation request.
func (ValidateRequest) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	p := s.Properties
	requestsPerStep(p["requests_per_step"])
	bound(p["max_tokens"], probe.MaxOutputTokens, "")
	bound(p["tolerance_pct"], verify.MaxTolerancePct, "")
	bound(p["deadline_ms"], maxDeadlineMs, fmt.Sprintf(
		"Per-request deadline, retries included; default %s.", humanize.Comma(probe.DefaultDeadline.Milliseconds())))
	bound(p["pause_ms"], maxPauseMs, fmt.Sprintf("Pause between the probe's steps; default %d.", verify.DefaultPause.Milliseconds()))
	p["budgets"].Description = fmt.Sprintf("Bounds of the whole validation, all classes together; max_duration_s at "+
		"most %g (the validation runs while the client waits) and within the server's probe.max_duration.", validateMaxDuration.Seconds())
	return s
}

// requestsPerStep is the schema of a probe's requests per step.
func requestsPerStep(s *huma.Schema) {
	bound(s, probe.MaxRequestsPerStep, fmt.Sprintf("Requests per step, warm-up (one round, c requests) included; "+
		"each step must keep at least max(%d, %d × concurrency) measured requests. Default max(%d, %d × concurrency) + concurrency.",
		analysis.MinMeasuredFloor, analysis.MinMeasuredRounds, analysis.MinMeasuredFloor, analysis.MinMeasuredRounds))
}

// bound sets a number's maximum and, unless empty, its description.
func bound[N int | int64 | float64](s *huma.Schema, most N, description string) {
	s.Maximum = ptr(float64(most))
	if description != "" {
		s.Description = description
	}
}

// ints lists integers as a sentence does: "1, 2, 4".
func ints(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

func ptr[T any](v T) *T { return &v }
