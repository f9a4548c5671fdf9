package plan

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/scenario"
)

// explain writes two to four sentences a person can act on: the pool and
// what binds it, whether the demand fits, and for a batch whether it ends
// within its window.
func (r *run) explain(i int, cp ClassPlan) string {
	m := r.models[i]
	var b strings.Builder
	bound := ceilingNamed(cp.Ceilings, cp.BindingConstraint)
	if cp.Pool == 0 {
		fmt.Fprintf(&b, "%s gets no pool: %s is 0 (%s).", cp.Name, cp.BindingConstraint, bound.Detail)
	} else {
		fmt.Fprintf(&b, "%s gets a pool of %d on key %s, bound by %s (%s).", cp.Name, cp.Pool, cp.Quota, cp.BindingConstraint, bound.Detail)
	}
	if v := r.probeFurther(i, cp); v != "" {
		b.WriteString(" " + v)
	}
	hasSLO := m.hasSLO(metricTTFT) || m.hasSLO(metricE2E)
	switch {
	case m.lambda == 0:
		if cp.Pool > 0 {
			fmt.Fprintf(&b, " With no stated demand it runs as fast as that allows, about %s %s.", num(cp.Predicted.ThroughputRPS), m.rateUnit())
		}
		if !cp.Feasible && cp.Pool > 0 && m.tpotMissed(r.load(i)) {
			b.WriteString(r.tpotVerdict(i))
		}
		if !cp.Feasible && len(cp.Remedies) > 0 {
			fmt.Fprintf(&b, " To fit: %s.", remedyChanges(cp.Remedies))
		}
	case cp.MinPool == nil:
		fmt.Fprintf(&b, " Its demand of %s %s is more than any pool up to %d can serve; shed load or split it across keys and endpoints.", num(m.lambda), m.rateUnit(), searchLimit)
	case cp.Feasible:
		fmt.Fprintf(&b, " Its demand of %s %s needs at least %d in flight, %s %d to spare", num(m.lambda), m.rateUnit(), *cp.MinPool, fitsWith, cp.Pool-*cp.MinPool)
		b.WriteString(predictedAgainstSLO(m, cp.Predicted) + ".")
	default:
		need := "needs"
		if hasSLO {
			need = "within its SLO needs"
		}
		missed := r.missedTargets(i, cp.Predicted)
		switch sh := cp.Predicted.ShedShare; {
		case cp.Pool >= *cp.MinPool && len(missed) == 0 && sh <= maxShedShare && !m.tpotMissed(r.load(i)) && cp.Batch.dailyShort():
			fmt.Fprintf(&b, " Its demand of %s %s needs at least %d in flight, which the pool allows, but it does not fit: its share of a daily limit runs out before the batch is done.", num(m.lambda), m.rateUnit(), *cp.MinPool)
		case cp.Pool >= *cp.MinPool && len(missed) == 0 && m.tpotMissed(r.load(i)):
			b.WriteString(r.tpotVerdict(i))
		case cp.Pool >= *cp.MinPool && len(missed) > 0:
			fmt.Fprintf(&b, " It does not fit: at this pool its predicted %s %s is over its target, and no pool comes within 5 %% of it.", m.metricLabel(missed[0]), m.pctLabel())
		case sh > maxShedShare && len(missed) == 0:
			fmt.Fprintf(&b, " It does not fit: at this pool its client sheds %s %% of its requests, those that wait longer than admission.max_queue_wait_ms for a slot, more than the 1 %% a plan may lose; %s %s %s a pool of %d.",
				num(100*sh), num(m.lambda), m.rateUnit(), need, *cp.MinPool)
		default:
			fmt.Fprintf(&b, " It does not fit: %s %s %s a pool of %d.", num(m.lambda), m.rateUnit(), need, *cp.MinPool)
		}
		if len(cp.Remedies) > 0 {
			fmt.Fprintf(&b, " To fit: %s", remedyChanges(cp.Remedies))
			if cp.Shed != nil && cp.Shed.ShedRPS > 0 && cp.Shed.SustainableRPS > 0 { // shedding all of it is no way to fit
				fmt.Fprintf(&b, "; or shed %s %s (it sustains %s)", num(cp.Shed.ShedRPS), m.rateUnit(), numBeside(cp.Shed.SustainableRPS, m.lambda))
			}
			b.WriteString(".")
		}
	}
	if v := taskVerdict(cp.Task, m.lambda); v != "" {
		b.WriteString(" " + v)
	}
	if v := batchVerdict(cp.Batch); v != "" {
		b.WriteString(" " + v)
	}
	if v := cacheSentence(cp.PromptCache, m.sendUnit()); v != "" {
		b.WriteString(" " + v)
	}
	return b.String()
}

// predictedAgainstSLO is "; predicted TTFT p95 is 7,281 ms against a
// 7,335 ms SLO": the class's predictions of the metrics its SLO sets, at
// its percentile, each against its target; its E2E when it sets none.
func predictedAgainstSLO(m *classModel, pr Predicted) string {
	var parts []string
	sets := m.hasSLO(metricTTFT) || m.hasSLO(metricE2E)
	for _, metric := range []int{metricTTFT, metricE2E} {
		if sets && !m.hasSLO(metric) || !sets && metric != metricE2E {
			continue
		}
		v, at := pr.TTFTP95Ms, "p95"
		if metric == metricE2E {
			v = pr.E2EP95Ms
		}
		if pr.Percentile != nil {
			v, at = pr.TTFTMsAtPercentile, m.pctLabel()
			if metric == metricE2E {
				v = pr.E2EMsAtPercentile
			}
		}
		if v == nil {
			continue
		}
		part := fmt.Sprintf("%s %s is %s ms", m.metricLabel(metric), at, num(*v))
		if m.hasSLO(metric) {
			part += fmt.Sprintf(" against a %s ms SLO", num(m.slo[metric]*1000))
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return ""
	}
	return "; predicted " + strings.Join(parts, " and ")
}

// remedyChanges joins the changes of a class's remedies, all of which it
// needs.
func remedyChanges(rems []Remedy) string {
	changes := make([]string, len(rems))
	for k, rm := range rems {
		changes[k] = rm.Change
	}
	return strings.Join(changes, "; and ")
}

// tpotVerdict says that class i, whose pool reaches its min_pool, does not
// fit because its TPOT at its endpoint's load misses its target.
func (r *run) tpotVerdict(i int) string {
	m := r.models[i]
	load := r.load(i)
	where := "at any pool"
	if m.loadDependent() {
		where = fmt.Sprintf("with %d in flight on endpoint %s", load, r.byClass[i].displayName())
	}
	return fmt.Sprintf(" It does not fit: its predicted TPOT %s is %s ms %s, over its %s ms target.", m.pctLabel(), num(m.tpotAt(load)*1000), where, num(m.spec.SLO.TPOT()))
}

// probeFurther says, for a class bound by a knee that is a lower bound,
// that the knee was never reached and how far to probe to find it: to
// twice the bound, a ladder's next step. Empty otherwise, and when a
// remedy already names the knee to probe to.
func (r *run) probeFurther(i int, cp ClassPlan) string {
	e := r.byClass[i]
	if cp.BindingConstraint != ConstraintKnee || !e.lowerBound || e.knee == nil ||
		slices.ContainsFunc(cp.Remedies, func(rm Remedy) bool { return rm.Constraint == ConstraintKnee }) {
		return ""
	}
	to := 2 * *e.knee
	return fmt.Sprintf("Endpoint %s's knee ≥ %d is a lower bound, never reached by its probe: probe it further, to at least %d in flight, to find the knee the pool may grow to.",
		e.displayName(), *e.knee, to)
}

// fitsWith and modelFitsWith are the words of the explanation of a
// feasible class before and after its own simulation broke (NotFitting).
const (
	fitsWith      = "so it fits with"
	modelFitsWith = "which the queueing model fits with"
)

// NotFitting rewrites the explanation of a class that is feasible by the
// queueing model but does not fit by its own simulation, so that it never
// says the class fits: the model's margin stays, and why the simulation
// broke is added.
func (c *ClassPlan) NotFitting(why string) {
	c.Explanation = strings.Replace(c.Explanation, fitsWith, modelFitsWith, 1) +
		" Its own simulation breaks, so it does not fit: " + why + "."
}

// batchVerdict says in words when a batch ends against its window and
// whether the daily limits allow it; empty for a class that is no batch.
func batchVerdict(bp *BatchPlan) string {
	if bp == nil {
		return ""
	}
	var parts []string
	switch h := bp.CompletionHours; {
	case h == nil:
		parts = append(parts, fmt.Sprintf("The batch of %s requests never finishes without a pool (window %s h).", num(bp.Requests), num(bp.WithinHours)))
	case *h <= bp.WithinHours && bp.dailyShort():
		parts = append(parts, fmt.Sprintf("At this pool the batch of %s requests would take %s h, but a daily limit stops it before it is done in its %s h window.", num(bp.Requests), num(*h), num(bp.WithinHours)))
	case bp.MeetsWindow:
		parts = append(parts, fmt.Sprintf("The batch of %s requests takes %s h at this pool, within its %s h window.", num(bp.Requests), num(*h), num(bp.WithinHours)))
	default:
		parts = append(parts, fmt.Sprintf("The batch of %s requests takes %s h at this pool, longer than its %s h window.", num(bp.Requests), num(*h), num(bp.WithinHours)))
	}
	for _, d := range bp.DailyLimits {
		if !d.OK {
			parts = append(parts, fmt.Sprintf("Its share of %s allows %s in its window, short of the %s it needs.", d.Constraint, num(d.Available), num(d.Needed)))
		}
	}
	return strings.Join(parts, " ")
}

func ceilingNamed(cs []Ceiling, name string) Ceiling {
	for _, c := range cs {
		if c.Constraint == name {
			return c
		}
	}
	return Ceiling{}
}

// warnings are the class's caveats.
func (r *run) warnings(i int, cp ClassPlan) []string {
	m := r.models[i]
	var w []string
	if cp.Predicted.Extrapolated && m.curve != nil {
		lo, hi := m.curve.Range()
		w = append(w, fmt.Sprintf("latency at %d in flight on endpoint %s lies outside the measured curve (%g to %g in flight): it is extrapolated", r.load(i), cp.Endpoint, lo, hi))
	}
	if cp.TruncationRisk > 0.05 {
		w = append(w, fmt.Sprintf("max_tokens %d cuts %.1f %% of answers short (P(output > max_tokens)); raise it or expect truncation", m.spec.MaxTokens, cp.TruncationRisk*100))
	}
	switch r.curve429s(i) {
	case rising429s:
		w = append(w, "the share of 429s in the measured curve rises with concurrency up to the knee: the quota, not the model, limited the measurement, so the knee and the curve understate the endpoint")
	case steady429s:
		w = append(w, "the measured curve saw 429s at a share that does not rise with concurrency: other traffic on the key or a gateway's throttling, not this load; the knee is the model's, but expect that share of retries")
	}
	if m.key.Headroom > 0.9 {
		w = append(w, fmt.Sprintf("headroom %g on key %s leaves less than 10 %% of its limits for bursts and retries", m.key.Headroom, m.key.Name))
	}
	if m.lambda > 0 && (m.spec.SLO == nil || m.spec.SLO.IsZero()) && m.spec.Mode != scenario.ModeBatch {
		w = append(w, "no SLO given: min_pool only keeps the client queue stable, however long it is")
	}
	if a := cp.Admission.MaxQueueWaitMs; a != nil && *a == 0 && cp.Pool > 0 {
		w = append(w, "the p95 service time alone reaches the E2E SLO: no time is left for queueing, so requests that find the pool full should be shed at once")
	}
	if cp.Retry.MaxAttempts == 1 && cp.Pool > 0 {
		w = append(w, "no retry fits in the deadline after a p95 attempt")
	}
	if bp := cp.Batch; bp != nil && bp.CompletionHours != nil && *bp.CompletionHours > bp.WithinHours {
		w = append(w, fmt.Sprintf("the batch takes %s h at this pool, longer than its %s h window", num(*bp.CompletionHours), num(bp.WithinHours)))
	}
	return w
}

// verdict429 is what the 429s of class i's measured curve say.
type verdict429 int

const (
	no429s     verdict429 = iota // none at or below the knee
	steady429s                   // some, at a share that does not rise with concurrency
	rising429s                   // a share that rises with concurrency: the quota bound the measurement
)

// curve429s judges the 429s of the curve points at or below the knee.
// When every such point gives its requests, the share must rise by the
// Cochran–Armitage trend test (model.TrendZ, p < 0.001), the test a probe
// judges its own steps by, so that random 429s on a shared key do not pass
// for the quota; otherwise any rise between points counts, the safe side.
func (r *run) curve429s(i int) verdict429 {
	l := r.s.Classes[i].Latency
	var gs []model.Group
	counted, any429, rises := true, false, false
	first := -1.0
	for _, p := range l.Curve {
		if l.Knee != nil && p.Concurrency > *l.Knee {
			continue
		}
		if p.RateLimitedRate > 0 {
			any429 = true
		}
		if first < 0 {
			first = p.RateLimitedRate
		} else if p.RateLimitedRate > first {
			rises = true
		}
		counted = counted && p.Requests > 0
		n := float64(p.Requests)
		gs = append(gs, model.Group{Score: model.ConcurrencyScore(float64(p.Concurrency)), Trials: n, Events: math.Round(p.RateLimitedRate * n)})
	}
	switch {
	case !any429:
		return no429s
	case counted:
		if z, ok := model.TrendZ(gs); ok && z > model.TrendCritical {
			return rising429s
		}
		return steady429s
	case rises:
		return rising429s
	}
	return steady429s
}

// planWarnings are the plan-wide caveats.
func (r *run) planWarnings(p *Plan) []string {
	w := []string{}
	for _, c := range p.Classes {
		switch {
		case !c.Feasible && len(c.Remedies) > 0:
			w = append(w, fmt.Sprintf("class %s does not fit; see its remedies", c.Name))
		case !c.Feasible:
			w = append(w, fmt.Sprintf("class %s does not fit, and the plan gives no remedy for it; see its explanation and warnings", c.Name))
		}
	}
	for ki, q := range p.Quotas {
		head := r.keys[ki].Headroom
		for _, d := range scenario.DimensionNames() {
			if u, ok := q.Utilization[d]; ok && u > head+tolerance {
				w = append(w, fmt.Sprintf("key %s: expected %s use %.1f %% is above its %.0f %% headroom", q.Name, d, u*100, head*100))
			}
		}
	}
	return w
}

// RaisedTo is an SLO remedy r with its target raised to v ms: what the
// plan's own simulation of the scenario with the remedies written in sees
// at the SLO's percentile, where the queueing model's value (r.Value)
// does not hold there.
func (r Remedy) RaisedTo(v float64) Remedy {
	r.Change = strings.Replace(r.Change, " to "+num(r.Value)+" ms (",
		" to "+num(v)+" ms (what the plan's own simulation sees with the change; the queueing model gives "+num(r.Value)+" ms, ", 1)
	r.Value = v
	return r
}

// SetRemedies gives the class the remedies rems in place of its own, in
// its explanation too, and the warning, when not empty: what the plan's
// check made of them.
func (c *ClassPlan) SetRemedies(rems []Remedy, warning string) {
	for k, rm := range c.Remedies {
		if k < len(rems) && rems[k].Change != rm.Change {
			c.Explanation = strings.Replace(c.Explanation, rm.Change, rems[k].Change, 1)
		}
	}
	c.Remedies = rems
	if warning != "" {
		c.Warnings = append(slices.Clone(c.Warnings), warning)
	}
}
