// Package verify checks a plan against the endpoint it was made for
// (docs/service-probes.md, "Validating a plan"): for each class it runs a
// short closed-loop probe at the class's pool and at 1.25 times it, with
// requests shaped like the class's, and compares what it measures with
// what the model predicts at the same concurrencies (plan.PredictAt):
// throughput, TTFT p95, E2E p95 and 429s, with the relative errors and a
// verdict.
//
// Request shape: each request's prompt is the class's input length p50
// (synthetic text, calibrated on the answers) and its output is fixed with
// ignore_eos at the class's mean output length, rounded (capped at
// max_tokens). With a fixed output of E[out] tokens the mean service time
// is TTFT + TPOT·(E[out] − 1), the model's E[S] up to the rounding, so the
// measured throughput c/E[S] is comparable with the model's. The
// predictions are made for that same shape (a copy of the scenario whose
// class has these fixed lengths), so that the p95s compare like with like;
// a class whose output varies has wider p95s in production than here.
//
// Verdicts, with a tolerance of 25 % of the prediction unless set:
//   - fails: at the pool, no successful step, any 429 or other error; at
//     the pool or at 1.25 × it, the throughput, the TTFT p95 or the E2E p95
//     outside the tolerance, in either direction; at the pool, a p95 above
//     the class's SLO, and at 1.25 × it, a p95 above the SLO that the
//     model predicted under it. The reasons say which. The plan does not
//     hold: its pool, or the model behind it, is wrong.
//   - degraded: nothing measured at 1.25 × the pool, or 429s there when
//     the pool is not bound by a quota (there is less headroom above the
//     pool than the plan assumes). 429s above a pool that a quota binds are
//     expected and only noted.
//   - ok: neither.
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

// DefaultTolerancePct is the relative error, in percent of the
// prediction, within which the model holds; MaxTolerancePct is the most a
// validation may be told.
const (
	DefaultTolerancePct = 25.0
	MaxTolerancePct     = 999.0
)

// DefaultPause separates a validation's two steps unless its probe says
// otherwise: a closed loop leaves no queue behind, so a short pause does.
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
	// TolerancePct is the relative error, in percent of each prediction,
	// within which the model holds (default 25, at most 999).
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

// classProbe is one class's validation probe, as Run sends it.
type classProbe struct {
	cfg     probe.Config
	in, out int               // prompt and answer lengths in tokens
	shaped  scenario.Scenario // the scenario whose class has these fixed lengths, for the predictions
	capped  string            // a reason to give when the output was capped
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
			case e.Path == "" || strings.HasPrefix(e.Path, "steps") || e.Path == "input_tokens" || e.Path == "max_tokens":
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
	concs := Concurrencies(cp.Pool)
	if concs[1] > probe.MaxConcurrency {
		return nil, []fieldpath.Error{{Path: "steps", Message: fmt.Sprintf("concurrency %d is outside 1..%d", concs[1], probe.MaxConcurrency)}}
	}
	pred, err := plan.PredictAt(sc, cp.Name, concs[0])
	if err != nil {
		return nil, []fieldpath.Error{{Message: fmt.Sprintf("the plan's scenario cannot predict it: %v", err)}}
	}
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
	c.shaped = shape(sc, cp.Name, c.in, c.out)
	return c, errs
}

// Report is the outcome of a validation.
type Report struct {
	Verdict      string        `json:"verdict" enum:"ok,degraded,fails" doc:"The worst verdict of the classes validated."`
	Summary      string        `json:"summary"`
	TolerancePct float64       `json:"tolerance_pct" doc:"Relative error of throughput, TTFT p95 and E2E p95, in percent of the prediction, within which the model holds."`
	Classes      []ClassReport `json:"classes"`
}

// ClassReport is one class's validation.
type ClassReport struct {
	Class             string   `json:"class"`
	Pool              int      `json:"pool"`
	BindingConstraint string   `json:"binding_constraint"`
	Verdict           string   `json:"verdict" enum:"ok,degraded,fails,skipped"`
	Reasons           []string `json:"reasons" doc:"Why the verdict, in words and numbers."`
	InputTokens       int      `json:"input_tokens" doc:"Prompt length sent: the class's input p50."`
	OutputTokens      int      `json:"output_tokens" doc:"Output length asked with ignore_eos: the class's mean output, rounded."`
	Points            []Point  `json:"points" doc:"At the pool and at 1.25 times it."`
	StopReason        string   `json:"stop_reason,omitempty" doc:"Why the class's probe stopped."`
}

// Point compares the prediction and the measurement at one concurrency.
type Point struct {
	Concurrency int             `json:"concurrency"`
	Predicted   plan.Prediction `json:"predicted"`
	// Measured is null when the probe did not reach this concurrency.
	Measured *Measured `json:"measured"`
	// RelativeErrorPct is (measured − predicted) / predicted × 100; null
	// without a measurement.
	RelativeErrorPct *Errors `json:"relative_error_pct"`
}

// Measured is what the probe measured at one concurrency (warm-up
// excluded, except RateLimited, which counts every 429 answer). A point
// the probe did not reach sends null (the _ field's tag says so in the
// OpenAPI document).
type Measured struct {
	_                struct{} `nullable:"true"`
	Requests         int      `json:"requests"`
	OK               int      `json:"ok"`
	Errors           int      `json:"errors" doc:"Failures other than 429."`
	RateLimited      int      `json:"rate_limited" doc:"429 answers, retried ones and warm-up included."`
	ThroughputRPS    float64  `json:"throughput_rps"`
	TTFTP95Ms        float64  `json:"ttft_p95_ms"`
	E2EP95Ms         float64  `json:"e2e_p95_ms"`
	MeanOutputTokens float64  `json:"mean_output_tokens"`
}

// Errors are the relative errors of a measurement, in percent; null
// without a measurement (the _ field's tag).
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

// Run validates a plan of sc against the endpoint of opts.Probe. The
// error is for options or a plan that Check refuses (a fieldpath.Errors),
// checked before anything is sent, or for a probe that cannot run; an
// endpoint that fails is a verdict, not an error.
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
	tol := opts.tolerancePct()
	rep := &Report{TolerancePct: tol, Classes: []ClassReport{}}
	sp := &spend{start: time.Now()}
	for i, cp := range p.Classes {
		cr := ClassReport{Class: cp.Name, Pool: cp.Pool, BindingConstraint: cp.BindingConstraint, Points: []Point{}, Reasons: []string{}}
		left, spent := sp.left(budget)
		switch {
		case probes[i] == nil:
			cr.Verdict = VerdictSkipped
			cr.Reasons = append(cr.Reasons, "the class has no pool that fits, so there is nothing to validate")
		case spent != "":
			cr.Verdict = VerdictSkipped
			cr.Reasons = append(cr.Reasons, "not run: "+spent)
		default:
			if err := runClass(ctx, sc, cp, probes[i], left, tol, &cr, sp); err != nil {
				return nil, fmt.Errorf("class %s: %w", cp.Name, err)
			}
		}
		rep.Classes = append(rep.Classes, cr)
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

// runClass probes one class and judges it, adding what it used to sp.
func runClass(ctx context.Context, sc scenario.Scenario, cp plan.ClassPlan, c *classProbe, left probe.Budget, tol float64, cr *ClassReport, sp *spend) error {
	if c.capped != "" {
		cr.Reasons = append(cr.Reasons, c.capped)
	}
	cr.InputTokens, cr.OutputTokens = c.in, c.out
	cfg := c.cfg
	cfg.Budget = left
	res, err := probe.Run(ctx, cfg, nil)
	if err != nil {
		return err
	}
	sp.requests += res.Sent
	sp.tokens += res.TokensUsed
	cr.StopReason = res.StopReason
	for _, conc := range cfg.Steps {
		pred, err := plan.PredictAt(c.shaped, cp.Name, conc)
		if err != nil {
			return err
		}
		pt := Point{Concurrency: conc, Predicted: pred}
		if m, ok := measuredAt(res, conc); ok {
			pt.Measured = &m
			pt.RelativeErrorPct = &Errors{
				ThroughputRPS: relPct(m.ThroughputRPS, pred.ThroughputRPS),
				TTFTP95Ms:     relPct(m.TTFTP95Ms, pred.TTFTP95Ms),
				E2EP95Ms:      relPct(m.E2EP95Ms, pred.E2EP95Ms),
			}
		}
		cr.Points = append(cr.Points, pt)
	}
	judge(sc, cp, cr, tol)
	return nil
}

// shape is a copy of sc whose class has a fixed input and output length,
// as the validation probe sends them.
func shape(sc scenario.Scenario, class string, in, out int) scenario.Scenario {
	c := sc
	c.Classes = slices.Clone(sc.Classes)
	for i := range c.Classes {
		if c.Classes[i].Name != class {
			continue
		}
		fi, fo := float64(in), float64(out)
		c.Classes[i].InputTokens = scenario.Dist{Fixed: &fi}
		c.Classes[i].OutputTokens = scenario.Dist{Fixed: &fo}
		c.Classes[i].MaxTokens = out
	}
	return c
}

// measuredAt is the measurement at concurrency c, false when the probe has
// no summary of that step.
func measuredAt(res *probe.Result, c int) (Measured, bool) {
	i := slices.IndexFunc(res.Analysis.Steps, func(s measure.Step) bool { return s.Concurrency == c })
	if i < 0 {
		return Measured{}, false
	}
	s := res.Analysis.Steps[i]
	m := Measured{
		Requests: s.Requests, OK: s.OK, Errors: s.Errors, ThroughputRPS: round(s.ThroughputRPS, 4),
		TTFTP95Ms: round(s.TTFTP95Ms, 1), E2EP95Ms: round(s.E2EP95Ms, 1),
	}
	if s.ThroughputRPS > 0 {
		m.MeanOutputTokens = round(s.OutputTPS/s.ThroughputRPS, 2)
	}
	for _, r := range res.Records {
		if r.Step != c || r.ErrorClass == measure.ErrCancelled {
			continue
		}
		m.RateLimited += max(0, r.Attempts-1)
		if r.ErrorClass == measure.ErrRateLimited {
			m.RateLimited++
		}
	}
	return m, true
}

// judge sets a class's verdict and reasons from its points; tol is the
// tolerance in percent.
func judge(sc scenario.Scenario, cp plan.ClassPlan, cr *ClassReport, tol float64) {
	var fails, degraded []string
	at, above := cr.Points[0], cr.Points[1]
	quotaBound := isQuotaDimension(cp.BindingConstraint)
	if at.Measured == nil || at.Measured.OK == 0 {
		fails = append(fails, fmt.Sprintf("nothing succeeded at the pool of %d (probe stopped: %s)", cr.Pool, cr.StopReason))
	} else {
		m := at.Measured
		if m.RateLimited > 0 {
			fails = append(fails, fmt.Sprintf("%d 429 answers at the pool of %d: the quota is tighter than the plan assumes", m.RateLimited, cr.Pool))
		}
		if m.Errors > 0 {
			fails = append(fails, fmt.Sprintf("%d failed requests at the pool of %d", m.Errors, cr.Pool))
		}
		f, ok := offPrediction(at, fmt.Sprintf("at the pool of %d", cr.Pool), tol)
		fails, cr.Reasons = append(fails, f...), append(cr.Reasons, ok...)
		fails = append(fails, sloBreaches(sc, cp.Name, at, "at the pool", false)...)
		if m.MeanOutputTokens > 0 && math.Abs(m.MeanOutputTokens-float64(cr.OutputTokens)) > 0.1*float64(cr.OutputTokens) {
			cr.Reasons = append(cr.Reasons, fmt.Sprintf("answers had %.1f output tokens on average, not the %d asked: the endpoint may ignore ignore_eos, which skews the comparison", m.MeanOutputTokens, cr.OutputTokens))
		}
	}
	where := fmt.Sprintf("at %d (1.25 × the pool)", above.Concurrency)
	switch m := above.Measured; {
	case m == nil || m.OK == 0:
		degraded = append(degraded, fmt.Sprintf("nothing was measured at %d (1.25 × the pool)", above.Concurrency))
	default:
		if m.RateLimited > 0 && quotaBound {
			cr.Reasons = append(cr.Reasons, fmt.Sprintf("%d 429 answers %s, as expected: %s binds the pool", m.RateLimited, where, cp.BindingConstraint))
		} else if m.RateLimited > 0 {
			degraded = append(degraded, fmt.Sprintf("%d 429 answers %s: the quota leaves less headroom above the pool than the plan assumes", m.RateLimited, where))
		}
		if m.RateLimited == 0 || !quotaBound {
			f, ok := offPrediction(above, where, tol)
			fails, cr.Reasons = append(fails, f...), append(cr.Reasons, ok...)
		}
		fails = append(fails, sloBreaches(sc, cp.Name, above, where, true)...)
	}
	switch {
	case len(fails) > 0:
		cr.Verdict = VerdictFails
	case len(degraded) > 0:
		cr.Verdict = VerdictDegraded
	default:
		cr.Verdict = VerdictOK
	}
	cr.Reasons = slices.Concat(fails, degraded, cr.Reasons)
}

// offPrediction compares throughput, TTFT p95 and E2E p95 at a point with
// the model's prediction: each one outside tol percent of it is a failure
// reason; the rest are said to hold.
func offPrediction(pt Point, where string, tol float64) (fails, ok []string) {
	m, e := pt.Measured, pt.RelativeErrorPct
	var within []string
	for _, f := range []struct {
		name, unit         string
		meas, pred, errPct float64
		slower, faster     string
	}{
		{"throughput", "req/s", m.ThroughputRPS, pt.Predicted.ThroughputRPS, e.ThroughputRPS,
			"the endpoint serves less than the scenario's latency allows", "the endpoint is faster than the scenario says, so the pool may be smaller than it could be"},
		{"TTFT p95", "ms", m.TTFTP95Ms, pt.Predicted.TTFTP95Ms, e.TTFTP95Ms,
			"the model under-predicts the time to first token", "the model over-predicts the time to first token"},
		{"E2E p95", "ms", m.E2EP95Ms, pt.Predicted.E2EP95Ms, e.E2EP95Ms,
			"the model under-predicts the request time", "the model over-predicts the request time"},
	} {
		if f.pred <= 0 {
			continue
		}
		if math.Abs(f.errPct) <= tol {
			within = append(within, fmt.Sprintf("%s %+.1f %%", f.name, f.errPct))
			continue
		}
		why := f.faster
		if (f.name == "throughput") == (f.errPct < 0) {
			why = f.slower
		}
		fails = append(fails, fmt.Sprintf("%s %s is %.1f %s, %+.0f %% off the predicted %.1f %s (tolerance %g %%): %s",
			f.name, where, f.meas, f.unit, f.errPct, f.pred, f.unit, tol, why))
	}
	if len(within) > 0 {
		ok = append(ok, fmt.Sprintf("%s, within %g %% of the prediction: %s", where, tol, strings.Join(within, ", ")))
	}
	return fails, ok
}

// sloBreaches lists the class's SLOs that the measurement at pt breaks;
// above the pool (onlyPredicted), only those the model predicted to hold
// there.
func sloBreaches(sc scenario.Scenario, class string, pt Point, where string, onlyPredicted bool) []string {
	var out []string
	m := pt.Measured
	for _, c := range sc.Classes {
		if c.Name != class || c.SLO == nil {
			continue
		}
		for _, x := range []struct {
			name            string
			slo, meas, pred float64
		}{
			{"E2E p95", c.SLO.E2EP95Ms, m.E2EP95Ms, pt.Predicted.E2EP95Ms},
			{"TTFT p95", c.SLO.TTFTP95Ms, m.TTFTP95Ms, pt.Predicted.TTFTP95Ms},
		} {
			if x.slo > 0 && x.meas > x.slo && (!onlyPredicted || x.pred <= x.slo) {
				out = append(out, fmt.Sprintf("%s %s is %.0f ms, above the SLO of %.0f ms", x.name, where, x.meas, x.slo))
			}
		}
	}
	return out
}

// overall is the worst verdict of the classes validated, and a sentence.
func overall(classes []ClassReport) (verdict, summary string) {
	rank := map[string]int{VerdictOK: 1, VerdictDegraded: 2, VerdictFails: 3}
	verdict = ""
	var validated, worst []string
	for _, c := range classes {
		if c.Verdict == VerdictSkipped {
			continue
		}
		validated = append(validated, c.Class)
		switch {
		case rank[c.Verdict] > rank[verdict]:
			verdict, worst = c.Verdict, []string{c.Class}
		case c.Verdict == verdict:
			worst = append(worst, c.Class)
		}
	}
	switch verdict {
	case "":
		return VerdictFails, "no class could be validated"
	case VerdictOK:
		return verdict, fmt.Sprintf("the plan holds: every class validated (%d) measured throughput, TTFT p95 and E2E p95 within the tolerance of the model at its pool and 1.25 × it, without 429s at the pool", len(validated))
	}
	return verdict, fmt.Sprintf("%s: %s (see each class's reasons)", verdict, joinNames(worst))
}

func joinNames(names []string) string {
	if len(names) == 1 {
		return "class " + names[0]
	}
	out := "classes "
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// relPct is (measured − predicted)/predicted in percent, 0 without a
// prediction.
func relPct(measured, predicted float64) float64 {
	if predicted <= 0 {
		return 0
	}
	return round((measured-predicted)/predicted*100, 1)
}

func round(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

// isQuotaDimension reports whether a constraint is a quota limit (rpm,
// tpm, itpm, otpm, rpd, tpd).
func isQuotaDimension(constraint string) bool {
	for d := range scenario.NumDimensions {
		if d.String() == constraint {
			return true
		}
	}
	return false
}
