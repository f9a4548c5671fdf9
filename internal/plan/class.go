package plan

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
)

// searchLimit bounds every search over pool sizes and endpoint totals (the
// schema's largest max_pool), so that min_pool and remedies exist beyond
// the policy cap and no search runs unbounded.
const searchLimit = 100000

// classModel is the queueing model of one class: its service time at any
// load on its endpoint and the percentiles of latency with the client-side
// queue (docs/concepts.md, "Service time" and "Demand and the client
// queue"). Latency that does not depend on load has one service time; a
// measured curve gives one per load, the endpoint's total in flight.
type classModel struct {
	eng     *Engine
	spec    scenario.Class
	key     quota.Key
	lambda  float64 // arrival rate, 0 without demand
	ca2     float64 // squared coefficient of variation of inter-arrival times
	safety  float64
	rhoMax  float64 // policy.max_utilization
	maxPool int
	slo     [2]float64 // TTFT and E2E targets in seconds, 0 when none
	use     quota.Vector
	out     model.Dist // output tokens before the max_tokens cap
	draws   *model.Draws

	// pct is the probability of the percentile the SLO binds and the
	// plan's percentiles are taken at (slo.percentile / 100, 0.95 by
	// default): docs/concepts.md, "SLOs at a percentile".
	pct float64

	static *service     // load-independent latency
	curve  *model.Curve // measured curve, when given
	base   model.Service

	services map[int]*service // by load, for a curve
	buf      []float64        // scratch for quantile selections
	xmax     []float64        // xmax[c] = max over c' ≤ c of X(c'), grown on demand

	// pace is the class's wait at its key's pacing buckets, which a send
	// waits for with a slot free (docs/concepts.md, "The pacing wait");
	// paceD is its sample, one wait per draw, and paced the service times
	// with it added, by the service they add it to.
	pace   pacingLaw
	paceD  []float64
	paceD1 float64 // the mean of paceD
	// paceH is the head start of each draw that its wait for a slot
	// overlaps, when that is not the whole of paceD (headOf).
	paceH []float64
	// paceNZ are the draws whose pacing wait is positive, once paceAtOK.
	paceNZ   []int32
	paceAtOK bool
	paced    map[*service]*service
	// paceQ is the quantile of the queue wait, max(W + others·D, D), by
	// the slot's wait W and the percentile (paceQuantile).
	paceQ map[paceKey]float64

	// task is the class's agent task, nil for a class of single calls;
	// with it, static is the task's time and use is a task's.
	task *taskModel
}

// The two SLO metrics, indices into classModel.slo.
const (
	metricTTFT = iota
	metricE2E
)

// service is the service time at one load and what has been computed of it.
type service struct {
	svc          model.Service
	mean, scv    float64
	tail         float64 // E[S]·E[S³]/E[S²]²: how heavy the service time's tail is
	extrapolated bool
	key          serviceKey     // the whole service time, for S and what depends on it
	ttftKey      serviceKey     // the TTFT alone, which classes may share
	tails        [2]*model.Tail // load-independent latency: TTFT and S, built on first use
	// The Monte Carlo sample as drawn: a query that a tail does not serve
	// (a curve's load has few) selects from it.
	first, total []float64
	approx       [2]*model.Estimator // stand-ins for TTFT and S that guide searches
	fromSample   [2]bool             // whether approx comes from the sample
	load         int                 // the load of a curve's service time
	noWait       [2]float64          // p95 of TTFT and of S without queueing; 0 until known
	minPool      *minPoolResult
	// base is the service time a paced one adds the pacing wait to; nil
	// for a service time without it; d are the pacing wait's first three
	// moments, of a paced service time and of its occupancy of a slot.
	base *service
	d    [3]float64
}

// keyOf is the cache key of what a metric of the service time depends on.
func (s *service) keyOf(metric int) serviceKey {
	if metric == metricTTFT {
		return s.ttftKey
	}
	return s.key
}

// estimator guides searches: it approximates a percentile with a queue.
type estimator interface {
	Estimate(w model.Wait) float64
}

// minPoolResult is min_pool at one load: nil Pool when no pool up to the
// search limit serves the demand.
type minPoolResult struct {
	Pool *int
}

func newClassModel(eng *Engine, spec scenario.Class, key quota.Key, p scenario.Policy, draws *model.Draws) (*classModel, error) {
	m := &classModel{
		eng: eng, spec: spec, key: key, ca2: *spec.ArrivalSCV, safety: p.KneeSafety.Safety(spec.Mode),
		rhoMax: p.MaxUtilization, maxPool: p.MaxPool, draws: draws, services: map[int]*service{}, xmax: []float64{0},
		pct: scenario.DefaultPercentile / 100.0,
	}
	if spec.Demand != nil {
		m.lambda = spec.Demand.Rate()
	}
	if spec.SLO != nil {
		m.slo = [2]float64{spec.SLO.TTFT() / 1000, spec.SLO.E2E() / 1000}
		if spec.Task != nil {
			m.slo[metricE2E] = spec.SLO.TaskE2E() / 1000
		}
		m.pct = spec.SLO.At() / 100
	}
	in, err := dist(spec.InputTokens)
	if err != nil {
		return nil, fmt.Errorf("input_tokens: %w", err)
	}
	out, err := dist(spec.OutputTokens)
	if err != nil {
		return nil, fmt.Errorf("output_tokens: %w", err)
	}
	m.out = out
	capped := out.Clip(1, math.Inf(1))
	if spec.MaxTokens > 0 {
		capped = capped.Clip(1, float64(spec.MaxTokens))
	}
	m.base = model.Service{In: in, Out: capped}
	m.use = key.Use(quota.Request{
		MeanIn: in.Mean(), MeanOut: capped.Mean(), MaxTokens: float64(spec.MaxTokens), CachedFraction: spec.CachedInputFraction,
	})
	l := *spec.Latency
	if len(l.Curve) > 0 {
		if m.curve, err = eng.curve(l.Curve); err != nil {
			return nil, fmt.Errorf("latency.curve: %w", err)
		}
		if err := checkServiceTime(m.at(1).mean, "at one request in flight ", "the curve's first point", "check the curve and the output token distribution"); err != nil {
			return nil, err
		}
		return m, nil
	}
	ttft, err := msDist(*l.TTFTMs)
	if err != nil {
		return nil, fmt.Errorf("latency.ttft_ms: %w", err)
	}
	tpot, err := msDist(*l.TPOTMs)
	if err != nil {
		return nil, fmt.Errorf("latency.tpot_ms: %w", err)
	}
	svc := m.base
	svc.TTFT, svc.TPOT, svc.Prefill = ttft, tpot, prefillPerToken(l, spec)
	if spec.Task != nil {
		if err := m.newTask(*spec.Task, svc, newPrefixCache(l, spec)); err != nil {
			return nil, err
		}
	} else {
		m.static = m.newService(svc, false)
	}
	if m.static.mean == 0 {
		return nil, errors.New("the service time is zero: give a positive ttft_ms, or a positive tpot_ms with more than one output token")
	}
	if err := checkServiceTime(m.static.mean, "", "a latency or token count", "check the latency and token distributions"); err != nil {
		return nil, err
	}
	return m, nil
}

// maxServiceSeconds bounds the mean service time of a request (a year):
// beyond it, no quota, queue or pool is meaningful and products such as
// λ·E[S] lose their range.
const maxServiceSeconds = 365 * 24 * 3600

// minServiceSeconds bounds it below (a microsecond): below it a pool's
// rate c/E[S] leaves the range of numbers, and no endpoint answers that
// fast.
const minServiceSeconds = 1e-6

// checkServiceTime holds a mean service time, at the load that at names,
// to [minServiceSeconds, maxServiceSeconds]; what names the inputs it
// comes from, and fix says where to look.
func checkServiceTime(mean float64, at, what, fix string) error {
	switch {
	case math.IsNaN(mean):
		return fmt.Errorf("the mean service time %sis not a number: %s is too small, or its p95 too far from its p50, to take its mean; %s", at, what, fix)
	case math.IsInf(mean, 0):
		return fmt.Errorf("the mean service time %sis too large to represent: %s is too large, or its p95 too far from its p50; %s", at, what, fix)
	case !(mean >= minServiceSeconds):
		return fmt.Errorf("the mean service time %sis %s s, under the 1 µs the planner accepts: %s is too small; %s", at, num(mean), what, fix)
	case !(mean <= maxServiceSeconds):
		return fmt.Errorf("the mean service time %sis %s s, beyond the %s s the planner accepts: %s", at, num(mean), num(maxServiceSeconds), fix)
	}
	return nil
}

func (m *classModel) newService(svc model.Service, extrapolated bool) *service {
	s := &service{svc: svc, extrapolated: extrapolated,
		key: newServiceKey(svc, m.draws), ttftKey: newTTFTKey(svc, m.draws)}
	mo, ok := m.eng.moments.Get(s.key)
	if !ok {
		mo = momentsOf(svc)
		m.eng.moments.Add(s.key, mo)
	}
	s.mean, s.scv, s.tail = mo.mean, mo.scv, mo.tail
	return s
}

// moments are what the queueing formulas need of a service time S: E[S],
// its squared coefficient of variation, and E[S]·E[S³]/E[S²]².
type moments struct{ mean, scv, tail float64 }

func momentsOf(svc model.Service) moments {
	m1, m2, m3 := svc.Moments()
	mo := moments{mean: svc.Mean(), scv: svc.SCV()}
	if m2 > 0 {
		mo.tail = m1 * m3 / (m2 * m2)
	}
	return mo
}

// queue is the client's pool of c at the class's demand as a queue, for
// the service time s.
func (m *classModel) queue(c int, lambda float64, s *service) model.Queue {
	return model.Queue{C: c, Lambda: lambda, CA2: m.sendsCA2(lambda, s.d[0]), Mean: s.mean, CS2: s.scv, Tail: s.tail, P: m.pct}
}

// sendsCA2 is the squared coefficient of variation of the requests that
// take the pool's slots at rate lambda, with a mean pacing wait of meanD
// (docs/concepts.md, "The clumps the buckets make"): the class's
// arrivals, except that the requests the key's buckets hold back because
// other classes' sends drained them go together when the buckets let
// them, each with the others that arrived while it waited. A request that
// waits D has λ·E[A + D] others in its clump (A the clump's age, of D's
// law), at most what the buckets pass at once (pacingLaw.burst), so that
// clumps of m* = min(1 + 2λ·E[D_o | D > 0], burst), D_o the part of the
// wait that the other classes cause (pacingLaw.others), raise the
// requests' index of dispersion by P(D > 0)·(m* − 1): by 2λ·E[D_o] where
// the buckets hold the clumps whole. The pool sees the larger of that and
// the arrivals' own ca², their sum for evenly spaced arrivals: such a
// class below a bursty one finds its pool full only after the bursts, and
// then for long, while bursty arrivals fill the pool in the same spells as
// the clumps (the sum put Poisson classes' TTFT p95 up to 37 % above
// planner simulate's). Agent tasks, whose slots a task's calls hold, are
// taken as they arrive.
func (m *classModel) sendsCA2(lambda, meanD float64) float64 {
	if m.task != nil || !(meanD > 0) || math.IsInf(meanD, 1) || m.pace.others == 0 {
		return m.ca2
	}
	f := float64(len(m.paceAt())) / float64(m.draws.N)
	if f == 0 {
		return m.ca2
	}
	clump := math.Min(1+2*lambda*meanD*m.pace.others/f, math.Max(1, m.pace.burst))
	return math.Max(m.ca2, f*(clump-1))
}

// headOf is the head start that a request's wait for a slot overlaps,
// for a paced service time: the part of every draw's pacing wait that its
// own class's sends cause (pacingLaw.overlap), the whole of it for a
// class alone on its key; nil for a service time without pacing.
func (m *classModel) headOf(s *service) []float64 {
	if s.base == nil {
		return nil
	}
	d := m.paceSample()
	f := m.pace.overlap()
	if f == 1 {
		return d
	}
	if m.paceH == nil {
		m.paceH = make([]float64, len(d))
		for i, v := range d {
			m.paceH[i] = f * v
		}
	}
	return m.paceH
}

// loadDependent reports whether the class's latency follows its endpoint's
// load.
func (m *classModel) loadDependent() bool { return m.curve != nil }

// at is the service time with load requests in flight on the endpoint.
func (m *classModel) at(load int) *service {
	if m.static != nil {
		return m.static
	}
	load = max(1, min(load, searchLimit))
	if s, ok := m.services[load]; ok {
		return s
	}
	ttft, tpot, ext := m.curve.At(float64(load))
	svc := m.base
	svc.TTFT, svc.TPOT = ttft, tpot
	s := m.newService(svc, ext)
	s.load = load
	m.services[load] = s
	return s
}

// tail returns the Monte Carlo tail of TTFT (metricTTFT) or of S
// (metricE2E) for a load-independent service time, from the engine's cache
// when a plan has already built it. A tail costs a selection and a pass
// over the draws to build and answers each query in a fraction of one, so
// it is built for the percentiles a search queries often.
func (m *classModel) tail(ctx context.Context, s *service, metric int) (*model.Tail, error) {
	if t := s.tails[metric]; t != nil && t.P() == m.pct {
		return t, nil
	}
	if s.base != nil && m.paceNever() {
		// X + max(W, 0) is X + W: the tail of the service time without
		// pacing answers every query the same, bit for bit.
		t, err := m.tail(ctx, s.base, metric)
		if err != nil {
			return nil, err
		}
		s.tails[metric] = t
		return t, nil
	}
	build := func() (*model.Tail, error) {
		if s.base != nil && len(m.paceAt()) <= m.draws.N/sparseTailShare {
			// Few draws wait for the buckets: the tail without pacing
			// and those draws give the paced tail without a selection or
			// a paced sample.
			base, err := m.tail(ctx, s.base, metric)
			if err != nil {
				return nil, err
			}
			first, total, err := m.sample(ctx, s.base)
			if err != nil {
				return nil, err
			}
			x := total
			if metric == metricTTFT {
				x = first
			}
			return model.NewSparsePacedTail(base, x, m.paceSample(), m.paceAt(), m.draws), nil
		}
		first, total, err := m.sample(ctx, s)
		if err != nil {
			return nil, err
		}
		x := total
		if metric == metricTTFT {
			x = first
		}
		return model.NewPacedTail(x, m.headOf(s), m.draws, m.pct), nil
	}
	var t *model.Tail
	var err error
	if m.draws.N <= tailCacheMaxDraws {
		t, err = cachedOnce(ctx, m.eng, m.eng.tails, tailKey{service: s.keyOf(metric), metric: metric, p: m.pct}, build)
	} else {
		t, err = build()
	}
	if err != nil {
		return nil, err
	}
	s.tails[metric] = t
	return t, nil
}

// sparseTailShare is the inverse of the largest share of the draws with a
// pacing wait for which a paced tail is built from the tail without
// pacing (model.NewSparsePacedTail): each query then offers those draws.
const sparseTailShare = 32

// sample returns the Monte Carlo sample of TTFT and of S for a service
// time, drawn on first use.
func (m *classModel) sample(ctx context.Context, s *service) (first, total []float64, err error) {
	if s.first != nil {
		return s.first, s.total, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if s.base != nil {
		first, total, err := m.sample(ctx, s.base)
		if err != nil {
			return nil, nil, err
		}
		if m.paceNever() {
			// X + 0 is X: the sample without pacing, shared read-only.
			s.first, s.total = first, total
			return first, total, nil
		}
		d := m.paceSample()
		s.first, s.total = make([]float64, len(d)), make([]float64, len(d))
		for i, v := range d {
			s.first[i], s.total[i] = first[i]+v, total[i]+v
		}
		return s.first, s.total, nil
	}
	n := m.draws.N
	p := m.eng.parts(s.svc, m.draws)
	// The sample is kept in the engine's cache of samples, shared
	// read-only by the plans of the same service time (a what-if over
	// the demand plans it in every cell).
	if p.In == nil {
		// Without a prefill term the TTFT is its part's sample, shared
		// read-only.
		total, err := cachedOnce(ctx, m.eng, m.eng.samples, sha256.Sum256(append(s.key[:], 'S')), func() ([]float64, error) {
			total := make([]float64, n)
			s.svc.FillTotal(p, total)
			return total, nil
		})
		if err != nil {
			return nil, nil, err
		}
		s.first, s.total = p.TTFT, total
		return s.first, s.total, nil
	}
	both, err := cachedOnce(ctx, m.eng, m.eng.samples, sha256.Sum256(append(s.key[:], 'F', 'S')), func() ([]float64, error) {
		both := make([]float64, 2*n)
		s.svc.FillParts(p, both[:n], both[n:])
		return both, nil
	})
	if err != nil {
		return nil, nil, err
	}
	s.first, s.total = both[:n:n], both[n:]
	return s.first, s.total, nil
}

// estimatorOf is what guides searches on a metric at a service time: the
// Monte Carlo tail's own estimate for load-independent latency, else the
// closed-form stand-in, which needs no draws.
func (m *classModel) estimatorOf(ctx context.Context, s *service, metric int) (estimator, error) {
	if m.tailed(metric) {
		return m.tail(ctx, s, metric)
	}
	if s.first != nil && !s.fromSample[metric] {
		// Once the load is drawn, its sample guides better than the
		// closed form.
		x := s.total
		if metric == metricTTFT {
			x = s.first
		}
		base, err := m.noWaitOf(ctx, s, metric)
		if err != nil {
			return nil, err
		}
		s.approx[metric], s.fromSample[metric] = model.NewSampleEstimator(x, m.pct, base), true
	}
	if s.approx[metric] == nil {
		if s.base != nil {
			// Before its sample is drawn, a paced service time is guided
			// by its own with the pacing wait's mean added: searches are
			// settled by the Monte Carlo.
			e, err := m.estimatorOf(ctx, s.base, metric)
			if err != nil {
				return nil, err
			}
			return shifted{e, m.paceMean()}, nil
		}
		d := s.svc.Lognormal()
		if metric == metricTTFT {
			d = s.svc.TTFTLognormal()
		}
		s.approx[metric] = model.NewEstimator(d, m.pct)
	}
	return s.approx[metric], nil
}

// shifted is an estimator of X + c.
type shifted struct {
	e estimator
	c float64
}

func (s shifted) Estimate(w model.Wait) float64 { return s.e.Estimate(w) + s.c }

// approxNoWait95 is the closed-form stand-in's p95 of TTFT or S without
// queueing at a load, for bracketing searches over the load.
func (m *classModel) approxNoWait95(load, metric int) float64 {
	e, _ := m.estimatorOf(context.Background(), m.at(load), metric)
	return e.Estimate(model.Wait{})
}

// rate is X(c) = c / E[S(c)], the request rate of a pool of c alone on
// its endpoint, running flat out.
func (m *classModel) rate(c int) float64 { return model.LittleRate(float64(c), m.at(c).mean) }

// peakRate is the largest X(c') for c' ≤ c: the most a pool capped at c can
// send, which is what it may use of a quota. Other classes on the endpoint
// only slow it down, so the pool alone on it is the worst case. It equals
// X(c) when latency does not depend on load; with a curve it is a running
// maximum over the measured range, and beyond it X rises to the USL peak
// and falls after (see risesUntil).
func (m *classModel) peakRate(c int) float64 {
	if m.static != nil {
		return m.rate(c)
	}
	hi := m.measuredTop()
	for k := len(m.xmax); k <= min(c, hi); k++ {
		m.xmax = append(m.xmax, math.Max(m.xmax[k-1], m.rate(k)))
	}
	x := m.xmax[min(c, hi)]
	if c > hi {
		x = math.Max(x, m.rate(min(c, m.risesUntil())))
	}
	return x
}

// measuredTop is the highest measured concurrency of the curve.
func (m *classModel) measuredTop() int {
	_, hi := m.curve.Range()
	return int(hi)
}

// risesUntil is the pool beyond which X(c) never rises again: beyond the
// measured range latency grows as N/X_USL(N), so X(c) ∝ X_USL(c), which
// rises up to the USL peak N* and falls after it; without a peak it rises
// up to the search limit, and without a fit (latency ∝ N) it stays flat.
func (m *classModel) risesUntil() int {
	hi := m.measuredTop()
	u, ok := m.curve.USL()
	if !ok {
		return hi
	}
	if n, ok := u.Peak(); ok && n < searchLimit {
		return max(hi, int(math.Ceil(n)))
	}
	return searchLimit
}

// firstAbove is the smallest pool c ≤ limit with X(c)·scale > bound, or
// false. It scans the measured range, where X need not be monotone, and
// bisects beyond it, where X rises until risesUntil.
func (m *classModel) firstAbove(bound, scale float64, limit int) (int, bool) {
	hi := min(m.measuredTop(), limit)
	for c := 1; c <= hi; c++ {
		if m.rate(c)*scale > bound {
			return c, true
		}
	}
	end := min(limit, m.risesUntil())
	if end <= hi || m.rate(end)*scale <= bound {
		return 0, false
	}
	lo := hi // X(lo)·scale ≤ bound
	for end-lo > 1 {
		mid := lo + (end-lo)/2
		if m.rate(mid)*scale > bound {
			end = mid
		} else {
			lo = mid
		}
	}
	return end, true
}

// waitAt is the client-side queue wait with a pool of c at the class's
// demand, for the service time s.
func (m *classModel) waitAt(c int, s *service) model.Wait { return m.waitAtP(c, s, m.pct) }

// waitAtP is waitAt with the wait's law matched at the p-quantile of the
// latency (model.Queue.P).
func (m *classModel) waitAtP(c int, s *service, p float64) model.Wait {
	_, w := m.slotQueue(c, s, p)
	return w
}

// slotQueue is the pool's queue of c slots at the class's demand, for the
// service time s, with its wait matched at the p-quantile: the queue whose
// utilisation and service the wait describes, as the share shed
// (model.Queue.ShedShare) must read them.
func (m *classModel) slotQueue(c int, s *service, p float64) (model.Queue, model.Wait) {
	queue := func(s *service) model.Queue {
		q := m.queue(c, m.lambda, s)
		q.P = p
		return q
	}
	q := queue(s)
	if s.base == nil {
		return q, m.eng.wait(q)
	}
	// A request at the head of the queue that waits for the buckets keeps
	// the slot it would take idle for what its pacing wait lasts beyond
	// its wait for a slot: for the whole of it when it found a slot free,
	// hardly at all when it waited long for one. The pool's queue sees
	// S + (1 − π)·D, with π its own probability of waiting at that
	// occupancy: the fixed point, found by bisection (the probability
	// falls as π rises, so there is one). Taking π at S + D alone, 1
	// where that is unstable, read a pool run near its limit by its
	// pacing waits as one that hardly queues.
	probAt := func(pi float64) (model.Queue, model.Wait, float64) {
		q := queue(s.occupancy(1 - pi))
		w := m.eng.wait(q)
		if !w.Stable() {
			return q, w, 1
		}
		return q, w, w.Prob
	}
	lo, hi := 0.0, 1.0
	if _, _, p0 := probAt(0); p0 <= 0 {
		hi = 0
	}
	for hi-lo > 1e-3 {
		mid := (lo + hi) / 2
		if _, _, g := probAt(mid); g > mid {
			lo = mid
		} else {
			hi = mid
		}
	}
	q, w, _ := probAt(hi)
	return q, w
}

// percentile names one of the percentiles the plan predicts.
type percentile int

const (
	pctTTFT    percentile = iota // queue wait + TTFT
	pctE2E                       // queue wait + S
	pctService                   // S alone, without the queue
)

// p95 is the class's percentile (95th unless its SLO names another), in
// seconds, with a pool of c and load in flight on the endpoint (+Inf when the queue is unstable). Percentiles
// depend on the service time, the demand and the arrival variability,
// never on quotas, so plans that differ only in limits, as what-if sweeps
// of quotas do, share them through the engine's cache.
func (m *classModel) p95(ctx context.Context, c, load int, which percentile) (float64, error) {
	return m.percentileAt(ctx, c, load, which, m.pct)
}

// percentileAt is p95 at the probability p: the class's own percentile
// goes through its tails and caches, any other is selected from the
// Monte Carlo sample.
func (m *classModel) percentileAt(ctx context.Context, c, load int, which percentile, p float64) (float64, error) {
	return m.percentileOf(ctx, c, load, which, p, true)
}

// percentileOf is percentileAt over the requests the client serves
// (served) or over every request, which is at least as large.
func (m *classModel) percentileOf(ctx context.Context, c, load int, which percentile, p float64, served bool) (float64, error) {
	if which == pctService {
		return m.quantileAt(ctx, m.at(load), nil, model.Wait{}, which, p)
	}
	s, full, q, w := m.slotWait(c, load)
	if !w.Stable() {
		return math.Inf(1), nil
	}
	// An agent task's calls' TTFT stays over every task's calls: leaving
	// out the draws whose first-call wait passes τ put it at half to nine
	// tenths of the simulation's where 0.8 % to 5 % of the tasks were
	// shed, and over every task it is 0.94 times it or more
	// (docs/concepts.md, "Shedding").
	if served && (which != pctTTFT || m.task == nil) {
		tau, ok, err := m.patience(ctx, load)
		if err != nil {
			return 0, err
		}
		if ok && m.servedApart(w, tau) {
			// Over the requests (or tasks) served the p-quantile lies
			// where the one over every request at p·(1 − q) does: the
			// wait's law is matched there.
			w = m.waitAtP(c, q, p*(1-w.LeftOut(tau)))
			return m.servedQuantile(ctx, s, full, w, which, p, tau)
		}
	}
	return m.quantileAt(ctx, s, full, m.waitOf(w, which), which, p)
}

// waitOf is the wait that the percentile which sees of the pool's wait
// w: an agent task's calls' TTFT sees it on one of a task's E[n] calls,
// the first, which waits for the slot (firstCallWait); every other
// percentile, and a task's E2E, sees w itself.
func (m *classModel) waitOf(w model.Wait, which percentile) model.Wait {
	if which == pctTTFT && m.task != nil {
		return m.task.firstCallWait(w)
	}
	return w
}

// slotWait is the wait for a slot of a pool of c with load in flight on
// the endpoint: s is the service time (with the pacing wait) that the
// class's percentiles take, full the one of the draws that wait when it
// is not s (nil when it is), and q the one the pool's queue sees.
func (m *classModel) slotWait(c, load int) (s, full, q *service, w model.Wait) {
	s = m.pacedOf(m.at(load))
	// With a measured curve a request that waits for a slot starts when
	// the pool is full, at a higher load than the endpoint's mean: those
	// draws take the service time there. The slots that free for them
	// were taken at loads between the two: the pool's queue sees the
	// service time a third of the way up (fitted to the discrete-event
	// simulation of the tests).
	q = s
	if fl := m.fullLoad(c, load); fl != load {
		full = m.pacedOf(m.at(fl))
		q = m.pacedOf(m.at(load + (fl-load+1)/3))
	}
	return s, full, q, m.waitAt(c, q)
}

// servedQuantile is the p-quantile of TTFT or E2E (which) with the wait
// w over the requests a client that sheds at τ serves: over the Monte
// Carlo's draws whose wait for a slot is at most τ (model.QuantileServed).
func (m *classModel) servedQuantile(ctx context.Context, s, full *service, w model.Wait, which percentile, p, tau float64) (float64, error) {
	s, full = m.drawsOf(s, full)
	metric := metricOf(which)
	k := percentileKey{service: s.keyOf(metric), wait: w, which: which, p: p, served: true, tau: tau}
	if full != nil {
		k.full = full.keyOf(metric)
	}
	if v, ok := m.eng.percentiles.Get(k); ok {
		return v, nil
	}
	x, xw, err := m.drawsOfMetric(ctx, s, full, which)
	if err != nil {
		return 0, err
	}
	v := model.QuantileServed(x, xw, m.headOf(s), m.draws, w, p, tau, m.scratch())
	m.eng.percentiles.Add(k, v)
	return v, nil
}

// maxShedShare is the share of a class's requests its client may shed
// for a plan to hold: the simulation's verdict allows 1 % of requests
// lost (docs/simulate.md).
const maxShedShare = 0.01

// maxQueueWait is the wait for a slot after which the class's client sheds
// a request (Admission.MaxQueueWaitMs), in seconds: slo_e2e minus the
// class's percentile of S without queueing at the load; ok is false
// without an e2e target, when nothing is shed.
func (m *classModel) maxQueueWait(ctx context.Context, load int) (tau float64, ok bool, err error) {
	if !m.hasSLO(metricE2E) {
		return 0, false, nil
	}
	v, err := m.noWait95(ctx, load, metricE2E)
	if err != nil {
		return 0, false, err
	}
	return math.Max(0, m.slo[metricE2E]-v), true, nil
}

// patience is maxQueueWait for a class whose client sheds: one with
// demand (a closed loop sends only when a slot is free), requests or
// agent tasks alike. Its share shed (shedShare), the rates and pools
// that keep that share at most maxShedShare, and its percentiles and
// queue wait over the requests or tasks served are worked out with it.
func (m *classModel) patience(ctx context.Context, load int) (tau float64, ok bool, err error) {
	if m.lambda == 0 {
		return 0, false, nil
	}
	return m.maxQueueWait(ctx, load)
}

// servedApart reports whether the class's TTFT and E2E percentiles over
// the requests its client serves, shedding at τ with the wait w, are
// taken apart from those over every request: when the Monte Carlo
// resolves the shedding (docs/concepts.md, "Shedding"), and, for arrivals
// burstier than Poisson, q = P(W > τ) is over maxShedShare. A
// bursty wait's law, matched at the percentile, reads its tail at τ
// coarsely, and leaving out a share of at most 1 % that it misplaces put
// the served percentiles up to a tenth under the simulation's; over every
// request they are at most that share's tail above them, the safe side.
func (m *classModel) servedApart(w model.Wait, tau float64) bool {
	return m.resolves(w, tau) && (m.ca2 <= 1 || w.Beyond(tau) > maxShedShare)
}

// resolves reports whether the Monte Carlo resolves the shedding at τ of
// a stable queue with the wait w: q = P(W > τ) is at least one draw's
// worth. The predicted queue wait, which is the wait's law itself rather
// than draws of it, is over the requests served whenever it does.
func (m *classModel) resolves(w model.Wait, tau float64) bool {
	return w.Prob > 0 && w.Stable() && w.Beyond(tau)*float64(m.draws.N) >= 1
}

// shedShare is the share of its requests the class's client sheds with a
// pool of c and load in flight on the endpoint, waiting longer than τ
// (maxQueueWait) for a slot; 0 for a class that sheds nothing. A queue
// whose waiting requests leave after a fixed patience τ, GI/G/c+D, has
// below τ the density of the wait without shedding, up to its scale
// (exact for M/M/c+D: Baccelli and Hebuterne, Performance '81, 1981;
// Zeltyn and Mandelbaum, Queueing Syst. 51, 2005): with q = P(W > τ) of
// the plan's wait law and utilisation ρ, it sheds q·r/(1 − q·(1 − r)),
// r = (1 − ρ) for Poisson arrivals and more for smoother ones
// (model.Queue.ShedShare). A pool at ρ ≥ 1 is stable only because it sheds:
// its share is the M/M/c+D one (model.MMcDShed), at least the excess
// 1 − 1/ρ it cannot serve, and its percentiles stay unbounded (null), as
// the plan never counts on a pool that sheds that much. A request that
// also waits for the pacing buckets is shed on the longer of its waits:
// the share from the wait for a slot alone is the least of it. An agent
// task's share is of its tasks, the task's time its service time.
func (m *classModel) shedShare(ctx context.Context, c, load int) (float64, error) {
	tau, ok, err := m.patience(ctx, load)
	if err != nil || !ok || c < 1 {
		return 0, err
	}
	// The wait of the pool's own queue at the endpoint's load, as the
	// predicted queue wait takes it (on a measured curve, not the
	// full pool's load its waiting draws are served at).
	s := m.pacedOf(m.at(load))
	q, w := m.slotQueue(c, s, m.pct)
	if !w.Stable() {
		a := model.LittleConcurrency(m.lambda, s.mean)
		return math.Max(model.MMcDShed(c, a, tau/s.mean), 1-float64(c)/a), nil
	}
	return q.ShedShare(w, tau), nil
}

// fullLoad is the load on the endpoint when class i's pool of c is full,
// from the endpoint's load at which its demand keeps busySlots in flight:
// the same for latency that does not depend on load.
func (m *classModel) fullLoad(c, load int) int {
	if !m.loadDependent() || m.lambda == 0 {
		return load
	}
	// Evenly spaced arrivals that wait find the pool barely full: the
	// more regular the arrivals, the less the load rises for them.
	busy := m.busySlots(c, load)
	return max(load, load+int(math.Ceil(float64(c-busy)*math.Min(1, m.ca2)-tolerance)))
}

// busySlots is what a pool of c keeps in flight at its demand with load on
// its endpoint: the busy slots a = λ·E[S] and f standard deviations more,
// f·√(a·(1 + ca²)/2) (in flight is about Poisson for Poisson arrivals, and
// its variance grows with theirs by the peakedness (1 + ca²)/2 of an
// infinite-server queue), at most the pool. f is ½ up to Poisson arrivals
// and grows to 1 at ca² = 2 and above: bursts arrive together, so that a
// request meets more in flight than the time average (fitted to the
// discrete-event simulation of the tests and to internal/simulate).
func (m *classModel) busySlots(c, load int) int {
	a := model.LittleConcurrency(m.lambda, m.pacedOf(m.at(load)).mean)
	f := math.Max(0.5, math.Min(1, m.ca2/2))
	return min(c, max(1, int(math.Round(a+f*math.Sqrt(a*(1+m.ca2)/2)))))
}

// drawsOf is the service times, s and full, whose draws a percentile
// takes: without their pacing wait when no draw waits for the buckets
// (X + max(W, 0) is X + W), so that plans with other limits share them.
func (m *classModel) drawsOf(s, full *service) (*service, *service) {
	if s.base != nil && m.paceNever() {
		s = s.base
		if full != nil && full.base != nil {
			full = full.base
		}
	}
	return s, full
}

// drawsOfMetric is the Monte Carlo's draws of TTFT (pctTTFT) or of S
// without a wait: x from s, xw those the draws that wait take, from full
// when it is given, else x.
func (m *classModel) drawsOfMetric(ctx context.Context, s, full *service, which percentile) (x, xw []float64, err error) {
	first, total, err := m.sample(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	x = total
	if which == pctTTFT {
		x = first
	}
	if full == nil {
		return x, x, nil
	}
	ffirst, ftotal, err := m.sample(ctx, full)
	if err != nil {
		return nil, nil, err
	}
	if which == pctTTFT {
		return x, ffirst, nil
	}
	return x, ftotal, nil
}

// metricOf is the metric whose samples a percentile of TTFT (pctTTFT) or
// of E2E takes.
func metricOf(which percentile) int {
	if which == pctTTFT {
		return metricTTFT
	}
	return metricE2E
}

// quantile is the p95 of TTFT (pctTTFT) or S plus the wait w; with full,
// the draws that wait take their service time from it.
func (m *classModel) quantile(ctx context.Context, s, full *service, w model.Wait, which percentile) (float64, error) {
	if which == pctService {
		which, w = pctE2E, model.Wait{}
	}
	s, full = m.drawsOf(s, full)
	metric := metricOf(which)
	k := percentileKey{service: s.keyOf(metric), wait: w, which: which, p: m.pct}
	if full != nil {
		k.full = full.keyOf(metric)
	}
	if v, ok := m.eng.percentiles.Get(k); ok {
		return v, nil
	}
	var v float64
	if full == nil && m.tailed(metric) {
		t, err := m.tail(ctx, s, metric)
		if err != nil {
			return 0, err
		}
		v = t.Quantile(w)
	} else {
		x, xw, err := m.drawsOfMetric(ctx, s, full, which)
		if err != nil {
			return 0, err
		}
		if full != nil {
			v = model.QuantileWithSplitWait(x, xw, m.headOf(s), m.draws, w, m.pct, m.scratch())
		} else {
			v = model.QuantileWithPacedWait(x, m.headOf(s), m.draws, w, m.pct, m.scratch())
		}
	}
	m.eng.percentiles.Add(k, v)
	return v, nil
}

// tailed reports whether a class keeps a tail of the metric: a
// load-independent class does, for both, since every plan of it queries
// them (and the engine keeps them for the next plan); a curve's load
// selects from its sample instead.
func (m *classModel) tailed(int) bool { return m.static != nil }

// scratch is a buffer of one value per draw for quantile selections,
// taken from the engine's pool of them; a plan's run hands it back when
// it ends (run.release).
func (m *classModel) scratch() []float64 {
	if m.buf == nil {
		if b, ok := m.eng.scratch.Get().(*[]float64); ok && cap(*b) >= m.draws.N {
			m.buf = (*b)[:m.draws.N]
		} else {
			m.buf = make([]float64, m.draws.N)
		}
	}
	return m.buf
}

// noWait95 is the p95 of TTFT (metricTTFT) or of S (metricE2E) without
// any queueing, at the given load.
func (m *classModel) noWait95(ctx context.Context, load, metric int) (float64, error) {
	return m.noWaitOf(ctx, m.at(load), metric)
}

// pacedNoWait95 is the p95 of TTFT or of S with the pacing wait, without
// queueing for a slot: what the SLOs are held to at any pool.
func (m *classModel) pacedNoWait95(ctx context.Context, load, metric int) (float64, error) {
	return m.noWaitOf(ctx, m.pacedOf(m.at(load)), metric)
}

// noWaitOf is the p95 of TTFT or of S for a service time (paced or not)
// without queueing for a slot.
func (m *classModel) noWaitOf(ctx context.Context, s *service, metric int) (float64, error) {
	if v := s.noWait[metric]; v > 0 {
		return v, nil
	}
	which := pctService
	if metric == metricTTFT {
		which = pctTTFT
	}
	v, err := m.quantile(ctx, s, nil, model.Wait{}, which)
	if err != nil {
		return 0, err
	}
	s.noWait[metric] = v
	return v, nil
}

// hasSLO reports whether the class has a target on the metric.
func (m *classModel) hasSLO(metric int) bool { return m.slo[metric] > 0 }

// bounds scale the SLO targets a search accepts: 1 is the target itself; a
// target that no pool can meet is searched for within 5 % of its best.
type bounds [2]float64

// exact accepts the targets as they are.
var exact = bounds{1, 1}

// meets reports whether a pool of c at the load meets each target times
// its bound, computing the TTFT percentile only when the E2E target holds,
// and sheds at most maxShedShare of the class's requests, whatever the
// percentiles of those it serves. The percentile over the requests served
// is at most the one over every request, which the engine keeps in its
// tails and caches: it is worked out only when that one misses.
func (m *classModel) meets(ctx context.Context, c, load int, b bounds) (bool, error) {
	if share, err := m.shedShare(ctx, c, load); err != nil || share > maxShedShare {
		return false, err
	}
	for _, t := range []struct {
		metric int
		which  percentile
	}{{metricE2E, pctE2E}, {metricTTFT, pctTTFT}} {
		if !m.hasSLO(t.metric) {
			continue
		}
		target := b[t.metric] * m.slo[t.metric]
		v, err := m.percentileOf(ctx, c, load, t.which, m.pct, false)
		if err == nil && v > target {
			v, err = m.p95(ctx, c, load, t.which)
		}
		if err != nil || v > target {
			return false, err
		}
	}
	return true, nil
}

// stableStart is the smallest pool that keeps the queue stable with a
// margin: A / c ≤ policy.max_utilization, with the offered load
// A = λ·E[S] from the exact mean (docs/concepts.md, "Demand and the client
// queue"). It is false when that pool would exceed the search limit.
func (m *classModel) stableStart(s *service) (int, bool) {
	if m.lambda == 0 {
		return 1, true
	}
	if s.base != nil {
		// The pacing wait keeps a slot idle only while the pool is not
		// full: how full the pool may be is a matter of S.
		s = s.base
	}
	need := model.LittleConcurrency(m.lambda, s.mean) / m.rhoMax
	if !(need < searchLimit) { // NaN and +Inf fail too
		return 0, false
	}
	return max(1, int(math.Ceil(need*(1-tolerance)))), true
}

// minPoolAt is min_pool with load in flight on the endpoint: the smallest
// stable pool whose predicted p95s meet the SLOs. When no pool meets a
// target, it is the smallest pool within 5 % of that target's best (its
// p95 without queueing) while meeting the other, so that the SLO remedy
// names what it would achieve. Without demand it is 1; nil when no pool up
// to the search limit keeps the queue stable.
func (m *classModel) minPoolAt(ctx context.Context, load int) (*int, error) {
	s := m.pacedOf(m.at(load))
	if s.minPool != nil {
		return s.minPool.Pool, nil
	}
	start, ok := m.stableStart(s)
	if !ok {
		s.minPool = &minPoolResult{}
		return nil, nil
	}
	if m.lambda == 0 || (!m.hasSLO(metricTTFT) && !m.hasSLO(metricE2E)) {
		s.minPool = &minPoolResult{Pool: &start}
		return &start, nil
	}
	k := minPoolKey{service: s.key, lambda: m.lambda, ca2: m.ca2, slo: m.slo, p: m.pct, rhoMax: m.rhoMax}
	if c, ok := m.eng.minPools.Get(k); ok {
		s.minPool = &minPoolResult{Pool: &c}
		return &c, nil
	}
	if m.static == nil {
		if _, _, err := m.sample(ctx, s); err != nil {
			return nil, err
		}
	}
	b := exact
	for metric := range 2 {
		if m.hasSLO(metric) {
			v, err := m.noWaitOf(ctx, s, metric)
			if err != nil {
				return nil, err
			}
			b[metric] = withinReach(v, m.slo[metric])
		}
	}
	c, err := m.firstMeeting(ctx, start, load, b)
	if err != nil {
		return nil, err
	}
	m.eng.minPools.Add(k, c)
	s.minPool = &minPoolResult{Pool: &c}
	return &c, nil
}

// withinReach is the factor of a target that min_pool's search holds a
// metric to, given v, its value without queueing: the target itself when
// v meets it, else 5 % above v, the best any pool comes near.
func withinReach(v, target float64) float64 {
	if v <= target {
		return 1
	}
	return v / target * 1.05
}

// approxMinPoolAt is min_pool at a load from the closed-form stand-ins
// alone (no draws), for bracketing searches over the load; false when no
// pool keeps the queue stable.
func (m *classModel) approxMinPoolAt(load int) (int, bool) {
	s := m.pacedOf(m.at(load))
	start, ok := m.stableStart(s)
	if !ok || m.lambda == 0 {
		return start, ok
	}
	ctx := context.Background()
	var est [2]estimator
	b := exact
	for metric := range 2 {
		est[metric], _ = m.estimatorOf(ctx, s, metric)
		if m.hasSLO(metric) {
			b[metric] = withinReach(est[metric].Estimate(model.Wait{}), m.slo[metric])
		}
	}
	return firstTrue(start, func(c int) bool {
		w := m.waitAt(c, s)
		for metric := range 2 {
			if m.hasSLO(metric) && est[metric].Estimate(w) > b[metric]*m.slo[metric] {
				return false
			}
		}
		return true
	}), true
}

// minPoolShared is min_pool on a curve endpoint where the other classes
// keep others in flight: the smallest pool c that is stable and meets the
// targets with others + c on the endpoint, so that the pool's own requests
// count in the load they are predicted at (alone on its endpoint, others
// is 0). Latency grows with the pool, so the violation falls as the queue
// shrinks and rises again as the endpoint saturates; when no pool meets
// the targets, min_pool is the bottom of that valley, the pool that comes
// closest, so that the SLO remedy names what it would achieve. Load-
// independent latency has min_pool at any load.
func (m *classModel) minPoolShared(ctx context.Context, others int) (*int, error) {
	if m.static != nil || m.lambda == 0 {
		return m.minPoolAt(ctx, others+1)
	}
	stable := func(c int) bool {
		return model.LittleConcurrency(m.lambda, m.at(others+c).mean) <= m.rhoMax*float64(c)*(1+tolerance)
	}
	start, ok := firstStable(stable)
	if !ok {
		return nil, nil
	}
	violation := func(c int) (float64, error) {
		// A pool that sheds more than maxShedShare violates in proportion.
		v, err := m.shedShare(ctx, c, others+c)
		if err != nil {
			return 0, err
		}
		if v /= maxShedShare; v <= 1 {
			v = 0
		}
		for metric, which := range []percentile{pctTTFT, pctE2E} {
			if !m.hasSLO(metric) {
				continue
			}
			p, err := m.p95(ctx, c, others+c, which)
			if err != nil {
				return 0, err
			}
			v = math.Max(v, p/m.slo[metric])
		}
		return v, nil
	}
	v, err := violation(start)
	if err != nil {
		return nil, err
	}
	if v <= 1 {
		return &start, nil
	}
	lastFail, best, bestV := start, start, v
	for step := 1; ; step *= 2 {
		c := min(start+step, searchLimit)
		v, err := violation(c)
		if err != nil {
			return nil, err
		}
		if v <= 1 && stable(c) {
			found, err := bisect(lastFail, c, func(c int) (bool, error) {
				v, err := violation(c)
				return v <= 1 && stable(c), err
			})
			return &found, err
		}
		if v > bestV || c == searchLimit {
			return &best, nil
		}
		lastFail, best, bestV = c, c, v
	}
}

// firstStable is the smallest pool c ≤ searchLimit for which stable holds:
// a scan of the first pools (where latency measured at low load may make
// it come and go), then doubling and bisection.
func firstStable(stable func(int) bool) (int, bool) {
	const scan = 128
	for c := 1; c <= scan; c++ {
		if stable(c) {
			return c, true
		}
	}
	lo := scan
	for hi := 2 * scan; ; hi *= 2 {
		hi = min(hi, searchLimit)
		if stable(hi) {
			for hi-lo > 1 {
				mid := lo + (hi-lo)/2
				if stable(mid) {
					hi = mid
				} else {
					lo = mid
				}
			}
			return hi, true
		}
		if hi == searchLimit {
			return 0, false
		}
		lo = hi
	}
}

// firstMeeting is the smallest pool ≥ start that meets the targets within
// b at a fixed load (the percentiles then fall as the pool grows). A quick
// estimate of the percentiles (Tail.Estimate) picks the pool to try first;
// the exact Monte Carlo then confirms it and its neighbour, galloping away
// only when the estimate was off.
func (m *classModel) firstMeeting(ctx context.Context, start, load int, b bounds) (int, error) {
	s := m.pacedOf(m.at(load))
	var est [2]estimator
	for metric := range 2 {
		if m.hasSLO(metric) {
			e, err := m.estimatorOf(ctx, s, metric)
			if err != nil {
				return 0, err
			}
			est[metric] = e
		}
	}
	tau, sheds, err := m.patience(ctx, load)
	if err != nil {
		return 0, err
	}
	estimate := func(c int) bool {
		q, w := m.slotQueue(c, s, m.pct)
		if sheds && w.Stable() && q.ShedShare(w, tau) > maxShedShare {
			return false
		}
		for metric := range 2 {
			if m.hasSLO(metric) && est[metric].Estimate(w) > b[metric]*m.slo[metric] {
				return false
			}
		}
		return true
	}
	meets := func(c int) (bool, error) { return m.meets(ctx, c, load, b) }
	guess := firstTrue(start, estimate)
	ok, err := meets(guess)
	if err != nil {
		return 0, err
	}
	if ok {
		hi := guess
		for step := 1; hi > start; step *= 2 {
			lo := max(start, hi-step)
			ok, err := meets(lo)
			if err != nil {
				return 0, err
			}
			if !ok {
				return bisect(lo, hi, meets)
			}
			hi = lo
		}
		return start, nil
	}
	lo := guess
	for step := 1; lo < searchLimit; step *= 2 {
		hi := min(searchLimit, lo+step)
		ok, err := meets(hi)
		if err != nil {
			return 0, err
		}
		if ok {
			return bisect(lo, hi, meets)
		}
		lo = hi
	}
	return searchLimit, nil
}

// firstTrue is the smallest c ≥ start with ok(c), for a predicate that stays
// true once it holds (searchLimit when it never does).
func firstTrue(start int, ok func(int) bool) int {
	if ok(start) {
		return start
	}
	lo, hi := start, start+1
	for !ok(hi) {
		if hi >= searchLimit {
			return searchLimit
		}
		lo, hi = hi, min(searchLimit, start+2*(hi-start))
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// bisect is the first c in (lo, hi] with ok(c), given that ok(lo) is false,
// ok(hi) is true and ok stays true once it holds.
func bisect(lo, hi int, ok func(int) (bool, error)) (int, error) {
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		good, err := ok(mid)
		if err != nil {
			return 0, err
		}
		if good {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}
