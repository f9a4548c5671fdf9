package plan

import (
	"context"
	"math"
	"slices"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// predict is what the model expects of class i at its pool, with its
// endpoint at the plan's load.
func (r *run) predict(ctx context.Context, i, pool int) (Predicted, error) {
	m := r.models[i]
	load := r.load(i)
	s := m.at(load)
	pr := Predicted{MeanServiceMs: ms(s.mean), Utilization: map[string]float64{}, Extrapolated: s.extrapolated}
	if m.lambda > 0 {
		pr.OfferedRPS = signed.Round(m.lambda, 4)
		if pr.OfferedRPS == 0 {
			pr.OfferedRPS = sig6(m.lambda) // below 0.00005 req/s: not none
		}
	}
	if pool >= 1 {
		pr.ThroughputRPS = signed.Round(float64(pool)/s.mean, 4)
		_, _, _, w := m.slotWait(pool, load) // the wait the percentiles take
		ttft, err := m.percentileAt(ctx, pool, load, pctTTFT, 0.95)
		if err != nil {
			return pr, err
		}
		e2e, err := m.percentileAt(ctx, pool, load, pctE2E, 0.95)
		if err != nil {
			return pr, err
		}
		pr.TTFTP95Ms, pr.E2EP95Ms = msPtr(ttft), msPtr(e2e)
		// Over the requests served: the wait given W ≤ τ, its
		// p-quantile the one at p·(1 − q) over every request, q = P(W > τ)
		// (docs/concepts.md, "Shedding").
		tau, sheds, err := m.patience(ctx, load)
		if err != nil {
			return pr, err
		}
		apart := sheds && m.resolves(w, tau)
		served, mean, keep := 0.95, waitMean(w), 1.0 // keep: the served share of the slot's mean wait
		if apart {
			served = 0.95 * (1 - w.LeftOut(tau))
			mean = servedWaitMean(w, tau)
			keep = mean / w.Expected()
		}
		share, err := m.shedShare(ctx, pool, load)
		if err != nil {
			return pr, err
		}
		pr.ShedShare = signed.Round(share, 4)
		if m.task != nil {
			// An agent class's queue wait is each call's, as its TTFT is
			// and as planner simulate measures it (arrival, or readiness,
			// to send): one of a task's E[n] calls waits for the slot, so
			// the calls' mean is the tasks' over E[n], and beyond their
			// p95 lie the first calls of the tasks beyond 0.05·E[n]·(1 − q)
			// + q, q the tasks shed (who take all their calls).
			q := 0.0
			if apart {
				q = w.LeftOut(tau)
			}
			served = 1 - (0.05*(1-q) + q/m.task.calls)
			mean /= m.task.calls
			w = m.task.firstCallWait(w)
		}
		p95 := waitQuantile(w, served)
		if apart {
			p95 = math.Min(p95, tau) // a request served waits at most τ
		}
		pr.QueueWaitMeanMs, pr.QueueWaitP95Ms = msPtr(mean), msPtr(p95)
		if m.lambda > 0 && m.pace.unstable {
			// The key cannot carry the demand: every wait grows without
			// bound.
			pr.TTFTP95Ms, pr.E2EP95Ms, pr.QueueWaitMeanMs, pr.QueueWaitP95Ms = nil, nil, nil, nil
		} else if m.lambda > 0 && m.pace.waits() {
			// The queue wait is the longer of the waits for a slot and for
			// the buckets, which fill while a request waits for a slot,
			// but for the part of the pacing wait that other classes
			// cause, which comes on top of the wait for a slot:
			// max(W + others·D, D) (pacingLaw.overlap).
			mean, p95 := math.Inf(1), math.Inf(1)
			if w.Stable() {
				d := m.paceSample()
				f := m.pace.overlap()
				// E[(W − f·D)⁺] given W > 0, over a strided subsample of
				// the draws: exact for an exponential W at each draw's D.
				var over float64
				if w.Prob > 0 {
					step, n := max(1, len(d)/1024), 0
					for k := 0; k < len(d); k += step {
						over += w.Mean * math.Exp(-f*d[k]/w.Mean)
						n++
					}
					over /= float64(n)
				}
				mean = m.paceMean() + w.Prob*over*keep
				p95 = m.paceQuantile(w, served)
				if m.paceMean() > 0 {
					pr.PacingWaitMeanMs = msPtr(m.paceMean())
					pr.PacingWaitP95Ms = msPtr(m.paceQuantile(model.Wait{}, 0.95))
				}
			}
			pr.QueueWaitMeanMs, pr.QueueWaitP95Ms = msPtr(mean), msPtr(p95)
		}
	}
	if err := r.atPercentile(ctx, i, pool, &pr); err != nil {
		return pr, err
	}
	run := r.runRate(i, pool)
	for d := range scenario.NumDimensions {
		if l := m.key.Limit(d); l > 0 {
			pr.Utilization[d.String()] = signed.Round(run*m.use[d]*m.key.Seconds(d)/l, 4)
		}
	}
	return pr, nil
}

// waitMean is E[W], +Inf for an unstable queue.
func waitMean(w model.Wait) float64 {
	if !w.Stable() {
		return math.Inf(1)
	}
	return w.Expected()
}

// servedWaitMean is the mean wait of the requests a client that sheds at
// τ serves (docs/concepts.md, "Shedding"), for a wait that is 0 with
// probability 1 − π and exponential of mean θ otherwise, whose draws
// beyond cut = w.Cut(τ) are shed and whose draws between τ and cut wait τ:
// π·(θ − (θ + m)·e^{−m/θ} + τ·(e^{−m/θ} − e^{−cut/θ}))/(1 − q), m = min(τ, cut),
// q = π·e^{−cut/θ}; E[W | W ≤ τ] when cut is τ.
func servedWaitMean(w model.Wait, tau float64) float64 {
	cut := w.Cut(tau)
	m := math.Min(tau, cut)
	em, ec := math.Exp(-m/w.Mean), math.Exp(-cut/w.Mean)
	return w.Prob * (w.Mean - (w.Mean+m)*em + tau*(em-ec)) / (1 - w.Prob*ec)
}

// waitQuantile is the p-quantile of a wait that is 0 with probability
// 1 − C and exponential with mean m otherwise: m·ln(C/(1−p)) when C > 1 − p.
func waitQuantile(w model.Wait, p float64) float64 {
	if !w.Stable() {
		return math.Inf(1)
	}
	if w.Prob <= 1-p {
		return 0
	}
	return w.Mean * math.Log(w.Prob/(1-p))
}

// admission sheds a request that has waited longer than slo_e2e minus the
// p95 service time, answering 429 with a Retry-After of one mean service
// time (when a slot is expected to free).
func (r *run) admission(ctx context.Context, i, pool int) (Admission, error) {
	m := r.models[i]
	load := r.load(i)
	s := m.at(load)
	a := Admission{Status: 429, RetryAfterS: 1}
	if v := math.Ceil(s.mean); v < 86400 {
		a.RetryAfterS = max(1, int(v))
	} else {
		a.RetryAfterS = 86400
	}
	tau, ok, err := m.maxQueueWait(ctx, load)
	if err != nil {
		return a, err
	}
	if ok {
		a.MaxQueueWaitMs = msPtr(tau)
	}
	return a, nil
}

// Retry settings per mode: the first backoff and its cap, in seconds.
var retryBase = map[string][2]float64{
	scenario.ModeInteractive: {0.25, 2},
	scenario.ModeSemi:        {1, 10},
	scenario.ModeBatch:       {2, 60},
}

const maxRetries = 5

// retry sizes the retries to fit the deadline (slo_e2e, or ten p95 service
// times without one): after one p95 attempt, the worst-case sleeps
// Σ min(cap, base·2ⁿ) of the retries must fit in what is left.
func (r *run) retry(ctx context.Context, i, pool int) (Retry, error) {
	m := r.models[i]
	p95, err := m.noWait95(ctx, r.load(i), metricE2E)
	if err != nil {
		return Retry{}, err
	}
	deadline := m.slo[metricE2E]
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
	}, nil
}

// adaptive are AIMD settings (docs/concepts.md, "Client settings"): start at
// the pool, multiply by 0.9 on a 429 or timeout, add 1 while at least half
// the pool is in use without errors, between 1 and the largest ceiling of
// a per-minute limit, whose 429s tell the window when to shrink, and no
// higher than the smallest of a daily limit, which answers 429 only once
// the day's budget is spent, too late to tell it (at most the policy cap,
// at least the pool). A class without a pool sends nothing: its window
// starts, stays and ends at 0, rather than growing to a ceiling its cap of
// 0 contradicts.
func adaptive(pool int, cs []Ceiling) Adaptive {
	if pool < 1 {
		return Adaptive{DecreaseFactor: 0.9, IncreaseStep: 1, IncreaseWhenUsed: 0.5}
	}
	ceiling, limit, daily := 0, pool, math.MaxInt
	for _, c := range cs {
		switch d, _ := scenario.DimensionNamed(c.Constraint); {
		case c.Constraint == ConstraintPolicy:
			limit = max(limit, *c.MaxPool)
		case !isQuotaConstraint(c.Constraint) || c.MaxPool == nil:
		case d.Daily():
			daily = min(daily, *c.MaxPool)
		default:
			ceiling = max(ceiling, *c.MaxPool)
		}
	}
	ceiling = max(pool, min(ceiling, limit, daily))
	return Adaptive{Start: pool, DecreaseFactor: 0.9, IncreaseStep: 1, IncreaseWhenUsed: 0.5, Floor: 1, Ceiling: ceiling}
}

func isQuotaConstraint(name string) bool {
	_, ok := scenario.DimensionNamed(name)
	return ok
}

// batch reports when a batch of requests finishes at the pool's throughput
// and whether the class's share of each daily limit covers it within its
// window (one day's share per started day).
func (r *run) batch(i, pool int, allot quota.Vector) *BatchPlan {
	m := r.models[i]
	d := m.spec.Demand
	if d == nil || d.Requests <= 0 {
		return nil
	}
	b := &BatchPlan{Requests: d.Requests, WithinHours: d.WithinHours}
	if pool >= 1 {
		h := d.Requests / (float64(pool) / m.at(r.load(i)).mean) / 3600
		b.CompletionHours = msPtrHours(h)
		b.MeetsWindow = h <= d.WithinHours
	}
	days := batchDays(*d)
	for _, dim := range []scenario.Dimension{scenario.RPD, scenario.TPD} {
		if m.key.Limit(dim) <= 0 {
			continue
		}
		needed := d.Requests * m.use[dim] / r.dayShare(i) // the use per request, not over the class's hours
		available := allot[dim] * m.key.Seconds(dim) * days
		b.DailyLimits = append(b.DailyLimits, DailyCheck{Constraint: dim.String(), Needed: math.Ceil(needed), Available: math.Floor(available), OK: needed <= available})
	}
	// A daily limit that runs out stops the batch, however fast its pool.
	b.MeetsWindow = b.MeetsWindow && !b.dailyShort()
	return b
}

// dailyShort reports whether the class's share of a daily limit falls
// short of the batch within its window: the batch is not done, however
// fast its pool.
func (b *BatchPlan) dailyShort() bool {
	return b != nil && slices.ContainsFunc(b.DailyLimits, func(d DailyCheck) bool { return !d.OK })
}

// withinDaily lowers sh, the shedding of a batch class whose demand is
// lambda, to what its shares of the daily limits carry through its
// window, the smallest of available over needed of lambda, when one falls
// short: a pool that would serve the whole demand still loses what the
// day's budget does not cover.
func (b *BatchPlan) withinDaily(sh *Shed, lambda float64) *Shed {
	if sh == nil || !b.dailyShort() {
		return sh
	}
	share := 1.0
	for _, d := range b.DailyLimits {
		if !d.OK && d.Needed > 0 {
			share = math.Min(share, d.Available/d.Needed)
		}
	}
	sustainable := math.Min(sh.SustainableRPS, floorShed(lambda*share))
	return &Shed{SustainableRPS: sustainable, ShedRPS: signed.Round(lambda-sustainable, 4)}
}

// msPtrHours rounds hours to 0.001, nil when not finite.
func msPtrHours(h float64) *float64 {
	if math.IsInf(h, 0) || math.IsNaN(h) {
		return nil
	}
	return ptrTo(signed.Round(h, 3))
}
