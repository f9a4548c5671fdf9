package probe

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/measure"
)

// conversation replays multi-call tasks whose context grows
// (docs/probe.md, "Conversations"): InFlight workers each run one task at
// a time, and a task's calls are serial, call i's messages the task's
// first input and, for each earlier call, its answer and a tool result,
// with the tool time waited between calls; with Fresh, each call's
// messages are a first input of their own. The first round of tasks (one
// per worker) is warm-up. A task ends at its first failed call.
type conversation struct {
	Conversation
}

func (v conversation) check(c Config, p *problems) {
	notRamp(c, p, "a conversation", ModeConversation)
	switch {
	case v.Calls == 0:
		p.add("conversation.calls", "is required: a conversation replays tasks of 2..%d serial calls, and its other settings (tasks, tasks in flight, tool time, tool results) ask for one", MaxCalls)
	case v.Calls < 2 || v.Calls > MaxCalls:
		p.add("conversation.calls", "%d calls per task is outside 2..%d", v.Calls, MaxCalls)
	}
	if n := v.inFlight(); n < 1 || n > MaxConcurrency {
		p.add("conversation.tasks_in_flight", "%d tasks in flight is outside 1..%d", n, MaxConcurrency)
	} else {
		c.checkMeasured(p, "conversation.tasks", v.Tasks.IsSet(), n, v.tasks(), 1, "tasks")
	}
	if d := v.toolTime(); d < 0 || d > MaxToolTime {
		p.add("conversation.tool_time", "%s is outside 0..%s", d, MaxToolTime)
	}
	tool := v.toolResultTokens()
	between(p, "conversation.tool_result_tokens", tool, 1, MaxInputTokens, "tokens")
	if !v.Fresh && v.Calls >= 2 && v.Calls <= MaxCalls && tool >= 1 && tool <= MaxInputTokens {
		if last := c.inputTokens() + (v.Calls-1)*(c.maxTokens()+tool); last > MaxInputTokens {
			p.add("conversation.calls", "the last call's input would grow to %d tokens (input_tokens + (calls − 1) × (max_tokens + tool_result_tokens)), above the most a probe sends, %d", last, MaxInputTokens)
		}
	}
}

func (v conversation) concurrencies() []int { return []int{v.inFlight()} }

// run runs the tasks until they end, a budget is spent or the run is
// cancelled, then applies the stop rules.
func (v conversation) run(ctx context.Context, r *runner) (reason, detail string) {
	c, tasks := v.inFlight(), v.tasks()
	w := r.cfg.warmupFor(c, tasks)
	r.plan(stepKey{c: c}, tasks*v.Calls)
	var mu sync.Mutex
	var recs []measure.Record
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(c, tasks) {
		wg.Go(func() {
			for ctx.Err() == nil && r.budget.exhausted() == "" {
				t := int(next.Add(1))
				if t > tasks {
					return
				}
				done := v.task(ctx, r, t, t <= w)
				mu.Lock()
				recs = append(recs, done...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return r.endPromptStep(ctx, c, recs)
}

// task runs task t's calls and returns their rows.
func (v conversation) task(ctx context.Context, r *runner, t int, warmup bool) []measure.Record {
	tool := v.toolResultTokens()
	seq := r.nextSeq()
	hist := []turn{r.prompts.opening(seq, r.cfg.inputTokens())}
	var recs []measure.Record
	var prev measure.Record
	for call := 1; call <= v.Calls; call++ {
		if call > 1 {
			if !Sleep(ctx, v.toolTime()) {
				return recs
			}
			seq = r.nextSeq()
			if v.Fresh {
				hist = []turn{r.prompts.opening(seq, r.cfg.inputTokens())}
			} else {
				hist = append(hist, r.prompts.answer(t, call-1, prev.OutputTokens), r.prompts.toolResult(t, call-1, tool))
			}
		}
		in := shaped(hist, seq)
		if call > 1 && !v.Fresh {
			in.prefixTokens = prev.InputTokens + prev.OutputTokens
		}
		base := measure.Record{Step: v.inFlight(), Index: (t-1)*v.Calls + call - 1, Warmup: warmup, Task: t, Call: call}
		rec, ok := r.send(ctx, base, in)
		if !ok {
			return recs
		}
		recs = append(recs, rec)
		if !rec.OK {
			return recs
		}
		prev = rec
	}
	return recs
}

// judge summarises the run's calls and tasks.
func (conversation) judge(recs []measure.Record, an *measure.Result) {
	cs, err := analysis.MeasureConversation(recs)
	if err != nil {
		an.Notes = append(an.Notes, "no conversation measured: "+err.Error())
		return
	}
	an.Conversation = cs
	note := fmt.Sprintf("conversation: %d tasks of %d calls measured (%d failed); a task took %.0f ms at p50 and %.0f ms at p95, %.0f %% of it in calls",
		cs.Tasks, len(cs.Calls), cs.FailedTasks, cs.TaskP50Ms, cs.TaskP95Ms, 100*cs.LLMShare)
	if h := cs.HitRate; h != nil {
		note += fmt.Sprintf("; the cache served %.3g of the earlier context", *h)
	}
	an.Notes = append(an.Notes, note, "a conversation's step counts calls, with tool time between them: its step makes no latency curve and no knee")
}
