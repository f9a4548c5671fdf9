package scenario

// The forms of a task's context.
const (
	// ContextAccumulate: each call's input carries every earlier output
	// and tool result of the task.
	ContextAccumulate = "accumulate"
	// ContextFresh: each call's input is the first call's.
	ContextFresh = "fresh"
)

// MaxTaskCalls is the most calls a task makes: a draw of calls is rounded
// to a whole number and held to [1, MaxTaskCalls].
const MaxTaskCalls = 1000

// Task is an agent loop (docs/concepts.md, "Agent tasks"): a run of
// serial calls, each followed by a tool run whose result, with the call's
// output, the next call's input carries when the context accumulates.
type Task struct {
	Calls            Dist   `json:"calls" doc:"Calls a task makes, one after another; each draw is rounded to a whole number and held to 1 to 1,000."`
	ToolMs           *Dist  `json:"tool_ms,omitempty" doc:"Time of the tool run that follows each call, milliseconds; without it, none."`
	ToolResultTokens *Dist  `json:"tool_result_tokens,omitempty" doc:"Tokens each tool run returns, carried by the next calls' input with accumulate; without it, none."`
	Context          string `json:"context,omitempty" enum:"accumulate,fresh" default:"accumulate" doc:"accumulate: call i's input is the first input plus every earlier output and tool result of the task; fresh: every call's input is drawn from input_tokens alone."`
}

// Accumulates reports whether each call carries the task's earlier
// outputs and tool results.
func (t Task) Accumulates() bool { return t.Context != ContextFresh }

// task checks a class's task and the targets that depend on it; l is the
// class's latency profile (nil when it names none).
func (c *checker) task(p string, cl Class, l *Latency) {
	if cl.Task == nil {
		if cl.SLO != nil && cl.SLO.TaskE2E() > 0 {
			c.add(p+".slo.task_e2e_ms", "requires task: it is a target on a whole task")
		}
		return
	}
	t := *cl.Task
	tp := p + ".task"
	c.dist(tp+".calls", t.Calls)
	switch v := t.Calls.Fixed; {
	case v == nil:
	case *v < 1:
		c.add(tp+".calls.fixed", "must be at least 1: a task makes at least one call")
	case *v > MaxTaskCalls:
		c.add(tp+".calls.fixed", "must be at most %d: a task makes at most %d calls", MaxTaskCalls, MaxTaskCalls)
	}
	if v := t.Calls.Max; v != nil && *v < 1 {
		c.add(tp+".calls.max", "must be at least 1: a task makes at least one call")
	}
	if t.ToolMs != nil {
		c.dist(tp+".tool_ms", *t.ToolMs)
	}
	if t.ToolResultTokens != nil {
		c.dist(tp+".tool_result_tokens", *t.ToolResultTokens)
	}
	if cl.SLO != nil && cl.SLO.E2E() > 0 {
		f := "e2e_ms"
		if cl.SLO.E2EMs == 0 {
			f = "e2e_p95_ms"
		}
		c.add(p+".slo."+f, "a task class is held to task_e2e_ms on the whole task and ttft_ms (or ttft_p95_ms) on each call: give task_e2e_ms")
	}
	if l != nil && len(l.Curve) > 0 {
		c.add(tp, "a task class needs a latency profile of ttft_ms and tpot_ms: its calls are not planned on a measured curve")
	}
}

// taskLatency is the latency profile a class's calls follow: its own, its
// endpoint's, or the top-level one.
func taskLatency(s Scenario, cl Class) *Latency {
	switch {
	case cl.Latency != nil && !cl.Latency.IsZero():
		return cl.Latency
	case cl.Endpoint != "":
		for _, e := range s.Endpoints {
			if e.Name == cl.Endpoint {
				return &e.Latency
			}
		}
		return nil
	}
	return &s.Latency
}
