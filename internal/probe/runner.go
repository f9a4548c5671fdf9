package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/redact"
)

// errDurationBudget is the cancel cause of a run whose time budget is spent.
var errDurationBudget = errors.New("the time budget is spent")

// runner is the state of one run.
type runner struct {
	cfg     Config
	sender  *sender
	prompts *prompts
	budget  *budget
	obs     serialObserver
	t0      time.Time
	seq     atomic.Int64 // requests started in the run, for prompt choice
	shed    atomic.Int64 // open-loop arrivals shed

	mu      sync.Mutex
	records []analysis.Record
	samples map[string]string // first message of each error class
	steps   []analysis.Step   // summaries of the steps run so far
	planned map[int]int       // requests planned per step
}

// Run probes the endpoint that cfg describes and returns what it measured.
// obs, if not nil, watches the run. The error is only for a configuration
// that does not validate; a run that measured nothing good still returns
// its Result (see Result.Failure). Cancelling ctx stops the run, and the
// Result keeps what was measured.
func Run(ctx context.Context, cfg Config, obs Observer) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("probe configuration: %w", err)
	}
	endpoint, err := cfg.endpoint()
	if err != nil {
		return nil, fmt.Errorf("probe configuration: %w", err)
	}
	maxConc := cfg.Steps[len(cfg.Steps)-1]
	if cfg.Open != nil {
		maxConc = cfg.Open.MaxInFlight
	}
	tr := newTransport(maxConc, cfg.DialContext)
	defer tr.CloseIdleConnections()

	t0 := time.Now()
	r := &runner{
		cfg:     cfg,
		prompts: newPrompts(cfg.Prompts, cfg.InputTokens, strconv.FormatInt(t0.UnixNano(), 36)),
		budget:  &budget{maxRequests: cfg.Budget.MaxRequests, maxTokens: cfg.Budget.MaxTokens},
		obs:     serialObserver{obs: obs},
		t0:      t0,
		samples: map[string]string{},
		planned: map[int]int{},
	}
	r.sender = &sender{
		client:      &http.Client{Transport: tr, CheckRedirect: cfg.CheckRedirect},
		url:         endpoint,
		deadline:    cfg.Deadline,
		maxAttempts: cfg.MaxAttempts,
		backoff:     backoff{base: cfg.BackoffBase, cap: cfg.BackoffCap},
		rnd:         newLockedRand(cfg.Seed),
		limits:      &rateLimitLog{},
		budget:      r.budget,
		redact:      redact.New(cfg.APIKey),
	}
	if cfg.APIKey != "" {
		r.sender.keyHeader, r.sender.keyValue = cfg.APIKeyHeader, cfg.APIKey
		if cfg.APIKeyHeader == DefaultAPIKeyHeader && !cfg.APIKeyAsIs {
			r.sender.keyValue = "Bearer " + cfg.APIKey
		}
	}

	runCtx, cancel := context.WithTimeoutCause(ctx, cfg.Budget.MaxDuration, errDurationBudget)
	defer cancel()
	var reason, detail string
	if cfg.Open != nil {
		reason, detail = r.openLoop(runCtx)
	} else {
		reason, detail = r.ramp(runCtx)
	}
	return r.result(reason, detail), nil
}

// ramp runs the closed-loop steps until the ladder ends or a stop rule
// fires.
func (r *runner) ramp(ctx context.Context) (reason, detail string) {
	for i, c := range r.cfg.Steps {
		if i > 0 && !sleep(ctx, r.cfg.Pause) {
			return r.stopAfter(ctx, r.cfg.Steps[i-1], nil)
		}
		recs := r.closedStep(ctx, c)
		r.finishStep(c, 0, recs)
		if reason, detail := r.stopAfter(ctx, c, recs); reason != "" {
			return reason, detail
		}
	}
	return StopCompleted, ""
}

// maxStartSpread bounds how long a step takes to open all its workers.
const maxStartSpread = 2 * time.Second

// closedStep runs one closed-loop step: c workers (a semaphore of c) share
// the step's N requests, each sending its next request as soon as its
// previous one ends. The workers open evenly over one service time (the
// previous step's median E2E, at most maxStartSpread), which is how a
// closed loop's sends are spaced once it runs steadily; it spares the
// endpoint a burst of c simultaneous requests that the measurement would
// discard as warm-up anyway.
func (r *runner) closedStep(ctx context.Context, c int) []analysis.Record {
	n := r.cfg.requestsFor(c)
	w := r.cfg.warmupFor(c, n)
	r.plan(c, n)
	workers := min(c, n)
	spread := r.startSpread()
	var next atomic.Int64
	var mu sync.Mutex
	recs := make([]analysis.Record, 0, n)
	var wg sync.WaitGroup
	for j := range workers {
		wg.Go(func() {
			if !sleep(ctx, spread*time.Duration(j)/time.Duration(workers)) {
				return
			}
			for ctx.Err() == nil && r.budget.exhausted() == "" {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				rec, ok := r.request(ctx, c, i, i < w)
				if !ok {
					return
				}
				mu.Lock()
				recs = append(recs, rec)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return recs
}

// startSpread is the time over which a step opens its workers: the median
// E2E of the step before, at most maxStartSpread; 0 for the first step.
func (r *runner) startSpread() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.steps) == 0 {
		return 0
	}
	e2e := time.Duration(r.steps[len(r.steps)-1].E2EP50Ms * float64(time.Millisecond))
	return min(max(e2e, 0), maxStartSpread)
}

// openLoop runs one open-loop step: Poisson arrivals at the configured
// rate; an arrival that finds the in-flight cap reached is shed.
func (r *runner) openLoop(ctx context.Context) (reason, detail string) {
	o := r.cfg.Open
	w := r.cfg.warmupFor(o.MaxInFlight, o.Requests)
	r.plan(o.MaxInFlight, o.Requests)
	slots := make(chan struct{}, o.MaxInFlight)
	var mu sync.Mutex
	var recs []analysis.Record
	var wg sync.WaitGroup
	due := time.Now()
	for i := 0; i < o.Requests && r.budget.exhausted() == ""; i++ {
		if i > 0 {
			due = due.Add(time.Duration(r.sender.rnd.expFloat64() / o.RateRPS * float64(time.Second)))
			if !sleep(ctx, time.Until(due)) {
				break
			}
		}
		select {
		case slots <- struct{}{}:
			wg.Go(func() {
				defer func() { <-slots }()
				if rec, ok := r.request(ctx, o.MaxInFlight, i, i < w); ok {
					mu.Lock()
					recs = append(recs, rec)
					mu.Unlock()
				}
			})
		default:
			r.shed.Add(1)
		}
	}
	wg.Wait()
	r.finishStep(o.MaxInFlight, o.RateRPS, recs)
	if reason, detail := r.stopAfter(ctx, o.MaxInFlight, recs); reason != "" {
		return reason, detail
	}
	return StopCompleted, ""
}

// plan announces a step.
func (r *runner) plan(c, n int) {
	r.mu.Lock()
	r.planned[c] = n
	r.mu.Unlock()
	r.obs.stepStarted(c, n)
}

// request sends request idx of the step of concurrency step and records it.
// ok is false when the budget refused to send it (nothing is recorded).
func (r *runner) request(ctx context.Context, step, idx int, warmup bool) (rec analysis.Record, ok bool) {
	seq := int(r.seq.Add(1) - 1)
	in, err := r.prompts.next(seq)
	if err != nil {
		return r.keep(analysis.Record{Step: step, Index: idx, Warmup: warmup, ErrorClass: analysis.ErrClient,
			StartS: time.Since(r.t0).Seconds()}, err.Error()), true
	}
	body, err := json.Marshal(chatRequest{
		Model: r.cfg.Model, Messages: in.messages, MaxTokens: r.cfg.MaxTokens, Stream: true,
		StreamOptions: streamOptions{IncludeUsage: true}, IgnoreEOS: r.cfg.IgnoreEOS,
	})
	if err != nil {
		return r.keep(analysis.Record{Step: step, Index: idx, Warmup: warmup, ErrorClass: analysis.ErrClient,
			StartS: time.Since(r.t0).Seconds()}, fmt.Sprintf("encoding the request: %v", err)), true
	}
	// An upper estimate of the input (at least 2 bytes of JSON per token,
	// plus the chat template), plus the most output the request may get.
	reserve := len(in.messages)/2 + 16 + r.cfg.MaxTokens
	if !r.budget.admit(reserve) {
		return analysis.Record{}, false
	}
	rep := r.sender.send(ctx, body)
	rec = analysis.Record{
		Step: step, Index: idx, StartS: rep.start.Sub(r.t0).Seconds(),
		Status: rep.status, ErrorClass: rep.class, Attempts: rep.attempts,
		RetryAfterMs: ms(rep.retryAfter), Warmup: warmup, OK: rep.class == "",
		E2EMs: ms(rep.end),
	}
	st := rep.stream
	used := 0
	if rep.status == http.StatusOK {
		rec.AckMs = ms(st.ack)
		rec.TTFTMs = ms(st.ttft)
		rec.OutputTokens, rec.OutputEstimated = st.outputTokens()
		rec.InputTokens = st.prompt
		used = reserve - r.cfg.MaxTokens + rec.OutputTokens
		if st.usage {
			used = st.prompt + st.completion
			r.prompts.observe(in.chars, st.prompt)
		}
	}
	if rec.OK {
		rec.E2EMs = ms(st.e2e)
	}
	r.budget.settle(reserve, used)
	return r.keep(rec, rep.msg), true
}

// keep stores a finished request and shows it to the observer.
func (r *runner) keep(rec analysis.Record, msg string) analysis.Record {
	r.mu.Lock()
	r.records = append(r.records, rec)
	if rec.ErrorClass != "" && msg != "" {
		if _, seen := r.samples[rec.ErrorClass]; !seen {
			r.samples[rec.ErrorClass] = msg
		}
	}
	r.mu.Unlock()
	r.obs.record(rec)
	return rec
}

// finishStep summarises a step's records and shows the summary.
func (r *runner) finishStep(c int, rate float64, recs []analysis.Record) {
	steps := analysis.Summarize(recs, r.options(), stepWall(c, recs))
	if len(steps) == 0 {
		return
	}
	s := steps[0]
	s.RateRPS = rate
	r.mu.Lock()
	r.steps = append(r.steps, s)
	r.mu.Unlock()
	r.obs.stepDone(s)
}

// options are the judgement settings of the run.
func (r *runner) options() analysis.Options {
	return analysis.Options{DeadlineMs: ms(r.cfg.Deadline)}
}

// stepWall is the measuring window of a step's records: from the
// completion that ends the warm-up (the W-th completion, W the number of
// warm-up records) to the last completion, so that the N − W completions
// counted fall inside it and, in a closed loop, it spans whole rounds of
// the semaphore. Without warm-up it starts at the first send. Cancelled
// records do not count.
func stepWall(c int, recs []analysis.Record) map[int]float64 {
	var ends []float64
	first, warm := -1.0, 0
	for _, rec := range recs {
		if rec.ErrorClass == analysis.ErrCancelled {
			continue
		}
		ends = append(ends, rec.StartS+rec.E2EMs/1000)
		if first < 0 || rec.StartS < first {
			first = rec.StartS
		}
		if rec.Warmup {
			warm++
		}
	}
	if len(ends) == 0 || warm >= len(ends) {
		return nil
	}
	slices.Sort(ends)
	start := first
	if warm > 0 {
		start = ends[warm-1]
	}
	if wall := ends[len(ends)-1] - start; wall > 0 {
		return map[int]float64{c: wall}
	}
	return nil
}

// stopAfter applies the stop rules after the step of concurrency c, whose
// records are recs; it returns "" when the ramp may go on.
func (r *runner) stopAfter(ctx context.Context, c int, recs []analysis.Record) (reason, detail string) {
	if ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), errDurationBudget) {
			return StopBudgetDuration, fmt.Sprintf("the time budget of %s was spent at concurrency %d", r.cfg.Budget.MaxDuration, c)
		}
		return StopCancelled, fmt.Sprintf("cancelled at concurrency %d", c)
	}
	if spent := r.budget.exhausted(); spent != "" {
		sent, tokens := r.budget.used()
		return spent, fmt.Sprintf("budget spent during the step at concurrency %d (%d requests sent, %d tokens)", c, sent, tokens)
	}
	var answers, refused, ok, counted int
	for _, rec := range recs {
		if rec.ErrorClass == analysis.ErrCancelled {
			continue
		}
		counted++
		answers += rec.Attempts
		refused += answers429(rec)
		if rec.OK {
			ok++
		}
	}
	if answers > 0 {
		if ratio := float64(refused) / float64(answers); ratio > r.cfg.Max429Ratio {
			return StopMax429Ratio, fmt.Sprintf("%d of %d answers at concurrency %d were 429 (%.2f > max_429_ratio %g)",
				refused, answers, c, ratio, r.cfg.Max429Ratio)
		}
	}
	if counted > 0 && ok == 0 {
		return StopNoSuccess, fmt.Sprintf("no request succeeded at concurrency %d", c)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.steps); n >= 3 && r.steps[n-1].Concurrency == c &&
		r.steps[n-1].GoodputRPS < r.steps[n-2].GoodputRPS && r.steps[n-2].GoodputRPS < r.steps[n-3].GoodputRPS {
		return StopGoodputFalling, fmt.Sprintf("goodput fell at concurrency %d and %d", r.steps[n-2].Concurrency, c)
	}
	return "", ""
}

// answers429 is how many 429 answers a request got: only 429s are retried,
// so every send but the last was one, and the last was one when the
// request failed as rate limited.
func answers429(rec analysis.Record) int {
	n := max(0, rec.Attempts-1)
	if rec.ErrorClass == analysis.ErrRateLimited {
		n++
	}
	return n
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
