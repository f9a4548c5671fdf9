package measure

import "github.com/plannerdev/planner/internal/model"

// USLFit is the Universal Scalability Law fitted to a ramp's throughput.
type USLFit struct {
	model.USL
	Peak *float64 `json:"peak"` // N* = sqrt((1 − α)/β); null when the law has no finite peak
}

// Result is the analysis of a ramp.
type Result struct {
	Steps        []Step   `json:"steps"`
	Knee         *int     `json:"knee"`     // concurrency; null when the first measured step already fails or none was measured
	Collapse     *int     `json:"collapse"` // first step whose goodput fell beyond noise and tolerance; null when none did
	QuotaLimited bool     `json:"quota_limited"`
	USL          *USLFit  `json:"usl"`
	Notes        []string `json:"notes,omitempty"`
	// FirstFailing is the first measured step that failed the knee rule;
	// null when none did.
	FirstFailing *int `json:"first_failing,omitempty"`
	// Ambiguous is a step whose goodput gain lies within its noise of the
	// min_gain_pct threshold: repeating it (or measuring it longer) could
	// change the verdict. Null when no step is.
	Ambiguous *int `json:"ambiguous,omitempty"`
	// KneeRefined is the smallest measured concurrency whose throughput
	// reaches the plateau (analysis.Analyze), and KneeResolution the gap to
	// the measured step below it: the knee lies in
	// (KneeRefined − KneeResolution, KneeRefined]. Null without a knee or
	// without a first failing step.
	KneeRefined    *int `json:"knee_refined,omitempty"`
	KneeResolution *int `json:"knee_refined_resolution,omitempty"`
}
