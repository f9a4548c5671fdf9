package simulate

import (
	"math"
	"math/bits"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
)

// pacer is one key's pacing buckets as the plan gives them
// (plan.QuotaPlan.Pacing; docs/simulate.md, "Pacing"): one per per-minute
// limit, shared by the key's clients. A client's next send (a retry that
// holds its slot, else the head of its queue while a slot is free, else a
// closed loop's next request while a slot is free) waits until every
// bucket holds its charge; the key's clients are served in the plan's
// priority order, so tokens go to the highest-priority send that waits
// and a lower one waits while a higher one does. A charge larger than a
// bucket's capacity goes when the bucket is full, leaving it in debt.
type pacer struct {
	s       *sim
	dims    []scenario.Dimension
	buckets []quota.Bucket
	last    float64   // the time of the last refill
	clients []*client // in the plan's priority order
	// ready marks, by rank in clients, those whose next send may have
	// come. A client's dispatch marks it, and follows every change that
	// can give it one (an arrival, a retry due, a freed slot, a larger
	// pool, the hours of its schedule); a scan that finds it has nothing
	// clears the mark. A scan asks only the marked: asking one unmarked
	// would find nothing and change nothing.
	ready bitset
	// wakeT is the earliest wake-up (evPace) in the event queue that has
	// not come yet, +Inf when none. A later one left there when an
	// earlier was scheduled is not taken back: it finds nothing new to
	// send.
	wakeT float64
}

// newPacer builds a key's pacer from the plan's buckets, or nil when the
// key has none (no per-minute limit).
func newPacer(s *sim, qp plan.QuotaPlan) *pacer {
	if len(qp.Pacing) == 0 {
		return nil
	}
	p := &pacer{s: s, wakeT: math.Inf(1)}
	for _, b := range qp.Pacing {
		d, _ := scenario.DimensionNamed(b.Dimension)
		p.dims = append(p.dims, d)
		p.buckets = append(p.buckets, quota.NewBucket(b.Capacity, b.RatePerS, 1e-9*math.Max(1, b.Capacity), true))
	}
	return p
}

// order sets the clients in the order the plan's buckets serve them,
// each marked ready.
func (p *pacer) order(qp plan.QuotaPlan, byName map[string]*client) {
	for _, name := range qp.Pacing[0].Classes {
		if c := byName[name]; c != nil {
			c.rank = len(p.clients)
			p.clients = append(p.clients, c)
		}
	}
	p.ready = make(bitset, (len(p.clients)+63)/64)
	for i := range p.clients {
		p.ready.set(i)
	}
}

// refill brings the buckets to the current time, once an instant.
func (p *pacer) refill() {
	now := p.s.now
	if now == p.last {
		return // Refill(0) adds nothing
	}
	for j := range p.buckets {
		p.buckets[j].Refill(now - p.last)
	}
	p.last = now
}

// dispatch sends, in priority order, every send whose charge the buckets
// hold; when the highest-priority send that waits does not fit, it
// schedules a wake-up for when it will, and lower ones wait too. It asks
// the clients marked ready, clearing the marks of those with nothing to
// send. After a send the scan goes on from the client that sent: those
// before it had nothing to send, and a send changes only its own
// client's queue, slots and retries, so that at the same instant they
// still have nothing.
func (p *pacer) dispatch() {
	p.refill()
	from := 0
	for {
		var c *client
		var r *request
		var src source
		for i := p.ready.next(from); i >= 0; i = p.ready.next(i + 1) {
			if r, src = p.clients[i].next(); r != nil {
				c, from = p.clients[i], i
				break
			}
			p.ready.clear(i)
		}
		if c == nil {
			return
		}
		if !p.holds(&r.charge) {
			if wait := p.wait(&r.charge); wait > 0 {
				p.wakeAt(p.s.now + wait)
				return
			}
		}
		for j, d := range p.dims {
			p.buckets[j].Take(r.charge[d])
		}
		c.launch(r, src)
	}
}

// holds reports whether every bucket holds its part of charge v now.
func (p *pacer) holds(v *charge) bool {
	for j, d := range p.dims {
		if !p.buckets[j].Fits(v[d]) {
			return false
		}
	}
	return true
}

// wait is the time until every bucket holds its part of charge v, when
// nothing else draws on them: 0 when they do now.
func (p *pacer) wait(v *charge) float64 {
	wait := 0.0
	for j, d := range p.dims {
		wait = max(wait, p.buckets[j].Wait(v[d]))
	}
	return wait
}

// wakeAt makes sure that a wake-up comes by t.
func (p *pacer) wakeAt(t float64) {
	if t >= p.wakeT {
		return
	}
	p.wakeT = t
	p.s.at(t, evPace, p.clients[0], nil)
}

// woken handles a wake-up: the waiting send's charge may be due.
func (p *pacer) woken() {
	if p.s.now >= p.wakeT {
		p.wakeT = math.Inf(1)
	}
	p.dispatch()
}

// settle counts what a request counts at completion (quota.Key.Completion):
// the output under actual accounting, which may leave a bucket in debt,
// or the refund of unused max_tokens.
func (p *pacer) settle(v *quota.Vector) {
	p.refill()
	for j, d := range p.dims {
		if n := v[d]; n != 0 {
			p.buckets[j].Take(n)
		}
	}
}

// bitset is a set of small integers.
type bitset []uint64

func (b bitset) set(i int)   { b[i>>6] |= 1 << (i & 63) }
func (b bitset) clear(i int) { b[i>>6] &^= 1 << (i & 63) }

// next is the smallest member at least i, -1 when none.
func (b bitset) next(i int) int {
	w := i >> 6
	if w >= len(b) {
		return -1
	}
	if m := b[w] >> (i & 63); m != 0 {
		return i + bits.TrailingZeros64(m)
	}
	for w++; w < len(b); w++ {
		if b[w] != 0 {
			return w<<6 + bits.TrailingZeros64(b[w])
		}
	}
	return -1
}
