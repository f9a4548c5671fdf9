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
	ConstraintSLOTPOT = "slo_tpot"
	ConstraintPolicy  = "policy_cap"
)

// Plan is the answer to a scenario, and the one document of it:
// `planner plan -o json` writes it, the API serves it (its doc tags are the
// descriptions the OpenAPI document publishes) and the store keeps it in a
// versioned envelope. Its JSON names are a contract (the API's tests pin
// them, api/testdata/wire-names.txt); a field added here reaches all three.
type Plan struct {
	Classes   []ClassPlan    `json:"classes"`
	Quotas    []QuotaPlan    `json:"quotas" doc:"Each key's division and use; with windows, at the window of the day where it is used most, and its daily limits' use over the whole day."`
	Endpoints []EndpointPlan `json:"endpoints" doc:"Each endpoint's budget and pools; with windows, at the window where its pools add up to the most."`
	// Windows are the windows of the day when classes have schedules.
	Windows []WindowPlan `json:"windows,omitempty" doc:"The windows of the day, when classes have schedules: the classes that run in each and what each gets there. A class's pool is the smallest of its windows'."`
	// Check is the plan's own simulation; nil from the engine alone.
	Check *Check `json:"check,omitempty" doc:"The plan's own short seeded simulation (docs/concepts.md, \"The check\"); every plan the command line, the service and the page return carries it."`
	// Cost is nil when no key of the scenario has a price.
	Cost     *Cost    `json:"cost,omitempty" doc:"What the plan costs a day at its demand, over every key with a price; absent when no key has one."`
	Warnings []string `json:"warnings"`
}

// Check is a plan's own simulation: a short seeded run of the same plan
// (internal/simulate), one for each window of the day, whose figures and
// intervals decide with the analytic prediction whether each class fits.
type Check struct {
	Holds   bool       `json:"holds" doc:"Every class's simulation holds: its SLO met at its percentile, at most 1 % of its sends answered 429, at most 1 % of its requests shed or given up, and its arrivals served (a batch done in its window)."`
	Summary string     `json:"summary"`
	Runs    []CheckRun `json:"runs" doc:"The simulated runs: one, or one for each window of the day."`
	// Rounds is how often the plan was made again with raised min_pools.
	Rounds int `json:"rounds" doc:"How often the plan was made again with raised min_pools before it was checked for the last time."`
}

// CheckRun is one simulated run of a check.
type CheckRun struct {
	StartHour float64  `json:"start_hour" doc:"Time of day the run starts, hours after midnight UTC."`
	DurationS float64  `json:"duration_s"`
	Seed      uint64   `json:"seed"`
	MaxEvents int      `json:"max_events"`
	Events    int      `json:"events"`
	Classes   []string `json:"classes" doc:"The classes the run judges: those that run at that time of day."`
}

// ClassCheck is what a class's check saw, and whether it holds.
type ClassCheck struct {
	Holds   bool   `json:"holds"`
	Summary string `json:"summary"`
	// StartHour is the run the figures come from: its worst, or the
	// window that sets its pool.
	StartHour        float64   `json:"start_hour"`
	Requests         int       `json:"requests"`
	Completed        int       `json:"completed"`
	TTFTP95Ms        *Estimate `json:"ttft_p95_ms" doc:"Queue wait, retries and time to first token; null when nothing completed."`
	E2EP95Ms         *Estimate `json:"e2e_p95_ms"`
	TPOTP95Ms        *Estimate `json:"tpot_p95_ms,omitempty" doc:"Time per output token after the first, (E2E − TTFT)/(out − 1), of the requests (an agent task's calls) with at least two output tokens; absent when none completed."`
	QueueWaitP95Ms   *Estimate `json:"queue_wait_p95_ms"`
	RateLimitedShare float64   `json:"rate_limited_share" doc:"Share of sends answered 429."`
	Shed             int       `json:"shed"`
	LostShare        float64   `json:"lost_share" doc:"Share of requests shed or given up after 429s."`
	BatchDone        *bool     `json:"batch_done,omitempty" doc:"For a batch: its pool kept pace with its arrivals, so the batch is done in its window."`
	Misses           []Miss    `json:"misses" doc:"What breaks, and by how much; empty when it holds."`
	// MinPoolRaisedFrom is the analytic min_pool when the check raised it.
	MinPoolRaisedFrom *int `json:"min_pool_raised_from,omitempty" doc:"The analytic min_pool, when the check raised it because the simulation broke at the planned pool."`
}

// Estimate is a simulated figure and the half-width of its 95 %
// confidence interval. A check whose class completed nothing sends null
// (the _ field's tag says so in the OpenAPI document).
type Estimate struct {
	_     struct{} `nullable:"true"`
	Value float64  `json:"value"`
	CI95  *float64 `json:"ci95" doc:"Half-width of the 95 % interval; null when the run had too few requests for one."`
}

// Miss is one test of a check that failed.
type Miss struct {
	Metric  string   `json:"metric" enum:"ttft_p95_ms,e2e_p95_ms,tpot_p95_ms,ttft_ms_at_percentile,e2e_ms_at_percentile,tpot_ms_at_percentile,rate_limited_share,lost_share,batch_hours,backlog,predicted_ttft_p95_ms,predicted_e2e_p95_ms,predicted_ttft_ms_at_percentile,predicted_e2e_ms_at_percentile,predicted_tpot_ms_at_percentile,events" doc:"The figure that breaks: a field of the class's simulated figures (at the percentile of its SLO when it names one), or of its predictions for predicted_*."`
	Value   *float64 `json:"value" doc:"What the simulation (or, for predicted_*, the plan) gives; null when no request completed, so that there is no value to give."`
	Bound   float64  `json:"bound" doc:"What it may be at most."`
	OverPct *float64 `json:"over_pct" doc:"How far over the bound, in percent of it (at most a billion); null with value."`
	Detail  string   `json:"detail"`
}

// WindowPlan is one window of the day and how it was planned: the classes
// that run in it share its per-minute limits and endpoints.
type WindowPlan struct {
	StartHour float64        `json:"start_hour" doc:"Start of the window, hours after midnight UTC."`
	Hours     float64        `json:"hours" doc:"Its length; it runs past midnight when start_hour + hours exceeds 24."`
	Classes   []WindowClass  `json:"classes"`
	Quotas    []QuotaPlan    `json:"quotas" doc:"Each key's division among the window's classes, and its use at their pools."`
	Endpoints []EndpointPlan `json:"endpoints"`
}

// WindowClass is what a class gets in one window of the day.
type WindowClass struct {
	Name              string `json:"name"`
	Pool              int    `json:"pool" doc:"The pool the window allows the class; its plan's pool is the smallest of its windows'."`
	BindingConstraint string `json:"binding_constraint"`
	MinPool           *int   `json:"min_pool"`
	Feasible          bool   `json:"feasible"`
	SetsPool          bool   `json:"sets_pool" doc:"This window sets the class's pool: the one with the smallest."`
}

// ClassPlan is the plan for one task class.
type ClassPlan struct {
	Name              string      `json:"name"`
	Mode              string      `json:"mode"`
	Quota             string      `json:"quota"`
	Endpoint          string      `json:"endpoint" doc:"The endpoint the class sends to: default for the top-level latency, class:NAME for a latency profile of its own."`
	Pool              int         `json:"pool" doc:"Client-side cap on in-flight requests; 0 when no pool fits."`
	BindingConstraint string      `json:"binding_constraint" doc:"The ceiling that set the pool."`
	TiedConstraints   []string    `json:"tied_constraints,omitempty" doc:"Other ceilings equal to the pool."`
	Ceilings          []Ceiling   `json:"ceilings"`
	MinPool           *int        `json:"min_pool" doc:"Smallest pool that serves the demand within the SLO; null when no pool up to 100,000 does. Raised by the check where the plan's own simulation breaks below it."`
	Feasible          bool        `json:"feasible" doc:"The analytic answer: 1 ≤ min_pool ≤ pool."`
	Fits              *bool       `json:"fits,omitempty" doc:"Feasible, the predictions at the SLO's percentile within its targets, and the plan's own simulation (check) holds; absent from a plan that was not checked (stored by an earlier release)."`
	Check             *ClassCheck `json:"check,omitempty" doc:"What the plan's own simulation saw of this class."`
	Predicted         Predicted   `json:"predicted"`
	Pacing            Pacing      `json:"pacing"`
	Admission         Admission   `json:"admission"`
	Retry             Retry       `json:"retry"`
	Adaptive          Adaptive    `json:"adaptive"`
	TruncationRisk    float64     `json:"truncation_risk" doc:"P(output tokens > max_tokens): the share of answers the cap cuts short."`
	Batch             *BatchPlan  `json:"batch,omitempty"`
	Task              *TaskPlan   `json:"task,omitempty" doc:"Per-task figures of an agent task class, whose pool, demand, throughput and quota use count tasks."`
	Shed              *Shed       `json:"shed,omitempty"`
	Remedies          []Remedy    `json:"remedies"`
	Cost              *Cost       `json:"cost,omitempty" doc:"What the class costs at its demand (at its pool's rate without a demand), whether or not its pool serves it; absent when its key has no price."`
	Explanation       string      `json:"explanation"`
	Warnings          []string    `json:"warnings"`

	// PromptCache is what the prompt cache does for the class, when it
	// reads some of its input from it (cached_input_fraction, or an
	// accumulating agent task's earlier context with latency.cache).
	PromptCache *PromptCache `json:"prompt_cache,omitempty" doc:"The prompt cache's effect: TTFT p95 and the use of the key with the class's cached input (cached_input_fraction, or an accumulating agent task's earlier context with latency.cache) and without it; absent when the class reads nothing from the cache."`
}

// PromptCache is the prompt cache's effect on a class (docs/concepts.md,
// "The prompt cache"): its TTFT p95 at its pool and demand and what it
// uses of its key, with its cached share of the input and with none of its
// input cached (every token prefilled and counted), the pool, demand and
// pacing wait being the same.
type PromptCache struct {
	CachedInputFraction   float64            `json:"cached_input_fraction" doc:"The share of the input read from the cache: cached_input_fraction, or for an accumulating agent task with latency.cache a task's cached input tokens over its input tokens."`
	TTFTP95Ms             *float64           `json:"ttft_p95_ms" doc:"As predicted: prefill on the uncached input only; null when the queue would grow without bound."`
	TTFTP95MsWithoutCache *float64           `json:"ttft_p95_ms_without_cache" doc:"The same pool and demand with every input token prefilled."`
	UsePerRequest         map[string]float64 `json:"use_per_request" doc:"What one request (for a class with task, one task) counts against each limit of the key, cache reads counted where the key counts them."`
	UsePerRequestNoCache  map[string]float64 `json:"use_per_request_without_cache" doc:"What one request (for a class with task, one task) would count with none of its input cached."`
	Utilization           map[string]float64 `json:"utilization" doc:"Share of each limit of the key the class uses, as in predicted."`
	UtilizationNoCache    map[string]float64 `json:"utilization_without_cache" doc:"Share of each limit of the key the class would use with none of its input cached."`
}

// Fitting reports whether the class fits: its plan was checked and it
// fits by the queueing model and by its own simulation.
func (c ClassPlan) Fitting() bool { return c.Fits != nil && *c.Fits }

// Ceiling is one upper bound on a class's pool.
type Ceiling struct {
	Constraint string `json:"constraint"`
	MaxPool    *int   `json:"max_pool" doc:"Largest pool that keeps the constraint; null when no pool up to the search limit breaks it."`
	Detail     string `json:"detail" doc:"How the value was derived, in words and numbers."`
}

// Predicted is what the model expects at the planned pool.
type Predicted struct {
	MeanServiceMs    float64            `json:"mean_service_ms"`
	ThroughputRPS    float64            `json:"throughput_rps" doc:"Requests per second with the pool full: pool / E[S]."`
	OfferedRPS       float64            `json:"offered_rps,omitempty" doc:"The demand the class is sized at: the stated one, times its demand profile's largest factor when that is above 1."`
	TTFTP95Ms        *float64           `json:"ttft_p95_ms" doc:"Queue wait included when demand is given; null when the queue would grow without bound."`
	E2EP95Ms         *float64           `json:"e2e_p95_ms"`
	QueueWaitMeanMs  *float64           `json:"queue_wait_mean_ms" doc:"Arrival to send: the wait for a pool slot and for the key's pacing buckets."`
	QueueWaitP95Ms   *float64           `json:"queue_wait_p95_ms"`
	ShedShare        float64            `json:"shed_share,omitempty" doc:"Share of the class's requests its client sheds, those that wait longer than admission.max_queue_wait_ms for a slot: 0 to 1, absent when nothing is shed (no e2e SLO, or no demand); over 0.01 the class does not fit. The percentiles are over the requests served."`
	PacingWaitMeanMs *float64           `json:"pacing_wait_mean_ms,omitempty" doc:"The part of the queue wait spent waiting for the key's pacing buckets (quotas[].pacing) with a slot free."`
	PacingWaitP95Ms  *float64           `json:"pacing_wait_p95_ms,omitempty"`
	WithoutPacing    *WithoutPacing     `json:"without_pacing,omitempty" doc:"What the key would answer if clients did not pace their sends."`
	Utilization      map[string]float64 `json:"utilization" doc:"Share of each limit of the key this class uses at its demand (or its pool when no demand is given)."`
	Extrapolated     bool               `json:"extrapolated,omitempty" doc:"The pool lies outside the measured curve."`
	// The values at the percentile the class's SLO names (slo.percentile),
	// given when it names one: what its targets are held to.
	Percentile         *float64 `json:"percentile,omitempty" doc:"The percentile of the class's SLO (slo.percentile) that the values at_percentile are taken at."`
	TTFTMsAtPercentile *float64 `json:"ttft_ms_at_percentile,omitempty" doc:"TTFT at the SLO's percentile, queue wait included when demand is given; what slo.ttft_ms is held to."`
	E2EMsAtPercentile  *float64 `json:"e2e_ms_at_percentile,omitempty" doc:"E2E at the SLO's percentile, queue wait included when demand is given; what slo.e2e_ms is held to."`
	TPOTMsAtPercentile *float64 `json:"tpot_ms_at_percentile,omitempty" doc:"TPOT at the SLO's percentile: each request's time per output token after the first; what slo.tpot_ms is held to."`
}

// Pacing is what the key's pacing buckets (QuotaPlan.Pacing) give the
// class: a client paces its sends with the key's shared buckets, and these
// say what they come to in the class's own requests (docs/concepts.md,
// "Pacing").
type Pacing struct {
	RateRPS float64 `json:"rate_rps" doc:"The request rate the class's allotment of the key sustains: its share of the tightest per-minute limit divided by its mean charge."`
	Burst   int     `json:"burst" doc:"How many of its requests of mean charge the key's buckets pass at once when full (at most the pool)."`
}

// WithoutPacing is what the provider would answer a key's unpaced sends:
// the share of sends a window's demand puts over its allowance, and how
// long a refused send is told to wait.
type WithoutPacing struct {
	RateLimitedShare float64 `json:"rate_limited_share" doc:"Share of sends answered 429."`
	RetryAfterMs     float64 `json:"retry_after_ms" doc:"Mean Retry-After of a 429: the time the provider's bucket takes to hold the refused charge."`
}

// KeyPacing is one pacing bucket of a key: one per per-minute limit,
// shared by the key's classes, which take their charges from it in
// priority order (docs/concepts.md, "Pacing").
type KeyPacing struct {
	Dimension string   `json:"dimension"`
	RatePerS  float64  `json:"rate_per_s" doc:"Refill rate: headroom × limit / 60, in the limit's unit per second."`
	Capacity  float64  `json:"capacity" doc:"What the bucket holds when full: one enforcement window's allowance, headroom × limit × burst_window_s / 60."`
	Classes   []string `json:"classes" doc:"The key's classes in the order the bucket serves them: interactive, semi, batch, then priority, then name; within a class, in order of arrival."`
}

// Admission is the shedding rule for requests that would wait too long.
type Admission struct {
	MaxQueueWaitMs *float64 `json:"max_queue_wait_ms" doc:"Shed a request that has waited this long for a slot: slo_e2e minus the p95 service time; null without an e2e SLO."`
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
	HonorHeaders []string `json:"honor_headers" doc:"Headers that set the wait instead of the backoff, in order."`
	DeadlineMs   float64  `json:"deadline_ms"`
}

// Adaptive are AIMD settings for clients that resize the pool at run time.
type Adaptive struct {
	Start            int     `json:"start"`
	DecreaseFactor   float64 `json:"decrease_factor"`
	IncreaseStep     int     `json:"increase_step"`
	IncreaseWhenUsed float64 `json:"increase_when_used" doc:"Grow only while at least this fraction of the pool is in use."`
	Floor            int     `json:"floor"`
	Ceiling          int     `json:"ceiling"`
}

// BatchPlan says when a batch finishes and whether daily limits allow it.
type BatchPlan struct {
	Requests        float64      `json:"requests"`
	WithinHours     float64      `json:"within_hours"`
	CompletionHours *float64     `json:"completion_hours" doc:"At the pool's throughput; null when the pool is 0."`
	MeetsWindow     bool         `json:"meets_window" doc:"Whether the batch is done in its window: at the pool's throughput, within its share of every daily limit (daily_limits)."`
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
	SustainableRPS float64 `json:"sustainable_rps" doc:"Largest arrival rate the pool serves within the SLO."`
	ShedRPS        float64 `json:"shed_rps"`
}

// Remedy is one change that lifts a ceiling to the class's min_pool.
type Remedy struct {
	Constraint string  `json:"constraint"`
	Change     string  `json:"change"`
	Value      float64 `json:"value" doc:"The new limit or setting."`
	Path       string  `json:"path" doc:"JSON Pointer of the scenario field to set to value."`
	Class      string  `json:"class,omitempty" doc:"The class whose target the remedy relaxes, when it is another class sharing the endpoint."`
	// Cost is set on a remedy that raises a key's limit when the key or
	// a tier of the catalogue that gives the limit has a price.
	Cost *RemedyCost `json:"cost,omitempty" doc:"What the change costs: the catalogue tier that gives it, or the key with the limit raised, and the plan's cost a day with it."`
}

// Cost is what serving a class, a key or the whole plan costs at the
// stated demand (docs/concepts.md, "Cost"), in the scenario's currency:
// pay as you go, the tokens its requests use at the key's prices;
// provisioned, the key's price per hour for each of its active hours,
// shared among its classes by the tokens they use.
type Cost struct {
	Currency string  `json:"currency" doc:"ISO 4217 code of the amounts."`
	Pricing  string  `json:"pricing" enum:"pay_as_you_go,provisioned,mixed" doc:"How the cost is billed: per token, per hour of capacity, or both (a plan over keys of both kinds)."`
	PerHour  float64 `json:"per_hour" doc:"The cost of an hour in which it runs (every class of a key or plan at once)."`
	PerDay   float64 `json:"per_day" doc:"The cost of a day: over the key's active_hours, a batch once in each of its days."`
	// RequestsPerDay is what PerDay pays for.
	RequestsPerDay float64  `json:"requests_per_day" doc:"Requests a day at the demand."`
	Per1KRequests  *float64 `json:"per_1k_requests" doc:"The cost of 1,000 requests; null when none is made."`
	PerBatch       *float64 `json:"per_batch,omitempty" doc:"A batch class's: the cost of the whole batch."`
	// CacheSavingPerDay is the cost with every input token billed at
	// input_per_mtok, less PerDay.
	CacheSavingPerDay float64  `json:"cache_saving_per_day" doc:"What the prompt cache saves a day: the cost with no input read from or written into the cache, less per_day; negative when writes cost more than reads save, 0 for provisioned capacity."`
	Unpriced          []string `json:"unpriced,omitempty" doc:"The plan's: keys without a price, whose classes are not in its cost."`
}

// Pricing kinds of a Cost.
const (
	PricingPayAsYouGo  = "pay_as_you_go"
	PricingProvisioned = "provisioned"
	PricingMixed       = "mixed"
)

// RemedyCost is what a remedy that raises a key's limit costs.
type RemedyCost struct {
	Tier     string   `json:"tier,omitempty" doc:"The catalogue tier that gives the limit (and the class's other limits on the key), found by planning with it; empty when none does and the key is raised to the limit at its own prices (provisioned capacity in proportion to the limit)."`
	Currency string   `json:"currency,omitempty"`
	PerDay   *float64 `json:"per_day" doc:"What the key costs a day after the change; null when the tier has no price."`
	// ChangePerDay is PerDay less the key's cost a day today.
	ChangePerDay *float64 `json:"change_per_day" doc:"How much more the key costs a day after the change (negative: less); null when the key or the tier has no price."`
}

// QuotaPlan shows how one key is divided and how much of it is used.
type QuotaPlan struct {
	Name        string             `json:"name"`
	Limits      map[string]float64 `json:"limits"`
	Usable      map[string]float64 `json:"usable" doc:"Limits times headroom."`
	Allocations []Allocation       `json:"allocations"`
	Utilization map[string]float64 `json:"utilization" doc:"Expected share of each limit used at the stated demand (pools flat out for classes without demand)."`
	Cost        *Cost              `json:"cost,omitempty" doc:"What the key costs at the stated demand; absent without a price."`
	Pacing      []KeyPacing        `json:"pacing,omitempty" doc:"The key's pacing buckets, one for each per-minute limit, that every client of the key paces its sends with."`
}

// EndpointPlan shows how one endpoint's in-flight budget is divided.
type EndpointPlan struct {
	Name             string               `json:"name"`
	Knee             *int                 `json:"knee,omitempty" doc:"The knee its budget uses: the latency block's knee_refined when given, else its knee."`
	KneeField        string               `json:"knee_field,omitempty" enum:"knee,knee_refined" doc:"Which field of the latency block knee is: knee_refined (a knee search's refinement) or knee; absent without a knee."`
	KneeLowerBound   bool                 `json:"knee_lower_bound,omitempty" doc:"The knee is a lower bound the probe never reached: the budget holds pools to it, and where it binds the plan says to probe further, not to add serving capacity."`
	Safety           float64              `json:"safety" doc:"The smallest knee safety among the endpoint's classes."`
	Budget           *int                 `json:"budget" doc:"The most its classes' pools may add up to: the knee budget ⌊safety·knee⌋ or, with a curve, the SLO budget when smaller; null when nothing bounds it."`
	BudgetConstraint string               `json:"budget_constraint,omitempty" doc:"What sets the budget: knee, slo_ttft or slo_e2e."`
	TotalPool        int                  `json:"total_pool" doc:"The sum of its classes' pools."`
	Load             *int                 `json:"load,omitempty" doc:"With a curve: the total in flight its classes' latency is predicted at."`
	Allocations      []EndpointAllocation `json:"allocations"`
	TTFTP95Ms        float64              `json:"ttft_p95_ms" doc:"The largest of its classes' TTFT p95 without queueing at the load."`
	E2EP95Ms         float64              `json:"e2e_p95_ms" doc:"The largest of its classes' E2E p95 without queueing at the load."`
}

// EndpointAllocation is one class's share of an endpoint's budget, in slots.
type EndpointAllocation struct {
	Class    string   `json:"class"`
	Pool     int      `json:"pool"`
	Allotted *float64 `json:"allotted,omitempty"`
	Reserved *float64 `json:"reserved,omitempty" doc:"What its min_pool needs, reserved first under priority allocation."`
}

// Allocation is one class's share of a key, in each limit's own unit.
type Allocation struct {
	Class    string             `json:"class"`
	Allotted map[string]float64 `json:"allotted"`
	Reserved map[string]float64 `json:"reserved,omitempty" doc:"What was reserved for the class's min_pool (never more than its allotment): reserved first under priority allocation."`
}
