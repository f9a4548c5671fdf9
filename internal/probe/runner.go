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
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/redact"
)

// errDurationBudget is the cancel cause of a run whose time budget is spent.
var errDurationBudget = errors.New("the time budget is spent")

// runner is the state of one run.
type runner struct {
	cfg     Config
	opts    analysis.Options
	sender  *sender
	prompts *prompts
	budget  *budget
	obs     serialObserver
	t0      time.Time
	seq     atomic.Int64 // requests started in the run, for prompt choice
	shed    atomic.Int64 // open-loop arrivals shed

	mu       sync.Mutex
	records  []measure.Record
	samples  map[string]string // first message of each error class
	steps    []measure.Step    // summaries of the steps run so far
	planned  map[stepKey]int   // requests planned per step
	extended []int             // concurrencies whose step was measured twice as long, its gain being ambiguous
}

// stepKey names a step: its concurrency (the in-flight cap of an open
// loop) and its rate (0 in a closed loop).
type stepKey struct {
	c    int
	rate float64
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
	concs := cfg.Concurrencies()
	tr := newTransport(concs[len(concs)-1], cfg.DialContext)
	defer tr.CloseIdleConnections()

	t0 := time.Now()
	r := &runner{
		cfg:     cfg,
		opts:    cfg.AnalysisOptions(),
		prompts: newPrompts(cfg.Prompts, cfg.InputTokens, strconv.FormatInt(t0.UnixNano(), 36)),
		budget:  &budget{maxRequests: cfg.Budget.MaxRequests, maxTokens: cfg.Budget.MaxTokens},
		obs:     serialObserver{obs: obs},
		t0:      t0,
		samples: map[string]string{},
		planned: map[stepKey]int{},
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
	switch {
	case cfg.Open != nil:
		reason, detail = r.openLoop(runCtx)
	case cfg.Search:
		reason, detail = r.search(runCtx)
	default:
		reason, detail = r.ramp(runCtx)
	}
	return r.result(reason, detail), nil
}

// ramp runs the closed-loop ladder until it ends or a stop rule fires.
func (r *runner) ramp(ctx context.Context) (reason, detail string) {
	for i, c := range r.cfg.Steps {
		if i > 0 && !sleep(ctx, r.cfg.Pause) {
			return r.stopAfter(ctx, r.cfg.Steps[i-1], nil)
		}
		recs := r.closedStep(ctx, c, stepSpec{n: r.cfg.requestsFor(c), extend: !r.cfg.Exact})
		r.finishStep(c, 0, recs)
		if reason, detail := r.stopAfter(ctx, c, recs); reason != "" {
			return reason, detail
		}
	}
	return StopCompleted, ""
}

// search runs the knee search: doubling steps, each sized by its noise,
// until the first step that fails the knee rule, then the refinement.
func (r *runner) search(ctx context.Context) (reason, detail string) {
	concs := doubling(r.cfg.SearchMax)
	for i, c := range concs {
		if i > 0 && !sleep(ctx, r.cfg.Pause) {
			return r.stopAfter(ctx, concs[i-1], nil)
		}
		recs := r.closedStep(ctx, c, stepSpec{n: r.cfg.requestsFor(c), adaptive: true})
		r.finishStep(c, 0, recs)
		if reason, detail := r.stopAfter(ctx, c, recs); reason != "" {
			return reason, detail
		}
		if an := r.analyze(); an.FirstFailing != nil {
			return r.refine(ctx, c)
		}
	}
	return StopCompleted, fmt.Sprintf("every step up to the search's maximum of %d passed the knee rule", r.cfg.SearchMax)
}

// refine bisects between the knee and the first failing step (see
// measure.Result.NextRefinement), one fixed-size step at a time.
func (r *runner) refine(ctx context.Context, last int) (reason, detail string) {
	for {
		c, ok := analysis.NextRefinement(r.analyze())
		if !ok {
			return StopCompleted, ""
		}
		if !sleep(ctx, r.cfg.Pause) {
			return r.stopAfter(ctx, last, nil)
		}
		recs := r.closedStep(ctx, c, stepSpec{n: r.cfg.requestsFor(c), refine: true})
		r.finishStep(c, 0, recs)
		if reason, detail := r.stopAfter(ctx, c, recs); reason != "" {
			return reason, detail
		}
		last = c
	}
}

// analyze judges the steps so far.
func (r *runner) analyze() measure.Result {
	r.mu.Lock()
	steps := slices.Clone(r.steps)
	r.mu.Unlock()
	return analysis.Analyze(steps, r.opts)
}

// stepSpec shapes a closed-loop step.
type stepSpec struct {
	n        int  // requests to send: a fixed step's size, an adaptive step's cap
	adaptive bool // end once the goodput interval is within ±5 % (after MinAdaptive measured requests)
	extend   bool // a fixed step whose gain over the step before is ambiguous at n sends goes on for n more, once
	refine   bool // a refinement step of a knee search
}

// maxStartSpread bounds how long a step takes to open all its workers.
const maxStartSpread = 2 * time.Second

// closedStep runs one closed-loop step: c workers (a semaphore of c) share
// the step's requests, each sending its next request as soon as its
// previous one ends. The workers open evenly over one service time (the
// previous step's median E2E, at most maxStartSpread), which is how a
// closed loop's sends are spaced once it runs steadily; it spares the
// endpoint a burst of c simultaneous requests that the measurement would
// discard as warm-up anyway. Before each send, the step decides whether to
// go on (stepState.admit).
func (r *runner) closedStep(ctx context.Context, c int, spec stepSpec) []measure.Record {
	st := &stepState{r: r, c: c, spec: spec, limit: spec.n, warmup: r.cfg.warmupFor(c, spec.n), prev: r.lastStep()}
	r.plan(stepKey{c: c}, spec.n)
	workers := min(c, spec.n)
	spread := r.startSpread()
	var wg sync.WaitGroup
	for j := range workers {
		wg.Go(func() {
			if !sleep(ctx, spread*time.Duration(j)/time.Duration(workers)) {
				return
			}
			for ctx.Err() == nil && r.budget.exhausted() == "" {
				i, ok := st.admit()
				if !ok {
					return
				}
				rec, ok := r.request(ctx, stepKey{c: c}, i, i < st.warmup, spec.refine)
				if !ok {
					return
				}
				st.add(rec)
			}
		})
	}
	wg.Wait()
	r.mu.Lock()
	switch {
	case st.extended:
		r.extended = append(r.extended, c)
		r.planned[stepKey{c: c}] = st.limit
	case st.precise:
		r.planned[stepKey{c: c}] = st.next // an adaptive step plans as many as it needs
	}
	r.mu.Unlock()
	return st.recs
}

// stepState is a running closed-loop step: what it has measured and how
// many requests it may still send.
type stepState struct {
	r        *runner
	c        int
	spec     stepSpec
	warmup   int
	prev     *measure.Step // the step before, for the gain rule
	mu       sync.Mutex
	next     int // index of the next send
	limit    int // sends allowed
	stopped  bool
	precise  bool // an adaptive step ended by its precision
	extended bool
	recs     []measure.Record
}

// admit hands out the index of the next send, or false when the step has
// sent enough: an adaptive step once it has MinAdaptive(c) measured sends
// and the requests finished so far know its goodput within ±5 %; any
// step at its limit, which a step whose gain is ambiguous doubles once
// when the budget has room for it.
func (s *stepState) admit() (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return 0, false
	}
	i := s.next
	if s.spec.adaptive && i >= s.warmup+analysis.MinAdaptive(s.c) {
		if rel, _ := analysis.Precision(s.recs, s.c, s.r.opts.DeadlineMs); rel <= analysis.TargetPrecision {
			s.stopped, s.precise = true, true
			return 0, false
		}
	}
	if i >= s.limit {
		if !s.spec.extend || s.extended || s.prev == nil || !s.r.budget.room(s.spec.n) ||
			!analysis.GainAmbiguous(*s.prev, analysis.Provisional(s.c, s.recs, s.r.opts), s.r.opts.WithDefaults().MinGainPct) {
			s.stopped = true
			return 0, false
		}
		s.limit += s.spec.n
		s.extended = true
	}
	s.next++
	return i, true
}

func (s *stepState) add(rec measure.Record) {
	s.mu.Lock()
	s.recs = append(s.recs, rec)
	s.mu.Unlock()
}

// lastStep is the last closed-loop step measured before a refinement, nil
// for the first.
func (r *runner) lastStep() *measure.Step {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.steps) - 1; i >= 0; i-- {
		if !r.steps[i].Refine {
			s := r.steps[i]
			return &s
		}
	}
	return nil
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

// openLoop runs the open-loop steps, one per rate: Poisson arrivals at the
// rate; an arrival that finds the in-flight cap reached is shed.
func (r *runner) openLoop(ctx context.Context) (reason, detail string) {
	o := r.cfg.Open
	for i, rate := range o.Rates {
		if i > 0 && !sleep(ctx, r.cfg.Pause) {
			return r.stopAfter(ctx, o.MaxInFlight, nil)
		}
		recs := r.openStep(ctx, rate)
		r.finishStep(o.MaxInFlight, rate, recs)
		if reason, detail := r.stopAfter(ctx, o.MaxInFlight, recs); reason != "" {
			return reason, detail
		}
	}
	return StopCompleted, ""
}

// openStep runs one open-loop step at rate.
func (r *runner) openStep(ctx context.Context, rate float64) []measure.Record {
	o := r.cfg.Open
	key := stepKey{c: o.MaxInFlight, rate: rate}
	w := r.cfg.warmupFor(o.MaxInFlight, o.Requests)
	r.plan(key, o.Requests)
	slots := make(chan struct{}, o.MaxInFlight)
	var mu sync.Mutex
	var recs []measure.Record
	var wg sync.WaitGroup
	due := time.Now()
	for i := 0; i < o.Requests && r.budget.exhausted() == ""; i++ {
		if i > 0 {
			due = due.Add(time.Duration(r.sender.rnd.expFloat64() / rate * float64(time.Second)))
			if !sleep(ctx, time.Until(due)) {
				break
			}
		}
		select {
		case slots <- struct{}{}:
			wg.Go(func() {
				defer func() { <-slots }()
				if rec, ok := r.request(ctx, key, i, i < w, false); ok {
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
	return recs
}

// plan announces a step.
func (r *runner) plan(k stepKey, n int) {
	r.mu.Lock()
	r.planned[k] = n
	r.mu.Unlock()
	r.obs.stepStarted(k.c, n)
}

// request sends request idx of the step k and records it. ok is false
// when the budget refused to send it (nothing is recorded).
func (r *runner) request(ctx context.Context, k stepKey, idx int, warmup, refine bool) (rec measure.Record, ok bool) {
	base := measure.Record{Step: k.c, RateRPS: k.rate, Index: idx, Warmup: warmup, Refine: refine}
	seq := int(r.seq.Add(1) - 1)
	in, err := r.prompts.next(seq)
	if err != nil {
		base.ErrorClass, base.StartS = measure.ErrClient, time.Since(r.t0).Seconds()
		return r.keep(base, err.Error()), true
	}
	body, err := json.Marshal(chatRequest{
		Model: r.cfg.Model, Messages: in.messages, MaxTokens: r.cfg.MaxTokens, Stream: true,
		StreamOptions: streamOptions{IncludeUsage: true}, IgnoreEOS: r.cfg.IgnoreEOS,
	})
	if err != nil {
		base.ErrorClass, base.StartS = measure.ErrClient, time.Since(r.t0).Seconds()
		return r.keep(base, fmt.Sprintf("encoding the request: %v", err)), true
	}
	// An upper estimate of the input (at least 2 bytes of JSON per token,
	// plus the chat template), plus the most output the request may get.
	reserve := len(in.messages)/2 + 16 + r.cfg.MaxTokens
	if !r.budget.admit(reserve) {
		return measure.Record{}, false
	}
	rep := r.sender.send(ctx, body)
	rec = base
	rec.StartS = rep.start.Sub(r.t0).Seconds()
	rec.Status, rec.ErrorClass, rec.Attempts = rep.status, rep.class, rep.attempts
	rec.RetryAfterMs, rec.OK = ms(rep.retryAfter), rep.class == ""
	rec.E2EMs, rec.E2EWithRetriesMs = ms(rep.lastAttempt()), ms(rep.end)
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
func (r *runner) keep(rec measure.Record, msg string) measure.Record {
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

// finishStep summarises a step's records and shows the summary: a closed
// loop's in its steady state, an open loop's over its wall time.
func (r *runner) finishStep(c int, rate float64, recs []measure.Record) {
	var steps []measure.Step
	if rate > 0 {
		steps = analysis.SummarizeOpen(recs, r.opts)
	} else {
		steps = analysis.Summarize(recs, r.opts)
	}
	if len(steps) == 0 {
		return
	}
	s := steps[0]
	r.mu.Lock()
	r.steps = append(r.steps, s)
	r.mu.Unlock()
	r.obs.stepDone(s)
}

// stopAfter applies the stop rules after the step of concurrency c, whose
// records are recs; it returns "" when the ramp may go on.
func (r *runner) stopAfter(ctx context.Context, c int, recs []measure.Record) (reason, detail string) {
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
		if rec.ErrorClass == measure.ErrCancelled {
			continue
		}
		counted++
		answers += max(1, rec.Attempts)
		refused += rec.RateLimitedAnswers()
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
	var judged []measure.Step
	for _, s := range r.steps {
		if !s.TooShort && !s.Refine {
			judged = append(judged, s)
		}
	}
	if n := len(judged); n >= 3 && judged[n-1].Concurrency == c &&
		analysis.Fell(judged[n-2], judged[n-1], r.opts.CollapseTolerancePct) && analysis.Fell(judged[n-3], judged[n-2], r.opts.CollapseTolerancePct) {
		return StopGoodputFalling, fmt.Sprintf("goodput fell beyond its noise and the %g %% tolerance at concurrency %d and %d",
			r.opts.CollapseTolerancePct, judged[n-2].Concurrency, c)
	}
	return "", ""
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
