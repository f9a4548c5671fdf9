// Package analysis turns the requests of a concurrency ramp into per-step
// summaries, finds the knee and the collapse point by the rules of DESIGN §2,
// fits the Universal Scalability Law to the throughput (§3.6), and converts
// the result into the latency block of a scenario. Probes, importers and the
// API all share it, so every source of measurements is judged the same way.
package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/scenario"
)

// Error classes of a failed request (DESIGN §4).
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

// Record is one request of a ramp, successful or not.
type Record struct {
	Step            int     `json:"step"`             // concurrency of the step (closed loop)
	Index           int     `json:"idx"`              // order within the step
	StartS          float64 `json:"start_s"`          // send time, seconds from the start of the run
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
}

// TPOTMs is (E2E − TTFT)/(output tokens − 1), or false with fewer than two
// output tokens.
func (r Record) TPOTMs() (float64, bool) {
	if !r.OK || r.OutputTokens < 2 {
		return 0, false
	}
	return (r.E2EMs - r.TTFTMs) / float64(r.OutputTokens-1), true
}

// Options are the judgement settings of a ramp.
type Options struct {
	DeadlineMs     float64 // a response is good only if it ends within this; 0 = no deadline
	MinGainPct     float64 // knee: goodput must grow at least this much per step (default 10)
	MaxP95Fraction float64 // knee: E2E p95 must stay under this fraction of the deadline (default 0.6)
}

// Default judgement settings (DESIGN §2).
const (
	DefaultMinGainPct     = 10.0
	DefaultMaxP95Fraction = 0.6
)

func (o Options) withDefaults() Options {
	if o.MinGainPct == 0 {
		o.MinGainPct = DefaultMinGainPct
	}
	if o.MaxP95Fraction == 0 {
		o.MaxP95Fraction = DefaultMaxP95Fraction
	}
	return o
}

// Step is the summary of one step of a ramp. Latency percentiles are over
// the successful requests and are 0 when the step had none.
type Step struct {
	Concurrency int     `json:"concurrency"`
	RateRPS     float64 `json:"rate_rps,omitempty"` // offered rate of an open-loop step
	Requests    int     `json:"requests"`
	OK          int     `json:"ok"`
	RateLimited int     `json:"rate_limited"`
	Errors      int     `json:"errors"` // failures other than 429
	WallS       float64 `json:"wall_s"`

	GoodputRPS    float64 `json:"goodput_rps"`
	ThroughputRPS float64 `json:"throughput_rps"`
	OutputTPS     float64 `json:"output_tps"`

	TTFTP50Ms float64 `json:"ttft_p50_ms"`
	TTFTP95Ms float64 `json:"ttft_p95_ms"`
	E2EP50Ms  float64 `json:"e2e_p50_ms"`
	E2EP95Ms  float64 `json:"e2e_p95_ms"`
	TPOTP50Ms float64 `json:"tpot_p50_ms"`
	TPOTP95Ms float64 `json:"tpot_p95_ms"`

	// Set by importers when a figure was not measured but derived.
	ConcurrencyEstimated  bool `json:"concurrency_estimated,omitempty"`   // from Little's Law, throughput × mean E2E
	GoodputFromThroughput bool `json:"goodput_from_throughput,omitempty"` // no deadline data: goodput is throughput
	CountsUnknown         bool `json:"counts_unknown,omitempty"`          // the source gave rates and percentiles but no request counts
}

// Summarize groups records by step and summarises each, in ascending order
// of concurrency. Warm-up and cancelled records are left out. A step's wall time is from
// its first send to its last completion, unless wall gives it.
func Summarize(records []Record, opts Options, wall map[int]float64) []Step {
	by := map[int][]Record{}
	for _, r := range records {
		if !r.Warmup && r.ErrorClass != ErrCancelled {
			by[r.Step] = append(by[r.Step], r)
		}
	}
	steps := make([]Step, 0, len(by))
	for c, rs := range by {
		steps = append(steps, summarizeStep(c, rs, opts, wall[c]))
	}
	slices.SortFunc(steps, func(a, b Step) int { return cmp.Compare(a.Concurrency, b.Concurrency) })
	return steps
}

func summarizeStep(c int, rs []Record, opts Options, wallS float64) Step {
	s := Step{Concurrency: c, Requests: len(rs)}
	first, last := math.Inf(1), math.Inf(-1)
	var ttft, e2e, tpot []float64
	var good, outTokens int
	for _, r := range rs {
		first = math.Min(first, r.StartS)
		last = math.Max(last, r.StartS+r.E2EMs/1000)
		switch {
		case r.OK:
			s.OK++
			outTokens += r.OutputTokens
			ttft = append(ttft, r.TTFTMs)
			e2e = append(e2e, r.E2EMs)
			if v, ok := r.TPOTMs(); ok {
				tpot = append(tpot, v)
			}
			if opts.DeadlineMs <= 0 || r.E2EMs <= opts.DeadlineMs {
				good++
			}
		case r.Status == 429 || r.ErrorClass == ErrRateLimited:
			s.RateLimited++
		default:
			s.Errors++
		}
	}
	s.WallS = wallS
	if s.WallS <= 0 && last > first {
		s.WallS = last - first
	}
	if s.WallS > 0 {
		s.GoodputRPS = float64(good) / s.WallS
		s.ThroughputRPS = float64(s.OK) / s.WallS
		s.OutputTPS = float64(outTokens) / s.WallS
	}
	s.TTFTP50Ms, s.TTFTP95Ms = percentiles(ttft)
	s.E2EP50Ms, s.E2EP95Ms = percentiles(e2e)
	s.TPOTP50Ms, s.TPOTP95Ms = percentiles(tpot)
	return s
}

// percentiles returns p50 and p95 (type 7, model.Quantile), or zeros.
func percentiles(xs []float64) (p50, p95 float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	slices.Sort(xs)
	return model.QuantileSorted(xs, 0.5), model.QuantileSorted(xs, 0.95)
}

// USLFit is the Universal Scalability Law fitted to a ramp's throughput.
type USLFit struct {
	model.USL
	Peak *float64 `json:"peak"` // N* = sqrt((1 − α)/β); null when the law has no finite peak
}

// Result is the analysis of a ramp.
type Result struct {
	Steps        []Step   `json:"steps"`
	Knee         *int     `json:"knee"`     // concurrency; null when the first step already fails
	Collapse     *int     `json:"collapse"` // first step whose goodput fell; null when none did
	QuotaLimited bool     `json:"quota_limited"`
	USL          *USLFit  `json:"usl"`
	Notes        []string `json:"notes,omitempty"`
}

// Analyze judges a ramp's steps (DESIGN §2 and §3.6). A step passes when its
// goodput grew by at least MinGainPct over the previous step (the first step
// is exempt) and its E2E p95 stayed under MaxP95Fraction of the deadline; a
// step with no successful response never passes (a step whose counts are
// unknown passes on its goodput alone). The knee is the last step
// before the first failing one, and later passing steps do not move it. The
// collapse point is the first step whose goodput is below the previous
// step's. The ramp is quota-limited when 429s appear at or below the knee
// (or in the first step when there is no knee): the quota, not the model,
// is the bottleneck.
func Analyze(steps []Step, opts Options) Result {
	opts = opts.withDefaults()
	ss := slices.Clone(steps)
	slices.SortStableFunc(ss, func(a, b Step) int { return cmp.Compare(a.Concurrency, b.Concurrency) })
	res := Result{Steps: ss}
	if len(ss) == 0 {
		res.Notes = append(res.Notes, "no steps to analyse")
		return res
	}
	failed := -1
	for i, s := range ss {
		pass := (s.OK > 0 || s.CountsUnknown) && s.GoodputRPS > 0
		if i > 0 && s.GoodputRPS < ss[i-1].GoodputRPS*(1+opts.MinGainPct/100) {
			pass = false
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
		res.Knee = ptr(ss[len(ss)-1].Concurrency)
		res.Notes = append(res.Notes, "every step passed: the knee is at or above the last step; extend the ramp to find it")
	case failed > 0:
		res.Knee = ptr(ss[failed-1].Concurrency)
	}
	for i := 1; i < len(ss); i++ {
		if ss[i].GoodputRPS < ss[i-1].GoodputRPS {
			res.Collapse = ptr(ss[i].Concurrency)
			break
		}
	}
	for i, s := range ss {
		atOrBelow := (res.Knee != nil && s.Concurrency <= *res.Knee) || (res.Knee == nil && i == 0)
		if atOrBelow && s.RateLimited > 0 {
			res.QuotaLimited = true
		}
	}
	if fit, ok := fitUSL(ss); ok {
		res.USL = &fit
	}
	if opts.DeadlineMs <= 0 {
		res.Notes = append(res.Notes, "no deadline given: goodput counts every successful response and the knee ignores p95")
	}
	return res
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

// Latency converts the result into a scenario latency block: one curve point
// per step that had successful responses with a measurable TPOT, and the knee.
func (r Result) Latency() (scenario.Latency, error) {
	var l scenario.Latency
	for _, s := range r.Steps {
		if (s.OK == 0 && !s.CountsUnknown) || s.TTFTP50Ms <= 0 || s.TPOTP50Ms <= 0 {
			continue
		}
		l.Curve = append(l.Curve, scenario.CurvePoint{
			Concurrency:     s.Concurrency,
			TTFTP50Ms:       round(s.TTFTP50Ms, 2),
			TTFTP95Ms:       round(s.TTFTP95Ms, 2),
			TPOTP50Ms:       round(s.TPOTP50Ms, 3),
			TPOTP95Ms:       round(s.TPOTP95Ms, 3),
			E2EP50Ms:        round(s.E2EP50Ms, 1),
			E2EP95Ms:        round(s.E2EP95Ms, 1),
			ThroughputRPS:   round(s.ThroughputRPS, 4),
			OutputTPS:       round(s.OutputTPS, 2),
			GoodputRPS:      round(s.GoodputRPS, 4),
			ErrorRate:       round(ratio(s.Errors, s.Requests), 4),
			RateLimitedRate: round(ratio(s.RateLimited, s.Requests), 4),
		})
	}
	if len(l.Curve) == 0 {
		return l, fmt.Errorf("no step has successful responses with at least two output tokens, so there is no curve")
	}
	l.Knee = r.Knee
	return l, nil
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// round keeps d decimals so that exported curves read cleanly.
func round(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

func ptr[T any](v T) *T { return &v }
