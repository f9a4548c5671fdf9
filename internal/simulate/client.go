package simulate

import (
	"math"
	"math/rand/v2"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
)

// request is one request of a class, from its arrival to its end.
type request struct {
	arrival      float64
	in, out      float64 // tokens, as the plan draws them
	cached       float64 // input tokens read from an agent task's prefix cache
	zTTFT, zTPOT float64 // standard normal draws of its latency
	charge       charge  // counted at each admission
	attempts     int
	sentAt       float64  // the last send
	admitIv      int      // the interval of its admission
	ttftAt       float64  // the first token of the attempt that succeeded
	queued, gone bool     // waiting for a slot; shed
	task         *taskRun // the agent task it is a call of; nil for a single call
	c            *client  // its class's
	id           uint32   // its index in sim.requests, kept when it is reused
}

// client is one class's client: the arrivals, the pool's semaphore with
// its FIFO queue, the key's shared pacing buckets, admission shedding,
// retries and optionally AIMD (docs/simulate.md, "Clients").
type client struct {
	s    *sim
	idx  uint32 // its index in sim.clients
	spec scenario.Class
	cp   *plan.ClassPlan
	w    plan.Workload
	base model.Service // token distributions (load-independent)
	ep   *endpoint
	// services are the workload's services by load (plan.Workload.At),
	// nil where not yet looked up.
	services []*model.Service
	key      *key
	charges  quota.Charges // what its requests count against the key
	arr      arrivals      // nil for a closed loop
	on       []span        // when its schedule lets it run: a closed loop starts requests only then
	kind     string
	meanS    float64 // the plan's mean service time at the pool, seconds

	held  int // slots held: sending, in service, or sleeping before a retry
	queue []*request
	head  int
	wait  float64 // the plan's max queue wait; +Inf without one
	// timed is set while an admission timer is in the event queue: one a
	// class, due no later than the head of the queue reaches the wait.
	timed bool

	waking  bool       // a wake-up for the schedule's next hours is in the event queue
	pacer   *pacer     // the key's pacing buckets; nil without pacing
	rank    int        // its place in the pacer's priority order; -1 when it has none
	pending *request   // a closed loop's next request, drawn while it waits for pacing
	resend  []*request // retries that hold a slot and wait for pacing

	aimd    bool
	window  float64
	lastCut float64

	deadline, goodBy          float64
	reqRNG, jitterRNG         *rand.Rand
	st                        stats
	maxAttempts               int
	backoffBase, backoffLimit float64
	// unjudged is set by verdict when the run had nothing to judge the
	// class by (nothingToJudge).
	unjudged bool
}

// stats are what a client measures.
type stats struct {
	requests, completed, good, shed, limited, retries, gaveUp int
	waitSum                                                   float64
	waitN                                                     int
	waits                                                     reservoir[float64]
	latency                                                   reservoir[[2]float64] // TTFT, E2E
	waitBatches                                               *batchMeans
	active, queued, window                                    level
	limitedIv, shedIv, doneIv                                 []int
	callTTFT                                                  reservoir[float64] // an agent task's calls
	// tpot is the TPOT of each request, or each call of an agent task,
	// with two output tokens or more: (E2E − TTFT)/(out − 1).
	tpot reservoir[float64]
}

// sent records a request's wait for its first send, at time now.
func (st *stats) sent(now, wait float64) {
	st.waitSum += wait
	st.waitN++
	section := st.waitBatches.section(now)
	st.waits.add(wait, section)
	st.waitBatches.add(section, wait)
}

func newClient(s *sim, i int, spec scenario.Class, cp *plan.ClassPlan, w plan.Workload, ep *endpoint, k *key, seed uint64) *client {
	n := s.grid.n
	c := &client{
		s: s, idx: uint32(i), spec: spec, cp: cp, w: w, base: *w.At(1), ep: ep, key: k,
		charges: k.q.Charges(float64(spec.MaxTokens), spec.CachedInputFraction),
		meanS:   cp.Predicted.MeanServiceMs / 1000, wait: math.Inf(1),
		aimd: s.opts.AIMD, window: float64(cp.Adaptive.Start), lastCut: math.Inf(-1), rank: -1,
		deadline: cp.Retry.DeadlineMs / 1000, maxAttempts: cp.Retry.MaxAttempts,
		backoffBase: cp.Retry.BaseMs / 1000, backoffLimit: cp.Retry.CapMs / 1000,
		reqRNG:    rand.New(stream(seed, i, streamRequests)),
		jitterRNG: rand.New(stream(seed, i, streamJitter)),
	}
	if a := cp.Admission.MaxQueueWaitMs; a != nil {
		c.wait = *a / 1000
	}
	c.goodBy = c.deadline
	if spec.SLO != nil && spec.SLO.E2E() > 0 {
		c.goodBy = spec.SLO.E2E() / 1000
	}
	if spec.SLO != nil && spec.SLO.TaskE2E() > 0 {
		c.goodBy = spec.SLO.TaskE2E() / 1000
	}
	samples := rand.New(stream(seed, i, streamSamples))
	c.st = stats{
		waits:       reservoir[float64]{cap: s.opts.Samples, rng: samples, hint: s.opts.Samples},
		latency:     reservoir[[2]float64]{cap: s.opts.Samples, rng: samples, hint: s.opts.Samples},
		callTTFT:    reservoir[float64]{cap: s.opts.Samples, rng: samples, hint: s.opts.Samples},
		tpot:        reservoir[float64]{cap: s.opts.Samples, rng: rand.New(stream(seed, i, streamTPOT)), hint: s.opts.Samples},
		waitBatches: newBatchMeans(s.end),
		active:      level{sum: make([]float64, n)},
		queued:      level{sum: make([]float64, n)},
		window:      level{sum: make([]float64, n), v: c.window},
		limitedIv:   make([]int, n), shedIv: make([]int, n), doneIv: make([]int, n),
	}
	if !c.aimd {
		c.st.window.v = float64(cp.Pool)
	}
	return c
}

// slots is the pool: the plan's, or the AIMD window rounded down.
func (c *client) slots() int {
	if c.aimd {
		return int(c.window)
	}
	return c.cp.Pool
}

// newRequest draws a request: its input and output tokens from the
// class's distributions (output clipped to [1, max_tokens]) and the
// standard normal draws that set its TTFT and TPOT once the load it meets
// is known, all from the class's own stream.
func (c *client) newRequest() *request {
	g := c.reqRNG
	r := c.s.spareRequest(c)
	r.arrival = c.s.now
	r.in, r.out = c.base.In.Sample(g.NormFloat64()), c.base.Out.Sample(g.NormFloat64())
	r.zTTFT, r.zTPOT = g.NormFloat64(), g.NormFloat64()
	r.charge = c.charges.Admission(r.in)
	c.st.requests++
	if c.w.Task != nil {
		c.startTask(r)
	}
	return r
}

// arrive queues an arriving request, sends what the pool and pacing allow,
// arms the request's admission timer if it still waits, and schedules the
// next arrival.
func (c *client) arrive() {
	r := c.newRequest()
	r.queued = true
	c.queue = append(c.queue, r)
	c.setQueued(1)
	c.dispatch()
	if r.queued && !c.timed && !math.IsInf(c.wait, 1) {
		c.timed = true
		c.s.at(r.arrival+c.wait, evShed, c, nil)
	}
	if t, ok := c.arr.next(); ok {
		c.s.at(t, evArrival, c, nil)
	}
}

// dispatch sends whatever may go now: with pacing, what the key's
// buckets let go (pacer.dispatch); without, first retries that hold a
// slot, then the head of the queue (a new request for a closed loop)
// while a slot is free.
func (c *client) dispatch() {
	if c.pacer != nil {
		if c.rank >= 0 {
			c.pacer.ready.set(c.rank)
		}
		c.pacer.dispatch()
		return
	}
	for {
		r, src := c.next()
		if r == nil {
			return
		}
		c.launch(r, src)
	}
}

// source is where a client's next send comes from.
type source uint8

const (
	fromRetry source = iota // a retry that holds its slot
	fromQueue               // the head of the queue, into a free slot
	fromLoop                // a closed loop's next request, into a free slot
)

// next is the client's next send without taking it: a retry that holds
// its slot, else, while a slot is free, the head of the queue or a closed
// loop's next request (drawn once and kept until it goes); nil when
// nothing may go.
func (c *client) next() (*request, source) {
	if len(c.resend) > 0 {
		return c.resend[0], fromRetry
	}
	if c.held >= c.slots() {
		return nil, 0
	}
	if c.arr == nil {
		if !c.scheduled() {
			return nil, 0
		}
		if c.pending == nil {
			c.pending = c.newRequest()
		}
		return c.pending, fromLoop
	}
	if r := c.peek(); r != nil {
		return r, fromQueue
	}
	return nil, 0
}

// launch takes the send next returned and sends it. A closed loop's
// request arrives when it is sent: its latency runs from there.
func (c *client) launch(r *request, src source) {
	switch src {
	case fromRetry:
		c.resend[0] = nil
		c.resend = c.resend[1:]
	case fromLoop:
		c.pending = nil
		r.arrival = c.s.now
		c.held++
	case fromQueue:
		c.pop()
		c.held++
	}
	c.send(r)
}

// peek is the first request still waiting, dropping shed ones.
func (c *client) peek() *request {
	for c.head < len(c.queue) && c.queue[c.head].gone {
		c.s.drop(c.queue[c.head])
		c.queue[c.head] = nil
		c.head++
	}
	if c.head == len(c.queue) {
		c.queue, c.head = c.queue[:0], 0
		return nil
	}
	return c.queue[c.head]
}

// pop takes the first waiting request off the queue.
func (c *client) pop() *request {
	r := c.peek()
	c.queue[c.head] = nil
	c.head++
	if c.head > 1024 && c.head > len(c.queue)/2 {
		c.queue = append(c.queue[:0], c.queue[c.head:]...)
		c.head = 0
	}
	r.queued = false
	c.setQueued(-1)
	return r
}

// scheduled reports whether the class's schedule lets it start a request
// now; otherwise it schedules a wake-up for its next hours in the run.
func (c *client) scheduled() bool {
	now := c.s.now
	t, ok := nextOn(c.on, now)
	if ok && t <= now {
		return true
	}
	if ok && !c.waking {
		c.waking = true
		c.s.at(t, evWake, c, nil)
	}
	return false
}

// send makes one attempt: the key admits it or answers 429; an admitted
// request goes in flight on the endpoint, with its service time drawn at
// the endpoint's load including itself.
func (c *client) send(r *request) {
	s := c.s
	now := s.now
	r.attempts++
	r.sentAt = now
	if r.attempts == 1 {
		c.st.sent(now, now-r.arrival)
	}
	iv := s.grid.index(now)
	ok, retryAfter := c.key.admit(now, r.charge, iv)
	if !ok {
		c.limited(r, retryAfter, iv)
		return
	}
	r.admitIv = iv
	c.ep.inFlight++
	svc := c.service(c.ep.inFlight)
	ttft := svc.TTFT.Sample(r.zTTFT) + c.prefill(svc, r)
	total := ttft + svc.TPOT.Sample(r.zTPOT)*(r.out-1)
	r.ttftAt = now + ttft
	c.st.active.set(s.grid, now, c.st.active.v+1)
	s.at(now+total, evDone, c, r)
}

// service is the class's service at inFlight requests on its endpoint,
// looked up once for each load.
func (c *client) service(inFlight int) *model.Service {
	if inFlight >= len(c.services) {
		c.services = append(c.services, make([]*model.Service, inFlight+1-len(c.services))...)
	}
	svc := c.services[inFlight]
	if svc == nil {
		svc = c.w.At(inFlight)
		c.services[inFlight] = svc
	}
	return svc
}

// limited handles a 429: AIMD cuts the pool, and the request sleeps for
// the Retry-After (or, without one, a full-jitter backoff) and retries
// holding its slot, when attempts remain and the retry fits the deadline;
// otherwise it gives up.
func (c *client) limited(r *request, retryAfter float64, iv int) {
	now := c.s.now
	c.st.limited++
	c.st.limitedIv[iv]++
	c.cut()
	sleep := math.Ceil(retryAfter*1000) / 1000 // retry-after-ms
	if !c.s.retryAfter {
		sleep = c.backoff(r.attempts - 1)
	}
	if r.attempts < c.maxAttempts && now+sleep-r.arrival <= c.deadline {
		c.s.at(now+sleep, evRetry, c, r)
		return
	}
	c.st.gaveUp++
	if c.arr == nil {
		// A closed loop's worker waits as told before its next request
		// instead of sending it into the same refusal at the same instant.
		r.gone = true
		c.s.at(now+max(sleep, 0.001), evRetry, c, r)
		return
	}
	c.s.drop(r)
	c.release()
}

// backoff is the full-jitter sleep before retry n (from 0):
// random(0, min(cap, base·2ⁿ)) (Brooker, "Exponential Backoff and
// Jitter", AWS Architecture Blog, 2015).
func (c *client) backoff(n int) float64 {
	return c.jitterRNG.Float64() * math.Min(c.backoffLimit, c.backoffBase*math.Pow(2, float64(n)))
}

// done ends a request at its last token: the key counts the output or
// refunds unused max_tokens, the latencies are recorded, AIMD may grow
// the pool, and the slot goes to the next request.
func (c *client) done(r *request) {
	s := c.s
	now := s.now
	c.ep.inFlight--
	c.st.active.set(s.grid, now, c.st.active.v-1)
	iv := s.grid.index(now)
	completion := c.charges.Completion(r.out)
	c.key.settle(now, r.sentAt, &completion, r.admitIv, iv)
	if c.pacer != nil {
		c.pacer.settle(&completion)
	}
	section := c.st.waitBatches.section(now)
	if r.out >= 2 {
		c.st.tpot.add((now-r.ttftAt)/(r.out-1), section)
	}
	if r.task != nil {
		c.callDone(r)
		return
	}
	e2e := now - r.arrival
	c.st.completed++
	c.st.doneIv[iv]++
	if e2e <= c.goodBy {
		c.st.good++
	}
	c.st.latency.add([2]float64{r.ttftAt - r.arrival, e2e}, section)
	c.grow()
	c.release()
	c.s.spare = append(c.s.spare, r) // nothing refers to it any more
}

// release frees a slot and sends what may go.
func (c *client) release() {
	c.held--
	c.dispatch()
}

// shedDue handles the class's admission timer at time now: it reports
// whether the head of the queue has waited the plan's max queue wait, and
// otherwise moves the timer on to when the head will have (FIFO: no
// request behind the head reaches it sooner), or disarms it when nothing
// waits. One timer a class, rather than one a queued request, keeps the
// event queue short; a request is shed at the same time either way.
func (c *client) shedDue(now float64) bool {
	r := c.peek()
	if r == nil {
		c.timed = false
		return false
	}
	due := r.arrival + c.wait
	if due <= now {
		return true
	}
	c.s.at(due, evShed, c, nil)
	return false
}

// shed drops the head of the queue, which has waited the plan's max queue
// wait, and moves the timer on.
func (c *client) shed() {
	r := c.peek()
	r.queued, r.gone = false, true
	c.setQueued(-1)
	c.st.shed++
	c.st.shedIv[c.s.grid.index(c.s.now)]++
	c.timed = false
	if next := c.peek(); next != nil {
		c.timed = true
		c.s.at(next.arrival+c.wait, evShed, c, nil)
	}
}

func (c *client) setQueued(d float64) {
	c.st.queued.set(c.s.grid, c.s.now, c.st.queued.v+d)
}

// cut is AIMD's multiplicative decrease on a 429: the window times the
// decrease factor, at most once per mean service time (a 429 of a request
// sent before the window turned over is not a new signal), at least the
// floor.
func (c *client) cut() {
	if !c.aimd || c.s.now-c.lastCut < c.meanS {
		return
	}
	c.lastCut = c.s.now
	c.setWindow(max(float64(c.cp.Adaptive.Floor), c.window*c.cp.Adaptive.DecreaseFactor))
}

// grow is AIMD's additive increase after a success: while at least
// increase_when_used of the window is in use, each success adds step/W,
// so the window grows by step per window's worth of successes (about one
// round of service), up to the ceiling.
func (c *client) grow() {
	a := c.cp.Adaptive
	if !c.aimd || float64(c.held) < a.IncreaseWhenUsed*c.window {
		return
	}
	c.setWindow(min(float64(a.Ceiling), c.window+float64(a.IncreaseStep)/c.window))
}

func (c *client) setWindow(w float64) {
	c.window = w
	c.st.window.set(c.s.grid, c.s.now, w)
}
