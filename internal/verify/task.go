package verify

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/optional"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// An agent task class (docs/service-probes.md, "Validating an agent
// task") is validated by the probe's conversation mode at the plan's pool
// of tasks in flight, alone on its endpoint: each task makes the class's
// mean calls, rounded, one after another, each with the class's input
// p50 (with accumulate, plus every earlier answer and tool result) and an
// answer of its mean output with ignore_eos, the mean tool time waited
// after every call. The predictions are the model's for tasks of that
// fixed shape, without queue wait (a closed loop of the pool keeps none):
// each call's TTFT and the task's E2E at the SLO's percentile.

// taskShape is the fixed task an agent task class is validated with.
type taskShape struct {
	calls   int
	toolMs  float64
	result  int // tokens of each tool result
	context string
}

// taskProbeOf builds the conversation probe of an agent task class with
// a pool, with its problems located as probe.Config.Validate locates
// them, from the class's input p50, mean output, mean calls, tool time
// and tool result.
func taskProbeOf(sc scenario.Scenario, cp plan.ClassPlan, base probe.Config, o Options) (*classProbe, []fieldpath.Error) {
	if cp.Pool > probe.MaxConcurrency {
		return nil, []fieldpath.Error{{Path: "conversation.tasks_in_flight", Message: fmt.Sprintf("%d tasks in flight is outside 1..%d", cp.Pool, probe.MaxConcurrency)}}
	}
	pred, err := plan.PredictAt(sc, cp.Name, cp.Pool)
	if err != nil {
		return nil, []fieldpath.Error{{Message: fmt.Sprintf("the plan's scenario cannot predict it: %v", err)}}
	}
	law, err := taskLaw(sc, cp.Name)
	if err != nil {
		return nil, []fieldpath.Error{{Message: fmt.Sprintf("the plan's scenario cannot predict it: %v", err)}}
	}
	shape := &taskShape{calls: plan.TaskCalls(law.Calls.Mean()), toolMs: math.Round(law.ToolS.Mean() * 1000), context: scenario.ContextFresh}
	if law.Accumulate {
		shape.context, shape.result = scenario.ContextAccumulate, max(1, int(math.Round(law.Result.Mean())))
	}
	if shape.calls < 2 {
		return nil, []fieldpath.Error{{Message: fmt.Sprintf("its tasks make %d call on average: a task of one call is a single call, and a conversation makes at least two", shape.calls)}}
	}
	c, errs := lengthsOf(pred, o)
	if len(errs) > 0 {
		return nil, errs
	}
	c.task = shape
	tasks := o.RequestsPerStep.Or(analysis.MinMeasured(cp.Pool) + cp.Pool) // one round of warm-up included
	cfg := base
	cfg.Steps, cfg.InputTokens, cfg.MaxTokens, cfg.IgnoreEOS = nil, optional.Of(c.in), optional.Of(c.out), true
	cfg.RequestsPerStep, cfg.Prompts, cfg.Open, cfg.Search, cfg.SearchMax = optional.Value[int]{}, nil, nil, false, optional.Value[int]{}
	cfg.Warmup = optional.Of(cp.Pool)
	cfg.Conversation = &probe.Conversation{
		Calls: shape.calls, Tasks: optional.Of(tasks), InFlight: optional.Of(cp.Pool),
		ToolTime: optional.Of(time.Duration(shape.toolMs * float64(time.Millisecond))), ToolResultTokens: optional.Of(max(1, shape.result)),
		Fresh: shape.context == scenario.ContextFresh,
	}
	cfg.Max429Ratio = optional.Of(1.0) // the 429s are what is measured
	if !cfg.Pause.IsSet() {
		cfg.Pause = optional.Of(DefaultPause)
	}
	errs = cfg.Validate()
	if o.Caps != nil {
		_, capped := cfg.WithinCaps(*o.Caps)
		errs = append(errs, capped...)
	}
	for k, e := range errs {
		if e.Path == "conversation.tasks" && o.RequestsPerStep.IsSet() {
			// The number of tasks is the option's.
			errs[k] = fieldpath.Error{Path: "requests_per_step", Message: e.Message}
		}
	}
	c.cfg = cfg
	return c, errs
}

// workloadOf is the named class's workload, as the plan draws it.
func workloadOf(ctx context.Context, sc scenario.Scenario, class string) (plan.Workload, error) {
	ws, err := plan.New(plan.Options{}).Workloads(ctx, sc)
	if err != nil {
		return plan.Workload{}, err
	}
	for _, w := range ws {
		if w.Class == class {
			return w, nil
		}
	}
	return plan.Workload{}, fmt.Errorf("no class named %q", class)
}

// taskLaw is what the named agent task class's tasks are made of, as the
// plan draws them.
func taskLaw(sc scenario.Scenario, class string) (plan.TaskLaw, error) {
	w, err := workloadOf(context.Background(), sc, class)
	if err != nil {
		return plan.TaskLaw{}, err
	}
	if w.Task == nil {
		return plan.TaskLaw{}, fmt.Errorf("class %q makes no agent task", class)
	}
	return *w.Task, nil
}

// shapeTask gives class cl the fixed task of shape.
func shapeTask(cl *scenario.Class, shape *taskShape) {
	calls := float64(shape.calls)
	t := scenario.Task{Calls: scenario.Dist{Fixed: &calls}, Context: shape.context}
	if shape.toolMs > 0 {
		tool := shape.toolMs
		t.ToolMs = &scenario.Dist{Fixed: &tool}
	}
	if shape.result > 0 {
		r := float64(shape.result)
		t.ToolResultTokens = &scenario.Dist{Fixed: &r}
	}
	cl.Task = &t
}

// TaskCheck is the validation of an agent task class: the tasks sent,
// what the model predicts of them and what was measured.
type TaskCheck struct {
	Calls            int         `json:"calls" doc:"Calls each task made: the class's mean calls, rounded."`
	ToolMs           float64     `json:"tool_ms" doc:"The wait after each call: the class's mean tool time, milliseconds."`
	ToolResultTokens int         `json:"tool_result_tokens,omitempty" doc:"Each tool result's length, carried by the later calls (accumulate): the class's mean, rounded."`
	Context          string      `json:"context" enum:"accumulate,fresh"`
	TasksInFlight    int         `json:"tasks_in_flight" doc:"The plan's pool of tasks."`
	Percentile       float64     `json:"percentile" doc:"The SLO's percentile (95 without an SLO that names one): what TTFT and task E2E are taken at."`
	Predicted        TaskFigures `json:"predicted" doc:"The model's, for tasks of this shape without queue wait."`
	// Measured is null when no task was measured.
	Measured *TaskMeasured `json:"measured"`
	// IntervalErrorPct is how far each measured interval lies from the
	// prediction, in percent of it (0 when it holds it); null without a
	// measurement.
	IntervalErrorPct *TaskErrors `json:"interval_error_pct" doc:"(nearest end of the measured 95 % interval − predicted) / predicted × 100 for ttft_ms and task_e2e_ms, 0 when the interval holds the prediction; the verdict compares it with tolerance_pct."`
}

// TaskFigures are an agent task's latencies at the SLO's percentile.
type TaskFigures struct {
	TTFTMs    float64 `json:"ttft_ms" doc:"Each call's TTFT at the percentile, milliseconds."`
	TaskE2EMs float64 `json:"task_e2e_ms" doc:"A task's time at the percentile, from its first send to the end of its last tool run, milliseconds."`
}

// TaskErrors are how far a task check's measured intervals lie from the
// predictions, in percent; null without a measurement (the _ field's
// tag).
type TaskErrors struct {
	_         struct{} `nullable:"true"`
	TTFTMs    float64  `json:"ttft_ms"`
	TaskE2EMs float64  `json:"task_e2e_ms"`
}

// TaskMeasured is what the conversation measured over its tasks after
// the warm-up round.
type TaskMeasured struct {
	_           struct{}          `nullable:"true"`
	Tasks       int               `json:"tasks" doc:"Measured tasks: those that succeeded at every call, and those that ended at a failed one."`
	FailedTasks int               `json:"failed_tasks" doc:"Measured tasks that ended at a failed call."`
	Calls       int               `json:"calls" doc:"Measured calls."`
	Errors      int               `json:"errors" doc:"Failed calls other than 429."`
	RateLimited int               `json:"rate_limited" doc:"429 answers, retried ones and warm-up included."`
	TTFTMs      float64           `json:"ttft_ms" doc:"Every successful call's TTFT at the percentile, milliseconds."`
	TTFTCI      *measure.Interval `json:"ttft_ci,omitempty" doc:"95 % interval of it (order statistics)."`
	TaskE2EMs   float64           `json:"task_e2e_ms" doc:"The complete tasks' time at the percentile: first send to last call's end, plus the tool time after the last call, which the probe does not wait."`
	TaskE2ECI   *measure.Interval `json:"task_e2e_ci,omitempty" doc:"95 % interval of it (order statistics)."`
	// Goodput is the share of the measured tasks that met every target of
	// the class's SLO: each call's TTFT and TPOT and the task's E2E.
	Goodput *measure.SLOStats `json:"goodput,omitempty" doc:"How many of the measured tasks met every target of the SLO at once (each call's TTFT and TPOT, the task's E2E; a failed task meets none), with the Wilson interval of the share; absent without an SLO."`
}

// runTask validates agent task class i alone on its endpoint.
func (v *validation) runTask(ctx context.Context, i int) error {
	cp := v.plan.Classes[i]
	pr := v.probes[i]
	cr := &v.rep.Classes[i]
	cr.InputTokens, cr.OutputTokens = pr.in, pr.out
	if pr.capped != "" {
		cr.Reasons = append(cr.Reasons, pr.capped)
	}
	slo := sloOfClass(v.sc, cp.Name)
	pct := slo.At()
	tc := &TaskCheck{Calls: pr.task.calls, ToolMs: pr.task.toolMs, ToolResultTokens: pr.task.result, Context: pr.task.context,
		TasksInFlight: cp.Pool, Percentile: pct}
	cr.Task = tc
	pred, err := taskPrediction(v.shaped, cp.Name, cp.Pool, pct/100)
	if err != nil {
		return fmt.Errorf("class %s: %w", cp.Name, err)
	}
	tc.Predicted = pred
	left, spent := v.spend.left(v.budget)
	if spent == "" {
		tasks := pr.cfg.Conversation.Tasks.Or(0)
		requests, tokens := tasks*pr.task.calls, tasks*pr.task.calls*(pr.in+pr.out)
		if n, ok := left.MaxRequests.Get(); ok && n < requests {
			spent = fmt.Sprintf("the validation's request budget has %d requests left, fewer than the %d calls of %d tasks of class %s", n, requests, tasks, cp.Name)
		} else if n, ok := left.MaxTokens.Get(); ok && n < tokens {
			spent = fmt.Sprintf("the validation's token budget has %d tokens left, fewer than the about %d that %d tasks of class %s need", n, tokens, tasks, cp.Name)
		}
	}
	if spent != "" {
		cr.Verdict = VerdictSkipped
		cr.Reasons = append(cr.Reasons, "not run: "+spent)
		return nil
	}
	cfg := pr.cfg
	cfg.Budget = left
	res, err := probe.Run(ctx, cfg, nil)
	if err != nil {
		return fmt.Errorf("class %s: %w", cp.Name, err)
	}
	v.spend.requests += res.Sent
	v.spend.tokens += res.TokensUsed
	cr.StopReason = res.StopReason
	if err := res.Failure(); err != nil {
		cr.Failure = err.Error()
	}
	tc.Measured = measureTasks(res.Records, slo, pr.task.calls, pr.task.toolMs, pct/100)
	if m := tc.Measured; m != nil {
		tc.IntervalErrorPct = &TaskErrors{
			TTFTMs:    figure{pred: pred.TTFTMs, meas: m.TTFTMs, ci: m.TTFTCI}.beyondPct(),
			TaskE2EMs: figure{pred: pred.TaskE2EMs, meas: m.TaskE2EMs, ci: m.TaskE2ECI}.beyondPct(),
		}
	}
	judgeTask(slo, cr, v.opts.tolerancePct())
	return nil
}

// sloOfClass is the named class's SLO, the zero SLO without one.
func sloOfClass(sc scenario.Scenario, class string) scenario.SLO {
	for _, c := range sc.Classes {
		if c.Name == class && c.SLO != nil {
			return *c.SLO
		}
	}
	return scenario.SLO{}
}

// taskPrediction is the model's TTFT and task E2E at probability p for
// the named agent task class of the shaped scenario, with pool tasks in
// flight and no queue wait.
func taskPrediction(shaped scenario.Scenario, class string, pool int, p float64) (TaskFigures, error) {
	ctx := context.Background()
	w, err := workloadOf(ctx, shaped, class)
	if err != nil {
		return TaskFigures{}, err
	}
	ttft, err := w.QuantileAt(ctx, pool, true, p)
	if err != nil {
		return TaskFigures{}, err
	}
	e2e, err := w.QuantileAt(ctx, pool, false, p)
	if err != nil {
		return TaskFigures{}, err
	}
	return TaskFigures{TTFTMs: signed.Round(ttft*1000, 1), TaskE2EMs: signed.Round(e2e*1000, 1)}, nil
}

// measureTasks is what the conversation's rows say of its measured tasks
// (warm-up excluded): every successful call's TTFT and the time of every
// task complete at its calls, plus the tool time toolMs after its last
// call, at
// probability p with their intervals, and how many tasks met every
// target of slo. nil when no task was measured.
func measureTasks(recs []measure.Record, slo scenario.SLO, calls int, toolMs, p float64) *TaskMeasured {
	tasks := map[int][]measure.Record{}
	m := &TaskMeasured{}
	for _, r := range recs {
		if r.Task < 1 || r.ErrorClass == measure.ErrCancelled {
			continue
		}
		m.RateLimited += r.RateLimitedAnswers()
		if !r.Warmup {
			tasks[r.Task] = append(tasks[r.Task], r)
		}
	}
	if len(tasks) == 0 {
		return nil
	}
	var ttfts, times []float64
	met := 0
	targets := measure.Targets{TTFTMs: slo.TTFT(), TPOTMs: slo.TPOT()}
	for _, rs := range tasks {
		slices.SortFunc(rs, func(a, b measure.Record) int { return a.Call - b.Call })
		ok := true
		for _, r := range rs {
			m.Calls++
			switch {
			case r.OK:
				ttfts = append(ttfts, r.TTFTMs)
			case r.RateLimitedAnswers() == 0:
				m.Errors++
			}
			ok = ok && targets.Met(r)
		}
		last := rs[len(rs)-1]
		if !last.OK {
			m.Tasks++
			m.FailedTasks++
			continue
		}
		if len(rs) < calls {
			continue // cut short by the end of the run, not measured
		}
		m.Tasks++
		t := (last.EndS()-rs[0].StartS)*1000 + toolMs
		times = append(times, t)
		if ok && (slo.TaskE2E() <= 0 || t <= slo.TaskE2E()) {
			met++
		}
	}
	m.TTFTMs, m.TTFTCI = analysis.QuantileCI(ttfts, p)
	m.TaskE2EMs, m.TaskE2ECI = analysis.QuantileCI(times, p)
	m.TTFTMs, m.TaskE2EMs = signed.Round(m.TTFTMs, 1), signed.Round(m.TaskE2EMs, 1)
	m.TTFTCI, m.TaskE2ECI = roundCI(m.TTFTCI, 1), roundCI(m.TaskE2ECI, 1)
	if !slo.IsZero() {
		m.Goodput = analysis.Attainment(met, m.Tasks)
	}
	return m
}

// judgeTask sets an agent task class's verdict and reasons from its
// check, as judge does for a class of single calls at its pool: it fails
// with no complete task, with any 429 or failed call, with TTFT or task
// E2E at the percentile off the prediction by more than tol percent
// beyond the measurement's interval, with a target of the SLO whose
// measured interval lies wholly above it, or with a goodput (the share of
// tasks that met every target at once) whose interval lies below the
// SLO's percentile; it is degraded by a measured value above its target,
// or a goodput below the percentile, whose interval still reaches it.
func judgeTask(slo scenario.SLO, cr *ClassReport, tol float64) {
	tc := cr.Task
	var fails, degraded []string
	m := tc.Measured
	at := "p" + strconv.FormatFloat(tc.Percentile, 'f', -1, 64)
	where := fmt.Sprintf("at the pool of %d tasks", cr.Pool)
	switch {
	case m == nil || m.Tasks == m.FailedTasks:
		fails = append(fails, fmt.Sprintf("no task completed at the pool of %d tasks (probe stopped: %s)%s", cr.Pool, cr.StopReason, failureOf(cr)))
	default:
		if m.RateLimited > 0 {
			fails = append(fails, fmt.Sprintf("%d 429 answers %s: the quota is tighter than the plan assumes", m.RateLimited, where))
		}
		if m.Errors > 0 {
			fails = append(fails, fmt.Sprintf("%d failed calls %s", m.Errors, where))
		}
		var within []string
		for _, f := range []figure{
			{"TTFT " + at, "ms", tc.Predicted.TTFTMs, m.TTFTMs, m.TTFTCI, "the model under-predicts each call's time to first token", "the model over-predicts each call's time to first token"},
			{"task E2E " + at, "ms", tc.Predicted.TaskE2EMs, m.TaskE2EMs, m.TaskE2ECI, "the model under-predicts a task's time", "the model over-predicts a task's time"},
		} {
			if f.pred <= 0 || f.meas <= 0 {
				continue
			}
			off := f.beyondPct()
			if math.Abs(off) <= tol {
				within = append(within, f.name+" "+signed.Pct(relPct(f.meas, f.pred)))
				continue
			}
			why := f.faster
			if off > 0 {
				why = f.slower
			}
			lo, hi := f.bounds()
			fails = append(fails, fmt.Sprintf("%s %s is %.1f ms (95 %%: %.1f–%.1f), %s %% off the predicted %.1f ms, %s %% beyond its interval (tolerance %g %%): %s",
				f.name, where, f.meas, lo, hi, signed.Fixed(relPct(f.meas, f.pred), 0), f.pred, signed.Fixed(off, 0), tol, why))
		}
		if len(within) > 0 {
			cr.Reasons = append(cr.Reasons, fmt.Sprintf("%s, within %g %% of the prediction beyond the 95 %% intervals: %s", where, tol, strings.Join(within, ", ")))
		}
		for _, t := range []struct {
			name   string
			target float64
			meas   float64
			ci     *measure.Interval
		}{
			{"TTFT " + at, slo.TTFT(), m.TTFTMs, m.TTFTCI},
			{"task E2E " + at, slo.TaskE2E(), m.TaskE2EMs, m.TaskE2ECI},
		} {
			if t.target <= 0 || t.meas <= t.target {
				continue
			}
			lo, _ := figure{meas: t.meas, ci: t.ci}.bounds()
			if lo > t.target {
				fails = append(fails, fmt.Sprintf("%s %s is %.0f ms, above the SLO of %.0f ms", t.name, where, t.meas, t.target))
			} else {
				degraded = append(degraded, fmt.Sprintf("%s %s is %.0f ms, above the SLO of %.0f ms, though its 95 %% interval reaches down to %.0f ms", t.name, where, t.meas, t.target, lo))
			}
		}
		if g := m.Goodput; g != nil {
			// The SLO binds its percentile of tasks to every target at
			// once: a goodput below it is a miss of some target (a call's
			// TPOT, say) that no percentile above names.
			want := tc.Percentile / 100
			said := fmt.Sprintf("%d of %d tasks (%.1f %%) met every target of the SLO at once (goodput)", g.Met, m.Tasks, 100*g.Attainment)
			switch {
			case g.Attainment >= want:
				cr.Reasons = append(cr.Reasons, said)
			case g.AttainmentCI != nil && g.AttainmentCI.Hi >= want:
				degraded = append(degraded, fmt.Sprintf("%s, fewer than the %g %% the SLO's %s asks, though its 95 %% interval reaches %.1f %%", said, tc.Percentile, at, 100*g.AttainmentCI.Hi))
			default:
				fails = append(fails, fmt.Sprintf("%s, fewer than the %g %% the SLO's %s asks", said, tc.Percentile, at))
			}
		}
	}
	cr.conclude(fails, degraded)
}
