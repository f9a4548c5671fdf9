package plan

import (
	"fmt"
	"strings"

	"github.com/plannerdev/planner/internal/scenario"
)

// explain writes two or three sentences a person can act on.
func explain(m *classModel, cp ClassPlan) string {
	var b strings.Builder
	bound := ceilingNamed(cp.Ceilings, cp.BindingConstraint)
	switch {
	case cp.Pool == 0:
		fmt.Fprintf(&b, "%s gets no pool: %s is 0 (%s).", cp.Name, cp.BindingConstraint, bound.Detail)
	default:
		fmt.Fprintf(&b, "%s gets a pool of %d on key %s, bound by %s (%s).", cp.Name, cp.Pool, cp.Quota, cp.BindingConstraint, bound.Detail)
	}
	switch {
	case m.lambda == 0:
		if cp.Pool > 0 {
			fmt.Fprintf(&b, " With no stated demand it runs as fast as that allows, about %s req/s.", num(cp.Predicted.ThroughputRPS))
		}
	case cp.MinPool == nil:
		fmt.Fprintf(&b, " Its demand of %s req/s is more than any pool up to %d can serve; shed load or split it across keys and endpoints.", num(m.lambda), searchLimit)
	case cp.Feasible:
		fmt.Fprintf(&b, " Its demand of %s req/s needs at least %d in flight, so it fits with %d to spare", num(m.lambda), *cp.MinPool, cp.Pool-*cp.MinPool)
		if e := cp.Predicted.E2EP95Ms; e != nil {
			fmt.Fprintf(&b, "; predicted E2E p95 is %s ms", num(*e))
			if m.spec.SLO != nil && m.spec.SLO.E2EP95Ms > 0 {
				fmt.Fprintf(&b, " against a %s ms SLO", num(m.spec.SLO.E2EP95Ms))
			}
		}
		b.WriteString(".")
	default:
		fmt.Fprintf(&b, " It does not fit: %s req/s within its SLO needs a pool of %d.", num(m.lambda), *cp.MinPool)
		if len(cp.Remedies) > 0 {
			changes := make([]string, len(cp.Remedies))
			for i, r := range cp.Remedies {
				changes[i] = r.Change
			}
			fmt.Fprintf(&b, " To fit: %s", strings.Join(changes, "; and "))
			if cp.Shed != nil && cp.Shed.ShedRPS > 0 {
				fmt.Fprintf(&b, "; or shed %s req/s (it sustains %s)", num(cp.Shed.ShedRPS), num(cp.Shed.SustainableRPS))
			}
			b.WriteString(".")
		}
	}
	return b.String()
}

func ceilingNamed(cs []Ceiling, name string) Ceiling {
	for _, c := range cs {
		if c.Constraint == name {
			return c
		}
	}
	return Ceiling{}
}

// warnings are the class's caveats (DESIGN §3.7).
func (m *classModel) warnings(cp ClassPlan) []string {
	var w []string
	if cp.Predicted.Extrapolated && m.curve != nil {
		lo, hi := m.curve.Range()
		w = append(w, fmt.Sprintf("the pool %d lies outside the measured curve (%g to %g in flight): its latency is extrapolated", max(cp.Pool, 1), lo, hi))
	}
	if cp.TruncationRisk > 0.05 {
		w = append(w, fmt.Sprintf("max_tokens %d cuts %.1f %% of answers short (P(output ≥ max_tokens)); raise it or expect truncation", m.spec.MaxTokens, cp.TruncationRisk*100))
	}
	if m.quotaLimitedCurve() {
		w = append(w, "the measured curve saw 429s at or below the knee: the quota, not the model, limited the measurement")
	}
	if m.key.Headroom > 0.9 {
		w = append(w, fmt.Sprintf("headroom %g on key %s leaves less than 10 %% of its limits for bursts and retries", m.key.Headroom, m.key.Name))
	}
	if m.lambda > 0 && m.spec.SLO == nil && m.spec.Mode != scenario.ModeBatch {
		w = append(w, "no SLO given: min_pool only keeps the client queue stable, however long it is")
	}
	if a := cp.Admission.MaxQueueWaitMs; a != nil && *a == 0 && cp.Pool > 0 {
		w = append(w, "the p95 service time alone reaches the E2E SLO: no time is left for queueing, so requests that find the pool full should be shed at once")
	}
	if cp.Retry.MaxAttempts == 1 && cp.Pool > 0 {
		w = append(w, "no retry fits in the deadline after a p95 attempt")
	}
	return w
}

// quotaLimitedCurve reports 429s in measured steps at or below the knee.
func (m *classModel) quotaLimitedCurve() bool {
	for _, p := range m.latency.Curve {
		if p.RateLimitedRate > 0 && (m.knee == nil || p.Concurrency <= *m.knee) {
			return true
		}
	}
	return false
}

// planWarnings are the plan-wide caveats.
func planWarnings(s scenario.Scenario, p *Plan) []string {
	w := []string{}
	for _, c := range p.Classes {
		if !c.Feasible {
			w = append(w, fmt.Sprintf("class %s does not fit; see its remedies", c.Name))
		}
	}
	for i, q := range p.Quotas {
		head := s.Quotas[i].Headroom
		for _, d := range []string{"rpm", "tpm", "itpm", "otpm", "rpd", "tpd"} {
			if u, ok := q.Utilization[d]; ok && u > head+tolerance {
				w = append(w, fmt.Sprintf("key %s: expected %s use %.1f %% is above its %.0f %% headroom", q.Name, d, u*100, head*100))
			}
		}
	}
	return w
}
