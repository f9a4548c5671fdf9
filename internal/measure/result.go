package measure

import "github.com/plannerdev/planner/internal/model"

// USLFit is the Universal Scalability Law fitted to a ramp's throughput.
// A result without a fit sends null (the _ field's tag says so in the
// OpenAPI document).
type USLFit struct {
	_ struct{} `nullable:"true"`
	model.USL
	Peak *float64 `json:"peak"` // N* = sqrt((1 − α)/β); null when the law has no finite peak
	// PeakBeyondRange marks a peak more than PeakRangeFactor times the
	// highest concurrency measured: the fit's extrapolation, not a peak the
	// ramp came near, so it is shown with that caveat.
	PeakBeyondRange bool `json:"peak_beyond_range,omitempty" doc:"The peak lies more than 4 times above the highest concurrency measured: an extrapolation of the fit, not a peak the ramp saw."`
}

// PeakRangeFactor is how far above the highest concurrency measured a USL
// peak may lie before it counts as beyond the measured range.
const PeakRangeFactor = 4

// Result is the analysis of a ramp: what `planner probe` and `planner
// import` write, what the store keeps of a probe and what the API serves
// of a probe and of an analysis (its doc tags are the descriptions the
// OpenAPI document publishes).
type Result struct {
	Steps          []Step   `json:"steps" doc:"Summaries of the steps measured (while a probe runs, those finished so far), in ascending concurrency."`
	Knee           *int     `json:"knee" doc:"Knee concurrency; null when the first step already fails the knee rule, no step was measured in a steady state, or the steps judged measure one concurrency only."`
	KneeLowerBound bool     `json:"knee_lower_bound,omitempty" doc:"The knee is a lower bound, not a measurement: no step judged failed the knee rule (every step passed, or the run stopped before one failed), so the knee lies at or above the last step; probe to higher concurrency to find it."`
	Collapse       *int     `json:"collapse" doc:"First concurrency whose goodput fell beyond its noise and the collapse tolerance (collapse_tolerance_pct); null when none did."`
	QuotaLimited   bool     `json:"quota_limited" doc:"The share of 429 answers rises with concurrency up to the first failing step, or a probe's rate-limit headers showed the key exhausted: the quota binds, not the model."`
	USL            *USLFit  `json:"usl" doc:"Universal Scalability Law fit to the throughput; null when the steps allow none."`
	Notes          []string `json:"notes,omitempty"`
	// Served and Connections are a probe's: what its answers named as
	// their model, and how its requests got their connections.
	Served         *Served    `json:"served,omitempty" doc:"What the answers named in their model field, against the model asked for (docs/probe.md, \"The served model\"); absent when the rows do not say."`
	Connections    *ConnStats `json:"connections,omitempty" doc:"How the requests got their connections, new or reused, and what a new one cost; absent when the rows do not say."`
	FirstFailing   *int       `json:"first_failing,omitempty" doc:"The first measured step that failed the knee rule; absent when none did."`
	Ambiguous      *int       `json:"ambiguous,omitempty" doc:"A step whose goodput gain lies within its noise of the min_gain_pct threshold: repeating it, or measuring it longer, could change the verdict; absent when no step is."`
	KneeRefined    *int       `json:"knee_refined,omitempty" doc:"The smallest measured concurrency whose throughput reaches the plateau of the first failing step (docs/probe.md); a knee search narrows it down by bisection. Absent unless the first failing step failed on its goodput gain alone."`
	KneeResolution *int       `json:"knee_refined_resolution,omitempty" doc:"The knee lies in (knee_refined − resolution, knee_refined]."`
	// SLO are the targets goodput counted against, when given.
	SLO *Targets `json:"slo,omitempty" doc:"The SLO targets that goodput counts against: a request is good when it succeeded within the deadline and met every target at once (docs/probe.md, \"SLO goodput\"); absent without targets."`
	// Mode, Prefill, Cache and Conversation are the probe modes that
	// measure a prompt's cost rather than a concurrency ramp
	// (docs/probe.md, "Prefill and the prompt cache").
	Mode         string             `json:"mode,omitempty" enum:"prefill,cache,conversation" doc:"The probe mode, when it measured something other than a concurrency ramp: its steps then make no latency curve and no knee."`
	Prefill      *PrefillFit        `json:"prefill,omitempty" doc:"The prefill cost a ladder of input lengths measured: TTFT = base + slope · uncached input / 1000."`
	Cache        *CacheEffect       `json:"cache,omitempty" doc:"What the endpoint's prompt cache did to a repeated prefix, against fresh prompts of the same length."`
	Conversation *ConversationStats `json:"conversation,omitempty" doc:"Per-call and per-task times of multi-call tasks whose context grows with each answer and tool result."`
}
