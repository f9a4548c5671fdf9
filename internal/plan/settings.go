package plan

import (
	"math"
	"slices"

	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
)

// predict is what the model expects at the pool.
func (m *classModel) predict(pool int) Predicted {
	s := m.at(max(pool, 1))
	pr := Predicted{MeanServiceMs: ms(s.mean), Utilization: map[string]float64{}, Extrapolated: s.extrapolated}
	if m.lambda > 0 {
		pr.OfferedRPS = roundTo(m.lambda, 4)
	}
	if pool >= 1 {
		pr.ThroughputRPS = roundTo(m.rate(pool), 4)
		p := m.pointAt(pool)
		pr.TTFTP95Ms, pr.E2EP95Ms = msPtr(m.ttft95(pool)), msPtr(m.e2e95(pool))
		pr.QueueWaitMeanMs, pr.QueueWaitP95Ms = msPtr(p.waitMean), msPtr(p.wait95)
	}
	r := m.runRate(pool)
	for d := range quota.NumDimensions {
		if l := m.key.Limit(d); l > 0 {
			pr.Utilization[d.String()] = roundTo(r*m.use[d]*m.key.Seconds(d)/l, 4)
		}
	}
	return pr
}

// pacing is a token bucket at the request rate the class's share of the key
// allows (the tightest dimension), with a burst of the requests that rate
// allows in the provider's enforcement window (DESIGN §3.3).
func (m *classModel) pacing(pool int, allot quota.Vector) Pacing {
	rate := math.Inf(1)
	for d := range quota.NumDimensions {
		if m.key.Limit(d) > 0 && m.use[d] > 0 {
			rate = math.Min(rate, allot[d]/m.use[d])
		}
	}
	if math.IsInf(rate, 1) {
		rate = m.rate(max(pool, 1))
	}
	burst := max(1, int(math.Floor(rate*m.key.BurstWindowS+tolerance)))
	if pool >= 1 {
		burst = min(burst, pool)
	}
	return Pacing{RateRPS: roundTo(rate, 4), Burst: burst}
}

// admission sheds a request that has waited longer than slo_e2e minus the
// p95 service time (DESIGN §3.7), answering 429 with a Retry-After of one
// mean service time (when a slot is expected to free).
func (m *classModel) admission(pool int) Admission {
	s := m.at(max(pool, 1))
	a := Admission{Status: 429, RetryAfterS: max(1, int(math.Ceil(s.mean)))}
	if _, se := m.slo(); se > 0 {
		a.MaxQueueWaitMs = msPtr(math.Max(0, se-m.service95(max(pool, 1))))
	}
	return a
}

// Retry settings per mode: the first backoff and its cap.
var retryBase = map[string][2]float64{
	scenario.ModeInteractive: {0.25, 2},
	scenario.ModeSemi:        {1, 10},
	scenario.ModeBatch:       {2, 60},
}

const maxRetries = 5

// retry sizes the retries to fit the deadline (slo_e2e, or ten p95 service
// times without one): after one p95 attempt, the worst-case sleeps
// Σ min(cap, base·2ⁿ) of the retries must fit in what is left.
func (m *classModel) retry(pool int) Retry {
	p95 := m.service95(max(pool, 1))
	_, deadline := m.slo()
	if deadline == 0 {
		deadline = 10 * p95
	}
	bc := retryBase[m.spec.Mode]
	budget := deadline - p95
	base, capS := bc[0], math.Min(bc[1], math.Max(budget, 0))
	retries, slept := 0, 0.0
	for retries < maxRetries {
		next := math.Min(capS, base*math.Pow(2, float64(retries)))
		if next <= 0 || slept+next > budget {
			break
		}
		slept += next
		retries++
	}
	return Retry{
		MaxAttempts: 1 + retries, BaseMs: ms(base), CapMs: ms(capS), Jitter: "full",
		HonorHeaders: []string{"retry-after-ms", "retry-after"}, DeadlineMs: ms(deadline),
	}
}

// adaptive are AIMD settings (DESIGN §3.7): start at the pool, multiply by
// 0.9 on a 429 or timeout, add 1 while at least half the pool is in use
// without errors, between 1 and the largest quota ceiling (at most the
// policy cap, at least the pool).
func adaptive(pool int, cs []Ceiling) Adaptive {
	ceiling, limit := 0, pool
	for _, c := range cs {
		switch {
		case c.Constraint == ConstraintPolicy:
			limit = max(limit, *c.MaxPool)
		case isQuotaConstraint(c.Constraint) && c.MaxPool != nil:
			ceiling = max(ceiling, *c.MaxPool)
		}
	}
	ceiling = max(pool, min(ceiling, limit), 1)
	return Adaptive{Start: max(pool, 1), DecreaseFactor: 0.9, IncreaseStep: 1, IncreaseWhenUsed: 0.5, Floor: 1, Ceiling: ceiling}
}

func isQuotaConstraint(name string) bool {
	return slices.Contains([]string{"rpm", "tpm", "itpm", "otpm", "rpd", "tpd"}, name)
}

// batch reports when a batch of requests finishes at the pool's throughput
// and whether the class's share of each daily limit covers it within its
// window (one day's share per started day).
func (m *classModel) batch(pool int, allot quota.Vector) *BatchPlan {
	d := m.spec.Demand
	if d == nil || d.Requests <= 0 {
		return nil
	}
	b := &BatchPlan{Requests: d.Requests, WithinHours: d.WithinHours}
	if pool >= 1 {
		h := d.Requests / m.rate(pool) / 3600
		b.CompletionHours = ptrTo(roundTo(h, 3))
		b.MeetsWindow = h <= d.WithinHours
	}
	days := math.Max(1, math.Ceil(d.WithinHours/24))
	for _, dim := range []quota.Dimension{quota.RPD, quota.TPD} {
		if m.key.Limit(dim) <= 0 {
			continue
		}
		needed := d.Requests * m.use[dim]
		available := allot[dim] * m.key.Seconds(dim) * days
		b.DailyLimits = append(b.DailyLimits, DailyCheck{Constraint: dim.String(), Needed: math.Ceil(needed), Available: math.Floor(available), OK: needed <= available})
	}
	return b
}

func ptrTo[T any](v T) *T { return &v }
