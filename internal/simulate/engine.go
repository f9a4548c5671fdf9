package simulate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
)

// kind is what an event does: the first four to a class, the rest to a
// request.
type kind uint8

const (
	evArrival kind = iota // a class's next request arrives
	evWake                // a closed loop's schedule lets it start again
	evPace                // a waiting send's pacing charge may be due
	evShed                // the head of a queue may reach the plan's max queue wait
	evRetry               // a backoff is over
	evDone                // a request's last token
	evTool                // an agent task's tool run is over
)

// kindBits is the width of a kind in entry.key.
const kindBits = 3

// maxSeq is the largest sequence number an entry holds.
const maxSeq = 1<<(32-kindBits) - 1

// entry is an event in the queue: its time; the order it was scheduled
// in (events at the same time run in that order, so that a run is
// deterministic) with its kind below it, key = seq·2³ + kind; and whom it
// happens to, the index of the class (sim.clients) or of the request
// (sim.requests) by its kind. Sixteen bytes without pointers, so that
// moving entries costs no write barriers and the collector does not scan
// them.
type entry struct {
	t   float64
	key uint32
	ref uint32
}

func (e *entry) before(o *entry) bool {
	return e.t < o.t || (e.t == o.t && e.key < o.key)
}

func (e *entry) kind() kind { return kind(e.key & (1<<kindBits - 1)) }

// events is the event queue: two binary min-heaps of entries by (t, seq),
// one for the classes' next arrivals (at most one a class) and one for
// everything else. Keeping arrivals apart keeps both heaps shallow: every
// request passes through each once. The heaps compare inline, several
// times cheaper per event than container/heap's interface calls. An
// event is never removed before its time: a class's admission timer,
// which one whose request was sent meanwhile no longer applies to, is
// moved on when it comes up instead (client.shedDue).
type events struct {
	arrivals, rest heap
	// seq is the sequence number of the last event pushed.
	seq uint32
}

func (q *events) len() int { return len(q.arrivals) + len(q.rest) }

// first is the heap that holds the earliest event; the queue must not be
// empty.
func (q *events) first() *heap {
	switch {
	case len(q.arrivals) == 0:
		return &q.rest
	case len(q.rest) == 0 || q.arrivals[0].before(&q.rest[0]):
		return &q.arrivals
	}
	return &q.rest
}

// push adds an event of kind k for ref at time t, after every event
// already pushed for the same time.
func (q *events) push(t float64, k kind, ref uint32) {
	if q.seq == maxSeq {
		q.renumber()
	}
	q.seq++
	h := &q.rest
	if k == evArrival {
		h = &q.arrivals
	}
	h.push(entry{t: t, key: q.seq<<kindBits | uint32(k), ref: ref})
}

// renumber gives the entries in the queue the sequence numbers 1, 2, … in
// their order, so that numbering may go on from there: a run of more than
// 2²⁹ events keeps the order of events at the same time.
func (q *events) renumber() {
	for _, h := range []*heap{&q.arrivals, &q.rest} {
		slices.SortFunc(*h, func(a, b entry) int {
			switch {
			case a.before(&b):
				return -1
			case b.before(&a):
				return 1
			}
			return 0
		})
	}
	// Merge the two in order, numbering as they come; each stays sorted,
	// which is a heap.
	a, r := q.arrivals, q.rest
	q.seq = 0
	for i, j := 0, 0; i < len(a) || j < len(r); {
		var e *entry
		if j == len(r) || (i < len(a) && a[i].before(&r[j])) {
			e, i = &a[i], i+1
		} else {
			e, j = &r[j], j+1
		}
		q.seq++
		e.key = q.seq<<kindBits | uint32(e.kind())
	}
}

// popBy removes and returns the earliest event when it comes no later
// than end; false, the queue left as it is, when none does.
func (q *events) popBy(end float64) (entry, bool) {
	if q.len() == 0 {
		return entry{}, false
	}
	h := q.first()
	if (*h)[0].t > end {
		return entry{}, false
	}
	return h.pop(), true
}

// heap is a binary min-heap of entries by (t, seq).
type heap []entry

func (h *heap) push(x entry) {
	a := append(*h, x)
	a.up(len(a)-1, x)
	*h = a
}

// up puts x at the hole i, or above it where x is earlier than the
// parents, each moved down into the hole it leaves.
func (a heap) up(i int, x entry) {
	for i > 0 {
		p := (i - 1) / 2
		if !x.before(&a[p]) {
			break
		}
		a[i] = a[p]
		i = p
	}
	a[i] = x
}

// pop removes and returns the earliest entry. The hole at the root moves
// down to a leaf, taking the earlier child at each level (one comparison
// a level), and the last entry rises into it from there (Floyd's
// bottom-up variant, Knuth, TAOCP vol. 3, §5.2.3, exercise 18): the last
// entry is among the latest, so that it seldom rises more than a level,
// where sinking it from the root compares it with a child at every level
// as well. Either places it at the same position.
func (h *heap) pop() entry {
	a := *h
	top := a[0]
	n := len(a) - 1
	x := a[n]
	a = a[:n]
	if n > 0 {
		i := 0
		for c := 1; c < n; c = 2*i + 1 {
			if c+1 < n {
				c = a.earlier(c)
			}
			a[i] = a[c]
			i = c
		}
		a.up(i, x)
	}
	*h = a
	return top
}

// earlier is whichever of the siblings c and c+1 comes first. Their times
// differ but in rare ties, and where they differ the index is set from
// the comparison without a branch: which child is the earlier is a coin
// toss, a branch on it mispredicted every other level.
func (h heap) earlier(c int) int {
	r := c + 1
	rt, ct := h[r].t, h[c].t
	if rt == ct {
		if h[r].key < h[c].key {
			return r
		}
		return c
	}
	later := 0
	if rt < ct {
		later = 1
	}
	return c + later
}

// errEventCap stops a run that needs more events than it may process.
var errEventCap = errors.New("event cap reached")

// sim is one run: the clock, the event queue, the clients and the keys.
type sim struct {
	ctx        context.Context
	now, end   float64
	queue      events
	requests   []*request // the requests in the run, by index (request.id); nil where dropped
	spare      []*request // completed requests, for reuse
	freeIDs    []uint32   // the indices of dropped requests, for reuse
	processed  int
	maxEvents  int
	grid       *grid
	clients    []*client
	keys       []*key
	keyNames   []string
	retryAfter bool
	opts       Options
	plan       *plan.Plan
}

// drop forgets a request that is shed or given up, which no event or
// queue refers to any more, so that the collector takes it as it would
// without the table of requests; its index goes to the next new request.
func (s *sim) drop(r *request) {
	s.requests[r.id] = nil
	s.freeIDs = append(s.freeIDs, r.id)
}

// at schedules an event of kind k: to request r, which must be c's, for
// the kinds that happen to a request, else to class c.
func (s *sim) at(t float64, k kind, c *client, r *request) {
	ref := c.idx
	if k >= evRetry {
		ref = r.id
	}
	s.queue.push(t, k, ref)
}

// spareRequest is a zeroed request of client c: a completed one reused,
// or a new one.
func (s *sim) spareRequest(c *client) *request {
	n := len(s.spare)
	if n == 0 {
		r := &request{c: c}
		if k := len(s.freeIDs); k > 0 {
			r.id, s.freeIDs = s.freeIDs[k-1], s.freeIDs[:k-1]
			s.requests[r.id] = r
		} else {
			r.id = uint32(len(s.requests))
			s.requests = append(s.requests, r)
		}
		return r
	}
	r := s.spare[n-1]
	s.spare[n-1] = nil
	s.spare = s.spare[:n-1]
	*r = request{c: c, id: r.id}
	return r
}

// run processes events in time order up to the end of the run, checking
// the context every 4,096 events.
func (s *sim) run() error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	for {
		at, ok := s.queue.popBy(s.end)
		if !ok {
			break
		}
		k := at.kind()
		if k == evShed && !s.clients[at.ref].shedDue(at.t) {
			continue // a timer moved on to the next request: no event of the run
		}
		s.processed++
		if s.processed > s.maxEvents {
			return errEventCap
		}
		if s.processed&4095 == 0 {
			if err := s.ctx.Err(); err != nil {
				return err
			}
		}
		s.now = at.t
		switch k {
		case evArrival:
			s.clients[at.ref].arrive()
		case evWake:
			c := s.clients[at.ref]
			c.waking = false
			c.dispatch()
		case evPace:
			s.clients[at.ref].pacer.woken()
		case evShed:
			s.clients[at.ref].shed()
		case evRetry:
			r := s.requests[at.ref]
			if r.gone { // a closed loop's pause after giving up
				r.c.release()
				s.drop(r)
				break
			}
			r.c.st.retries++
			r.c.resend = append(r.c.resend, r)
			r.c.dispatch()
		case evDone:
			r := s.requests[at.ref]
			r.c.done(r)
		case evTool:
			r := s.requests[at.ref]
			r.c.toolDone(r)
		}
	}
	s.now = s.end
	return nil
}

// Modeller models a scenario's classes' workloads, as a plan.Engine does;
// a simulation draws its requests from them.
type Modeller interface {
	Workloads(ctx context.Context, s scenario.Scenario) ([]plan.Workload, error)
}

// RunPlan simulates a plan of a scenario (internal/app gives it the
// checked plan): its classes' clients, the provider's quotas and the
// endpoints, for opts.DurationS seconds of simulated time
// (docs/simulate.md). The plan's classes must be the scenario's, in its
// order; it is not modified. The same scenario, plan and options give the
// same result, to the byte once encoded. It returns scenario.Errors for an
// invalid scenario, OptionErrors for invalid options or a run that needs
// more than opts.MaxEvents events, and ctx.Err() when ctx ends first.
func RunPlan(ctx context.Context, eng Modeller, sc scenario.Scenario, p *plan.Plan, opts Options) (*Simulation, error) {
	if errs := sc.Check(); len(errs) > 0 {
		return nil, errs
	}
	o := opts.withDefaults(sc)
	if errs := o.check(sc); len(errs) > 0 {
		return nil, errs
	}
	if len(p.Classes) != len(sc.Classes) {
		return nil, fmt.Errorf("simulate: the plan has %d classes, the scenario %d", len(p.Classes), len(sc.Classes))
	}
	ws, err := eng.Workloads(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("model the scenario: %w", err)
	}
	s := newSim(ctx, sc.WithDefaults(), p, ws, o)
	if n, requests := s.expectedEvents(); n > float64(o.MaxEvents) {
		return nil, OptionErrors{{Path: "duration_s", Message: fmt.Sprintf(
			"%g s of this scenario needs about %.0f events (%.0f requests), more than max_events %d: shorten the run or raise max_events",
			o.DurationS, n, requests, o.MaxEvents)}}
	}
	switch err := s.run(); {
	case errors.Is(err, errEventCap):
		return nil, OptionErrors{{Path: "max_events", Message: fmt.Sprintf(
			"the run needed more than %d events by %.0f s of %g s (retries add events): shorten the run or raise max_events",
			o.MaxEvents, s.now, o.DurationS)}}
	case err != nil:
		return nil, err
	}
	return s.result(), nil
}

// newSim builds the run: a key per quota, an endpoint per name, a client
// per class, and each class's first arrival.
func newSim(ctx context.Context, sc scenario.Scenario, p *plan.Plan, ws []plan.Workload, o Options) *sim {
	s := &sim{
		ctx: ctx, end: o.DurationS, maxEvents: o.MaxEvents, grid: newGrid(o.DurationS, o.IntervalS),
		retryAfter: !o.NoRetryAfter, opts: o, plan: p,
	}
	keys := map[string]*key{}
	for qi, q := range sc.Quotas {
		k := &key{q: quota.Key{Quota: q}}
		if !o.NoPacing {
			k.pacer = newPacer(s, p.Quotas[qi])
		}
		for d := range scenario.NumDimensions {
			if k.q.Limit(d) > 0 {
				k.limits = append(k.limits, newLimit(d, k.q, o.Refill, s.grid.n))
			}
		}
		keys[q.Name] = k
		s.keys = append(s.keys, k)
		s.keyNames = append(s.keyNames, q.Name)
	}
	endpoints := map[string]*endpoint{}
	replays := map[string][]float64{}
	for _, r := range o.Replay {
		replays[r.Class] = r.StartS
	}
	for i, spec := range sc.Classes {
		ep := endpoints[ws[i].Endpoint]
		if ep == nil {
			ep = &endpoint{}
			endpoints[ws[i].Endpoint] = ep
		}
		c := newClient(s, i, spec, &p.Classes[i], ws[i], ep, keys[spec.Quota], *o.Seed)
		c.on = onSpans(spec.Schedule, o.StartHour, s.end)
		c.pacer = c.key.pacer
		switch times, ok := replays[spec.Name]; {
		case ok:
			c.arr, c.kind = newReplay(times, s.end), ArrivalsReplay
		case spec.Demand != nil && spec.Demand.Rate() > 0:
			c.kind = ArrivalsPoisson
			if *spec.ArrivalSCV != 1 {
				c.kind = ArrivalsRenewal
			}
			c.arr = newRenewal(spec.Demand.Rate(), *spec.ArrivalSCV, spec.Demand.Profile, c.on, s.end, stream(*o.Seed, i, streamArrivals))
		default:
			c.kind = ArrivalsClosedLoop
		}
		s.clients = append(s.clients, c)
		if n := c.expectedRequests(); n < float64(o.Samples) {
			c.st.latency.hint = int(n*1.1) + 16
		}
		if n := c.expectedRequests() * c.callsPerArrival(); n < float64(o.Samples) {
			// Each call of a task waits for its send and has a TTFT.
			c.st.waits.hint = int(n*1.1) + 16
			c.st.callTTFT.hint = c.st.waits.hint
			c.st.tpot.hint = c.st.waits.hint
		}
	}
	byName := map[string]*client{}
	for _, c := range s.clients {
		byName[c.spec.Name] = c
	}
	for qi, k := range s.keys {
		if k.pacer != nil {
			k.pacer.order(p.Quotas[qi], byName)
		}
	}
	for _, c := range s.clients {
		if c.arr == nil {
			if t, ok := nextOn(c.on, 0); ok {
				c.waking = true
				s.at(t, evWake, c, nil)
			}
			continue
		}
		if t, ok := c.arr.next(); ok {
			s.at(t, evArrival, c, nil)
		}
	}
	return s
}

// The random streams of a class: one for arrival times, one for the
// requests (token counts and latency draws), one for retry jitter, one for
// the latency reservoirs and one for the TPOT reservoir. Separate streams keep the arrivals and requests
// of a class the same whether pacing, AIMD or retries change, so that two
// runs compare like with like (common random numbers).
const (
	streamArrivals = iota
	streamRequests
	streamJitter
	streamSamples
	streamTPOT
)

// stream is the PCG generator of one stream of class i.
func stream(seed uint64, class, purpose int) *rand.PCG {
	return rand.NewPCG(seed, uint64(class)<<8|uint64(purpose)+0x9e3779b97f4a7c15)
}

// expectedEvents estimates a run's events before it starts: two per
// request (its arrival and its completion; an agent task's, one and two
// per call) at the expected arrival rate,
// or for a closed loop at the pool's throughput (the AIMD ceiling's when
// adapting).
func (s *sim) expectedEvents() (events, requests float64) {
	for _, c := range s.clients {
		n := c.expectedRequests()
		events += n * c.eventsPerArrival()
		requests += n
	}
	return events, requests
}

// expectedRequests is the number of requests the client is expected to
// make in the run.
func (c *client) expectedRequests() float64 {
	switch a := c.arr.(type) {
	case *renewal:
		return a.expected()
	case *replay:
		return float64(len(a.times))
	}
	pool := float64(c.cp.Pool)
	if c.aimd {
		pool = float64(c.cp.Adaptive.Ceiling)
	}
	rate := pool / c.meanS
	if c.pacer != nil {
		rate = math.Min(rate, c.cp.Pacing.RateRPS/c.callsPerArrival())
	}
	var on float64
	for _, o := range c.on {
		on += o.end - o.start
	}
	return rate * on
}

// endpoint is a serving endpoint: its latency follows what is in flight
// on it, from every class that sends to it.
type endpoint struct {
	inFlight int
}
