package simulate

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
)

// kind is what an event does.
type kind uint8

const (
	evArrival kind = iota // a class's next request arrives
	evWake                // a pacing token is due
	evShed                // a queued request reaches the plan's max queue wait
	evRetry               // a backoff is over
	evDone                // a request's last token
	evTool                // an agent task's tool run is over
)

// event is one entry of the event queue. Events at the same time run in
// the order they were scheduled (seq), so that a run is deterministic.
type event struct {
	t    float64
	seq  uint64
	kind kind
	c    *client
	r    *request
	idx  int // position in the heap, -1 once out of it
}

// events is the pending events, a binary heap by (t, seq) (container/heap).
type events []*event

func (h events) Len() int { return len(h) }
func (h events) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].seq < h[j].seq
}
func (h events) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *events) Push(x any) {
	e := x.(*event)
	e.idx = len(*h)
	*h = append(*h, e)
}
func (h *events) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.idx = -1
	return e
}

// errEventCap stops a run that needs more events than it may process.
var errEventCap = errors.New("event cap reached")

// sim is one run: the clock, the event queue, the clients and the keys.
type sim struct {
	ctx        context.Context
	now, end   float64
	queue      events
	spent      []*event // processed or cancelled events, for reuse
	seq        uint64
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

// at schedules an event, reusing a spent one when there is one.
func (s *sim) at(t float64, k kind, c *client, r *request) *event {
	s.seq++
	var e *event
	if n := len(s.spent); n > 0 {
		e, s.spent = s.spent[n-1], s.spent[:n-1]
	} else {
		e = new(event)
	}
	*e = event{t: t, seq: s.seq, kind: k, c: c, r: r}
	heap.Push(&s.queue, e)
	return e
}

// cancel removes a pending event.
func (s *sim) cancel(e *event) {
	if e != nil && e.idx >= 0 {
		heap.Remove(&s.queue, e.idx)
		s.recycle(e)
	}
}

// recycle keeps an event that nothing refers to any more for reuse.
func (s *sim) recycle(e *event) {
	*e = event{idx: -1}
	s.spent = append(s.spent, e)
}

// run processes events in time order up to the end of the run, checking
// the context every 4,096 events.
func (s *sim) run() error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	for len(s.queue) > 0 && s.queue[0].t <= s.end {
		e := heap.Pop(&s.queue).(*event)
		s.processed++
		if s.processed > s.maxEvents {
			return errEventCap
		}
		if s.processed&4095 == 0 {
			if err := s.ctx.Err(); err != nil {
				return err
			}
		}
		s.now = e.t
		c := e.c
		switch e.kind {
		case evArrival:
			c.arrive()
		case evWake:
			c.woken(e)
		case evShed:
			c.shed(e.r)
		case evRetry:
			if e.r.gone { // a closed loop's pause after giving up
				c.release()
				break
			}
			c.st.retries++
			c.resend = append(c.resend, e.r)
			c.dispatch()
		case evDone:
			c.done(e.r)
		case evTool:
			c.toolDone(e.r)
		}
		s.recycle(e) // its handler dropped every reference to it
	}
	s.now = s.end
	return nil
}

// Planner plans a scenario and models its classes' workloads, as a
// plan.Engine does; a simulation runs that plan on that model.
type Planner interface {
	Plan(ctx context.Context, s scenario.Scenario) (*plan.Plan, error)
	Workloads(ctx context.Context, s scenario.Scenario) ([]plan.Workload, error)
}

// Run simulates the plan of a scenario, as eng plans it: its classes'
// clients, the provider's quotas and the endpoints, for opts.DurationS
// seconds of simulated time (docs/simulate.md). The same scenario and
// options give the same result, to the byte once encoded. It returns
// scenario.Errors for an invalid scenario, OptionErrors for invalid
// options or a run that needs more than opts.MaxEvents events, and
// ctx.Err() when ctx ends first.
func Run(ctx context.Context, eng Planner, sc scenario.Scenario, opts Options) (*Simulation, error) {
	if errs := sc.Check(); len(errs) > 0 {
		return nil, errs
	}
	o := opts.withDefaults(sc)
	if errs := o.check(sc); len(errs) > 0 {
		return nil, errs
	}
	p, err := eng.Plan(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("plan the scenario: %w", err)
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
		c.pacer = c.key.pacer
		switch times, ok := replays[spec.Name]; {
		case ok:
			c.arr, c.kind = newReplay(times, s.end), ArrivalsReplay
		case spec.Demand != nil && spec.Demand.Rate() > 0:
			c.kind = ArrivalsPoisson
			if *spec.ArrivalSCV != 1 {
				c.kind = ArrivalsRenewal
			}
			c.arr = newRenewal(spec.Demand.Rate(), *spec.ArrivalSCV, spec.Demand.Profile, s.end, stream(*o.Seed, i, streamArrivals))
		default:
			c.kind = ArrivalsClosedLoop
		}
		s.clients = append(s.clients, c)
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
			s.at(0, evWake, c, nil)
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
// the latency reservoir. Separate streams keep the arrivals and requests
// of a class the same whether pacing, AIMD or retries change, so that two
// runs compare like with like (common random numbers).
const (
	streamArrivals = iota
	streamRequests
	streamJitter
	streamSamples
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
		var n float64
		switch a := c.arr.(type) {
		case *renewal:
			n = a.expected()
		case *replay:
			n = float64(len(a.times))
		default:
			pool := float64(c.cp.Pool)
			if c.aimd {
				pool = float64(c.cp.Adaptive.Ceiling)
			}
			rate := pool / c.meanS
			if c.pacer != nil {
				rate = math.Min(rate, c.cp.Pacing.RateRPS/c.callsPerArrival())
			}
			n = rate * s.end
		}
		events += n * c.eventsPerArrival()
		requests += n
	}
	return events, requests
}

// endpoint is a serving endpoint: its latency follows what is in flight
// on it, from every class that sends to it.
type endpoint struct {
	inFlight int
}
