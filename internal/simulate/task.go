package simulate

import (
	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/plan"
)

// taskRun is the state of one agent task (docs/simulate.md, "Agent
// tasks"): the request that carries it is its current call, and the task
// holds its pool slot from its first call's send to the end of its last
// tool run.
type taskRun struct {
	calls, call int     // the calls it makes, and the current one, from 1
	arrival     float64 // the task's arrival
	first       float64 // the first call's input tokens
	carried     float64 // earlier outputs and tool results, with accumulate
	prefix      float64 // the last call's input and output: what a prefix cache can serve
	firstTTFT   float64 // the first call's TTFT, from the task's arrival
}

// startTask makes a new request the first call of a task.
func (c *client) startTask(r *request) {
	r.task = &taskRun{calls: plan.TaskCalls(c.w.Task.Calls.Sample(c.reqRNG.NormFloat64())), call: 1, arrival: r.arrival, first: r.in}
	if pc := c.w.Task.Cache; pc != nil {
		r.cached = pc.Cached(r.in, 0)
	}
}

// prefill is a request's prefill at service time svc: the slope on its
// input, or for a call of an agent task with a prefix cache its input
// less what the cache serves (plan.PrefixCache).
func (c *client) prefill(svc *model.Service, r *request) float64 {
	if r.task != nil && c.w.Task.Cache != nil {
		return c.w.Task.Cache.PrefillS(r.in, r.cached)
	}
	return svc.Prefill * r.in
}

// callDone ends a call of a task at its last token (the key has settled
// it): its TTFT, from the moment the call was ready to go, is recorded,
// and its tool run starts, the task keeping its slot.
func (c *client) callDone(r *request) {
	t := r.task
	ttft := r.ttftAt - r.arrival
	if t.call == 1 {
		t.arrival = r.arrival // a closed loop's task arrives when it is sent
		t.firstTTFT = ttft
	}
	c.st.callTTFT.add(ttft, c.st.waitBatches.section(c.s.now))
	t.prefix = r.in + r.out
	if c.w.Task.Accumulate {
		t.carried += r.out + c.w.Task.Result.Sample(c.reqRNG.NormFloat64())
	}
	c.s.at(c.s.now+c.w.Task.ToolS.Sample(c.reqRNG.NormFloat64()), evTool, c, r)
}

// toolDone ends a tool run: the task's next call is ready and goes
// through the key's pacing buckets and limits holding the task's slot,
// or, after the last call's tool run, the task ends and frees its slot.
func (c *client) toolDone(r *request) {
	s := c.s
	t := r.task
	if t.call == t.calls {
		e2e := s.now - t.arrival
		c.st.completed++
		c.st.doneIv[s.grid.index(s.now)]++
		if e2e <= c.goodBy {
			c.st.good++
		}
		c.st.latency.add([2]float64{t.firstTTFT, e2e}, c.st.waitBatches.section(s.now))
		c.grow()
		c.release()
		s.spare = append(s.spare, r) // nothing refers to it any more
		return
	}
	t.call++
	g := c.reqRNG
	in := c.base.In.Sample(g.NormFloat64())
	if c.w.Task.Accumulate {
		in = t.first + t.carried
	}
	r.in, r.out = in, c.base.Out.Sample(g.NormFloat64())
	r.zTTFT, r.zTPOT = g.NormFloat64(), g.NormFloat64()
	if pc := c.w.Task.Cache; pc != nil {
		// The call's cached share is its own, so its charges are too.
		r.cached = pc.Cached(r.in, t.prefix)
		cachedFraction := 0.0
		if r.in > 0 {
			cachedFraction = r.cached / r.in
		}
		r.charge = c.key.q.Admission(r.in, float64(c.spec.MaxTokens), cachedFraction)
	} else {
		r.charge = c.charges.Admission(r.in)
	}
	r.arrival, r.attempts = s.now, 0
	c.resend = append(c.resend, r)
	c.dispatch()
}

// callsPerArrival is the mean calls of an arrival: E[n] for an agent
// task, 1 for a request.
func (c *client) callsPerArrival() float64 {
	if c.cp.Task != nil {
		return c.cp.Task.Calls
	}
	return 1
}

// eventsPerArrival is the events an arrival makes without retries: its
// arrival and its completion, or an agent task's arrival and, for each
// call, its completion and the end of its tool run.
func (c *client) eventsPerArrival() float64 {
	if c.cp.Task != nil {
		return 1 + 2*c.cp.Task.Calls
	}
	return 2
}
