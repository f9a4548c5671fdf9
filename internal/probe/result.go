package probe

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/plannerdev/planner/internal/analysis"
)

// Result is what a run measured and how it ended.
type Result struct {
	Config  Config            // the configuration, defaults applied
	Records []analysis.Record // every request, by step and index
	// Analysis holds the step summaries, the knee, the collapse point,
	// quota_limited, the USL fit and notes (the probe's own included).
	Analysis     analysis.Result
	RateLimits   RateLimits        // the quota the endpoint announced
	StopReason   string            // one of the Stop* constants
	StopDetail   string            // the stop in words and numbers
	Sent         int               // HTTP requests sent, retries included
	TokensUsed   int               // input plus output tokens, as reported (estimated without usage)
	Shed         int               // open-loop arrivals shed at the in-flight cap
	ErrorSamples map[string]string // the first message of each error class
	Started      time.Time
	Ended        time.Time
}

// Summary is the document of steps.json: the analysis (steps, knee,
// collapse, quota_limited, usl, notes) with the announced rate limits, why
// the run stopped, what it spent, and its configuration without the key.
type Summary struct {
	analysis.Result
	RateLimits   RateLimits        `json:"rate_limits"`
	StopReason   string            `json:"stop_reason"`
	StopDetail   string            `json:"stop_detail,omitempty"`
	Requests     int               `json:"requests"`
	Sent         int               `json:"sent"`
	TokensUsed   int               `json:"tokens_used"`
	Shed         int               `json:"shed,omitempty"`
	ErrorSamples map[string]string `json:"error_samples,omitempty"`
	Started      time.Time         `json:"started"`
	Ended        time.Time         `json:"ended"`
	Config       Config            `json:"config"`
}

// Summary returns the run's steps.json document.
func (r *Result) Summary() Summary {
	return Summary{
		Result: r.Analysis, RateLimits: r.RateLimits, StopReason: r.StopReason, StopDetail: r.StopDetail,
		Requests: len(r.Records), Sent: r.Sent, TokensUsed: r.TokensUsed, Shed: r.Shed,
		ErrorSamples: r.ErrorSamples, Started: r.Started, Ended: r.Ended, Config: r.Config,
	}
}

// Failure explains, in terms an operator can act on, a run in which no
// request succeeded; it returns nil when at least one did.
func (r *Result) Failure() error {
	counts := map[string]int{}
	for _, rec := range r.Records {
		if rec.OK {
			return nil
		}
		counts[rec.ErrorClass]++
	}
	if len(r.Records) == 0 {
		return fmt.Errorf("no request was sent (%s)", cmp.Or(r.StopDetail, r.StopReason))
	}
	var class string
	for c, n := range counts {
		if n > counts[class] || (n == counts[class] && c < class) {
			class = c
		}
	}
	sample := cmp.Or(r.ErrorSamples[class], "no detail")
	n := counts[class]
	switch class {
	case analysis.ErrTransport:
		return fmt.Errorf("the endpoint is unreachable: %d of %d requests could not connect (%s)", n, len(r.Records), sample)
	case analysis.ErrTimeout:
		return fmt.Errorf("no request succeeded: %d of %d timed out after the %s deadline", n, len(r.Records), r.Config.Deadline)
	case analysis.ErrClient:
		return fmt.Errorf("the endpoint refused the requests (%s); check the base URL, the model and the API key", sample)
	case analysis.ErrRateLimited:
		return fmt.Errorf("no request succeeded: %d of %d were rate limited (%s)", n, len(r.Records), sample)
	case analysis.ErrServer:
		return fmt.Errorf("no request succeeded: the endpoint failed %d of %d with server errors (%s)", n, len(r.Records), sample)
	case analysis.ErrBadStream:
		return fmt.Errorf("no request succeeded: %d of %d streams were malformed (%s)", n, len(r.Records), sample)
	case analysis.ErrCancelled:
		return errors.New("the run was cancelled before any request succeeded")
	}
	return fmt.Errorf("no request succeeded (%s)", sample)
}

// result judges the run's records and assembles the Result.
func (r *runner) result(reason, detail string) *Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	recs := slices.Clone(r.records)
	slices.SortStableFunc(recs, func(a, b analysis.Record) int {
		return cmp.Or(cmp.Compare(a.Step, b.Step), cmp.Compare(a.Index, b.Index))
	})
	walls := map[int]float64{}
	byStep := map[int][]analysis.Record{}
	for _, rec := range recs {
		byStep[rec.Step] = append(byStep[rec.Step], rec)
	}
	for c, rs := range byStep {
		for k, v := range stepWall(c, rs) {
			walls[k] = v
		}
	}
	steps := analysis.Summarize(recs, r.options(), walls)
	if o := r.cfg.Open; o != nil {
		for i := range steps {
			steps[i].RateRPS = o.RateRPS
		}
	}
	an := analysis.Analyze(steps, r.options())
	an.Notes = append(an.Notes, r.notes(recs, &an, reason)...)
	sent, tokens := r.budget.used()
	return &Result{
		Config: r.cfg, Records: recs, Analysis: an, RateLimits: r.sender.limits.snapshot(),
		StopReason: reason, StopDetail: detail, Sent: sent, TokensUsed: tokens, Shed: int(r.shed.Load()),
		ErrorSamples: maps.Clone(r.samples), Started: r.t0, Ended: time.Now(),
	}
}

// notes adds what the probe knows beyond the step table, and widens
// quota_limited to 429s that a retry later got past: they show the quota
// binding as much as the 429s that stayed.
func (r *runner) notes(recs []analysis.Record, an *analysis.Result, reason string) []string {
	var notes []string
	if !an.QuotaLimited && len(an.Steps) > 0 {
		for _, rec := range recs {
			atOrBelow := (an.Knee != nil && rec.Step <= *an.Knee) || (an.Knee == nil && rec.Step == an.Steps[0].Concurrency)
			if rec.ErrorClass != analysis.ErrCancelled && answers429(rec) > 0 && atOrBelow {
				an.QuotaLimited = true
				notes = append(notes, fmt.Sprintf("429s were answered (and retried) at concurrency %d, at or below the knee: the quota binds before the model does", rec.Step))
				break
			}
		}
	}
	counted := map[int]int{}
	var cancelled, estimated int
	for _, rec := range recs {
		counted[rec.Step]++
		if rec.ErrorClass == analysis.ErrCancelled {
			cancelled++
		}
		if rec.OutputEstimated && rec.OK {
			estimated++
		}
	}
	for _, c := range slices.Sorted(maps.Keys(r.planned)) {
		if counted[c] < r.planned[c] {
			notes = append(notes, fmt.Sprintf("the step at concurrency %d sent %d of its %d requests (stopped: %s)", c, counted[c], r.planned[c], reason))
		}
	}
	if cancelled > 0 {
		notes = append(notes, fmt.Sprintf("requests in flight cancelled when the run stopped: %d (in requests.csv as %q, left out of the steps)", cancelled, analysis.ErrCancelled))
	}
	if estimated > 0 {
		notes = append(notes, fmt.Sprintf("successful responses without usage, whose output tokens are counted from chunks (output_estimated): %d", estimated))
	}
	if len(r.cfg.Prompts) == 0 {
		var sum, n int
		for _, rec := range recs {
			if rec.InputTokens > 0 && !rec.Warmup {
				sum += rec.InputTokens
				n++
			}
		}
		if n > 0 {
			notes = append(notes, fmt.Sprintf("synthetic prompts: target %d input tokens, calibrated to %d characters; measured mean %.0f input tokens",
				r.cfg.InputTokens, r.prompts.length(), float64(sum)/float64(n)))
		}
	}
	if s := r.shed.Load(); s > 0 {
		notes = append(notes, fmt.Sprintf("arrivals shed at the in-flight cap of %d: %d", r.cfg.Open.MaxInFlight, s))
	}
	return notes
}
