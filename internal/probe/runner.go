package probe

import (
	"bytes"
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
	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/redact"
)

// errDurationBudget is the cancel cause of a run whose time budget is spent.
var errDurationBudget = errors.New("the time budget is spent")

// runner is the state of one run.
type runner struct {
	cfg     Config
	frame   bodyFrame
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
	shedAt   map[stepKey]int   // open-loop arrivals shed per step
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
	if errs := cfg.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("probe configuration: %w", fieldpath.Errors(errs))
	}
	cfg = cfg.WithDefaults()
	m := cfg.mode()
	concs := m.concurrencies()
	r, err := newRunner(cfg, obs, concs[len(concs)-1])
	if err != nil {
		return nil, fmt.Errorf("probe configuration: %w", err)
	}
	defer r.close()

	runCtx, cancel := context.WithTimeoutCause(ctx, cfg.Budget.maxDuration(), errDurationBudget)
	defer cancel()
	reason, detail := m.run(runCtx, r)
	return r.result(reason, detail), nil
}

// newRunner prepares a run of cfg, its defaults applied, whose largest
// step has top requests in flight.
func newRunner(cfg Config, obs Observer, top int) (*runner, error) {
	endpoint, err := cfg.endpoint()
	if err != nil {
		return nil, err
	}
	frame, err := newFrame(cfg)
	if err != nil {
		return nil, err
	}
	tr := newTransport(top, cfg.DialContext, cfg.tlsConfig)
	t0 := time.Now()
	r := &runner{
		cfg:     cfg,
		frame:   frame,
		opts:    cfg.AnalysisOptions(),
		prompts: newPrompts(cfg.Prompts, cfg.inputTokens(), strconv.FormatInt(t0.UnixNano(), 36)),
		budget:  &budget{maxRequests: cfg.Budget.MaxRequests.Or(0), maxTokens: cfg.Budget.MaxTokens.Or(0)},
		obs:     serialObserver{obs: obs},
		t0:      t0,
		samples: map[string]string{},
		planned: map[stepKey]int{},
		shedAt:  map[stepKey]int{},
	}
	r.sender = &sender{
		client:      &http.Client{Transport: tr, CheckRedirect: cfg.CheckRedirect},
		url:         endpoint,
		deadline:    cfg.deadline(),
		maxAttempts: cfg.maxAttempts(),
		backoff:     backoff{base: cfg.backoffBase(), cap: cfg.backoffCap()},
		rnd:         newLockedRand(cfg.Seed),
		limits:      &rateLimitLog{},
		budget:      r.budget,
		redact:      redact.New(append(redact.URLValues(cfg.BaseURL), cfg.APIKey)...),
	}
	if cfg.APIKey != "" {
		r.sender.keyHeader, r.sender.keyValue = cfg.apiKeyHeader(), cfg.APIKey
		if cfg.apiKeyHeader() == DefaultAPIKeyHeader && !cfg.APIKeyAsIs {
			r.sender.keyValue = "Bearer " + cfg.APIKey
		}
	}
	return r, nil
}

// close closes the run's idle connections.
func (r *runner) close() { r.sender.client.CloseIdleConnections() }

// analyze judges the steps so far.
func (r *runner) analyze() measure.Result {
	r.mu.Lock()
	steps := slices.Clone(r.steps)
	r.mu.Unlock()
	return analysis.Analyze(steps, r.opts)
}

// stepSpec shapes a closed-loop step.
type stepSpec struct {
	n int // requests to send: a fixed step's size, an adaptive step's cap
	// precision, when positive, makes the step adaptive: it ends once the
	// relative half-width of its goodput interval is within it (after
	// MinAdaptive measured requests).
	precision float64
	extend    bool // a fixed step whose gain over the step before is ambiguous at n sends goes on for n more, once
	refine    bool // a refinement step of a knee search
}

// maxPresized bounds the rows a step makes room for before it starts.
const maxPresized = 1 << 14

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
	st := &stepState{r: r, c: c, spec: spec, limit: spec.n, warmup: r.cfg.warmupFor(c, spec.n), prev: r.lastStep(),
		recs: make([]measure.Record, 0, min(spec.n, maxPresized))}
	r.plan(stepKey{c: c}, spec.n)
	workers := min(c, spec.n)
	spread := r.startSpread()
	var wg sync.WaitGroup
	for j := range workers {
		wg.Go(func() {
			if !Sleep(ctx, spread*time.Duration(j)/time.Duration(workers)) {
				return
			}
			for ctx.Err() == nil && r.budget.exhausted() == "" {
				i, ok := st.admit()
				if !ok {
					return
				}
				rec, ok := r.request(ctx, stepKey{c: c}, i, i < st.warmup, spec.refine)
				if !ok {
					st.finish(i)
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
	// ended[i] marks send i finished (recorded, or refused by the
	// budget), and sent counts the sends 0..sent−1 that all have: the
	// requests an adaptive step's precision is measured on.
	ended   []bool
	sent    int
	scratch analysis.Scratch
}

// admit hands out the index of the next send, or false when the step has
// sent enough: an adaptive step once it has MinAdaptive(c) measured sends
// and the requests finished so far know its goodput within its precision; any
// step at its limit, which a step whose gain is ambiguous doubles once
// when the budget has room for it.
func (s *stepState) admit() (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return 0, false
	}
	i := s.next
	if s.spec.precision > 0 && i >= s.warmup+analysis.MinAdaptive(s.c) {
		if rel, _ := analysis.Precision(s.recs, s.c, s.r.opts.Goal(), s.sent, &s.scratch); rel <= s.spec.precision {
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
	s.ended = markEnded(s.ended, rec.Index)
	for s.sent < len(s.ended) && s.ended[s.sent] {
		s.sent++
	}
	s.mu.Unlock()
}

// finish marks send i finished without a record (the budget refused it).
func (s *stepState) finish(i int) {
	s.mu.Lock()
	s.ended = markEnded(s.ended, i)
	for s.sent < len(s.ended) && s.ended[s.sent] {
		s.sent++
	}
	s.mu.Unlock()
}

// markEnded sets ended[i], growing ended as needed.
func markEnded(ended []bool, i int) []bool {
	for len(ended) <= i {
		ended = append(ended, false)
	}
	ended[i] = true
	return ended
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
	in, err := r.prompts.next(r.nextSeq())
	if err != nil {
		base.ErrorClass, base.StartS = measure.ErrClient, time.Since(r.t0).Seconds()
		return r.keep(base, err.Error()), true
	}
	return r.send(ctx, base, in)
}

// nextSeq numbers the requests of the run in the order they are made.
func (r *runner) nextSeq() int { return int(r.seq.Add(1) - 1) }

// send sends input in as the request that base places (its step, index
// and flags) and records it. ok is false when the budget refused to send
// it (nothing is recorded).
func (r *runner) send(ctx context.Context, base measure.Record, in input) (rec measure.Record, ok bool) {
	// An upper estimate of the input (at least 2 bytes of JSON per token,
	// plus the chat template), plus the most output the request may get,
	// reserved before the prompt is built: a request the budget refuses
	// takes no memory.
	reserve := in.size/2 + 16 + r.cfg.maxTokens()
	if !r.budget.admit(reserve) {
		return measure.Record{}, false
	}
	sl := r.sender.take()
	sl.buf = r.appendBody(sl.buf[:0], in)
	rep := r.sender.send(ctx, sl)
	r.sender.give(sl)
	rec = base
	rec.StartS = rep.start.Sub(r.t0).Seconds()
	rec.Status, rec.ErrorClass, rec.Attempts = rep.status, rep.class, rep.attempts
	rec.RetryAfterMs, rec.OK = ms(rep.retryAfter), rep.class == ""
	rec.E2EMs, rec.E2EWithRetriesMs = ms(rep.lastAttempt()), ms(rep.end)
	c := rep.conn
	rec.Conn, rec.ConnWaitMs, rec.DNSMs, rec.ConnectMs, rec.TLSMs, rec.TTFBMs = c.conn, ms(c.wait), ms(c.dns), ms(c.connect), ms(c.tls), ms(c.ttfb)
	st := rep.stream
	used := 0
	if rep.status == http.StatusOK {
		rec.AckMs = ms(st.ack)
		rec.TTFTMs = ms(st.ttft)
		rec.OutputTokens, rec.OutputEstimated = st.outputTokens()
		rec.InputTokens, rec.CachedTokens = st.prompt, st.cached
		rec.PrefixTokens = in.prefixTokens
		if in.prefixShare > 0 {
			rec.PrefixTokens = int(in.prefixShare*float64(st.prompt) + 0.5)
		}
		rec.ServedModel = r.sender.names.served(st, r.sender.redact)
		used = reserve - r.cfg.maxTokens() + rec.OutputTokens
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

// appendBody appends the request body of an input to dst: the body's
// frame around the input's messages, byte for byte what encoding/json
// writes of a chatRequest.
func (r *runner) appendBody(dst []byte, in input) []byte {
	dst = append(dst, r.frame.head...)
	dst = r.prompts.appendMessages(dst, in)
	return append(dst, r.frame.tail...)
}

// bodyFrame is a run's request body without its messages: what comes
// before them and after them.
type bodyFrame struct{ head, tail []byte }

// messagesMark stands for the messages in the body that newFrame encodes.
const messagesMark = `,"messages":0`

// newFrame encodes the run's request body around a placeholder for the
// messages and cuts it there. The placeholder cannot occur earlier: the
// model before it is a JSON string, whose quotes are escaped.
func newFrame(cfg Config) (bodyFrame, error) {
	b, err := json.Marshal(chatRequest{
		Model: cfg.Model, Messages: json.RawMessage("0"), MaxTokens: cfg.maxTokens(), Stream: true,
		StreamOptions: streamOptions{IncludeUsage: true}, IgnoreEOS: cfg.IgnoreEOS,
	})
	if err != nil {
		return bodyFrame{}, fmt.Errorf("encoding the request: %w", err)
	}
	i := bytes.Index(b, []byte(messagesMark))
	if i < 0 {
		return bodyFrame{}, fmt.Errorf("encoding the request: no messages in %s", b)
	}
	cut := i + len(messagesMark) - 1
	return bodyFrame{head: b[:cut], tail: b[cut+1:]}, nil
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
	s.Connections = measure.SummarizeConns(recs)
	r.mu.Lock()
	r.steps = append(r.steps, s)
	r.mu.Unlock()
	r.obs.stepDone(s)
}

// stopInPause is why a run ended in the pause between two steps, which
// Sleep cut short: a cancel or the time budget, after the step that ended
// and before the one that had yet to start, each named as stepName does.
func (r *runner) stopInPause(ctx context.Context, after, before string) (reason, detail string) {
	if errors.Is(context.Cause(ctx), errDurationBudget) {
		return StopBudgetDuration, fmt.Sprintf("the time budget of %s was spent after the step at %s, in the pause before the step at %s", r.cfg.Budget.maxDuration(), after, before)
	}
	return StopCancelled, fmt.Sprintf("cancelled after the step at %s, in the pause before the step at %s", after, before)
}

// stepName names a closed-loop step by its concurrency and an open-loop
// one by its rate.
func stepName(c int, rate float64) string {
	if rate > 0 {
		return fmt.Sprintf("%g req/s", rate)
	}
	return fmt.Sprintf("concurrency %d", c)
}

// stopAfter applies the stop rules after the step k, whose records are
// recs; it returns "" when the ramp may go on. Its details name the step
// as stepName does.
func (r *runner) stopAfter(ctx context.Context, k stepKey, recs []measure.Record) (reason, detail string) {
	at := stepName(k.c, k.rate)
	if ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), errDurationBudget) {
			return StopBudgetDuration, fmt.Sprintf("the time budget of %s was spent at %s", r.cfg.Budget.maxDuration(), at)
		}
		return StopCancelled, "cancelled at " + at
	}
	if spent := r.budget.exhausted(); spent != "" {
		sent, tokens := r.budget.used()
		return spent, fmt.Sprintf("budget spent during the step at %s (%d requests sent, %d tokens)", at, sent, tokens)
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
		if ratio := float64(refused) / float64(answers); ratio > r.cfg.max429Ratio() {
			return StopMax429Ratio, fmt.Sprintf("%d of %d answers at %s were 429 (%.2f > max_429_ratio %g)",
				refused, answers, at, ratio, r.cfg.max429Ratio())
		}
	}
	if counted > 0 && ok == 0 {
		return StopNoSuccess, "no request succeeded at " + at
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var judged []measure.Step
	for _, s := range r.steps {
		if !s.TooShort && !s.Refine {
			judged = append(judged, s)
		}
	}
	if n := len(judged); n >= 3 && judged[n-1].Concurrency == k.c && judged[n-1].RateRPS == k.rate &&
		analysis.Fell(judged[n-2], judged[n-1], r.opts.CollapseTolerancePct) && analysis.Fell(judged[n-3], judged[n-2], r.opts.CollapseTolerancePct) {
		if k.rate > 0 {
			return StopGoodputFalling, fmt.Sprintf("goodput fell beyond its noise and the %g %% tolerance at %s and %s",
				r.opts.CollapseTolerancePct, stepName(judged[n-2].Concurrency, judged[n-2].RateRPS), at)
		}
		return StopGoodputFalling, fmt.Sprintf("goodput fell beyond its noise and the %g %% tolerance at concurrency %d and %d",
			r.opts.CollapseTolerancePct, judged[n-2].Concurrency, k.c)
	}
	return "", ""
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
