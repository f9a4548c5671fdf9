package store

import (
	"encoding/json"
	"fmt"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/plan"
)

// The store keeps a plan and a probe's analysis as JSON documents of its
// own types, declared here, so that a change to the engine's types is a
// compile error in the conversions below rather than a silent change to
// what is on disk. Each document carries schema_version. Version 1 is the
// unversioned document that releases before the version wrote, with the
// same names; a document of a version this binary does not know (written by
// a newer release) is refused rather than misread. A change of names is a
// new version, and the reader keeps decoding the old ones.
const schemaVersion = 2

// version is the schema_version of a stored document.
type version struct {
	SchemaVersion int `json:"schema_version,omitempty"`
}

// check accepts the versions this binary reads: 1 (no schema_version) and
// schemaVersion.
func (v version) check() error {
	switch v.SchemaVersion {
	case 0, 1, schemaVersion:
		return nil
	}
	return fmt.Errorf("schema version %d is newer than this planner reads (%d): use a newer planner", v.SchemaVersion, schemaVersion)
}

// encodePlan is the stored document of a plan.
func encodePlan(p plan.Plan) ([]byte, error) {
	return json.Marshal(planDoc{
		version:   version{SchemaVersion: schemaVersion},
		Classes:   each(p.Classes, classDocOf),
		Quotas:    each(p.Quotas, quotaDocOf),
		Endpoints: each(p.Endpoints, endpointDocOf),
		Warnings:  p.Warnings,
	})
}

// decodePlan reads a stored plan document of any version this binary knows.
func decodePlan(b []byte) (plan.Plan, error) {
	var d planDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return plan.Plan{}, err
	}
	if err := d.check(); err != nil {
		return plan.Plan{}, err
	}
	return plan.Plan{
		Classes:   each(d.Classes, classDoc.plan),
		Quotas:    each(d.Quotas, quotaDoc.plan),
		Endpoints: each(d.Endpoints, endpointDoc.plan),
		Warnings:  d.Warnings,
	}, nil
}

// encodeResult is the stored document of a probe's analysis.
func encodeResult(r measure.Result) ([]byte, error) {
	d := resultDoc{
		version:        version{SchemaVersion: schemaVersion},
		Steps:          each(r.Steps, stepDocOf),
		Knee:           r.Knee,
		Collapse:       r.Collapse,
		QuotaLimited:   r.QuotaLimited,
		Notes:          r.Notes,
		FirstFailing:   r.FirstFailing,
		Ambiguous:      r.Ambiguous,
		KneeRefined:    r.KneeRefined,
		KneeResolution: r.KneeResolution,
	}
	if u := r.USL; u != nil {
		d.USL = &uslDoc{lawDoc: lawDoc(u.USL), Peak: u.Peak}
	}
	return json.Marshal(d)
}

// decodeResult reads a stored analysis document of any version this binary
// knows.
func decodeResult(b []byte) (measure.Result, error) {
	var d resultDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return measure.Result{}, err
	}
	if err := d.check(); err != nil {
		return measure.Result{}, err
	}
	r := measure.Result{
		Steps:          each(d.Steps, stepDoc.step),
		Knee:           d.Knee,
		Collapse:       d.Collapse,
		QuotaLimited:   d.QuotaLimited,
		Notes:          d.Notes,
		FirstFailing:   d.FirstFailing,
		Ambiguous:      d.Ambiguous,
		KneeRefined:    d.KneeRefined,
		KneeResolution: d.KneeResolution,
	}
	if u := d.USL; u != nil {
		r.USL = &measure.USLFit{USL: model.USL(u.lawDoc), Peak: u.Peak}
	}
	return r, nil
}

// planDoc is a stored plan.
type planDoc struct {
	version
	Classes   []classDoc    `json:"classes"`
	Quotas    []quotaDoc    `json:"quotas"`
	Endpoints []endpointDoc `json:"endpoints"`
	Warnings  []string      `json:"warnings"`
}

type classDoc struct {
	Name              string       `json:"name"`
	Mode              string       `json:"mode"`
	Quota             string       `json:"quota"`
	Endpoint          string       `json:"endpoint"`
	Pool              int          `json:"pool"`
	BindingConstraint string       `json:"binding_constraint"`
	TiedConstraints   []string     `json:"tied_constraints,omitempty"`
	Ceilings          []ceilingDoc `json:"ceilings"`
	MinPool           *int         `json:"min_pool"`
	Feasible          bool         `json:"feasible"`
	Predicted         predictedDoc `json:"predicted"`
	Pacing            pacingDoc    `json:"pacing"`
	Admission         admissionDoc `json:"admission"`
	Retry             retryDoc     `json:"retry"`
	Adaptive          adaptiveDoc  `json:"adaptive"`
	TruncationRisk    float64      `json:"truncation_risk"`
	Batch             *batchDoc    `json:"batch,omitempty"`
	Shed              *shedDoc     `json:"shed,omitempty"`
	Remedies          []remedyDoc  `json:"remedies"`
	Explanation       string       `json:"explanation"`
	Warnings          []string     `json:"warnings"`
}

func classDocOf(c plan.ClassPlan) classDoc {
	return classDoc{
		Name:              c.Name,
		Mode:              c.Mode,
		Quota:             c.Quota,
		Endpoint:          c.Endpoint,
		Pool:              c.Pool,
		BindingConstraint: c.BindingConstraint,
		TiedConstraints:   c.TiedConstraints,
		Ceilings:          each(c.Ceilings, func(c plan.Ceiling) ceilingDoc { return ceilingDoc(c) }),
		MinPool:           c.MinPool,
		Feasible:          c.Feasible,
		Predicted:         predictedDoc(c.Predicted),
		Pacing:            pacingDoc(c.Pacing),
		Admission:         admissionDoc(c.Admission),
		Retry:             retryDoc(c.Retry),
		Adaptive:          adaptiveDoc(c.Adaptive),
		TruncationRisk:    c.TruncationRisk,
		Batch:             batchDocOf(c.Batch),
		Shed:              (*shedDoc)(c.Shed),
		Remedies:          each(c.Remedies, func(r plan.Remedy) remedyDoc { return remedyDoc(r) }),
		Explanation:       c.Explanation,
		Warnings:          c.Warnings,
	}
}

func (c classDoc) plan() plan.ClassPlan {
	return plan.ClassPlan{
		Name:              c.Name,
		Mode:              c.Mode,
		Quota:             c.Quota,
		Endpoint:          c.Endpoint,
		Pool:              c.Pool,
		BindingConstraint: c.BindingConstraint,
		TiedConstraints:   c.TiedConstraints,
		Ceilings:          each(c.Ceilings, func(c ceilingDoc) plan.Ceiling { return plan.Ceiling(c) }),
		MinPool:           c.MinPool,
		Feasible:          c.Feasible,
		Predicted:         plan.Predicted(c.Predicted),
		Pacing:            plan.Pacing(c.Pacing),
		Admission:         plan.Admission(c.Admission),
		Retry:             plan.Retry(c.Retry),
		Adaptive:          plan.Adaptive(c.Adaptive),
		TruncationRisk:    c.TruncationRisk,
		Batch:             c.Batch.plan(),
		Shed:              (*plan.Shed)(c.Shed),
		Remedies:          each(c.Remedies, func(r remedyDoc) plan.Remedy { return plan.Remedy(r) }),
		Explanation:       c.Explanation,
		Warnings:          c.Warnings,
	}
}

type ceilingDoc struct {
	Constraint string `json:"constraint"`
	MaxPool    *int   `json:"max_pool"`
	Detail     string `json:"detail"`
}

type predictedDoc struct {
	MeanServiceMs   float64            `json:"mean_service_ms"`
	ThroughputRPS   float64            `json:"throughput_rps"`
	OfferedRPS      float64            `json:"offered_rps,omitempty"`
	TTFTP95Ms       *float64           `json:"ttft_p95_ms"`
	E2EP95Ms        *float64           `json:"e2e_p95_ms"`
	QueueWaitMeanMs *float64           `json:"queue_wait_mean_ms"`
	QueueWaitP95Ms  *float64           `json:"queue_wait_p95_ms"`
	Utilization     map[string]float64 `json:"utilization"`
	Extrapolated    bool               `json:"extrapolated,omitempty"`
}

type pacingDoc struct {
	RateRPS float64 `json:"rate_rps"`
	Burst   int     `json:"burst"`
}

type admissionDoc struct {
	MaxQueueWaitMs *float64 `json:"max_queue_wait_ms"`
	Status         int      `json:"status"`
	RetryAfterS    int      `json:"retry_after_s"`
}

type retryDoc struct {
	MaxAttempts  int      `json:"max_attempts"`
	BaseMs       float64  `json:"base_ms"`
	CapMs        float64  `json:"cap_ms"`
	Jitter       string   `json:"jitter"`
	HonorHeaders []string `json:"honor_headers"`
	DeadlineMs   float64  `json:"deadline_ms"`
}

type adaptiveDoc struct {
	Start            int     `json:"start"`
	DecreaseFactor   float64 `json:"decrease_factor"`
	IncreaseStep     int     `json:"increase_step"`
	IncreaseWhenUsed float64 `json:"increase_when_used"`
	Floor            int     `json:"floor"`
	Ceiling          int     `json:"ceiling"`
}

type batchDoc struct {
	Requests        float64         `json:"requests"`
	WithinHours     float64         `json:"within_hours"`
	CompletionHours *float64        `json:"completion_hours"`
	MeetsWindow     bool            `json:"meets_window"`
	DailyLimits     []dailyCheckDoc `json:"daily_limits,omitempty"`
}

func batchDocOf(b *plan.BatchPlan) *batchDoc {
	if b == nil {
		return nil
	}
	return &batchDoc{
		Requests:        b.Requests,
		WithinHours:     b.WithinHours,
		CompletionHours: b.CompletionHours,
		MeetsWindow:     b.MeetsWindow,
		DailyLimits:     each(b.DailyLimits, func(d plan.DailyCheck) dailyCheckDoc { return dailyCheckDoc(d) }),
	}
}

func (b *batchDoc) plan() *plan.BatchPlan {
	if b == nil {
		return nil
	}
	return &plan.BatchPlan{
		Requests:        b.Requests,
		WithinHours:     b.WithinHours,
		CompletionHours: b.CompletionHours,
		MeetsWindow:     b.MeetsWindow,
		DailyLimits:     each(b.DailyLimits, func(d dailyCheckDoc) plan.DailyCheck { return plan.DailyCheck(d) }),
	}
}

type dailyCheckDoc struct {
	Constraint string  `json:"constraint"`
	Needed     float64 `json:"needed"`
	Available  float64 `json:"available"`
	OK         bool    `json:"ok"`
}

type shedDoc struct {
	SustainableRPS float64 `json:"sustainable_rps"`
	ShedRPS        float64 `json:"shed_rps"`
}

type remedyDoc struct {
	Constraint string  `json:"constraint"`
	Change     string  `json:"change"`
	Value      float64 `json:"value"`
	Path       string  `json:"path"`
	Class      string  `json:"class,omitempty"`
}

type quotaDoc struct {
	Name        string             `json:"name"`
	Limits      map[string]float64 `json:"limits"`
	Usable      map[string]float64 `json:"usable"`
	Allocations []allocationDoc    `json:"allocations"`
	Utilization map[string]float64 `json:"utilization"`
}

func quotaDocOf(q plan.QuotaPlan) quotaDoc {
	return quotaDoc{
		Name:        q.Name,
		Limits:      q.Limits,
		Usable:      q.Usable,
		Allocations: each(q.Allocations, func(a plan.Allocation) allocationDoc { return allocationDoc(a) }),
		Utilization: q.Utilization,
	}
}

func (q quotaDoc) plan() plan.QuotaPlan {
	return plan.QuotaPlan{
		Name:        q.Name,
		Limits:      q.Limits,
		Usable:      q.Usable,
		Allocations: each(q.Allocations, func(a allocationDoc) plan.Allocation { return plan.Allocation(a) }),
		Utilization: q.Utilization,
	}
}

type allocationDoc struct {
	Class    string             `json:"class"`
	Allotted map[string]float64 `json:"allotted"`
	Reserved map[string]float64 `json:"reserved,omitempty"`
}

type endpointDoc struct {
	Name             string                  `json:"name"`
	Knee             *int                    `json:"knee,omitempty"`
	Safety           float64                 `json:"safety"`
	Budget           *int                    `json:"budget"`
	BudgetConstraint string                  `json:"budget_constraint,omitempty"`
	TotalPool        int                     `json:"total_pool"`
	Load             *int                    `json:"load,omitempty"`
	Allocations      []endpointAllocationDoc `json:"allocations"`
	TTFTP95Ms        float64                 `json:"ttft_p95_ms"`
	E2EP95Ms         float64                 `json:"e2e_p95_ms"`
}

func endpointDocOf(e plan.EndpointPlan) endpointDoc {
	return endpointDoc{
		Name:             e.Name,
		Knee:             e.Knee,
		Safety:           e.Safety,
		Budget:           e.Budget,
		BudgetConstraint: e.BudgetConstraint,
		TotalPool:        e.TotalPool,
		Load:             e.Load,
		Allocations:      each(e.Allocations, func(a plan.EndpointAllocation) endpointAllocationDoc { return endpointAllocationDoc(a) }),
		TTFTP95Ms:        e.TTFTP95Ms,
		E2EP95Ms:         e.E2EP95Ms,
	}
}

func (e endpointDoc) plan() plan.EndpointPlan {
	return plan.EndpointPlan{
		Name:             e.Name,
		Knee:             e.Knee,
		Safety:           e.Safety,
		Budget:           e.Budget,
		BudgetConstraint: e.BudgetConstraint,
		TotalPool:        e.TotalPool,
		Load:             e.Load,
		Allocations:      each(e.Allocations, func(a endpointAllocationDoc) plan.EndpointAllocation { return plan.EndpointAllocation(a) }),
		TTFTP95Ms:        e.TTFTP95Ms,
		E2EP95Ms:         e.E2EP95Ms,
	}
}

type endpointAllocationDoc struct {
	Class    string   `json:"class"`
	Pool     int      `json:"pool"`
	Allotted *float64 `json:"allotted,omitempty"`
	Reserved *float64 `json:"reserved,omitempty"`
}

// resultDoc is a stored probe analysis.
type resultDoc struct {
	version
	Steps          []stepDoc `json:"steps"`
	Knee           *int      `json:"knee"`
	Collapse       *int      `json:"collapse"`
	QuotaLimited   bool      `json:"quota_limited"`
	USL            *uslDoc   `json:"usl"`
	Notes          []string  `json:"notes,omitempty"`
	FirstFailing   *int      `json:"first_failing,omitempty"`
	Ambiguous      *int      `json:"ambiguous,omitempty"`
	KneeRefined    *int      `json:"knee_refined,omitempty"`
	KneeResolution *int      `json:"knee_refined_resolution,omitempty"`
}

// stepDoc is a stored step. Version 1 called goodput_estimated
// goodput_from_throughput and had no intervals, p90s or p99s.
type stepDoc struct {
	Concurrency          int          `json:"concurrency"`
	RateRPS              float64      `json:"rate_rps,omitempty"`
	Requests             int          `json:"requests"`
	OK                   int          `json:"ok"`
	RateLimited          int          `json:"rate_limited"`
	RateLimitedFailed    int          `json:"rate_limited_failed,omitempty"`
	Errors               int          `json:"errors"`
	Answers              int          `json:"answers,omitempty"`
	WallS                float64      `json:"wall_s"`
	WindowStartS         float64      `json:"window_start_s,omitempty"`
	WindowEndS           float64      `json:"window_end_s,omitempty"`
	GoodputRPS           float64      `json:"goodput_rps"`
	GoodputCI            *intervalDoc `json:"goodput_ci,omitempty"`
	ThroughputRPS        float64      `json:"throughput_rps"`
	OutputTPS            float64      `json:"output_tps"`
	TTFTP50Ms            float64      `json:"ttft_p50_ms"`
	TTFTP90Ms            float64      `json:"ttft_p90_ms,omitempty"`
	TTFTP95Ms            float64      `json:"ttft_p95_ms"`
	TTFTP99Ms            float64      `json:"ttft_p99_ms,omitempty"`
	TTFTP95CI            *intervalDoc `json:"ttft_p95_ci,omitempty"`
	E2EP50Ms             float64      `json:"e2e_p50_ms"`
	E2EP90Ms             float64      `json:"e2e_p90_ms,omitempty"`
	E2EP95Ms             float64      `json:"e2e_p95_ms"`
	E2EP99Ms             float64      `json:"e2e_p99_ms,omitempty"`
	E2EP95CI             *intervalDoc `json:"e2e_p95_ci,omitempty"`
	TPOTP50Ms            float64      `json:"tpot_p50_ms"`
	TPOTP90Ms            float64      `json:"tpot_p90_ms,omitempty"`
	TPOTP95Ms            float64      `json:"tpot_p95_ms"`
	TPOTP99Ms            float64      `json:"tpot_p99_ms,omitempty"`
	TPOTP95CI            *intervalDoc `json:"tpot_p95_ci,omitempty"`
	E2EWithRetriesP95Ms  float64      `json:"e2e_with_retries_p95_ms,omitempty"`
	Refine               bool         `json:"refine,omitempty"`
	Efficiency           float64      `json:"scaling_efficiency,omitempty"`
	TooShort             bool         `json:"too_short,omitempty"`
	ConcurrencyEstimated bool         `json:"concurrency_estimated,omitempty"`
	GoodputEstimated     bool         `json:"goodput_estimated,omitempty"`
	GoodputV1            bool         `json:"goodput_from_throughput,omitempty"` // version 1's name of goodput_estimated
	TTFTEstimated        bool         `json:"ttft_estimated,omitempty"`
	TPOTEstimated        bool         `json:"tpot_estimated,omitempty"`
	E2EEstimated         bool         `json:"e2e_estimated,omitempty"`
	CountsUnknown        bool         `json:"counts_unknown,omitempty"`
}

type intervalDoc struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

func intervalDocOf(iv *measure.Interval) *intervalDoc {
	if iv == nil {
		return nil
	}
	return &intervalDoc{Lo: iv.Lo, Hi: iv.Hi}
}

func (d *intervalDoc) interval() *measure.Interval {
	if d == nil {
		return nil
	}
	return &measure.Interval{Lo: d.Lo, Hi: d.Hi}
}

func stepDocOf(s measure.Step) stepDoc {
	return stepDoc{
		Concurrency: s.Concurrency, RateRPS: s.RateRPS, Requests: s.Requests, OK: s.OK,
		RateLimited: s.RateLimited, RateLimitedFailed: s.RateLimitedFailed, Errors: s.Errors, Answers: s.Answers,
		WallS: s.WallS, WindowStartS: s.WindowStartS, WindowEndS: s.WindowEndS,
		GoodputRPS: s.GoodputRPS, GoodputCI: intervalDocOf(s.GoodputCI), ThroughputRPS: s.ThroughputRPS, OutputTPS: s.OutputTPS,
		TTFTP50Ms: s.TTFTP50Ms, TTFTP90Ms: s.TTFTP90Ms, TTFTP95Ms: s.TTFTP95Ms, TTFTP99Ms: s.TTFTP99Ms, TTFTP95CI: intervalDocOf(s.TTFTP95CI),
		E2EP50Ms: s.E2EP50Ms, E2EP90Ms: s.E2EP90Ms, E2EP95Ms: s.E2EP95Ms, E2EP99Ms: s.E2EP99Ms, E2EP95CI: intervalDocOf(s.E2EP95CI),
		TPOTP50Ms: s.TPOTP50Ms, TPOTP90Ms: s.TPOTP90Ms, TPOTP95Ms: s.TPOTP95Ms, TPOTP99Ms: s.TPOTP99Ms, TPOTP95CI: intervalDocOf(s.TPOTP95CI),
		E2EWithRetriesP95Ms: s.E2EWithRetriesP95Ms, Refine: s.Refine, Efficiency: s.Efficiency, TooShort: s.TooShort,
		ConcurrencyEstimated: s.ConcurrencyEstimated, GoodputEstimated: s.GoodputEstimated, TTFTEstimated: s.TTFTEstimated,
		TPOTEstimated: s.TPOTEstimated, E2EEstimated: s.E2EEstimated, CountsUnknown: s.CountsUnknown,
	}
}

func (d stepDoc) step() measure.Step {
	return measure.Step{
		Concurrency: d.Concurrency, RateRPS: d.RateRPS, Requests: d.Requests, OK: d.OK,
		RateLimited: d.RateLimited, RateLimitedFailed: d.RateLimitedFailed, Errors: d.Errors, Answers: d.Answers,
		WallS: d.WallS, WindowStartS: d.WindowStartS, WindowEndS: d.WindowEndS,
		GoodputRPS: d.GoodputRPS, GoodputCI: d.GoodputCI.interval(), ThroughputRPS: d.ThroughputRPS, OutputTPS: d.OutputTPS,
		TTFTP50Ms: d.TTFTP50Ms, TTFTP90Ms: d.TTFTP90Ms, TTFTP95Ms: d.TTFTP95Ms, TTFTP99Ms: d.TTFTP99Ms, TTFTP95CI: d.TTFTP95CI.interval(),
		E2EP50Ms: d.E2EP50Ms, E2EP90Ms: d.E2EP90Ms, E2EP95Ms: d.E2EP95Ms, E2EP99Ms: d.E2EP99Ms, E2EP95CI: d.E2EP95CI.interval(),
		TPOTP50Ms: d.TPOTP50Ms, TPOTP90Ms: d.TPOTP90Ms, TPOTP95Ms: d.TPOTP95Ms, TPOTP99Ms: d.TPOTP99Ms, TPOTP95CI: d.TPOTP95CI.interval(),
		E2EWithRetriesP95Ms: d.E2EWithRetriesP95Ms, Refine: d.Refine, Efficiency: d.Efficiency, TooShort: d.TooShort,
		ConcurrencyEstimated: d.ConcurrencyEstimated, GoodputEstimated: d.GoodputEstimated || d.GoodputV1, TTFTEstimated: d.TTFTEstimated,
		TPOTEstimated: d.TPOTEstimated, E2EEstimated: d.E2EEstimated, CountsUnknown: d.CountsUnknown,
	}
}

type uslDoc struct {
	lawDoc
	Peak *float64 `json:"peak"`
}

type lawDoc struct {
	Alpha float64 `json:"alpha"`
	Beta  float64 `json:"beta"`
	Gamma float64 `json:"gamma"`
	R2    float64 `json:"r2"`
}

// each converts a list element by element, keeping a nil list nil and an
// empty one empty.
func each[E, W any](in []E, f func(E) W) []W {
	if in == nil {
		return nil
	}
	out := make([]W, len(in))
	for i, e := range in {
		out[i] = f(e)
	}
	return out
}
