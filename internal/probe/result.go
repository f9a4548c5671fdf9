package probe

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/measure"
)

// Result is what a run measured and how it ended.
type Result struct {
	Config  Config           // the configuration, defaults applied
	Records []measure.Record // every request, by step and index
	// Analysis holds the step summaries, the knee, the collapse point,
	// quota_limited, the USL fit and notes (the probe's own included).
	Analysis     measure.Result
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
// the run stopped, what it spent (in all and per part of a search), and
// its configuration without the key.
type Summary struct {
	measure.Result
	RateLimits   RateLimits        `json:"rate_limits"`
	StopReason   string            `json:"stop_reason"`
	StopDetail   string            `json:"stop_detail,omitempty"`
	Requests     int               `json:"requests"`
	Sent         int               `json:"sent"`
	TokensUsed   int               `json:"tokens_used"`
	Spent        []Spend           `json:"spent"`
	Shed         int               `json:"shed,omitempty"`
	ErrorSamples map[string]string `json:"error_samples,omitempty"`
	Started      time.Time         `json:"started"`
	Ended        time.Time         `json:"ended"`
	Config       Config            `json:"config"`
}

// Spend is what one part of a run used: the ladder (or a search's
// doubling steps) and a search's refinement, counted apart.
type Spend struct {
	Part     string  `json:"part" enum:"ladder,search,refine,open_loop,prefill,cache,conversation"`
	Steps    int     `json:"steps"`
	Requests int     `json:"requests" doc:"HTTP requests sent, retries included."`
	Tokens   int     `json:"tokens" doc:"Input plus output tokens reported (counted from chunks without usage)."`
	WallS    float64 `json:"wall_s" doc:"From the first send to the last completion of the part."`
}

// Summary returns the run's steps.json document.
func (r *Result) Summary() Summary {
	return Summary{
		Result: r.Analysis, RateLimits: r.RateLimits, StopReason: r.StopReason, StopDetail: r.StopDetail,
		Requests: len(r.Records), Sent: r.Sent, TokensUsed: r.TokensUsed, Spent: r.Spent(), Shed: r.Shed,
		ErrorSamples: r.ErrorSamples, Started: r.Started, Ended: r.Ended, Config: r.Config,
	}
}

// Spent splits what the run used into its parts, from its records.
func (r *Result) Spent() []Spend {
	main := "ladder"
	switch {
	case r.Config.Open != nil:
		main = "open_loop"
	case r.Config.promptMode() != "":
		main = r.Config.promptMode()
	case r.Config.Search:
		main = "search"
	}
	parts := []Spend{{Part: main}}
	if r.Config.Search {
		parts = append(parts, Spend{Part: "refine"})
	}
	type span struct{ first, last float64 }
	spans := make([]span, len(parts))
	steps := make([]map[stepKey]bool, len(parts))
	for i := range spans {
		spans[i] = span{math.Inf(1), math.Inf(-1)}
		steps[i] = map[stepKey]bool{}
	}
	for _, rec := range r.Records {
		i := 0
		if rec.Refine {
			i = 1
		}
		p := &parts[i]
		p.Requests += max(1, rec.Attempts)
		p.Tokens += rec.InputTokens + rec.OutputTokens
		steps[i][stepKey{rec.Step, rec.RateRPS}] = true
		spans[i].first = math.Min(spans[i].first, rec.StartS)
		spans[i].last = math.Max(spans[i].last, rec.StartS+max(rec.E2EMs, rec.E2EWithRetriesMs)/1000)
	}
	for i := range parts {
		parts[i].Steps = len(steps[i])
		if spans[i].last > spans[i].first {
			parts[i].WallS = math.Round((spans[i].last-spans[i].first)*1000) / 1000
		}
	}
	return parts
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
	case measure.ErrTransport:
		return fmt.Errorf("the endpoint is unreachable: %d of %d requests could not connect (%s)", n, len(r.Records), sample)
	case measure.ErrTimeout:
		return fmt.Errorf("no request succeeded: %d of %d timed out after the %s deadline", n, len(r.Records), r.Config.deadline())
	case measure.ErrClient:
		return fmt.Errorf("the endpoint refused the requests (%s); check the base URL, the model and the API key", sample)
	case measure.ErrRateLimited:
		return fmt.Errorf("no request succeeded: %d of %d were rate limited (%s)", n, len(r.Records), sample)
	case measure.ErrServer:
		return fmt.Errorf("no request succeeded: the endpoint failed %d of %d with server errors (%s)", n, len(r.Records), sample)
	case measure.ErrBadStream:
		return fmt.Errorf("no request succeeded: %d of %d streams were malformed (%s)", n, len(r.Records), sample)
	case measure.ErrCancelled:
		if r.StopReason != StopCancelled {
			// A budget or a stop rule ended the run with its requests in
			// flight: no one cancelled it.
			noun := "requests"
			if n == 1 {
				noun = "request"
			}
			return fmt.Errorf("no request succeeded before the run stopped: %s, with %d %s in flight cut short", cmp.Or(r.StopDetail, r.StopReason), n, noun)
		}
		return errors.New("the run was cancelled before any request succeeded")
	}
	return fmt.Errorf("no request succeeded (%s)", sample)
}

// result judges the run's records and assembles the Result.
func (r *runner) result(reason, detail string) *Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	recs := slices.Clone(r.records)
	slices.SortStableFunc(recs, func(a, b measure.Record) int {
		return cmp.Or(cmp.Compare(a.Step, b.Step), cmp.Compare(a.RateRPS, b.RateRPS), cmp.Compare(a.Index, b.Index))
	})
	var steps []measure.Step
	if r.cfg.Open != nil {
		steps = analysis.SummarizeOpen(recs, r.opts)
	} else {
		steps = analysis.Summarize(recs, r.opts)
	}
	an := analysis.Analyze(steps, r.opts)
	if j, ok := r.cfg.mode().(judge); ok {
		an.Mode = r.cfg.promptMode()
		j.judge(recs, &an)
	}
	withConnections(an.Steps, recs)
	an.Served = measure.SummarizeServed(r.cfg.Model, r.cfg.deployment(), recs)
	an.Connections = measure.SummarizeConns(recs)
	limits := r.sender.limits.snapshot()
	an.Notes = append(an.Notes, r.notes(recs, &an, limits, reason)...)
	an.Notes = append(an.Notes, an.Warnings()...)
	sent, tokens := r.budget.used()
	return &Result{
		Config: r.cfg, Records: recs, Analysis: an, RateLimits: limits,
		StopReason: reason, StopDetail: detail, Sent: sent, TokensUsed: tokens, Shed: int(r.shed.Load()),
		ErrorSamples: maps.Clone(r.samples), Started: r.t0, Ended: time.Now(),
	}
}

// notes adds what the probe knows beyond the step table, and sets
// quota_limited when the rate-limit headers showed the key exhausted.
func (r *runner) notes(recs []measure.Record, an *measure.Result, limits RateLimits, reason string) []string {
	var notes []string
	if dim := limits.exhausted(); dim != "" {
		if !an.QuotaLimited {
			notes = append(notes, fmt.Sprintf("the rate-limit headers showed the key's %s exhausted (remaining 0): the quota binds, not the model", dim))
		}
		an.QuotaLimited = true
	}
	counted := map[stepKey]int{}
	var cancelled, estimated, retried int
	for _, rec := range recs {
		counted[stepKey{rec.Step, rec.RateRPS}]++
		if rec.ErrorClass == measure.ErrCancelled {
			cancelled++
		}
		if rec.OutputEstimated && rec.OK {
			estimated++
		}
		if rec.OK && rec.Attempts > 1 {
			retried++
		}
	}
	keys := slices.SortedFunc(maps.Keys(r.planned), func(a, b stepKey) int { return cmp.Or(cmp.Compare(a.c, b.c), cmp.Compare(a.rate, b.rate)) })
	for _, k := range keys {
		n, planned, shed := counted[k], r.planned[k], r.shedAt[k]
		switch {
		case n >= planned:
		case k.rate == 0:
			notes = append(notes, fmt.Sprintf("the step at %s sent %d of its %d requests (stopped: %s)", stepName(k.c, k.rate), n, planned, reason))
		case shed == 0:
			notes = append(notes, fmt.Sprintf("the step at %s sent %d of its %d arrivals (stopped: %s)", stepName(k.c, k.rate), n, planned, reason))
		case n+shed >= planned:
			notes = append(notes, fmt.Sprintf("the step at %s sent %d of its %d arrivals: %d found the in-flight cap of %d reached and were shed",
				stepName(k.c, k.rate), n, planned, shed, k.c))
		default:
			notes = append(notes, fmt.Sprintf("the step at %s sent %d of its %d arrivals: %d found the in-flight cap of %d reached and were shed, the rest came after the stop (stopped: %s)",
				stepName(k.c, k.rate), n, planned, shed, k.c, reason))
		}
	}
	for _, c := range r.extended {
		notes = append(notes, fmt.Sprintf("the step at concurrency %d was measured twice as long: its goodput gain was within its noise of the min_gain_pct threshold", c))
	}
	if retried > 0 {
		notes = append(notes, fmt.Sprintf("%d successful requests were retried after a 429: their TTFT and E2E are timed from the attempt that succeeded; the time with the waits is e2e_with_retries_ms", retried))
	}
	if cancelled > 0 {
		notes = append(notes, fmt.Sprintf("requests in flight cancelled when the run stopped: %d (in requests.csv as %q, left out of the steps)", cancelled, measure.ErrCancelled))
	}
	if estimated > 0 {
		notes = append(notes, fmt.Sprintf("successful responses without usage, whose output tokens are counted from chunks (output_estimated): %d", estimated))
	}
	if len(r.cfg.Prompts) == 0 && r.cfg.Prefill == nil && r.cfg.Conversation == nil {
		var sum, n int
		for _, rec := range recs {
			if rec.InputTokens > 0 && !rec.Warmup {
				sum += rec.InputTokens
				n++
			}
		}
		if n > 0 {
			notes = append(notes, fmt.Sprintf("synthetic prompts: target %d input tokens, calibrated to %d characters; measured mean %.0f input tokens",
				r.cfg.inputTokens(), r.prompts.length(), float64(sum)/float64(n)))
		}
	}
	if s := r.shed.Load(); s > 0 {
		notes = append(notes, fmt.Sprintf("arrivals shed at the in-flight cap of %d: %d", r.cfg.Open.MaxInFlight, s))
	}
	if r.cfg.Open != nil {
		notes = append(notes, fmt.Sprintf("no curve.yaml: an open loop's steps are offered rates under a cap of %d in flight, not concurrencies a pool holds; a ladder (--steps) or --search measures the curve", r.cfg.Open.MaxInFlight))
	}
	return notes
}

// withConnections sets each step's connection summary from its records.
func withConnections(steps []measure.Step, recs []measure.Record) {
	by := map[stepKey][]measure.Record{}
	for _, rec := range recs {
		by[stepKey{rec.Step, rec.RateRPS}] = append(by[stepKey{rec.Step, rec.RateRPS}], rec)
	}
	for i := range steps {
		steps[i].Connections = measure.SummarizeConns(by[stepKey{steps[i].Concurrency, steps[i].RateRPS}])
	}
}

// Warnings are what an operator must know of the run beyond its
// verdicts (measure.Result.Warnings); they are among the notes too.
func (r *Result) Warnings() []string { return r.Analysis.Warnings() }
