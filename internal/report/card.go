package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
)

// RecordCard is the dated summary of one probe that an on-call engineer
// reads: where and when the endpoint was measured, where its knee is and
// how it behaved there, the pools in use with what binds them and how to
// shed, and what to do when 429s appear, when latency exceeds the SLO at its percentile, and
// when goodput falls. Its JSON names are a stable contract.
type RecordCard struct {
	ProbeID    string    `json:"probe_id,omitempty"`
	PlanID     string    `json:"plan_id,omitempty"`
	Endpoint   string    `json:"endpoint"`
	Model      string    `json:"model"`
	Date       time.Time `json:"date"`
	DeadlineMs float64   `json:"deadline_ms"`
	// Knee is the knee concurrency; null when no step was measured in a
	// steady state or the first one already failed.
	Knee *int `json:"knee"`
	// KneeLowerBound marks a knee the probe never reached: no step failed
	// the knee rule, so the knee lies at or above it ("knee ≥ 4").
	KneeLowerBound bool `json:"knee_lower_bound" doc:"The knee is a lower bound: no step failed the knee rule (every step passed, or the probe stopped first), so the knee lies at or above it; probe to higher concurrency to find it."`
	// KneeRefined is where a knee search placed the knee between two
	// measured steps, and KneeResolution how finely (docs/probe.md, "The
	// knee"); absent for a probe that did not search.
	KneeRefined    *int `json:"knee_refined,omitempty" doc:"Where a knee search placed the knee between two measured steps (docs/probe.md); absent for a probe that did not search."`
	KneeResolution *int `json:"knee_refined_resolution,omitempty" doc:"The knee lies in (knee_refined − resolution, knee_refined]."`
	// AtKnee is what the probe measured at the knee; null without a knee.
	AtKnee *KneePoint `json:"at_knee"`
	// Collapse is the first concurrency whose goodput fell; null when none did.
	Collapse     *int `json:"collapse"`
	QuotaLimited bool `json:"quota_limited"`
	// Served is what the probe's answers named as their model, against
	// the model asked for; Connections how its requests got their
	// connections. Absent for a probe whose rows do not say.
	Served      *measure.Served    `json:"served,omitempty"`
	Connections *measure.ConnStats `json:"connections,omitempty"`
	// Warnings are what the on-call engineer must know beyond the
	// verdicts (measure.Result.Warnings): answers that named another
	// model than the one asked, connections that were not reused.
	Warnings []string `json:"warnings,omitempty"`
	// USLPeak is where the Universal Scalability Law fit of the throughput
	// peaks, and USLPeakBeyondRange marks a peak far beyond the
	// concurrencies measured (measure.PeakRangeFactor times the highest),
	// an extrapolation rather than a peak the probe saw.
	USLPeak            *float64 `json:"usl_peak,omitempty" doc:"Where the USL fit of the throughput peaks, in flight; absent without a fit that peaks."`
	USLPeakBeyondRange bool     `json:"usl_peak_beyond_range,omitempty" doc:"The USL peak lies more than 4 times above the highest concurrency measured: the fit's extrapolation, not a peak the probe saw."`
	// MeasuredUpTo is the highest concurrency the probe measured.
	MeasuredUpTo int `json:"measured_up_to,omitempty" doc:"The highest concurrency the probe measured."`
	// Pools are the plan's classes; empty when no plan is linked.
	Pools []CardPool `json:"pools"`
	// SLOs are the SLOs of the plan's classes that have one, in the
	// plan's order: every target at its percentile, with the plan's
	// predictions there. A pool's own fields stay as the first stored
	// cards had them.
	SLOs      []CardSLO  `json:"slos" doc:"The SLO of each of the plan's classes that has one: every target at its percentile, with the plan's prediction there; empty when no plan is linked."`
	Decisions []Decision `json:"decisions"`
}

// KneePoint is the step at the knee, with the 95 % intervals the probe
// measured. A card without a knee sends null (the _ field's tag says so
// in the OpenAPI document).
type KneePoint struct {
	_          struct{}          `nullable:"true"`
	E2EP95Ms   float64           `json:"e2e_p95_ms"`
	E2EP95CI   *measure.Interval `json:"e2e_p95_ci,omitempty"`
	TTFTP95Ms  float64           `json:"ttft_p95_ms"`
	TTFTP95CI  *measure.Interval `json:"ttft_p95_ci,omitempty"`
	GoodputRPS float64           `json:"goodput_rps"`
	GoodputCI  *measure.Interval `json:"goodput_ci,omitempty"`
	OutputTPS  float64           `json:"output_tps"`
}

// CardPool is one class's recommended pool and the rules that go with it.
type CardPool struct {
	Class             string `json:"class"`
	Mode              string `json:"mode"`
	Quota             string `json:"quota"`
	Pool              int    `json:"pool"`
	BindingConstraint string `json:"binding_constraint"`
	Feasible          bool   `json:"feasible"`
	// KneeLimit is the pool to fall back to when goodput falls: the
	// class's share of its endpoint's knee budget in the plan, else the
	// measured knee times the class's safety factor; null without a knee.
	KneeLimit *int `json:"knee_limit"`
	// Shedding is the admission rule: shed a request that waited
	// max_queue_wait_ms for a slot, answering status with Retry-After.
	Shedding plan.Admission `json:"shedding"`
	Pacing   plan.Pacing    `json:"pacing"`
	Retry    plan.Retry     `json:"retry"`
	// SLOE2EP95Ms and SLOTTFTP95Ms are the E2E and TTFT targets of an SLO
	// at the 95th percentile, the card's first form of them; the card's
	// SLOs have every target at any percentile.
	SLOE2EP95Ms    float64 `json:"slo_e2e_p95_ms,omitempty"`
	SLOTTFTP95Ms   float64 `json:"slo_ttft_p95_ms,omitempty"`
	MaxTokens      int     `json:"max_tokens,omitempty"`
	TruncationRisk float64 `json:"truncation_risk"`
}

// CardSLO is a class's SLO on the card: the percentile its targets bind
// and each target, in the order TTFT, E2E, TPOT, task E2E.
type CardSLO struct {
	Class      string       `json:"class"`
	Percentile float64      `json:"percentile" doc:"The percentile of requests (of tasks, for task_e2e) that every target binds: slo.percentile, 95 when the SLO names none."`
	Targets    []CardTarget `json:"targets"`
}

// CardTarget is one target of an SLO and the plan's prediction of it at
// the SLO's percentile.
type CardTarget struct {
	// Metric is ttft, e2e, tpot or task_e2e: the SLO's ttft_ms (or
	// ttft_p95_ms), e2e_ms (or e2e_p95_ms), tpot_ms or task_e2e_ms.
	Metric   string  `json:"metric" enum:"ttft,e2e,tpot,task_e2e"`
	TargetMs float64 `json:"target_ms"`
	// PredictedMs is the plan's value at the percentile; null when the
	// plan has none (a queue without bound, or TPOT of an SLO that names
	// no percentile).
	PredictedMs *float64 `json:"predicted_ms" doc:"The plan's prediction at the SLO's percentile, queue wait included where demand is given; null when it has none (a queue without bound, or TPOT of an SLO that names no percentile)."`
}

// The metrics of an SLO's targets.
const (
	MetricTTFT    = "ttft"
	MetricE2E     = "e2e"
	MetricTPOT    = "tpot"
	MetricTaskE2E = "task_e2e"
)

// cardSLO is the SLO of the class c with the plan's predictions at its
// percentile. An agent task class's E2E prediction is its task's.
func cardSLO(slo scenario.SLO, c plan.ClassPlan) CardSLO {
	pr := c.Predicted
	ttft, e2e := pr.TTFTP95Ms, pr.E2EP95Ms
	if pr.Percentile != nil {
		ttft, e2e = pr.TTFTMsAtPercentile, pr.E2EMsAtPercentile
	}
	out := CardSLO{Class: c.Name, Percentile: slo.At(), Targets: []CardTarget{}}
	for _, t := range []struct {
		metric    string
		target    float64
		predicted *float64
	}{
		{MetricTTFT, slo.TTFT(), ttft}, {MetricE2E, slo.E2E(), e2e},
		{MetricTPOT, slo.TPOT(), pr.TPOTMsAtPercentile}, {MetricTaskE2E, slo.TaskE2E(), e2e},
	} {
		if t.target > 0 {
			out.Targets = append(out.Targets, CardTarget{Metric: t.metric, TargetMs: t.target, PredictedMs: t.predicted})
		}
	}
	return out
}

// sloText is an SLO as the card says it: "p99: TTFT 500 ms (predicted
// 420 ms), TPOT 50 ms (…)".
func sloText(s CardSLO) string {
	names := map[string]string{MetricTTFT: "TTFT", MetricE2E: "E2E", MetricTPOT: "TPOT", MetricTaskE2E: "task E2E"}
	parts := make([]string, len(s.Targets))
	for i, t := range s.Targets {
		parts[i] = names[t.Metric] + " " + fmtNum(t.TargetMs) + " ms"
		if t.PredictedMs != nil {
			parts[i] += " (predicted " + fmtNum(*t.PredictedMs) + " ms)"
		}
	}
	return "p" + fmtNum(s.Percentile) + ": " + strings.Join(parts, ", ")
}

// Decision is one row of the decision table: a symptom and the steps to
// take, in order.
type Decision struct {
	When string   `json:"when"`
	Do   []string `json:"do"`
}

// The symptoms of the decision table, in its order.
const (
	WhenRateLimited  = "429s appear"
	WhenSLOExceeded  = "p95 exceeds the SLO" // with every SLO at the p95 (whenSLOExceeded)
	WhenGoodputFalls = "goodput falls"
)

// CardInput is what a record card is made from: a probe's measurements
// and, when the probe backs a plan, that plan and its scenario.
type CardInput struct {
	ProbeID string
	PlanID  string
	Probe   ProbeData
	// Scenario and Plan are optional; with a plan, the card lists its pools
	// and fills the decision table with their numbers. Without a scenario
	// the default knee safety factors apply.
	Scenario *scenario.Scenario
	Plan     *plan.Plan
}

// NewRecordCard assembles the record card of a probe.
func NewRecordCard(in CardInput) RecordCard {
	r := in.Probe.Result
	card := RecordCard{
		ProbeID: in.ProbeID, PlanID: in.PlanID, Endpoint: in.Probe.Endpoint, Model: in.Probe.Model,
		Date: in.Probe.Date.UTC(), DeadlineMs: in.Probe.DeadlineMs,
		Knee: r.Knee, KneeLowerBound: r.KneeLowerBound && r.Knee != nil, Collapse: r.Collapse, QuotaLimited: r.QuotaLimited, Pools: []CardPool{}, SLOs: []CardSLO{},
		Served: r.Served, Connections: r.Connections, Warnings: r.Warnings(),
	}
	card.MeasuredUpTo = measuredTop(r)
	if u := r.USL; u != nil && u.Peak != nil && finite(*u.Peak) {
		card.USLPeak, card.USLPeakBeyondRange = ptr(*u.Peak), u.PeakBeyondRange
	}
	card.KneeRefined, card.KneeResolution = analysis.SearchRefined(r)
	if k, ok := r.KneeStep(); ok {
		card.AtKnee = &KneePoint{E2EP95Ms: k.E2EP95Ms, E2EP95CI: k.E2EP95CI, TTFTP95Ms: k.TTFTP95Ms, TTFTP95CI: k.TTFTP95CI,
			GoodputRPS: k.GoodputRPS, GoodputCI: k.GoodputCI, OutputTPS: k.OutputTPS}
	}
	safety := safetyOf(in.Scenario)
	if in.Plan != nil {
		specs := map[string]scenario.Class{}
		if in.Scenario != nil {
			for _, c := range in.Scenario.Classes {
				specs[c.Name] = c
			}
		}
		for _, c := range in.Plan.Classes {
			p := CardPool{
				Class: c.Name, Mode: c.Mode, Quota: c.Quota, Pool: c.Pool, BindingConstraint: c.BindingConstraint,
				Feasible: c.Feasible, Shedding: c.Admission, Pacing: c.Pacing, Retry: c.Retry, TruncationRisk: c.TruncationRisk,
			}
			switch k := kneeCeiling(c); {
			case k != nil:
				p.KneeLimit = k // the class's share of its endpoint's knee budget
			case r.Knee != nil:
				p.KneeLimit = ptr(kneeLimit(*r.Knee, safety[c.Mode]))
			}
			if spec, ok := specs[c.Name]; ok {
				p.MaxTokens = spec.MaxTokens
				if spec.SLO != nil && spec.SLO.At() == scenario.DefaultPercentile {
					p.SLOE2EP95Ms, p.SLOTTFTP95Ms = spec.SLO.E2E(), spec.SLO.TTFT()
				}
				if spec.SLO != nil {
					card.SLOs = append(card.SLOs, cardSLO(*spec.SLO, c))
				}
			}
			card.Pools = append(card.Pools, p)
		}
	}
	card.Decisions = []Decision{
		{When: WhenRateLimited, Do: card.on429()},
		{When: whenSLOExceeded(card.SLOs), Do: card.onSLO()},
		{When: WhenGoodputFalls, Do: card.onGoodputFall(safety)},
	}
	return card
}

func ptr[T any](v T) *T { return &v }

// whenSLOExceeded is the decision table's symptom for latency: the
// percentile the SLOs bind, "p99 exceeds the SLO" when every one names
// the 99th, WhenSLOExceeded when they bind the p95 or there are none.
func whenSLOExceeded(slos []CardSLO) string {
	at := scenario.DefaultPercentile
	for i, s := range slos {
		if i > 0 && s.Percentile != at {
			return "a latency percentile exceeds its SLO"
		}
		at = s.Percentile
	}
	if at == scenario.DefaultPercentile {
		return WhenSLOExceeded
	}
	return "p" + fmtNum(at) + " exceeds the SLO"
}

// kneeText is the knee as the card says it: "4", or "≥ 4" for a lower
// bound; the card must have a knee.
func (c RecordCard) kneeText() string {
	if c.KneeLowerBound {
		return fmt.Sprintf("≥ %d", *c.Knee)
	}
	return fmt.Sprint(*c.Knee)
}

// modes in the order a plan serves them.
var modes = []string{scenario.ModeInteractive, scenario.ModeSemi, scenario.ModeBatch}

// safetyOf returns the knee safety factor of each mode: the scenario's,
// or the defaults.
func safetyOf(sc *scenario.Scenario) map[string]float64 {
	var base scenario.Scenario
	if sc != nil {
		base = *sc
	}
	ks := base.WithDefaults().Policy.KneeSafety
	return map[string]float64{scenario.ModeInteractive: ks.Interactive, scenario.ModeSemi: ks.Semi, scenario.ModeBatch: ks.Batch}
}

// kneeLimit is floor(safety · knee), at least 1.
func kneeLimit(knee int, safety float64) int {
	return max(1, int(math.Floor(safety*float64(knee)+1e-9)))
}

func (c RecordCard) on429() []string {
	var do []string
	if len(c.Pools) > 0 {
		var pace, bind, retry []string
		for _, p := range c.Pools {
			pace = append(pace, fmt.Sprintf("%s at most %s req/s in bursts of %d", p.Class, fmtNum(p.Pacing.RateRPS), p.Pacing.Burst))
			bind = append(bind, fmt.Sprintf("%s is bound by %s at a pool of %d on key %s", p.Class, p.BindingConstraint, p.Pool, p.Quota))
			retry = append(retry, fmt.Sprintf("%s: base %s ms, cap %s ms, at most %d attempts", p.Class, fmtNum(p.Retry.BaseMs), fmtNum(p.Retry.CapMs), p.Retry.MaxAttempts))
		}
		do = append(do,
			"Check pacing: each class starts requests no faster than its token bucket ("+strings.Join(pace, "; ")+"); a burst faster than this trips the provider's per-second enforcement of a per-minute limit.",
			"Check what binds each pool: "+strings.Join(bind, "; ")+". When a quota binds, compare the x-ratelimit-remaining headers with its limits.",
			"Back off: retry only after the wait the endpoint names (retry-after-ms, then retry-after), else with full-jitter exponential backoff ("+strings.Join(retry, "; ")+").")
	} else {
		do = append(do,
			"Check pacing: clients must not start requests faster than the quota's per-second share; a burst trips the provider's per-second enforcement of a per-minute limit.",
			"Back off: retry only after the wait the endpoint names (retry-after-ms, then retry-after), else with full-jitter exponential backoff.")
	}
	switch {
	case c.QuotaLimited && c.Knee != nil:
		do = append(do, fmt.Sprintf("This endpoint answered 429 at or below its knee of %s in flight: the quota is the bottleneck, not the model. Raise the tier or split the load across keys.", c.kneeText()))
	case c.QuotaLimited:
		do = append(do, "This endpoint answered 429 from the first step: the quota is the bottleneck, not the model. Raise the tier or split the load across keys.")
	case c.Knee != nil && len(c.Pools) > 0:
		do = append(do, fmt.Sprintf("If the 429s come at or below the knee (%s in flight), the quota is the bottleneck: raise the tier or split the load across keys. Above the knee, bring the pools back to the plan.", c.kneeText()))
	case c.Knee != nil:
		do = append(do, fmt.Sprintf("If the 429s come at or below the knee (%s in flight), the quota is the bottleneck: raise the tier or split the load across keys. Above the knee, bring the requests in flight back under it.", c.kneeText()))
	default:
		do = append(do, "If the 429s come at low concurrency, the quota is the bottleneck: raise the tier or split the load across keys.")
	}
	return do
}

func (c RecordCard) onSLO() []string {
	var do []string
	var shed []string
	for _, p := range c.Pools {
		if rule := shedRule(p.Shedding); rule != "" {
			shed = append(shed, p.Class+": "+strings.ToLower(rule[:1])+rule[1:])
		}
	}
	switch {
	case len(shed) > 0:
		do = append(do, "Shed per the admission rule: "+strings.Join(shed, " "))
	case len(c.Pools) > 0:
		do = append(do, "Shed requests that wait for a slot longer than the SLO minus the p95 service time, with 429 and Retry-After (no class here has an E2E SLO to derive the wait from).")
	default:
		do = append(do, "Shed requests that wait for a slot longer than the SLO minus the p95 service time, with 429 and Retry-After.")
	}
	if c.Knee != nil {
		s := fmt.Sprintf("Reduce the pool toward the knee (%s in flight", c.kneeText())
		if c.AtKnee != nil {
			s += fmt.Sprintf(", where E2E p95 was %s ms and TTFT p95 %s ms", fmtNum(c.AtKnee.E2EP95Ms), fmtNum(c.AtKnee.TTFTP95Ms))
		}
		s += ")"
		var pools []string
		for _, p := range c.Pools {
			pools = append(pools, fmt.Sprintf("%s runs %d, knee limit %d", p.Class, p.Pool, *p.KneeLimit))
		}
		if len(pools) > 0 {
			s += ": " + strings.Join(pools, "; ")
		}
		do = append(do, s+".")
	} else {
		do = append(do, "Reduce the pool: the probe found no knee, so even its first step missed the latency rule; probe again from a lower concurrency.")
	}
	var caps []string
	for _, p := range c.Pools {
		if p.MaxTokens > 0 {
			caps = append(caps, fmt.Sprintf("%s caps at %s (%s %% of answers reach it)", p.Class, fmtNum(float64(p.MaxTokens)), fmtNum(p.TruncationRisk*100)))
		}
	}
	mt := "Check max_tokens: every output token adds one TPOT to E2E, and under max_tokens accounting the cap counts against the quota whether used or not"
	if len(caps) > 0 {
		mt += "; " + strings.Join(caps, "; ")
	}
	return append(do, mt+".")
}

func (c RecordCard) onGoodputFall(safety map[string]float64) []string {
	if c.Knee == nil {
		return []string{
			"The probe found no knee: goodput or p95 failed from the first step. Cut concurrency to a few requests in flight and probe again from there.",
			"Re-probe after any change to the endpoint, the model, or the traffic's token sizes, and re-plan with the new curve.",
		}
	}
	k := *c.Knee
	past := fmt.Sprintf("You are past the knee: goodput peaks around %d in flight", k)
	if c.KneeLowerBound {
		past = fmt.Sprintf("The probe never reached the knee (knee ≥ %d): goodput still grew at its last step, %d in flight", k, k)
	}
	if c.AtKnee != nil {
		past += fmt.Sprintf(" (%s req/s", fmtNum(c.AtKnee.GoodputRPS))
		if c.DeadlineMs > 0 {
			past += fmt.Sprintf(" within the %s ms deadline", fmtNum(c.DeadlineMs))
		}
		past += ")"
	}
	if c.Collapse != nil {
		past += fmt.Sprintf(" and fell at %d", *c.Collapse)
	}
	if c.KneeLowerBound {
		past += fmt.Sprintf(". A fall at or below %d in flight is not this endpoint's knee: look for what changed (the endpoint, the model, the token sizes, other traffic), and probe to higher concurrency to find the knee", k)
	}
	if c.KneeRefined != nil {
		// A plan budgets with the refined knee (docs/concepts.md).
		k = *c.KneeRefined
	}
	if len(c.Pools) > 0 {
		// The plan's classes share the endpoint: one budget, at the
		// smallest safety among them, divided as the plan divides it.
		low := 1.0
		var shares []string
		for _, p := range c.Pools {
			low = min(low, safety[p.Mode])
			if p.KneeLimit != nil {
				shares = append(shares, fmt.Sprintf("%s %d", p.Class, *p.KneeLimit))
			}
		}
		return []string{
			past + ".",
			fmt.Sprintf("Cut the pools back to their shares of the knee budget, ⌊%s × %d⌋ = %d in flight for all of them together: %s.",
				fmtNum(low), k, kneeLimit(k, low), strings.Join(shares, ", ")),
			"Re-probe after any change to the endpoint, the model, or the traffic's token sizes, and re-plan with the new curve.",
		}
	}
	var cuts []string
	for _, m := range modes {
		cuts = append(cuts, fmt.Sprintf("%s %d (%d × %s)", m, kneeLimit(k, safety[m]), k, fmtNum(safety[m])))
	}
	return []string{
		past + ".",
		"Cut the pool to the knee times the safety factor: " + strings.Join(cuts, ", ") + ".",
		"Re-probe after any change to the endpoint, the model, or the traffic's token sizes, and re-plan with the new curve.",
	}
}

// WriteRecordCardMarkdown writes a record card as Markdown: the facts (the
// served model and the connections among them), the warnings, the pools,
// the shedding rule and the decision table.
func WriteRecordCardMarkdown(w io.Writer, c RecordCard) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "# Record card: %s\n\n", mdText(orNone(c.Model, "unnamed model")))
	fmt.Fprintln(ew, "| | |")
	fmt.Fprintln(ew, "|---|---|")
	row := func(k, v string) { fmt.Fprintf(ew, "| %s | %s |\n", k, v) }
	row("Endpoint", mdText(orNone(c.Endpoint, "-")))
	row("Model", mdText(orNone(c.Model, "-")))
	date := "-"
	if !c.Date.IsZero() {
		date = c.Date.Format(timeLayout)
	}
	row("Date", date)
	row("Deadline", msText(c.DeadlineMs))
	switch {
	case c.Knee != nil && c.KneeLowerBound:
		row("Knee", fmt.Sprintf("≥ %d in flight (a lower bound: no step failed the knee rule; probe to higher concurrency to find it)", *c.Knee))
	case c.Knee != nil:
		row("Knee", fmt.Sprintf("%d in flight", *c.Knee))
	default:
		row("Knee", "none (no step measured in a steady state, or the first one already failed)")
	}
	if c.KneeRefined != nil && c.KneeResolution != nil {
		row("Refined knee", fmt.Sprintf("%d in flight (resolution %d)", *c.KneeRefined, *c.KneeResolution))
	}
	if k := c.AtKnee; k != nil {
		row("E2E p95 at the knee", msText(k.E2EP95Ms)+ciText(k.E2EP95CI, " ms"))
		row("TTFT p95 at the knee", msText(k.TTFTP95Ms)+ciText(k.TTFTP95CI, " ms"))
		row("Goodput at the knee", fmtNum(k.GoodputRPS)+" req/s"+ciText(k.GoodputCI, " req/s"))
	}
	if c.Collapse != nil {
		row("Goodput fell at", fmt.Sprintf("%d in flight", *c.Collapse))
	}
	if c.USLPeak != nil {
		row("USL peak", uslPeakText(*c.USLPeak, c.USLPeakBeyondRange, c.MeasuredUpTo))
	}
	if c.QuotaLimited {
		row("Quota limited", "yes: the share of 429s rose with concurrency, or the key ran out")
	} else {
		row("Quota limited", "no")
	}
	if c.Served != nil {
		served := mdText(c.Served.Sentence())
		if c.Served.Switched() {
			served = "**" + served + "**"
		}
		row("Served model", served)
	}
	if c.Connections != nil {
		row("Connections", mdText(connText(c.Connections)))
	}
	if c.ProbeID != "" {
		row("Probe", mdText(c.ProbeID))
	}
	if c.PlanID != "" {
		row("Plan", mdText(c.PlanID))
	}
	if len(c.Warnings) > 0 {
		fmt.Fprint(ew, "\n## Warnings\n\n")
		for _, w := range c.Warnings {
			fmt.Fprintf(ew, "- %s\n", mdText(w))
		}
	}
	if len(c.Pools) > 0 {
		fmt.Fprint(ew, "\n## Pools\n\n")
		fmt.Fprintln(ew, "| Class | Mode | Key | Pool | Binding | Fits | Knee limit | Pacing |")
		fmt.Fprintln(ew, "|---|---|---|--:|---|---|--:|---|")
		for _, p := range c.Pools {
			fmt.Fprintf(ew, "| %s | %s | %s | %d | **%s** | %s | %s | %s req/s, burst %d |\n",
				mdText(p.Class), p.Mode, mdText(p.Quota), p.Pool, p.BindingConstraint, yesNo(p.Feasible),
				intOrDash(p.KneeLimit), fmtNum(p.Pacing.RateRPS), p.Pacing.Burst)
		}
		if len(c.SLOs) > 0 {
			fmt.Fprint(ew, "\n## SLOs\n\n")
			for _, s := range c.SLOs {
				fmt.Fprintf(ew, "- %s: %s\n", mdText(s.Class), sloText(s))
			}
		}
		fmt.Fprint(ew, "\n## Shedding rule\n\n")
		for _, p := range c.Pools {
			rule := shedRule(p.Shedding)
			if rule == "" {
				rule = "No E2E SLO, so no shedding rule."
			}
			fmt.Fprintf(ew, "- %s: %s\n", mdText(p.Class), rule)
		}
	}
	fmt.Fprint(ew, "\n## What to do\n")
	for _, d := range c.Decisions {
		fmt.Fprintf(ew, "\n### When %s\n\n", d.When)
		for i, step := range d.Do {
			fmt.Fprintf(ew, "%d. %s\n", i+1, mdText(step))
		}
	}
	return ew.err
}

// uslPeakText says where a USL fit peaks, with the caveat of a peak
// beyond the measured range (up to top in flight).
func uslPeakText(peak float64, beyond bool, top int) string {
	if beyond {
		return fmt.Sprintf("%s in flight, beyond the measured range (up to %d in flight): the fit's extrapolation, not a peak the probe saw", fmtNum(peak), top)
	}
	return fmt.Sprintf("%s in flight", fmtNum(peak))
}

func msText(v float64) string {
	if v <= 0 {
		return "-"
	}
	return fmtNum(v) + " ms"
}

// kneeCeiling is the plan's knee ceiling of a class, nil when it has none.
func kneeCeiling(c plan.ClassPlan) *int {
	for _, ce := range c.Ceilings {
		if ce.Constraint == plan.ConstraintKnee {
			return ce.MaxPool
		}
	}
	return nil
}

// ciText renders a 95 % interval after a figure, or nothing.
func ciText(iv *measure.Interval, unit string) string {
	if iv == nil {
		return ""
	}
	return fmt.Sprintf(" (95 %%: %s–%s%s)", fmtNum(iv.Lo), fmtNum(iv.Hi), unit)
}
