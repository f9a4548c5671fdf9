// Package scenario defines the planning input (docs/scenario.md): quota tiers,
// latency profiles (distributions or a measured curve), task classes and the
// planning policy. It is the document that the command line reads from YAML
// or JSON, that the API receives, and that measurements convert into, so its
// JSON names are a public contract. Struct tags carry the OpenAPI schema
// (shapes and ranges); Check adds the rules that span fields.
package scenario

import "math"

// Scenario is everything a plan needs.
type Scenario struct {
	Quotas  []Quota `json:"quotas" nullable:"false" minItems:"1" maxItems:"32" doc:"One entry per API key or deployment."`
	Latency Latency `json:"latency,omitzero" doc:"Default latency profile; a class may carry its own."`
	Classes []Class `json:"classes" nullable:"false" minItems:"1" maxItems:"32" doc:"Task classes, each with its own pool."`
	Policy  Policy  `json:"policy,omitzero" doc:"How quotas are shared and how the plan is computed."`
	// Endpoints are serving endpoints besides the default one (the
	// top-level latency); classes that name the same endpoint share its
	// knee and, with a curve, its latency (docs/concepts.md, "Endpoints
	// shared by classes").
	Endpoints []Endpoint `json:"endpoints,omitempty" maxItems:"32" doc:"Endpoints besides the default one (the top-level latency); a class picks one with endpoint. Classes on one endpoint share its knee and its latency."`
}

// DefaultEndpoint is the name of the endpoint that the top-level latency
// describes; a declared endpoint may not take it.
const DefaultEndpoint = "default"

// Endpoint is a model deployment that classes send to: its latency grows
// with everything in flight on it, whichever class sent it.
type Endpoint struct {
	Name    string  `json:"name" minLength:"1" maxLength:"64" pattern:"^[A-Za-z0-9][A-Za-z0-9._-]*$" doc:"Name that classes refer to with endpoint." example:"big-gpu"`
	Latency Latency `json:"latency" doc:"The endpoint's latency profile: TTFT and TPOT, or a measured curve, and its knee."`
}

// Quota is the rate limit of one API key or deployment. An absent limit
// means the key has no such limit; a limit must be positive when given.
type Quota struct {
	Name            string  `json:"name" minLength:"1" maxLength:"64" pattern:"^[A-Za-z0-9][A-Za-z0-9._-]*$" doc:"Name that classes refer to." example:"prod"`
	RPM             float64 `json:"rpm,omitempty" exclusiveMinimum:"0" maximum:"1e12" doc:"Requests per minute."`
	TPM             float64 `json:"tpm,omitempty" exclusiveMinimum:"0" maximum:"1e13" doc:"Tokens (input + output) per minute."`
	ITPM            float64 `json:"itpm,omitempty" exclusiveMinimum:"0" maximum:"1e13" doc:"Input tokens per minute."`
	OTPM            float64 `json:"otpm,omitempty" exclusiveMinimum:"0" maximum:"1e13" doc:"Output tokens per minute."`
	RPD             float64 `json:"rpd,omitempty" exclusiveMinimum:"0" maximum:"1e13" doc:"Requests per day."`
	TPD             float64 `json:"tpd,omitempty" exclusiveMinimum:"0" maximum:"1e15" doc:"Tokens per day."`
	TokenAccounting string  `json:"token_accounting,omitempty" enum:"actual,max_tokens" default:"actual" doc:"How the provider counts output tokens against tpm, otpm and tpd: the tokens produced, or max_tokens reserved at admission (OpenAI, Azure OpenAI)."`
	Headroom        float64 `json:"headroom,omitempty" exclusiveMinimum:"0" maximum:"1" default:"0.9" doc:"Fraction of each limit the plan may use."`
	BurstWindowS    float64 `json:"burst_window_s,omitempty" exclusiveMinimum:"0" maximum:"3600" default:"1" doc:"Window, in seconds, over which the provider enforces per-minute limits: one window allows limit × burst_window_s / 60, and the plan paces each key with a bucket that holds headroom × that. A request whose charge is more than that can never pass without waiting: the class does not fit. OpenAI enforces per-minute limits over about 1 s; Azure OpenAI over 1 or 10 s (see the deployment's rate limits); Anthropic refills a token bucket continuously without publishing its depth. When unknown, use 1: the shortest window is the safe side."`
	ActiveHours     float64 `json:"active_hours,omitempty" exclusiveMinimum:"0" maximum:"24" default:"24" doc:"Hours a day the key is used, over which daily limits are spread."`
	CachedInputFree bool    `json:"cached_input_free,omitempty" doc:"Cached input tokens do not count against itpm (Anthropic's cache reads; cached_input_tpm_free is tpm's)."`
	// Price is what the key costs; without it the plan has no cost for
	// the key's classes (docs/concepts.md, "Cost").
	Price *Price `json:"price,omitempty" doc:"What the key costs: per-token prices (pay as you go) or a price per hour (provisioned capacity). Without it the plan states no cost for the key."`

	// CachedInputTPMFree says whether cache reads count against tpm and
	// tpd, as cached_input_free does for itpm (docs/concepts.md, "The
	// prompt cache").
	CachedInputTPMFree bool `json:"cached_input_tpm_free,omitempty" doc:"Cached input tokens do not count against tpm and tpd either (cached_input_free is itpm's). Anthropic: cache reads are free for itpm (cached_input_free: true), and it has no tpm; OpenAI and Azure OpenAI count cached tokens against tpm like any others (both false, the default)."`
}

// Price is what a key costs, in one of two forms: pay as you go, billed
// on the tokens the requests use (whatever the key's token_accounting
// counts against its limits), with input_per_mtok and output_per_mtok
// and optionally the prompt cache's own prices; or provisioned capacity,
// per_hour for every active hour of the key whatever it carries.
type Price struct {
	Currency           string   `json:"currency,omitempty" pattern:"^[A-Z]{3}$" default:"USD" doc:"ISO 4217 code of the currency of every price of the scenario."`
	InputPerMtok       *float64 `json:"input_per_mtok,omitempty" minimum:"0" maximum:"1e6" doc:"Price of one million input tokens (pay as you go)."`
	CachedInputPerMtok *float64 `json:"cached_input_per_mtok,omitempty" minimum:"0" maximum:"1e6" doc:"Price of one million input tokens read from the prompt cache (a class's cached_input_fraction); without it they cost input_per_mtok."`
	CacheWritePerMtok  *float64 `json:"cache_write_per_mtok,omitempty" minimum:"0" maximum:"1e6" doc:"Price of one million input tokens written into the prompt cache (a class's cache_write_fraction); without it they cost input_per_mtok."`
	OutputPerMtok      *float64 `json:"output_per_mtok,omitempty" minimum:"0" maximum:"1e6" doc:"Price of one million output tokens (pay as you go)."`
	PerHour            *float64 `json:"per_hour,omitempty" minimum:"0" maximum:"1e9" doc:"Price of one hour of provisioned capacity, paid for each of the key's active_hours whatever it carries."`
}

// Provisioned reports whether the price is per hour of capacity rather
// than per token.
func (p Price) Provisioned() bool { return p.PerHour != nil }

// CurrencyOr is the price's currency, DefaultCurrency when it names none.
func (p Price) CurrencyOr() string {
	if p.Currency == "" {
		return DefaultCurrency
	}
	return p.Currency
}

// Latency is a latency profile: TTFT and TPOT distributions, or a measured
// latency-versus-concurrency curve (which then takes precedence), and the
// measured knee: a lower bound when the probe never reached it, and the
// refined knee when a knee search gave one.
type Latency struct {
	TTFTMs         *Dist         `json:"ttft_ms,omitempty" doc:"Time to first token, milliseconds (load independent)."`
	TPOTMs         *Dist         `json:"tpot_ms,omitempty" doc:"Time per output token after the first, milliseconds (load independent)."`
	PrefillMsPer1K float64       `json:"prefill_ms_per_1k_tokens,omitempty" minimum:"0" maximum:"1e6" doc:"Extra TTFT per 1,000 input tokens, milliseconds; used without a curve."`
	Curve          []CurvePoint  `json:"curve,omitempty" maxItems:"256" doc:"Measured points by concurrency; when present, TTFT and TPOT follow it."`
	Knee           *int          `json:"knee,omitempty" minimum:"1" maximum:"100000" doc:"Measured knee concurrency."`
	KneeLowerBound bool          `json:"knee_lower_bound,omitempty" doc:"The knee is a lower bound: the probe never reached it (every step passed, or it stopped before a step failed). A plan holds pools to it, but never names it as a limit to add serving capacity for: it says to probe further."`
	KneeRefined    *int          `json:"knee_refined,omitempty" minimum:"1" maximum:"100000" doc:"Where a probe's refinement placed the knee between two measured steps (planner probe --search); when given, the plan's knee budget uses it instead of knee."`
	Cache          *CacheProfile `json:"cache,omitempty" doc:"What the endpoint's prompt cache does, as a probe measured it (planner probe --cache or --conversation-calls) or as set: with it, an accumulating agent task's calls read their earlier context from the cache."`
}

// CacheProfile is what an endpoint's prompt cache does to a prompt whose
// start an earlier request already sent, as the probe measures it
// (docs/probe.md, "Prefill and the prompt cache").
type CacheProfile struct {
	HitRate           *float64 `json:"hit_rate,omitempty" minimum:"0" maximum:"1" doc:"Share of a repeated prefix that the endpoint served from its cache (usage.prompt_tokens_details.cached_tokens over the prefix's tokens): the share of each accumulating agent task call's earlier context that the plan and the simulation read from the cache, 1 without it."`
	TTFTSavingMsPer1K float64  `json:"ttft_saving_ms_per_1k,omitempty" minimum:"0" maximum:"1e6" doc:"TTFT saved per 1,000 cached input tokens, milliseconds; about prefill_ms_per_1k_tokens when a cached token costs no prefill."`
	// MinPrefixTokens is the shortest prefix the endpoint caches: an
	// accumulating agent task's call whose earlier context is shorter
	// reads nothing from the cache (docs/concepts.md, "The prompt cache
	// of an agent task").
	MinPrefixTokens float64 `json:"min_prefix_tokens,omitempty" minimum:"0" maximum:"10000000" doc:"The shortest prefix the endpoint caches, tokens: an accumulating agent task's call whose earlier context is shorter reads none of it from the cache. OpenAI: 1,024 tokens; Anthropic: 1,024 (2,048 for its Haiku models). Without it any prefix is cached."`
}

// DefaultCacheHitRate is the share of an accumulating agent task's earlier
// context that the cache serves when latency.cache gives no hit_rate.
const DefaultCacheHitRate = 1.0

// Rate is the share of a cached prefix the cache serves: hit_rate when
// given (0 too: a cache that serves nothing), else DefaultCacheHitRate.
func (c CacheProfile) Rate() float64 {
	if c.HitRate != nil {
		return *c.HitRate
	}
	return DefaultCacheHitRate
}

// IsZero reports whether no profile is given.
func (l Latency) IsZero() bool {
	return l.TTFTMs == nil && l.TPOTMs == nil && l.PrefillMsPer1K == 0 && len(l.Curve) == 0 && l.Knee == nil &&
		!l.KneeLowerBound && l.KneeRefined == nil && l.Cache == nil
}

// PlanningKnee is the knee a plan budgets with: knee_refined when given,
// else knee; nil without either.
func (l Latency) PlanningKnee() *int {
	if l.KneeRefined != nil {
		return l.KneeRefined
	}
	return l.Knee
}

// CurvePoint is one measured step of a ramp (docs/probe.md).
type CurvePoint struct {
	Concurrency     int     `json:"concurrency" minimum:"1" maximum:"100000"`
	TTFTP50Ms       float64 `json:"ttft_p50_ms" exclusiveMinimum:"0" maximum:"1e7"`
	TTFTP95Ms       float64 `json:"ttft_p95_ms" exclusiveMinimum:"0" maximum:"1e7"`
	TPOTP50Ms       float64 `json:"tpot_p50_ms" exclusiveMinimum:"0" maximum:"1e6"`
	TPOTP95Ms       float64 `json:"tpot_p95_ms" exclusiveMinimum:"0" maximum:"1e6"`
	E2EP50Ms        float64 `json:"e2e_p50_ms,omitempty" minimum:"0" maximum:"1e8"`
	E2EP95Ms        float64 `json:"e2e_p95_ms,omitempty" minimum:"0" maximum:"1e8"`
	ThroughputRPS   float64 `json:"throughput_rps,omitempty" minimum:"0" maximum:"1e9"`
	OutputTPS       float64 `json:"output_tps,omitempty" minimum:"0" maximum:"1e12"`
	GoodputRPS      float64 `json:"goodput_rps,omitempty" minimum:"0" maximum:"1e9"`
	ErrorRate       float64 `json:"error_rate,omitempty" minimum:"0" maximum:"1"`
	RateLimitedRate float64 `json:"rate_limited_rate,omitempty" minimum:"0" maximum:"1" doc:"Share of the step's HTTP answers (retries included) that were 429."`
	Requests        int     `json:"requests,omitempty" minimum:"0" maximum:"100000000" doc:"Requests the step measured: the weight of its point when the latency series are made monotone, and its trials in the trend test of rate_limited_rate."`
}

// Dist is a distribution given as exactly one of: fixed; p50 and p95
// (lognormal); mean and stddev (lognormal by moments); samples (empirical).
// Max optionally clips it.
type Dist struct {
	Fixed   *float64  `json:"fixed,omitempty" minimum:"0" maximum:"1e9"`
	P50     *float64  `json:"p50,omitempty" exclusiveMinimum:"0" maximum:"1e9"`
	P95     *float64  `json:"p95,omitempty" exclusiveMinimum:"0" maximum:"1e9"`
	Mean    *float64  `json:"mean,omitempty" exclusiveMinimum:"0" maximum:"1e9"`
	Stddev  *float64  `json:"stddev,omitempty" minimum:"0" maximum:"1e9"`
	Samples []float64 `json:"samples,omitempty" minItems:"1" maxItems:"10000" doc:"Measured values, each of equal weight."`
	Max     *float64  `json:"max,omitempty" exclusiveMinimum:"0" maximum:"1e9" doc:"Clip at this value."`
}

// Class is one kind of work with its own pool.
type Class struct {
	Name                string   `json:"name" minLength:"1" maxLength:"64" pattern:"^[A-Za-z0-9][A-Za-z0-9._-]*$" example:"chat"`
	Quota               string   `json:"quota" minLength:"1" maxLength:"64" doc:"Name of the quota (API key) the class uses."`
	Mode                string   `json:"mode" enum:"interactive,semi,batch" doc:"Sets the priority and the knee safety factor."`
	Demand              *Demand  `json:"demand,omitempty" doc:"Arrival rate; without it the class runs as fast as its share allows."`
	InputTokens         Dist     `json:"input_tokens"`
	OutputTokens        Dist     `json:"output_tokens"`
	MaxTokens           int      `json:"max_tokens,omitempty" minimum:"1" maximum:"10000000" doc:"Cap on output tokens; required when the quota counts max_tokens."`
	SLO                 *SLO     `json:"slo,omitempty"`
	Endpoint            string   `json:"endpoint,omitempty" maxLength:"64" doc:"Name of the endpoint the class sends to (one of endpoints); without it, the default endpoint of the top-level latency."`
	Latency             *Latency `json:"latency,omitempty" doc:"A latency profile of this class's own: an endpoint that no other class shares. Give endpoint or latency, not both."`
	Weight              float64  `json:"weight,omitempty" exclusiveMinimum:"0" maximum:"1e6" default:"1" doc:"Share of a quota among classes of equal standing."`
	Priority            int      `json:"priority,omitempty" minimum:"-1000" maximum:"1000" doc:"Order within a mode under priority allocation; lower goes first."`
	CachedInputFraction float64  `json:"cached_input_fraction,omitempty" minimum:"0" maximum:"1" doc:"Fraction of input tokens served from the provider's prompt cache: they skip prefill (TTFT = base + prefill_ms_per_1k_tokens × uncached input / 1000), are not counted against itpm, tpm and tpd where the key's cached_input_free and cached_input_tpm_free say so, and are billed at its price's cached_input_per_mtok."`
	CacheWriteFraction  float64  `json:"cache_write_fraction,omitempty" minimum:"0" maximum:"1" doc:"Fraction of input tokens written into the provider's prompt cache, billed at the key's cache_write_per_mtok; with cached_input_fraction at most 1. It changes the cost only."`
	ArrivalSCV          *float64 `json:"arrival_scv,omitempty" minimum:"0" maximum:"100" doc:"Squared coefficient of variation of the gaps between arrivals, a renewal process: 1 (the default) for Poisson arrivals, 0 for evenly spaced ones, and otherwise gamma-distributed gaps of shape 1/arrival_scv (smoother than Poisson below 1, in clumps above 1), as planner simulate draws them. Above 1 the plan takes the worse of gamma and two-phase hyperexponential gaps, so that it holds for either."`
	// Task makes the class an agent loop: its demand and its pool count
	// tasks, each a run of serial calls (docs/concepts.md, "Agent tasks").
	Task     *Task     `json:"task,omitempty" doc:"Makes the class an agent loop: each arrival is a task of serial calls with tool runs between them; demand and pool count tasks, input_tokens and output_tokens describe each call (the first call's input)."`
	Schedule *Schedule `json:"schedule,omitempty" doc:"The hours of each day the class runs (UTC); without it, all day. Classes whose hours do not overlap share no per-minute limit or endpoint budget, and daily limits count each class's use over its own hours."`
}

// Schedule is the part of every day a class runs: Hours hours from
// StartHour, in UTC, past midnight when it ends after 24:00 (start_hour 22
// for 6 hours runs from 22:00 to 04:00).
type Schedule struct {
	StartHour float64 `json:"start_hour" minimum:"0" exclusiveMaximum:"24" doc:"When the class starts each day, hours after midnight UTC (22.5 is 22:30)." example:"22"`
	Hours     float64 `json:"hours" exclusiveMinimum:"0" maximum:"24" doc:"How many hours it runs from then; 24 is all day. At most its key's active_hours." example:"6"`
}

// Covers reports whether hour h of the day (0 ≤ h < 24) lies in the
// schedule; a nil schedule covers the whole day.
func (s *Schedule) Covers(h float64) bool {
	if s == nil || s.Hours >= 24 {
		return true
	}
	d := math.Mod(h-s.StartHour+24, 24)
	return d < s.Hours
}

// HoursPerDay is how many hours a day the schedule runs, 24 for nil.
func (s *Schedule) HoursPerDay() float64 {
	if s == nil {
		return 24
	}
	return min(24, s.Hours)
}

// Demand is a class's arrival rate: exactly one of rps, rpm, or a batch of
// requests to finish within a number of hours. A profile varies the rate
// over time for simulations (docs/simulate.md); a plan is computed for the
// steady rate.
type Demand struct {
	RPS         float64        `json:"rps,omitempty" exclusiveMinimum:"0" maximum:"1e7"`
	RPM         float64        `json:"rpm,omitempty" exclusiveMinimum:"0" maximum:"1e9"`
	Requests    float64        `json:"requests,omitempty" exclusiveMinimum:"0" maximum:"1e12"`
	WithinHours float64        `json:"within_hours,omitempty" exclusiveMinimum:"0" maximum:"8760"`
	Profile     []DemandWindow `json:"profile,omitempty" maxItems:"64" doc:"Windows of simulated time in which the rate is multiplied by a factor, such as a peak hour or a burst that doubles the rate for five minutes; in order of start_s, not overlapping. Simulations follow it; a plan sizes pools at its largest factor above 1 (with a warning) and counts daily limits over its busiest day."`
}

// DemandWindow multiplies a class's rate by Factor from StartS for
// DurationS seconds of a simulation (time 0 is its start).
type DemandWindow struct {
	StartS    float64 `json:"start_s" minimum:"0" maximum:"31536000" doc:"Start of the window, seconds from the start of the simulation."`
	DurationS float64 `json:"duration_s" exclusiveMinimum:"0" maximum:"31536000" doc:"Length of the window, seconds."`
	Factor    float64 `json:"factor" minimum:"0" maximum:"1000" doc:"The rate in the window is the demand times this factor (0 for a pause)."`
}

// Rate is the demand in requests per second.
func (d Demand) Rate() float64 {
	switch {
	case d.RPS > 0:
		return d.RPS
	case d.RPM > 0:
		return d.RPM / 60
	case d.Requests > 0 && d.WithinHours > 0:
		return d.Requests / (d.WithinHours * 3600)
	}
	return 0
}

// SLO is a class's latency targets at one percentile (docs/concepts.md,
// "SLOs at a percentile"), in one of two forms: ttft_ms, e2e_ms and
// tpot_ms with percentile (95 by default), or the older ttft_p95_ms and
// e2e_p95_ms, which are targets at the 95th percentile. A class gives one
// form, not both.
type SLO struct {
	TTFTP95Ms  float64 `json:"ttft_p95_ms,omitempty" minimum:"0" maximum:"1e8" doc:"TTFT target at the 95th percentile, milliseconds (the older form of ttft_ms with percentile 95)."`
	E2EP95Ms   float64 `json:"e2e_p95_ms,omitempty" minimum:"0" maximum:"1e9" doc:"E2E target at the 95th percentile, milliseconds (the older form of e2e_ms with percentile 95)."`
	TTFTMs     float64 `json:"ttft_ms,omitempty" minimum:"0" maximum:"1e8" doc:"Time to first token, queue wait included, that the percentile of requests must meet, milliseconds."`
	E2EMs      float64 `json:"e2e_ms,omitempty" minimum:"0" maximum:"1e9" doc:"Time from arrival to the last token, queue wait included, that the percentile of requests must meet, milliseconds."`
	TPOTMs     float64 `json:"tpot_ms,omitempty" minimum:"0" maximum:"1e6" doc:"Time per output token after the first that the percentile of requests must meet, milliseconds."`
	Percentile float64 `json:"percentile,omitempty" minimum:"50" maximum:"99.9" example:"99" doc:"The percentile of requests that ttft_ms, e2e_ms and tpot_ms bind, and of tasks that task_e2e_ms binds, from 50 to 99.9; 95 when not given. A class whose SLO gives it carries its predictions there (predicted.ttft_ms_at_percentile and the others)."`
	// TaskE2EMs is the target on a whole agent task, from its arrival to
	// the end of its last tool run (docs/concepts.md, "Agent tasks"), at
	// the SLO's percentile.
	TaskE2EMs float64 `json:"task_e2e_ms,omitempty" minimum:"0" maximum:"1e9" doc:"Target on a whole task of a class with task, milliseconds, that the percentile of tasks must meet (95 with the older form): from its arrival to the end of its last tool run."`
}

// Policy sets how the plan is computed.
type Policy struct {
	Allocation      string      `json:"allocation,omitempty" enum:"priority,weighted" default:"priority" doc:"How classes share a quota."`
	KneeSafety      *KneeSafety `json:"knee_safety,omitempty" doc:"Fraction of the knee each mode may use."`
	MonteCarloDraws int         `json:"monte_carlo_draws,omitempty" minimum:"1000" maximum:"200000" default:"20000"`
	Seed            *uint64     `json:"seed,omitempty" maximum:"9007199254740991" doc:"Seed of the Monte Carlo draws (default 1), below 2⁵³ so that every JSON reader reads it exactly."`
	MaxPool         int         `json:"max_pool,omitempty" minimum:"1" maximum:"100000" default:"1000" doc:"Largest pool the plan considers."`
	MaxUtilization  float64     `json:"max_utilization,omitempty" exclusiveMinimum:"0" exclusiveMaximum:"1" default:"0.95" doc:"Largest offered load per pool slot, A / pool, that min_pool accepts: a pool run at 100 % has a queue that grows without bound."`
}

// KneeSafety is the fraction of the measured knee a class of each mode may use.
type KneeSafety struct {
	Interactive float64 `json:"interactive,omitempty" exclusiveMinimum:"0" maximum:"1" default:"0.7"`
	Semi        float64 `json:"semi,omitempty" exclusiveMinimum:"0" maximum:"1" default:"0.8"`
	Batch       float64 `json:"batch,omitempty" exclusiveMinimum:"0" maximum:"1" default:"1"`
}
