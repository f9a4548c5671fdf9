// Package plan combines the queueing model and the quotas into a plan: for
// every task class the ceilings on its pool, the pool and the constraint
// that binds it, the smallest pool its demand needs, the predicted latency
// and quota use, client settings (pacing, admission, retry, adaptive) and,
// when it does not fit, the changes that would make it fit (docs/concepts.md).
// It also runs what-if sweeps over a scenario.
package plan

// Constraint names (docs/concepts.md, "Ceilings on the pool"), in the
// order that breaks ties.
const (
	ConstraintKnee    = "knee"
	ConstraintSLOTTFT = "slo_ttft"
	ConstraintSLOE2E  = "slo_e2e"
	ConstraintPolicy  = "policy_cap"
)

// Plan is the answer to a scenario. Its JSON names are those of
// `planner plan -o json`; the API and the store keep documents of their own
// types (package api, package store), converted from these.
type Plan struct {
	Classes   []ClassPlan    `json:"classes"`
	Quotas    []QuotaPlan    `json:"quotas"`
	Endpoints []EndpointPlan `json:"endpoints"`
	Warnings  []string       `json:"warnings"`
}

// ClassPlan is the plan for one task class.
type ClassPlan struct {
	Name              string     `json:"name"`
	Mode              string     `json:"mode"`
	Quota             string     `json:"quota"`
	Endpoint          string     `json:"endpoint"`
	Pool              int        `json:"pool"`
	BindingConstraint string     `json:"binding_constraint"`
	TiedConstraints   []string   `json:"tied_constraints,omitempty"`
	Ceilings          []Ceiling  `json:"ceilings"`
	MinPool           *int       `json:"min_pool"`
	Feasible          bool       `json:"feasible"`
	Predicted         Predicted  `json:"predicted"`
	Pacing            Pacing     `json:"pacing"`
	Admission         Admission  `json:"admission"`
	Retry             Retry      `json:"retry"`
	Adaptive          Adaptive   `json:"adaptive"`
	TruncationRisk    float64    `json:"truncation_risk"`
	Batch             *BatchPlan `json:"batch,omitempty"`
	Shed              *Shed      `json:"shed,omitempty"`
	Remedies          []Remedy   `json:"remedies"`
	Explanation       string     `json:"explanation"`
	Warnings          []string   `json:"warnings"`
}

// Ceiling is one upper bound on a class's pool.
type Ceiling struct {
	Constraint string `json:"constraint"`
	MaxPool    *int   `json:"max_pool"`
	Detail     string `json:"detail"`
}

// Predicted is what the model expects at the planned pool.
type Predicted struct {
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

// Pacing is a token bucket that keeps a client from starting requests faster
// than the quota allows, even when the whole pool frees at once.
type Pacing struct {
	RateRPS float64 `json:"rate_rps"`
	Burst   int     `json:"burst"`
}

// Admission is the shedding rule for requests that would wait too long.
type Admission struct {
	MaxQueueWaitMs *float64 `json:"max_queue_wait_ms"`
	Status         int      `json:"status"`
	RetryAfterS    int      `json:"retry_after_s"`
}

// Retry is the retry policy for 429s and timeouts: exponential backoff with
// full jitter, sleep = random(0, min(cap, base·2ⁿ)), sized to fit the deadline.
type Retry struct {
	MaxAttempts  int      `json:"max_attempts"`
	BaseMs       float64  `json:"base_ms"`
	CapMs        float64  `json:"cap_ms"`
	Jitter       string   `json:"jitter"`
	HonorHeaders []string `json:"honor_headers"`
	DeadlineMs   float64  `json:"deadline_ms"`
}

// Adaptive are AIMD settings for clients that resize the pool at run time.
type Adaptive struct {
	Start            int     `json:"start"`
	DecreaseFactor   float64 `json:"decrease_factor"`
	IncreaseStep     int     `json:"increase_step"`
	IncreaseWhenUsed float64 `json:"increase_when_used"`
	Floor            int     `json:"floor"`
	Ceiling          int     `json:"ceiling"`
}

// BatchPlan says when a batch finishes and whether daily limits allow it.
type BatchPlan struct {
	Requests        float64      `json:"requests"`
	WithinHours     float64      `json:"within_hours"`
	CompletionHours *float64     `json:"completion_hours"`
	MeetsWindow     bool         `json:"meets_window"`
	DailyLimits     []DailyCheck `json:"daily_limits,omitempty"`
}

// DailyCheck compares a batch's total use of a daily limit with its share.
type DailyCheck struct {
	Constraint string  `json:"constraint"`
	Needed     float64 `json:"needed"`
	Available  float64 `json:"available"`
	OK         bool    `json:"ok"`
}

// Shed is the load a class must drop to become feasible at its pool.
type Shed struct {
	SustainableRPS float64 `json:"sustainable_rps"`
	ShedRPS        float64 `json:"shed_rps"`
}

// Remedy is one change that lifts a ceiling to the class's min_pool.
type Remedy struct {
	Constraint string  `json:"constraint"`
	Change     string  `json:"change"`
	Value      float64 `json:"value"`
	Path       string  `json:"path"`
	Class      string  `json:"class,omitempty"`
}

// QuotaPlan shows how one key is divided and how much of it is used.
type QuotaPlan struct {
	Name        string             `json:"name"`
	Limits      map[string]float64 `json:"limits"`
	Usable      map[string]float64 `json:"usable"`
	Allocations []Allocation       `json:"allocations"`
	Utilization map[string]float64 `json:"utilization"`
}

// EndpointPlan shows how one endpoint's in-flight budget is divided.
type EndpointPlan struct {
	Name             string               `json:"name"`
	Knee             *int                 `json:"knee,omitempty"`
	Safety           float64              `json:"safety"`
	Budget           *int                 `json:"budget"`
	BudgetConstraint string               `json:"budget_constraint,omitempty"`
	TotalPool        int                  `json:"total_pool"`
	Load             *int                 `json:"load,omitempty"`
	Allocations      []EndpointAllocation `json:"allocations"`
	TTFTP95Ms        float64              `json:"ttft_p95_ms"`
	E2EP95Ms         float64              `json:"e2e_p95_ms"`
}

// EndpointAllocation is one class's share of an endpoint's budget, in slots.
type EndpointAllocation struct {
	Class    string   `json:"class"`
	Pool     int      `json:"pool"`
	Allotted *float64 `json:"allotted,omitempty"`
	Reserved *float64 `json:"reserved,omitempty"`
}

// Allocation is one class's share of a key, in each limit's own unit.
type Allocation struct {
	Class    string             `json:"class"`
	Allotted map[string]float64 `json:"allotted"`
	Reserved map[string]float64 `json:"reserved,omitempty"`
}
