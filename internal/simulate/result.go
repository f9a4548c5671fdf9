package simulate

import "github.com/plannerdev/planner/internal/plan"

// Simulation is a simulated run of a plan beside the plan's predictions. Its
// JSON names are a contract of the API and of `planner simulate -o json`.
type Simulation struct {
	Settings SimulationSettings `json:"settings"`
	Classes  []ClassRun         `json:"classes"`
	Quotas   []KeyUse           `json:"quotas"`
	Verdict  SimulationVerdict  `json:"verdict"`
	Warnings []string           `json:"warnings"`
}

// SimulationSettings are the options the run used, with every default filled in.
type SimulationSettings struct {
	DurationS  float64 `json:"duration_s" doc:"Simulated time, seconds."`
	StartHour  float64 `json:"start_hour,omitempty" doc:"Time of day the run started at, hours after midnight UTC, for classes with a schedule."`
	Seed       uint64  `json:"seed"`
	Pacing     bool    `json:"pacing" doc:"Clients paced their sends with the plan's token bucket."`
	AIMD       bool    `json:"aimd" doc:"Clients resized their pools with the plan's AIMD settings."`
	Refill     string  `json:"refill" enum:"continuous,window" doc:"How the provider refilled per-minute limits: a continuously refilled bucket, or a window counter reset every burst_window_s."`
	RetryAfter bool    `json:"retry_after" doc:"The provider's 429s carried Retry-After."`
	IntervalS  float64 `json:"interval_s" doc:"Width of one point of the time series, seconds."`
	Intervals  int     `json:"intervals" doc:"Points in every time series; point i covers [i·interval_s, (i+1)·interval_s)."`
	MaxEvents  int     `json:"max_events"`
	Events     int     `json:"events" doc:"Events the run processed."`
}

// Arrival processes of a class.
const (
	ArrivalsPoisson    = "poisson"
	ArrivalsRenewal    = "renewal"
	ArrivalsReplay     = "replay"
	ArrivalsClosedLoop = "closed_loop"
)

// ClassRun is one class's run beside its plan.
type ClassRun struct {
	Name     string `json:"name"`
	Mode     string `json:"mode"`
	Quota    string `json:"quota"`
	Endpoint string `json:"endpoint" doc:"The endpoint the class sends to; classes on one endpoint share its in-flight load."`
	Arrivals string `json:"arrivals" enum:"poisson,renewal,replay,closed_loop" doc:"poisson or renewal at the demand (with its profile), replay of given start times, or closed_loop: no stated demand, the pool kept full."`
	Pool     int    `json:"pool" doc:"The plan's pool."`
	Idle     bool   `json:"idle,omitempty" doc:"The class's schedule kept it from running at any time of the run; it is not judged."`
	Feasible bool   `json:"feasible" doc:"Whether the plan found the class feasible."`
	// Counts is what the class's counts and rates count (Units).
	Counts string `json:"counts" enum:"requests,tasks" doc:"What simulated.requests, completed, shed, gave_up and backlog count, and offered_rps, throughput_rps and goodput_rps the rate of: tasks for an agent task class (its TTFT and TPOT are its calls', its E2E the whole task's; sends and rate_limited count calls), requests for any other."`
	// Predicted are the plan's predictions at the pool.
	Predicted plan.Predicted `json:"predicted"`
	// PlanShed is the plan's shedding for an infeasible class.
	PlanShed  *plan.Shed        `json:"plan_shed,omitempty" doc:"The plan's sustainable rate and the rate to shed, for an infeasible class."`
	Simulated Simulated         `json:"simulated"`
	VsPlan    VsPlan            `json:"vs_plan" doc:"The simulated figures against the plan's."`
	Verdict   SimulationVerdict `json:"verdict"`
	Series    ClassSeries       `json:"series"`
}

// Simulated is what the run measured for one class, over the whole
// simulated time. Latency percentiles are over completed requests and are
// null when none completed.
type Simulated struct {
	Requests      int     `json:"requests" doc:"Requests that arrived (closed-loop classes: that were started)."`
	Completed     int     `json:"completed"`
	Sends         int     `json:"sends" doc:"Sends made: each request's first send and its retries."`
	OfferedRPS    float64 `json:"offered_rps" doc:"Requests per second that arrived."`
	ThroughputRPS float64 `json:"throughput_rps" doc:"Responses per second."`
	GoodputRPS    float64 `json:"goodput_rps" doc:"Responses per second that ended within the deadline (slo_e2e, or the retry deadline without one)."`
	Shed          int     `json:"shed" doc:"Requests the client shed after the plan's max queue wait."`
	RateLimited   int     `json:"rate_limited" doc:"Sends the provider answered with 429."`
	Retries       int     `json:"retries" doc:"Sends that retried a 429."`
	GaveUp        int     `json:"gave_up" doc:"Requests dropped after a 429 because no retry fitted the attempts or the deadline."`
	Backlog       int     `json:"backlog" doc:"Requests still waiting for a slot when the run ended."`
	// QueueWaitMeanMs is the mean time from arrival to the first send.
	QueueWaitMeanMs     float64  `json:"queue_wait_mean_ms" doc:"Mean time from arrival to the first send: waiting for a slot and for pacing."`
	QueueWaitMeanCI95Ms *float64 `json:"queue_wait_mean_ci95_ms" doc:"Half-width of the 95 % confidence interval of the mean wait, by batch means over 20 equal spans of the run; null with fewer than two spans that sent."`
	QueueWaitP95Ms      float64  `json:"queue_wait_p95_ms"`
	QueueWaitP95CI95Ms  *float64 `json:"queue_wait_p95_ci95_ms" doc:"Half-width of the 95 % confidence interval of the wait's p95, by sectioning over the same 20 spans (each span's p95 one observation, centred on the whole run's); null with fewer than four spans of at least 20 requests."`
	TTFTP50Ms           *float64 `json:"ttft_p50_ms" doc:"Queue wait, retries and time to first token."`
	TTFTP95Ms           *float64 `json:"ttft_p95_ms"`
	TTFTP95CI95Ms       *float64 `json:"ttft_p95_ci95_ms" doc:"Half-width of the 95 % confidence interval of the TTFT p95, by sectioning as queue_wait_p95_ci95_ms."`
	TTFTP99Ms           *float64 `json:"ttft_p99_ms"`
	E2EP50Ms            *float64 `json:"e2e_p50_ms" doc:"From arrival to the last token: queue wait, retries and service."`
	E2EP95Ms            *float64 `json:"e2e_p95_ms"`
	E2EP95CI95Ms        *float64 `json:"e2e_p95_ci95_ms" doc:"Half-width of the 95 % confidence interval of the E2E p95, by sectioning as queue_wait_p95_ci95_ms."`
	E2EP99Ms            *float64 `json:"e2e_p99_ms"`
	TPOTP50Ms           *float64 `json:"tpot_p50_ms" doc:"Time per output token after the first, (E2E − TTFT)/(out − 1), of each request (each call of an agent task) with at least two output tokens; null when none completed."`
	TPOTP95Ms           *float64 `json:"tpot_p95_ms"`
	TPOTP95CI95Ms       *float64 `json:"tpot_p95_ci95_ms" doc:"Half-width of the 95 % confidence interval of the TPOT p95, by sectioning as queue_wait_p95_ci95_ms."`
	TPOTP99Ms           *float64 `json:"tpot_p99_ms"`
	PoolMean            float64  `json:"pool_mean" doc:"Time-average of the pool: the plan's pool, or the AIMD window when adapting."`

	// The values at the percentile the class's SLO names, when it names
	// one: what the verdict holds its targets to.
	Percentile             *float64 `json:"percentile,omitempty" doc:"The percentile of the class's SLO (slo.percentile) that the values at_percentile are taken at."`
	TTFTMsAtPercentile     *float64 `json:"ttft_ms_at_percentile,omitempty" doc:"TTFT at the SLO's percentile: queue wait, retries and time to first token."`
	E2EMsAtPercentile      *float64 `json:"e2e_ms_at_percentile,omitempty" doc:"E2E at the SLO's percentile: from arrival to the last token."`
	TTFTCI95MsAtPercentile *float64 `json:"ttft_ci95_ms_at_percentile,omitempty" doc:"Half-width of the 95 % confidence interval of ttft_ms_at_percentile, by sectioning as queue_wait_p95_ci95_ms."`
	E2ECI95MsAtPercentile  *float64 `json:"e2e_ci95_ms_at_percentile,omitempty" doc:"Half-width of the 95 % confidence interval of e2e_ms_at_percentile, by sectioning as queue_wait_p95_ci95_ms."`
	TPOTMsAtPercentile     *float64 `json:"tpot_ms_at_percentile,omitempty" doc:"TPOT at the SLO's percentile: (E2E − TTFT)/(out − 1) of each request (each call of an agent task) with at least two output tokens."`
	TPOTCI95MsAtPercentile *float64 `json:"tpot_ci95_ms_at_percentile,omitempty" doc:"Half-width of the 95 % confidence interval of tpot_ms_at_percentile, by sectioning as queue_wait_p95_ci95_ms."`
}

// VsPlan compares the run with the plan: the rate the plan expects the class
// to run at (its demand when the pool serves it, else the pool flat out)
// and the relative errors of the simulated figures.
type VsPlan struct {
	ExpectedRPS        float64  `json:"expected_rps" doc:"The plan's run rate: the demand when the pool serves it, otherwise the pool's throughput."`
	ThroughputErrorPct *float64 `json:"throughput_error_pct" doc:"(simulated − expected) / expected, in percent; null when the plan expects nothing."`
	TTFTP95ErrorPct    *float64 `json:"ttft_p95_error_pct"`
	E2EP95ErrorPct     *float64 `json:"e2e_p95_error_pct"`
}

// ClassSeries are a class's time series, one value per interval.
type ClassSeries struct {
	InFlight    []float64 `json:"in_flight" doc:"Time-average of the requests being served."`
	Queued      []float64 `json:"queued" doc:"Time-average of the requests waiting for a slot."`
	RateLimited []int     `json:"rate_limited" doc:"429s in the interval."`
	Shed        []int     `json:"shed"`
	Completed   []int     `json:"completed"`
	Pool        []float64 `json:"pool,omitempty" doc:"Time-average of the AIMD window; only when adapting."`
}

// KeyUse is the provider's side of one key over the run.
type KeyUse struct {
	Name        string     `json:"name"`
	RateLimited int        `json:"rate_limited" doc:"429s this key answered."`
	Dimensions  []LimitUse `json:"dimensions"`
}

// LimitUse is one limit of a key over the run.
type LimitUse struct {
	Dimension string  `json:"dimension" enum:"rpm,tpm,itpm,otpm,rpd,tpd"`
	Limit     float64 `json:"limit" doc:"The limit per minute or per day, as configured (the provider enforces the limit, not the plan's headroom)."`
	Allowance float64 `json:"allowance" doc:"What one enforcement window allows: limit × burst_window_s / 60 for a per-minute limit, the limit for a daily one."`
	// UseMean is the use over the run as the plan's utilisation measures it.
	UseMean     float64   `json:"use_mean" doc:"Share of the limit used over the run, as the plan's utilisation measures it (per minute, or per active hours for a daily limit)."`
	RateLimited int       `json:"rate_limited" doc:"429s this limit caused."`
	Use         []float64 `json:"use" doc:"Per interval, the share of the limit that the interval's requests used: counted at admission, less the refund of unused max_tokens, plus output counted at completion under actual accounting."`
	Peak        []float64 `json:"peak" doc:"Per interval, the highest fill of the enforcement bucket or window (1 when a request did not fit)."`
}

// SimulationVerdict says whether the plan held, with the reasons in words.
type SimulationVerdict struct {
	Holds   bool     `json:"holds"`
	Summary string   `json:"summary"`
	Reasons []string `json:"reasons"`
}
