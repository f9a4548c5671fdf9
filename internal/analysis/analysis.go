// Package analysis turns the requests of a concurrency ramp into per-step
// summaries measured in steady state with their confidence intervals,
// finds the knee and the collapse point with the noise in mind, judges
// whether the quota bound the ramp, fits the Universal Scalability Law to
// the throughput, and converts the result into the latency block of a
// scenario (docs/probe.md, "What the numbers mean", holds every rule).
// Probes, importers and the API all share it, so every source of
// measurements is judged the same way.
package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/scenario"
)

// Error classes of a failed request (docs/probe.md).
const (
	ErrTimeout     = "timeout"
	ErrRateLimited = "429"
	ErrServer      = "5xx"
	ErrClient      = "4xx"
	ErrTransport   = "transport"
	ErrBadStream   = "bad_stream"
	// ErrCancelled marks a request the client itself cut short (a cancelled
	// run or a spent time budget). Such rows are kept in the raw data but
	// left out of the summaries, since the endpoint did not fail them.
	ErrCancelled = "cancelled"
)

// Record is one request of a ramp, successful or not. Its times are
// measured from the send of the attempt that succeeded (the last one, for
// a request that failed), so that waiting before a retry never counts as
// latency; E2EWithRetriesMs keeps the whole time from the first send.
type Record struct {
	Step            int     `json:"step"`             // concurrency of the step (closed loop)
	Index           int     `json:"idx"`              // order within the step
	StartS          float64 `json:"start_s"`          // first send, seconds from the start of the run
	AckMs           float64 `json:"ack_ms"`           // to the first chunk of any kind
	TTFTMs          float64 `json:"ttft_ms"`          // to the first chunk carrying output
	E2EMs           float64 `json:"e2e_ms"`           // to the last output chunk; to the failure for failed requests
	OutputTokens    int     `json:"output_tokens"`    // usage.completion_tokens, else chunks counted
	InputTokens     int     `json:"input_tokens"`     // usage.prompt_tokens
	OutputEstimated bool    `json:"output_estimated"` // output tokens counted from chunks, not read from usage
	Status          int     `json:"status"`           // HTTP status; 0 when no response arrived
	ErrorClass      string  `json:"error"`            // "" on success, else one of the Err* classes
	Attempts        int     `json:"attempts"`         // sends, including retries
	RetryAfterMs    float64 `json:"retry_after_ms"`   // the longest retry-after seen
	OK              bool    `json:"ok"`               // HTTP 200 with non-empty output
	Warmup          bool    `json:"warmup"`           // excluded from the summaries
	// E2EWithRetriesMs is the time from the first send to the end, waits
	// and earlier attempts included; 0 when not recorded (rows written
	// before it existed), which means E2EMs.
	E2EWithRetriesMs float64 `json:"e2e_with_retries_ms,omitempty"`
	// RateRPS is the offered rate of an open-loop step; 0 in a closed loop.
	RateRPS float64 `json:"rate_rps,omitempty"`
	// Refine marks a request of a knee search's refinement step.
	Refine bool `json:"refine,omitempty"`
}

// TPOTMs is (E2E − TTFT)/(output tokens − 1), or false with fewer than two
// output tokens.
func (r Record) TPOTMs() (float64, bool) {
	if !r.OK || r.OutputTokens < 2 {
		return 0, false
	}
	return (r.E2EMs - r.TTFTMs) / float64(r.OutputTokens-1), true
}

// RateLimitedAnswers is the number of 429 answers the request got: only
// 429s are retried, so every send but the last was one, and the last was
// one when the request failed as rate limited.
func (r Record) RateLimitedAnswers() int {
	n := max(0, r.Attempts-1)
	if r.ErrorClass == ErrRateLimited || (r.Status == 429 && !r.OK) {
		n++
	}
	return n
}

// answers is the number of HTTP answers (sends) of the request.
func (r Record) answers() int { return max(1, r.Attempts) }

// Options are the judgement settings of a ramp.
type Options struct {
	DeadlineMs     float64 // a response is good only if it ends within this; 0 = no deadline
	MinGainPct     float64 // knee: goodput must grow at least this much per step (default 10)
	MaxP95Fraction float64 // knee: E2E p95 must stay under this fraction of the deadline (default 0.6)
	// CollapseTolerancePct is how far, in percent, goodput must fall below
	// the previous step's, beyond both steps' intervals, to count as a
	// fall (default 5).
	CollapseTolerancePct float64
}

// Default judgement settings (docs/probe.md).
const (
	DefaultMinGainPct           = 10.0
	DefaultMaxP95Fraction       = 0.6
	DefaultCollapseTolerancePct = 5.0
)

// WithDefaults returns o with zero values replaced by the defaults.
func (o Options) WithDefaults() Options {
	if o.MinGainPct == 0 {
		o.MinGainPct = DefaultMinGainPct
	}
	if o.MaxP95Fraction == 0 {
		o.MaxP95Fraction = DefaultMaxP95Fraction
	}
	if o.CollapseTolerancePct == 0 {
		o.CollapseTolerancePct = DefaultCollapseTolerancePct
	}
	return o
}

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
	OutputTPS     float64   `json:"output_tps"`

	TTFTP50Ms float64   `json:"ttft_p50_ms"`
	TTFTP90Ms float64   `json:"ttft_p90_ms,omitempty"`
	TTFTP95Ms float64   `json:"ttft_p95_ms"`
	TTFTP99Ms float64   `json:"ttft_p99_ms,omitempty"`
	TTFTP95CI *Interval `json:"ttft_p95_ci,omitempty" doc:"95 % interval of the TTFT p95 (order statistics)."`
	E2EP50Ms  float64   `json:"e2e_p50_ms"`
	E2EP90Ms  float64   `json:"e2e_p90_ms,omitempty"`
	E2EP95Ms  float64   `json:"e2e_p95_ms"`
	E2EP99Ms  float64   `json:"e2e_p99_ms,omitempty"`
	E2EP95CI  *Interval `json:"e2e_p95_ci,omitempty" doc:"95 % interval of the E2E p95 (order statistics)."`
	TPOTP50Ms float64   `json:"tpot_p50_ms"`
	TPOTP90Ms float64   `json:"tpot_p90_ms,omitempty"`
	TPOTP95Ms float64   `json:"tpot_p95_ms"`
	TPOTP99Ms float64   `json:"tpot_p99_ms,omitempty"`
	TPOTP95CI *Interval `json:"tpot_p95_ci,omitempty" doc:"95 % interval of the TPOT p95 (order statistics)."`
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

// Summarize groups the records of a closed-loop ramp by step and
// summarises each in its steady state, in ascending order of concurrency;
// cancelled records are left out. It is how the probe, planner knee on a
// probe's requests.csv, the API's rows and the service measure a step.
func Summarize(records []Record, opts Options) []Step {
	return summarize(records, opts, nil, true)
}

// SummarizeOver summarises steps measured over a given wall time (a
// benchmarking tool's duration, an open-loop run), or, for a step that
// wall does not give, from its first send to its last completion.
func SummarizeOver(records []Record, opts Options, wall map[int]float64) []Step {
	return summarize(records, opts, wall, false)
}

// SummarizeOpen summarises the steps of an open loop (Poisson arrivals at
// a rate, with a cap on the requests in flight), each over its window:
// from the completion that ends its warm-up (the W-th completion, W its
// warm-up records) to its last completion, so that the N − W completions
// counted fall inside it; without warm-up, from its first send.
func SummarizeOpen(records []Record, opts Options) []Step {
	type key struct {
		c    int
		rate float64
	}
	by := map[key][]Record{}
	for _, r := range records {
		if r.ErrorClass != ErrCancelled {
			k := key{r.Step, r.RateRPS}
			by[k] = append(by[k], r)
		}
	}
	var steps []Step
	for k, rs := range by {
		if s, ok := summarizeStep(k.c, rs, opts, openWall(rs), false); ok {
			s.RateRPS = k.rate
			steps = append(steps, s)
		}
	}
	slices.SortFunc(steps, func(a, b Step) int {
		return cmp.Or(cmp.Compare(a.Concurrency, b.Concurrency), cmp.Compare(a.RateRPS, b.RateRPS))
	})
	return steps
}

// openWall is the window of an open-loop step's rows (SummarizeOpen); 0
// when it has none.
func openWall(rs []Record) float64 {
	var ends []float64
	first, warm := math.Inf(1), 0
	for _, r := range rs {
		ends = append(ends, r.endS())
		first = math.Min(first, r.StartS)
		if r.Warmup {
			warm++
		}
	}
	if len(ends) == 0 || warm >= len(ends) {
		return 0
	}
	slices.Sort(ends)
	start := first
	if warm > 0 {
		start = ends[warm-1]
	}
	return math.Max(0, ends[len(ends)-1]-start)
}

func summarize(records []Record, opts Options, wall map[int]float64, closed bool) []Step {
	type key struct {
		c    int
		rate float64
	}
	by := map[key][]Record{}
	for _, r := range records {
		if r.ErrorClass != ErrCancelled {
			k := key{r.Step, r.RateRPS}
			by[k] = append(by[k], r)
		}
	}
	steps := make([]Step, 0, len(by))
	for k, rs := range by {
		if s, ok := summarizeStep(k.c, rs, opts, wall[k.c], closed); ok {
			s.RateRPS = k.rate
			steps = append(steps, s)
		}
	}
	slices.SortFunc(steps, func(a, b Step) int {
		return cmp.Or(cmp.Compare(a.Concurrency, b.Concurrency), cmp.Compare(a.RateRPS, b.RateRPS))
	})
	return steps
}

// Provisional summarises the records of a closed-loop step that is still
// running, over the steady state measured so far: for deciding whether to
// measure it longer.
func Provisional(c int, records []Record, opts Options) Step {
	s := Step{Concurrency: c}
	var rs []Record
	for _, r := range records {
		if r.ErrorClass != ErrCancelled {
			rs = append(rs, r)
		}
	}
	if a, b, ok := window(rs, c, true); ok {
		st := measure(rs, c, a, b, opts.DeadlineMs)
		s.WallS, s.GoodputRPS, s.ThroughputRPS, s.GoodputCI, s.Requests = b-a, st.goodput, st.throughput, st.goodputCI, st.measured
	}
	return s
}

func summarizeStep(c int, rs []Record, opts Options, wallS float64, closed bool) (Step, bool) {
	s := Step{Concurrency: c}
	first, last := math.Inf(1), math.Inf(-1)
	var ttft, e2e, tpot, withRetries []float64
	var good, outTokens int
	retried := false
	for _, r := range rs {
		s.RateLimited += r.RateLimitedAnswers()
		s.Answers += r.answers()
		s.Refine = s.Refine || r.Refine
		if r.Warmup {
			continue
		}
		s.Requests++
		first = math.Min(first, r.StartS)
		last = math.Max(last, r.endS())
		switch {
		case r.OK:
			s.OK++
			outTokens += r.OutputTokens
			ttft = append(ttft, r.TTFTMs)
			e2e = append(e2e, r.E2EMs)
			withRetries = append(withRetries, r.slotMs())
			retried = retried || r.Attempts > 1
			if v, ok := r.TPOTMs(); ok {
				tpot = append(tpot, v)
			}
			if r.good(opts.DeadlineMs) {
				good++
			}
		case r.ErrorClass == ErrRateLimited || r.Status == 429:
			s.RateLimitedFailed++
		default:
			s.Errors++
		}
	}
	if s.Requests == 0 {
		return s, false
	}
	s.WallS = wallS
	steadyMeasured := false
	if closed {
		st, ok := steadyState(rs, c, opts.DeadlineMs)
		s.TooShort = !ok || s.Requests < MinAdaptive(c)
		if ok {
			steadyMeasured = true
			s.WallS, s.GoodputRPS, s.ThroughputRPS, s.OutputTPS, s.GoodputCI = st.b-st.a, st.goodput, st.throughput, st.outputTPS, st.goodputCI
			s.WindowStartS, s.WindowEndS = st.a, st.b
		}
	}
	if s.WallS <= 0 && last > first {
		// A step without a steady state or a given wall time: the whole
		// span, for what it is worth.
		s.WallS = last - first
	}
	if !steadyMeasured && s.WallS > 0 {
		s.GoodputRPS = float64(good) / s.WallS
		s.ThroughputRPS = float64(s.OK) / s.WallS
		s.OutputTPS = float64(outTokens) / s.WallS
	}
	s.TTFTP50Ms, s.TTFTP90Ms, s.TTFTP95Ms, s.TTFTP99Ms, s.TTFTP95CI = percentiles(ttft)
	s.E2EP50Ms, s.E2EP90Ms, s.E2EP95Ms, s.E2EP99Ms, s.E2EP95CI = percentiles(e2e)
	s.TPOTP50Ms, s.TPOTP90Ms, s.TPOTP95Ms, s.TPOTP99Ms, s.TPOTP95CI = percentiles(tpot)
	if retried {
		_, _, s.E2EWithRetriesP95Ms, _, _ = percentiles(withRetries)
	}
	return s, true
}

// percentiles returns p50, p90, p95, p99 (type 7, model.Quantile) and the
// interval of p95, or zeros.
func percentiles(xs []float64) (p50, p90, p95, p99 float64, ci95 *Interval) {
	if len(xs) == 0 {
		return 0, 0, 0, 0, nil
	}
	slices.Sort(xs)
	if xs[len(xs)-1] <= 0 {
		return 0, 0, 0, 0, nil // not measured (a source without the figure)
	}
	return model.QuantileSorted(xs, 0.5), model.QuantileSorted(xs, 0.9), model.QuantileSorted(xs, 0.95),
		model.QuantileSorted(xs, 0.99), quantileCI(xs, 0.95)
}

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
	// reaches the plateau (see refineKnee), and KneeResolution the gap to
	// the measured step below it: the knee lies in
	// (KneeRefined − KneeResolution, KneeRefined]. Null without a knee or
	// without a first failing step.
	KneeRefined    *int `json:"knee_refined,omitempty"`
	KneeResolution *int `json:"knee_refined_resolution,omitempty"`
	// refineNext is the concurrency that would halve the refinement's
	// bracket; 0 when it cannot be narrowed.
	refineNext int
}

// NextRefinement is the concurrency a knee search's bisection measures
// next, and false when the bracket is down to one or the noise of the
// steps measured cannot tell its neighbours apart.
func (r Result) NextRefinement() (int, bool) { return r.refineNext, r.refineNext > 0 }

// Analyze judges a ramp's steps. A step passes when its goodput grew by
// at least MinGainPct over the previous step (the first step is exempt)
// and its E2E p95 stayed under MaxP95Fraction of the deadline; a step with
// no successful response never passes (a step whose counts are unknown
// passes on its goodput alone). The knee is the last step before the
// first failing one, and later passing steps do not move it. A step falls
// when its goodput is below the previous step's by more than
// CollapseTolerancePct and by more than both steps' intervals allow; the
// collapse point is the first step that falls. Steps too short for a
// steady state take no part. The ramp is quota-limited when the share of
// 429 answers rises with concurrency up to the first failing step (see
// judgeQuota).
func Analyze(steps []Step, opts Options) Result {
	opts = opts.WithDefaults()
	ss := slices.Clone(steps)
	slices.SortStableFunc(ss, func(a, b Step) int { return cmp.Compare(a.Concurrency, b.Concurrency) })
	res := Result{Steps: ss}
	if len(ss) == 0 {
		res.Notes = append(res.Notes, "no steps to analyse")
		return res
	}
	var judged, measured []Step
	for _, s := range ss {
		if s.TooShort {
			res.Notes = append(res.Notes, fmt.Sprintf("the step at concurrency %d is too short for a steady state (%d measured requests; any step needs at least 2c + 10 = %d with all its slots busy after its warm-up): it is shown but not judged",
				s.Concurrency, s.Requests, MinAdaptive(s.Concurrency)))
			continue
		}
		measured = append(measured, s)
		if !s.Refine {
			judged = append(judged, s)
		}
	}
	setEfficiency(ss)
	if len(judged) == 0 {
		res.Notes = append(res.Notes, "no step was measured in a steady state: no knee")
		return res
	}
	failed := -1
	for i, s := range judged {
		pass := (s.OK > 0 || s.CountsUnknown) && s.GoodputRPS > 0
		if i > 0 {
			prev := judged[i-1]
			need := prev.GoodputRPS * (1 + opts.MinGainPct/100)
			if s.GoodputRPS < need {
				pass = false
			}
			if gainAmbiguous(prev, s, opts.MinGainPct) {
				res.Ambiguous = ptr(s.Concurrency)
			}
		}
		if opts.DeadlineMs > 0 && !(s.E2EP95Ms < opts.MaxP95Fraction*opts.DeadlineMs) {
			pass = false
		}
		if !pass {
			failed = i
			break
		}
	}
	switch {
	case failed == -1:
		res.Knee = ptr(judged[len(judged)-1].Concurrency)
		res.Notes = append(res.Notes, "every step passed: the knee is at or above the last step; extend the ramp to find it")
	case failed > 0:
		res.Knee = ptr(judged[failed-1].Concurrency)
		res.FirstFailing = ptr(judged[failed].Concurrency)
	default:
		res.FirstFailing = ptr(judged[0].Concurrency)
	}
	for i := 1; i < len(judged); i++ {
		if Fell(judged[i-1], judged[i], opts.CollapseTolerancePct) {
			res.Collapse = ptr(judged[i].Concurrency)
			break
		}
	}
	if failed > 0 {
		refineKnee(&res, measured, judged[failed])
	}
	judgeQuota(&res, judged, failed)
	if fit, ok := fitUSL(judged); ok {
		res.USL = &fit
	}
	if opts.DeadlineMs <= 0 {
		res.Notes = append(res.Notes, "no deadline given: goodput counts every successful response and the knee ignores p95")
	}
	return res
}

// Fell reports whether goodput fell from step a to step b: by more than
// tolerancePct of a's goodput, and, when both carry intervals, by more
// than the intervals allow (b's upper bound under a's lower bound). A
// plateau that wobbles within its noise does not fall.
func Fell(a, b Step, tolerancePct float64) bool {
	if !(b.GoodputRPS < a.GoodputRPS*(1-tolerancePct/100)) {
		return false
	}
	if a.GoodputCI != nil && b.GoodputCI != nil && b.GoodputCI.Hi >= a.GoodputCI.Lo {
		return false
	}
	return true
}

// setEfficiency sets each closed-loop step's scaling efficiency against
// the step at concurrency 1.
func setEfficiency(ss []Step) {
	i := slices.IndexFunc(ss, func(s Step) bool { return s.Concurrency == 1 && s.RateRPS == 0 && !s.TooShort })
	if i < 0 || !(ss[i].ThroughputRPS > 0) {
		return
	}
	x1 := ss[i].ThroughputRPS
	for j := range ss {
		if ss[j].RateRPS == 0 && ss[j].ThroughputRPS > 0 {
			ss[j].Efficiency = round(ss[j].ThroughputRPS/(float64(ss[j].Concurrency)*x1), 4)
		}
	}
}

// refineKnee finds knee_refined among the measured steps up to the first
// failing one, f, whose throughput X(f) is the plateau: the smallest
// concurrency c with
//
//	X(c) ≥ X(f)·(1 − 1/(2c))
//
// that is, whose effective busy slots X(c)·S₀ (c times its scaling
// efficiency) are within half a slot of the plateau's. Below the knee each
// step of concurrency keeps one more slot busy, so X(c−1) ≈ X(c)·(1 − 1/c)
// falls outside the half slot, and X(c) of a saturated endpoint stays on
// the plateau. The measured step below it bounds the resolution. The
// bracket can be halved while it spans more than one and every
// refinement step's noise (goodput interval, relative half-width, plus
// the plateau's) stays under the half slot it must resolve.
func refineKnee(res *Result, measured []Step, f Step) {
	plat := f.ThroughputRPS
	if !(plat > 0) {
		return
	}
	reaches := func(s Step) bool {
		return s.ThroughputRPS >= plat*(1-1/(2*float64(s.Concurrency)))
	}
	var lo, hi int
	resolvable := true
	for _, s := range measured {
		if s.Concurrency > f.Concurrency || s.RateRPS != 0 {
			continue
		}
		if s.Refine && s.GoodputCI.halfWidthRel(s.GoodputRPS)+f.GoodputCI.halfWidthRel(plat) >= 1/(2*float64(s.Concurrency)) {
			resolvable = false
		}
		if hi == 0 && reaches(s) {
			hi = s.Concurrency
		}
		if hi == 0 {
			lo = s.Concurrency
		}
	}
	if hi == 0 {
		return
	}
	res.KneeRefined, res.KneeResolution = ptr(hi), ptr(hi-lo)
	switch {
	case hi-lo > 1 && resolvable:
		res.refineNext = (lo + hi + 1) / 2
	case !resolvable:
		res.Notes = append(res.Notes, fmt.Sprintf("knee_refined %d to within %d: the refinement steps' noise is more than half a slot, so the bisection stopped", hi, hi-lo))
	}
}

// GainAmbiguous reports whether the gain rule's threshold lies inside the
// range the two steps' intervals allow for the gain: the verdict rests on
// noise, and measuring s longer may change it.
func GainAmbiguous(prev, s Step, minGainPct float64) bool { return gainAmbiguous(prev, s, minGainPct) }

// gainAmbiguous reports whether the gain rule's threshold lies inside the
// range the two steps' intervals allow for the gain.
func gainAmbiguous(prev, s Step, minGainPct float64) bool {
	if prev.GoodputCI == nil || s.GoodputCI == nil || prev.GoodputCI.Lo <= 0 {
		return false
	}
	need := 1 + minGainPct/100
	lo, hi := s.GoodputCI.Lo/prev.GoodputCI.Hi, s.GoodputCI.Hi/prev.GoodputCI.Lo
	return lo < need && need <= hi
}

func fitUSL(ss []Step) (USLFit, bool) {
	var n, x []float64
	for _, s := range ss {
		if s.ThroughputRPS > 0 {
			n = append(n, float64(s.Concurrency))
			x = append(x, s.ThroughputRPS)
		}
	}
	u, err := model.FitUSL(n, x)
	if err != nil {
		return USLFit{}, false
	}
	fit := USLFit{USL: u}
	if p, ok := u.Peak(); ok {
		fit.Peak = &p
	}
	return fit, true
}

// curveSteps are the steps that make curve points: measured in a steady
// state (or taken as the source gave them), with a known concurrency,
// successful responses and a measurable TTFT and TPOT; of several steps at
// one concurrency (open-loop rates), the first, which has the lowest rate.
func (r Result) curveSteps() []Step {
	var out []Step
	seen := map[int]bool{}
	for _, s := range r.Steps {
		if s.TooShort || s.Concurrency < 1 || seen[s.Concurrency] || (s.OK == 0 && !s.CountsUnknown) || s.TTFTP50Ms <= 0 || s.TPOTP50Ms <= 0 {
			continue
		}
		seen[s.Concurrency] = true
		out = append(out, s)
	}
	return out
}

// Latency converts the result into a scenario latency block: one curve
// point per step that curveSteps keeps, and the knee. Each latency series
// is made non-decreasing over concurrency by isotonic regression weighted
// by the step's successful requests (one for a step without counts): the
// least-squares monotone fit, so that a noisy step is averaged with its
// neighbours instead of lifting every later one.
func (r Result) Latency() (scenario.Latency, error) {
	var l scenario.Latency
	ss := r.curveSteps()
	if len(ss) == 0 {
		return l, fmt.Errorf("no step has successful responses with at least two output tokens, so there is no curve")
	}
	ws := make([]float64, len(ss))
	for i, s := range ss {
		ws[i] = float64(max(1, s.OK))
	}
	series := func(get func(Step) float64) []float64 {
		ys := make([]float64, len(ss))
		for i, s := range ss {
			ys[i] = get(s)
		}
		return isotonic(ys, ws)
	}
	t50, t95 := series(func(s Step) float64 { return s.TTFTP50Ms }), series(func(s Step) float64 { return s.TTFTP95Ms })
	v50, v95 := series(func(s Step) float64 { return s.TPOTP50Ms }), series(func(s Step) float64 { return s.TPOTP95Ms })
	e50, e95 := series(func(s Step) float64 { return s.E2EP50Ms }), series(func(s Step) float64 { return s.E2EP95Ms })
	for i, s := range ss {
		l.Curve = append(l.Curve, scenario.CurvePoint{
			Concurrency:     s.Concurrency,
			TTFTP50Ms:       round(t50[i], 2),
			TTFTP95Ms:       round(t95[i], 2),
			TPOTP50Ms:       round(v50[i], 3),
			TPOTP95Ms:       round(v95[i], 3),
			E2EP50Ms:        round(e50[i], 1),
			E2EP95Ms:        round(e95[i], 1),
			ThroughputRPS:   round(s.ThroughputRPS, 4),
			OutputTPS:       round(s.OutputTPS, 2),
			GoodputRPS:      round(s.GoodputRPS, 4),
			ErrorRate:       round(ratio(s.Errors, s.Requests), 4),
			RateLimitedRate: round(ratio(s.RateLimited, s.Answers), 4),
			Requests:        s.Requests,
		})
	}
	l.Knee = r.Knee
	return l, nil
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return math.Min(1, float64(a)/float64(b))
}

// round keeps d decimals so that exported curves read cleanly.
func round(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

func ptr[T any](v T) *T { return &v }
