// Package verify checks a plan against the endpoint it was made for
// (docs/service-probes.md, "Validating a plan"): on each of the plan's
// endpoints it runs every class that has a pool at once, each a short
// closed-loop probe at its pool with requests shaped like the class's, so
// that the endpoint carries the plan's total, and then every class at 1.25
// times its pool together; it compares what it measures with what the
// model predicts for the same concurrencies at the same total
// (plan.PredictShared): throughput, TTFT p95, E2E p95 and 429s, with the
// relative errors, the measurement's 95 % intervals and a verdict.
//
// Request shape: each request's prompt is the class's input length p50
// (synthetic text, calibrated on the answers) and its output is fixed with
// ignore_eos at the class's mean output length, rounded (capped at
// max_tokens). With a fixed output of E[out] tokens the mean service time
// is TTFT + TPOT·(E[out] − 1), the model's E[S] up to the rounding, so the
// measured throughput c/E[S] is comparable with the model's. The
// predictions are made for that same shape (a copy of the scenario whose
// classes have these fixed lengths), so that the p95s compare like with
// like; a class whose output varies has wider p95s in production than here.
//
// Together: the classes of one endpoint start at once, and each keeps its
// pool full until every one of them has measured its step (N requests
// after its warm-up), so that every measured request ran with the whole
// endpoint's total in flight; then they all stop. A class alone on its
// endpoint runs its step of N as a probe does.
//
// Verdicts compare each prediction with the measurement's 95 % interval
// (the goodput interval, relative, for the throughput, and the order
// statistics' interval of each p95, as package analysis computes them):
// a figure is off by the distance from the prediction to the nearest end
// of its interval, in percent of the prediction (0 when the interval holds
// it), and holds while that is within the tolerance, an allowance for the
// model's own error on top of the sampling noise (25 % unless set).
//   - fails: at the pool, no successful step, any 429 or other error; at
//     the pool or at 1.25 × it, the throughput, the TTFT p95 or the E2E p95
//     off by more than the tolerance, in either direction; at the pool, a
//     p95 whose interval lies above the class's SLO, and at 1.25 × it, one
//     above the SLO that the model predicted under it. The reasons say
//     which. The plan does not hold: its pools, or the model behind them,
//     are wrong.
//   - degraded: nothing measured at 1.25 × the pool, 429s there when the
//     pool is not bound by a quota (there is less headroom above the pool
//     than the plan assumes), or a p95 above the SLO at the pool whose
//     interval still reaches under it. 429s above a pool that a quota
//     binds are expected and only noted.
//   - ok: neither.
//
// An agent task class is validated alone, by replaying its tasks call by
// call at its pool of tasks (task.go): each call's TTFT and the task's E2E
// at the SLO's percentile are judged as a class's figures at its pool
// are, and the share of tasks that met every target is reported.
//
// The overall verdict is the worst of the classes validated.
package verify

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/optional"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/scenario"
)

// DefaultTolerancePct is how far, in percent of the prediction, a
// measurement's 95 % interval may lie from the prediction while the model
// holds; MaxTolerancePct is the most a validation may be told.
const (
	DefaultTolerancePct = 25.0
	MaxTolerancePct     = 999.0
)

// DefaultPause separates a validation's two steps, and its endpoints,
// unless its probe says otherwise: a closed loop leaves no queue behind,
// so a short pause does.
const DefaultPause = 500 * time.Millisecond

// HeadroomFactor is the concurrency above the pool that is also tried.
const HeadroomFactor = 1.25

// Verdicts.
const (
	VerdictOK       = "ok"
	VerdictDegraded = "degraded"
	VerdictFails    = "fails"
	VerdictSkipped  = "skipped"
)

// Options shape the validation probes. A setting left unset takes its
// default.
type Options struct {
	// Probe is the base of every class's probe: the endpoint, the key, the
	// network hooks, the deadline, pause (default DefaultPause), retries
	// and the budget, which bounds the whole validation (all classes
	// together). Steps, prompt and output length are set per class.
	Probe probe.Config
	// RequestsPerStep is N of each step; unset selects the probe's
	// max(40, 3c) + c.
	RequestsPerStep optional.Value[int]
	// MaxTokens caps the output length asked per request; unset: no cap. A
	// class whose mean output is longer is validated, and predicted, at
	// this length.
	MaxTokens optional.Value[int]
	// TolerancePct is how far, in percent of each prediction, the
	// measurement's 95 % interval may lie from it while the model holds:
	// an allowance for the model's own error on top of the sampling noise
	// (default 25, at most 999).
	TolerancePct optional.Value[float64]
	// Caps, when set, are the service's limits on its probes: the budget
	// defaults to them, and each class's probe must keep within them. The
	// command line has none.
	Caps *probe.Caps
}

func (o Options) tolerancePct() float64 { return o.TolerancePct.Or(DefaultTolerancePct) }

// Validate reports the problems of the options, each located at its field
// ("tolerance_pct", "requests_per_step", "max_tokens"; the base probe's
// under "probe.", as probe.Config.Validate names them), in the model of
// probe.Config.Validate: the command line and the service rename the paths
// to their flags and body locations. The problems that the plan brings
// are Check's.
func (o Options) Validate() []fieldpath.Error {
	var errs []fieldpath.Error
	add := func(path, format string, args ...any) {
		errs = append(errs, fieldpath.Error{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if v := o.tolerancePct(); !(v > 0 && v <= MaxTolerancePct) {
		add("tolerance_pct", "%g %% is outside (0, %g]", v, MaxTolerancePct)
	}
	if n, ok := o.RequestsPerStep.Get(); ok && (n < 1 || n > probe.MaxRequestsPerStep) {
		add("requests_per_step", "%d requests is outside 1..%d", n, probe.MaxRequestsPerStep)
	}
	if n, ok := o.MaxTokens.Get(); ok && (n < 1 || n > probe.MaxOutputTokens) {
		add("max_tokens", "%d tokens is outside 1..%d", n, probe.MaxOutputTokens)
	}
	for _, e := range o.Probe.Validate() {
		errs = append(errs, under("probe", e))
	}
	if o.Caps != nil {
		// The caps bound the budget, and the step size and max_tokens that
		// every class's probe takes from the options.
		cfg := o.Probe
		cfg.RequestsPerStep, cfg.MaxTokens = o.RequestsPerStep, o.MaxTokens
		_, capped := cfg.WithinCaps(*o.Caps)
		for _, e := range capped {
			if e.Path != "requests_per_step" && e.Path != "max_tokens" {
				e = under("probe", e)
			}
			errs = append(errs, e)
		}
	}
	return errs
}

// under locates a problem of a part of the options below its field.
func under(path string, e fieldpath.Error) fieldpath.Error {
	return fieldpath.Error{Path: fieldpath.Join(path, e.Path), Message: e.Message}
}

// Check reports every problem of validating plan p of sc with o before
// anything is sent: Validate's, and for each class with a pool, its probe
// as the validation would send it (its pool and 1.25 × it, prompts of its
// input p50, answers of its mean output), checked as any probe is
// (probe.Config.Validate, and the caps when o has them). A class's
// problem is located at the class ("classes[1]") and names it, unless an
// option causes it (a step size, a max_tokens above a cap), which is then
// located at the option, once. Every size that the plan gives is bounded
// here, before memory is taken for it.
func Check(sc scenario.Scenario, p *plan.Plan, o Options) []fieldpath.Error {
	_, errs := prepare(sc, p, o)
	return errs
}

// classProbe is one class's validation probe: its configuration at both
// concurrencies, as Check judges it (Run sends one step at a time).
type classProbe struct {
	cfg     probe.Config
	in, out int        // prompt and answer lengths in tokens
	capped  string     // a reason to give when the output was capped
	task    *taskShape // an agent task class's tasks, nil for single calls
}

// lengthsOf is a class's probe's prompt and answer lengths: its input
// p50 and its mean output at pred, the output capped at the options'
// max_tokens when that is smaller; lengths beyond what a probe sends are
// problems at input_tokens and max_tokens.
func lengthsOf(pred plan.Prediction, o Options) (*classProbe, []fieldpath.Error) {
	var errs []fieldpath.Error
	in, out := math.Round(pred.InputTokensP50), math.Round(pred.MeanOutputTokens)
	if !(in <= probe.MaxInputTokens) {
		errs = append(errs, fieldpath.Error{Path: "input_tokens", Message: fmt.Sprintf("%.0f tokens, above the most a probe sends, %d", in, probe.MaxInputTokens)})
	}
	mt, capped := o.MaxTokens.Get()
	capped = capped && out > float64(mt)
	if !capped && !(out <= probe.MaxOutputTokens) {
		errs = append(errs, fieldpath.Error{Path: "max_tokens", Message: fmt.Sprintf("%.0f tokens, above the most a probe asks for, %d", out, probe.MaxOutputTokens)})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	c := &classProbe{in: max(1, int(in)), out: max(1, int(out))}
	if capped {
		c.out = mt
		c.capped = fmt.Sprintf("output capped at max_tokens %d (the class's mean is %.0f); predicted for that length", mt, out)
	}
	return c, nil
}

// prepare builds every class's probe (nil for a class without a pool)
// and reports the problems of the options and the probes.
func prepare(sc scenario.Scenario, p *plan.Plan, o Options) ([]*classProbe, []fieldpath.Error) {
	errs := o.Validate()
	seen := map[fieldpath.Error]bool{}
	for _, e := range errs {
		seen[e] = true
	}
	add := func(e fieldpath.Error) {
		if !seen[e] {
			seen[e] = true
			errs = append(errs, e)
		}
	}
	base := o.Probe
	if o.Caps != nil {
		base, _ = base.WithinCaps(*o.Caps) // its problems are Validate's
	}
	out := make([]*classProbe, len(p.Classes))
	for i, cp := range p.Classes {
		if cp.Pool < 1 {
			continue
		}
		at := fieldpath.Index("classes", i)
		cpr, problems := classProbeOf(sc, cp, base, o)
		for _, e := range problems {
			switch {
			case seen[e]: // the option's own problem, as Validate found it
			case e.Path == "requests_per_step": // only a step size given makes one
				add(e)
			case e.Path == "" || strings.HasPrefix(e.Path, "steps") || strings.HasPrefix(e.Path, "conversation") || e.Path == "input_tokens" || e.Path == "max_tokens":
				add(fieldpath.Error{Path: at, Message: fmt.Sprintf("class %s: %s", cp.Name, classProblem(cp, e))})
			default:
				add(under("probe", e))
			}
		}
		out[i] = cpr
	}
	return out, errs
}

// classProblem says a problem of a class's probe in the terms of the
// class: the concurrency, prompt or answer that the plan gives.
func classProblem(cp plan.ClassPlan, e fieldpath.Error) string {
	switch {
	case strings.HasPrefix(e.Path, "conversation"):
		return fmt.Sprintf("its tasks at its pool of %d: %s", cp.Pool, e.Message)
	case strings.HasPrefix(e.Path, "steps"):
		concs := Concurrencies(cp.Pool)
		return fmt.Sprintf("it would run at %d and %d (its pool and %g × it): %s", concs[0], concs[1], HeadroomFactor, e.Message)
	case e.Path == "input_tokens":
		return "prompts of its input p50: " + e.Message
	case e.Path == "max_tokens":
		return "answers of its mean output length: " + e.Message
	}
	return e.Message
}

// classProbeOf builds the probe of one class with a pool from the base
// probe, with the problems of that probe located as probe.Config.Validate
// locates them. The prompt and answer lengths are bounded as numbers
// before they become a probe's, so that no plan, however large its
// classes' lengths, makes a validation allocate for them.
func classProbeOf(sc scenario.Scenario, cp plan.ClassPlan, base probe.Config, o Options) (*classProbe, []fieldpath.Error) {
	if cp.Task != nil {
		return taskProbeOf(sc, cp, base, o)
	}
	concs := Concurrencies(cp.Pool)
	if concs[1] > probe.MaxConcurrency {
		return nil, []fieldpath.Error{{Path: "steps", Message: fmt.Sprintf("concurrency %d is outside 1..%d", concs[1], probe.MaxConcurrency)}}
	}
	pred, err := plan.PredictAt(sc, cp.Name, concs[0])
	if err != nil {
		return nil, []fieldpath.Error{{Message: fmt.Sprintf("the plan's scenario cannot predict it: %v", err)}}
	}
	c, errs := lengthsOf(pred, o)
	if len(errs) > 0 {
		return nil, errs
	}
	cfg := base
	cfg.Steps, cfg.InputTokens, cfg.MaxTokens, cfg.IgnoreEOS = concs, optional.Of(c.in), optional.Of(c.out), true
	cfg.RequestsPerStep, cfg.Prompts, cfg.Open, cfg.Search, cfg.SearchMax = o.RequestsPerStep, nil, nil, false, optional.Value[int]{}
	cfg.Max429Ratio = optional.Of(1.0) // both steps run whatever the 429s: they are what is measured
	cfg.Exact = true                   // each step exactly its N: they are compared with the model, not judged
	if !cfg.Pause.IsSet() {
		cfg.Pause = optional.Of(DefaultPause)
	}
	errs = cfg.Validate()
	if o.Caps != nil {
		_, capped := cfg.WithinCaps(*o.Caps)
		errs = append(errs, capped...)
	}
	c.cfg = cfg
	return c, errs
}

// Report is the outcome of a validation.
type Report struct {
	Verdict      string        `json:"verdict" enum:"ok,degraded,fails" doc:"The worst verdict of the classes validated."`
	Summary      string        `json:"summary"`
	TolerancePct float64       `json:"tolerance_pct" doc:"How far, in percent of the prediction, throughput, TTFT p95 and E2E p95 may lie beyond the measurement's 95 % interval: an allowance for the model's own error on top of the sampling noise."`
	Classes      []ClassReport `json:"classes"`
}

// ClassReport is one class's validation.
type ClassReport struct {
	Class             string   `json:"class"`
	Endpoint          string   `json:"endpoint" doc:"The plan's endpoint of the class; its classes are validated together."`
	Pool              int      `json:"pool"`
	BindingConstraint string   `json:"binding_constraint"`
	Verdict           string   `json:"verdict" enum:"ok,degraded,fails,skipped"`
	Reasons           []string `json:"reasons" doc:"Why the verdict, in words and numbers."`
	InputTokens       int      `json:"input_tokens" doc:"Prompt length sent: the class's input p50."`
	OutputTokens      int      `json:"output_tokens" doc:"Output length asked with ignore_eos: the class's mean output, rounded."`
	Together          []string `json:"together,omitempty" doc:"The other classes of its endpoint, in flight at the same time."`
	Points            []Point  `json:"points" doc:"At the pool and at 1.25 times it, every class of the endpoint at the same time."`
	StopReason        string   `json:"stop_reason,omitempty" doc:"Why the class's probe at its pool stopped: completed once every class of the endpoint had measured its step."`
	// Failure is why nothing succeeded at the pool, in the probe's
	// words, credentials removed; empty when a request did.
	Failure string `json:"failure,omitempty" doc:"Why no request succeeded at the pool, as the probe says it (the endpoint unreachable, refused, every request failing); absent when one did."`
	// Task is the validation of an agent task class, whose points are
	// then empty; nil for a class of single calls.
	Task *TaskCheck `json:"task,omitempty" doc:"An agent task class's validation: its tasks replayed call by call at its pool of tasks in flight, each call's TTFT and the task's E2E at the SLO's percentile against the model's, and the share of tasks that met every target; its points are empty."`
}

// Point compares the prediction and the measurement at one concurrency.
type Point struct {
	Concurrency int `json:"concurrency"`
	// Load is the total in flight on the class's endpoint: every class of
	// it at its own concurrency.
	Load      int             `json:"load" doc:"Requests in flight on the endpoint, every class's together."`
	Predicted plan.Prediction `json:"predicted"`
	// Measured is null when the probe did not reach this concurrency.
	Measured *Measured `json:"measured"`
	// RelativeErrorPct is (measured − predicted) / predicted × 100; null
	// without a measurement.
	RelativeErrorPct *Errors `json:"relative_error_pct"`
	// IntervalErrorPct is how far the measurement's 95 % interval lies
	// from the prediction, in percent of it: 0 when it holds the
	// prediction, else (nearest end − predicted) / predicted × 100; null
	// without a measurement. The verdict compares it with the tolerance.
	IntervalErrorPct *Errors `json:"interval_error_pct" doc:"(nearest end of the measured 95 % interval − predicted) / predicted × 100, 0 when the interval holds the prediction; the verdict compares it with tolerance_pct."`
}

// Measured is what the probe measured at one concurrency (warm-up
// excluded, except RateLimited, which counts every 429 answer), with the
// 95 % intervals of the throughput (the goodput interval's relative
// width) and of the p95s. A point the probe did not reach sends null (the
// _ field's tag says so in the OpenAPI document).
type Measured struct {
	_                struct{}          `nullable:"true"`
	Requests         int               `json:"requests"`
	OK               int               `json:"ok"`
	Errors           int               `json:"errors" doc:"Failures other than 429."`
	RateLimited      int               `json:"rate_limited" doc:"429 answers, retried ones and warm-up included."`
	ThroughputRPS    float64           `json:"throughput_rps"`
	ThroughputCI     *measure.Interval `json:"throughput_ci,omitempty" doc:"95 % interval of the throughput: the goodput interval's relative width around it."`
	TTFTP95Ms        float64           `json:"ttft_p95_ms"`
	TTFTP95CI        *measure.Interval `json:"ttft_p95_ci,omitempty" doc:"95 % interval of the TTFT p95 (order statistics)."`
	E2EP95Ms         float64           `json:"e2e_p95_ms"`
	E2EP95CI         *measure.Interval `json:"e2e_p95_ci,omitempty" doc:"95 % interval of the E2E p95 (order statistics)."`
	MeanOutputTokens float64           `json:"mean_output_tokens"`
	// SLO is how the class's measured requests met its SLO's targets all
	// at once: nil for a class without an SLO.
	SLO *measure.SLOStats `json:"slo,omitempty" doc:"How the class's measured requests met its SLO's targets (TTFT and E2E) all at once, each request judged against them, as the probe's SLO goodput counts them: where at least 95 % did, the p95s hold. Absent for a class without an SLO."`
}

// Errors are the errors of a measurement, in percent; null without a
// measurement (the _ field's tag).
type Errors struct {
	_             struct{} `nullable:"true"`
	ThroughputRPS float64  `json:"throughput_rps"`
	TTFTP95Ms     float64  `json:"ttft_p95_ms"`
	E2EP95Ms      float64  `json:"e2e_p95_ms"`
}

// Concurrencies are the two concurrencies a class of pool p is run at.
func Concurrencies(pool int) []int {
	return []int{pool, int(math.Ceil(HeadroomFactor * float64(pool)))}
}

// Run validates a plan of sc against the endpoint of opts.Probe, the
// classes of each of the plan's endpoints together, one endpoint after the
// other. The error is for options or a plan that Check refuses (a
// fieldpath.Errors), checked before anything is sent, or for a probe that
// cannot run; an endpoint that fails is a verdict, not an error.
func Run(ctx context.Context, sc scenario.Scenario, p *plan.Plan, opts Options) (*Report, error) {
	probes, errs := prepare(sc, p, opts)
	if len(errs) > 0 {
		return nil, fieldpath.Errors(errs)
	}
	budget := opts.Probe.Budget
	if opts.Caps != nil {
		capped, _ := opts.Probe.WithinCaps(*opts.Caps)
		budget = capped.Budget
	}
	rep := &Report{TolerancePct: opts.tolerancePct(), Classes: make([]ClassReport, len(p.Classes))}
	for i, cp := range p.Classes {
		rep.Classes[i] = ClassReport{Class: cp.Name, Endpoint: cp.Endpoint, Pool: cp.Pool, BindingConstraint: cp.BindingConstraint, Points: []Point{}, Reasons: []string{}}
		if probes[i] == nil {
			rep.Classes[i].Verdict = VerdictSkipped
			rep.Classes[i].Reasons = append(rep.Classes[i].Reasons, "the class has no pool that fits, so there is nothing to validate")
		}
	}
	v := &validation{sc: sc, shaped: shapeAll(sc, p, probes), plan: p, probes: probes, opts: opts, budget: budget,
		rep: rep, spend: spend{start: time.Now()}}
	for gi, g := range groups(p, probes) {
		if gi > 0 && !probe.Sleep(ctx, probes[g[0]].cfg.Pause.Or(DefaultPause)) {
			break
		}
		run := v.runGroup
		if probes[g[0]].task != nil {
			run = func(ctx context.Context, g []int) error { return v.runTask(ctx, g[0]) }
		}
		if err := run(ctx, g); err != nil {
			return nil, err
		}
	}
	for i := range rep.Classes {
		if rep.Classes[i].Verdict == "" {
			rep.Classes[i].Verdict = VerdictSkipped
			rep.Classes[i].Reasons = append(rep.Classes[i].Reasons, "not run: the validation was stopped")
		}
	}
	rep.Verdict, rep.Summary = overall(rep.Classes)
	return rep, nil
}

// spend is what the classes validated so far have used of the budget.
type spend struct {
	start            time.Time
	requests, tokens int
}

// left is the budget b minus what was spent, or why nothing is left.
func (sp *spend) left(b probe.Budget) (probe.Budget, string) {
	l := b
	if n, ok := b.MaxRequests.Get(); ok {
		if l.MaxRequests = optional.Of(n - sp.requests); n-sp.requests <= 0 {
			return l, "the validation's request budget is spent"
		}
	}
	if n, ok := b.MaxTokens.Get(); ok {
		if l.MaxTokens = optional.Of(n - sp.tokens); n-sp.tokens <= 0 {
			return l, "the validation's token budget is spent"
		}
	}
	if d, ok := b.MaxDuration.Get(); ok {
		if l.MaxDuration = optional.Of(d - time.Since(sp.start)); d-time.Since(sp.start) <= 0 {
			return l, "the validation's time budget is spent"
		}
	}
	return l, ""
}

// shapeAll is a copy of sc whose classes with a validation probe have the
// fixed input and output lengths that their probes send.
func shapeAll(sc scenario.Scenario, p *plan.Plan, probes []*classProbe) scenario.Scenario {
	c := sc
	c.Classes = slices.Clone(sc.Classes)
	for i, cp := range p.Classes {
		pr := probes[i]
		if pr == nil {
			continue
		}
		for k := range c.Classes {
			if c.Classes[k].Name != cp.Name {
				continue
			}
			fi, fo := float64(pr.in), float64(pr.out)
			c.Classes[k].InputTokens = scenario.Dist{Fixed: &fi}
			c.Classes[k].OutputTokens = scenario.Dist{Fixed: &fo}
			c.Classes[k].MaxTokens = pr.out
			if pr.task != nil {
				shapeTask(&c.Classes[k], pr.task)
			}
		}
	}
	return c
}
