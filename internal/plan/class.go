package plan

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
)

// searchLimit bounds every search over pool sizes (the schema's largest
// max_pool), so that min_pool and remedies exist beyond the policy cap.
const searchLimit = 100000

// classModel is the queueing model of one class: its service time at any
// concurrency and the percentiles of latency with the client-side queue.
type classModel struct {
	ctx     context.Context // checked at each Monte Carlo evaluation
	spec    scenario.Class
	key     quota.Key
	lambda  float64 // arrival rate, 0 without demand
	ca2     float64
	safety  float64
	knee    *int
	latency scenario.Latency
	maxPool int
	use     quota.Vector
	out     model.Dist // output tokens before the max_tokens cap
	draws   *model.Draws

	static *service     // load-independent latency
	curve  *model.Curve // measured curve, when given
	base   model.Service

	services map[int]*service
	points   map[int]*point
	decode   []float64 // out − 1 per draw, shared by a curve's pools
	scratch  [3][]float64
	xmax     []float64 // xmax[c] = max over c' ≤ c of X(c'), grown on demand

	minPool *int
	svcKey  [32]byte // identifies a load-independent service time and its draws
}

// service is the service time at one concurrency and its Monte Carlo tails.
type service struct {
	svc          model.Service
	mean, scv    float64
	extrapolated bool
	ttft, e2e    *model.Tail // built on first use
}

// point memoises the queue wait and the latency percentiles at one pool
// size; each percentile is computed on first use.
type point struct {
	wait             model.Wait
	waitMean, wait95 float64
	ttft95, e2e95    float64
	service95        float64 // p95 of S alone, without the queue
	hasTTFT, hasE2E  bool
	hasService       bool
}

// curves holds the curves of one plan by their points, so that classes that
// share a latency profile share its interpolation and USL fit.
type curves map[string]*model.Curve

func (cs curves) get(points []scenario.CurvePoint) (*model.Curve, error) {
	key := fmt.Sprint(points)
	if c, ok := cs[key]; ok {
		return c, nil
	}
	pts := make([]model.LatencyPoint, len(points))
	for i, c := range points {
		pts[i] = model.LatencyPoint{
			Concurrency: float64(c.Concurrency),
			TTFTP50:     c.TTFTP50Ms / 1000, TTFTP95: c.TTFTP95Ms / 1000,
			TPOTP50: c.TPOTP50Ms / 1000, TPOTP95: c.TPOTP95Ms / 1000,
			Throughput: c.ThroughputRPS,
		}
		if pts[i].Throughput == 0 && c.E2EP50Ms > 0 {
			pts[i].Throughput = model.LittleRate(float64(c.Concurrency), c.E2EP50Ms/1000)
		}
	}
	c, err := model.NewCurve(pts)
	if err != nil {
		return nil, err
	}
	cs[key] = c
	return c, nil
}

func newClassModel(spec scenario.Class, key quota.Key, p scenario.Policy, draws *model.Draws, cs curves) (*classModel, error) {
	m := &classModel{
		spec: spec, key: key, ca2: *spec.ArrivalSCV, safety: p.KneeSafety.Safety(spec.Mode),
		latency: *spec.Latency, knee: spec.Latency.Knee, maxPool: p.MaxPool, draws: draws,
		ctx: context.Background(), services: map[int]*service{}, points: map[int]*point{}, xmax: []float64{0},
	}
	if spec.Demand != nil {
		m.lambda = spec.Demand.Rate()
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
	l := m.latency
	if len(l.Curve) > 0 {
		if m.curve, err = cs.get(l.Curve); err != nil {
			return nil, fmt.Errorf("latency.curve: %w", err)
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
	svc.TTFT, svc.TPOT, svc.Prefill = ttft, tpot, l.PrefillMsPer1K/1000/1000
	m.static = newService(svc, false)
	m.svcKey = tailKey(svc, m.draws)
	if !(m.static.mean > 0) {
		return nil, errors.New("the service time is zero: give a positive ttft_ms, or a positive tpot_ms with more than one output token")
	}
	return m, nil
}

func newService(svc model.Service, extrapolated bool) *service {
	return &service{svc: svc, mean: svc.Mean(), scv: svc.SCV(), extrapolated: extrapolated}
}

// at is the service time at concurrency c.
func (m *classModel) at(c int) *service {
	if m.static != nil {
		return m.static
	}
	if s, ok := m.services[c]; ok {
		return s
	}
	ttft, tpot, ext := m.curve.At(float64(c))
	svc := m.base
	svc.TTFT, svc.TPOT = ttft, tpot
	s := newService(svc, ext)
	m.services[c] = s
	return s
}

// tails returns the Monte Carlo tails of TTFT and S at the service's load.
// Load-independent classes keep them (every pool shares one service time)
// and share them across plans through tailCache; a curve's pools each need
// theirs only once, since ttft95 and e2e95 memoise the percentiles.
func (m *classModel) tails(s *service) (ttft, e2e *model.Tail) {
	if s.ttft != nil {
		return s.ttft, s.e2e
	}
	checkContext(m.ctx)
	cacheable := m.static != nil && m.draws.N <= tailCacheMaxDraws
	key := m.svcKey
	if cacheable {
		if p, ok := tailCache.Get(key); ok {
			s.ttft, s.e2e = p.ttft, p.e2e
			return s.ttft, s.e2e
		}
	}
	n := m.draws.N
	first, total := make([]float64, n), make([]float64, n)
	s.svc.Fill(m.draws, first, total)
	ttft, e2e = model.NewTail(first, m.draws, 0.95), model.NewTail(total, m.draws, 0.95)
	if m.static != nil {
		s.ttft, s.e2e = ttft, e2e
	}
	if cacheable {
		tailCache.Add(key, tailPair{ttft, e2e})
	}
	return ttft, e2e
}

// rate is X(c) = c / E[S(c)], the request rate of a full pool of c.
func (m *classModel) rate(c int) float64 { return model.LittleRate(float64(c), m.at(c).mean) }

// peakRate is the largest X(c') for c' ≤ c: the most a pool capped at c can
// send. It equals X(c) when latency does not depend on load; with a curve it
// is a running maximum over the measured range, and beyond it X rises to
// the USL peak and falls after (see risesUntil).
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
	if n, ok := u.Peak(); ok {
		return max(hi, min(searchLimit, int(math.Ceil(n))))
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

// waitAt is the client-side queue wait with a pool of c at the class's demand.
func (m *classModel) waitAt(c int, lambda float64) model.Wait {
	s := m.at(c)
	return model.QueueWait(c, lambda, s.mean, m.ca2, s.scv)
}

// pointAt is the queue at a pool of c with the class's demand.
func (m *classModel) pointAt(c int) *point {
	if p, ok := m.points[c]; ok {
		return p
	}
	w := m.waitAt(c, m.lambda)
	p := &point{wait: w, waitMean: w.Expected(), wait95: waitQuantile(w, 0.95)}
	m.points[c] = p
	return p
}

// ttft95 is the p95 of queue wait plus TTFT at a pool of c, in seconds
// (+Inf when the queue is unstable).
func (m *classModel) ttft95(c int) float64 {
	p := m.pointAt(c)
	if !p.hasTTFT {
		m.percentiles(c, p, pctTTFT)
	}
	return p.ttft95
}

// e2e95 is the p95 of queue wait plus service time at a pool of c.
func (m *classModel) e2e95(c int) float64 {
	p := m.pointAt(c)
	if !p.hasE2E {
		m.percentiles(c, p, pctE2E)
	}
	return p.e2e95
}

// percentile names one of a point's percentiles.
type percentile int

const (
	pctTTFT    percentile = iota // queue wait + TTFT
	pctE2E                       // queue wait + S
	pctService                   // S alone
)

// percentiles fills one of the point's percentiles. Load-independent
// classes query their shared tails. With a curve, pool c has a service time
// of its own that few queries need, so both percentiles are taken at once
// from one fresh sample instead of building tails.
func (m *classModel) percentiles(c int, p *point, which percentile) {
	checkContext(m.ctx)
	if m.static != nil {
		v := m.staticPercentile(c, p, which)
		switch which {
		case pctTTFT:
			p.ttft95, p.hasTTFT = v, true
		case pctE2E:
			p.e2e95, p.hasE2E = v, true
		default:
			p.service95, p.hasService = v, true
		}
		return
	}
	n := m.draws.N
	if m.decode == nil {
		m.decode = m.base.Decode(m.draws)
		for i := range m.scratch {
			m.scratch[i] = make([]float64, n)
		}
	}
	first, total, tmp := m.scratch[0], m.scratch[1], m.scratch[2]
	m.at(c).svc.FillWith(m.draws, m.decode, first, total)
	p.ttft95 = model.QuantileWithWait(first, m.draws, p.wait, 0.95, tmp)
	p.e2e95 = model.QuantileWithWait(total, m.draws, p.wait, 0.95, tmp)
	p.service95 = model.QuantileWithWait(total, m.draws, model.Wait{}, 0.95, tmp)
	p.hasTTFT, p.hasE2E, p.hasService = true, true, true
}

// staticPercentile is one percentile of a load-independent class at pool c,
// from percentileCache when a plan has already asked for it: it depends on
// the service time, the demand and the arrival variability, never on the
// quotas, so plans that differ only in limits share it.
func (m *classModel) staticPercentile(c int, p *point, which percentile) float64 {
	k := percentileKey{service: m.svcKey, lambda: m.lambda, ca2: m.ca2, pool: c, which: which}
	if v, ok := percentileCache.Get(k); ok {
		return v
	}
	t, e := m.tails(m.static)
	var v float64
	switch which {
	case pctTTFT:
		v = t.Quantile(p.wait)
	case pctE2E:
		v = e.Quantile(p.wait)
	default:
		v = e.Quantile(model.Wait{})
	}
	percentileCache.Add(k, v)
	return v
}

// service95 is the p95 of the service time alone at a pool of c.
func (m *classModel) service95(c int) float64 {
	p := m.pointAt(c)
	if !p.hasService {
		m.percentiles(c, p, pctService)
	}
	return p.service95
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

// slo returns the targets in seconds (0 = none).
func (m *classModel) slo() (ttft, e2e float64) {
	if m.spec.SLO == nil {
		return 0, 0
	}
	return m.spec.SLO.TTFTP95Ms / 1000, m.spec.SLO.E2EP95Ms / 1000
}

// violation is how far the pool c is from the SLOs: the largest ratio of a
// predicted p95 to its target, so that ≤ 1 means the SLOs are met.
func (m *classModel) violation(c int) float64 {
	st, se := m.slo()
	v := 0.0
	if se > 0 {
		v = m.e2e95(c) / se
	}
	if st > 0 {
		v = math.Max(v, m.ttft95(c)/st)
	}
	return v
}

// bounds scale the SLO targets a search accepts: 1 is the target itself; a
// target that no pool can meet is searched for within 5 % of its best.
type bounds struct{ ttft, e2e float64 }

// exact accepts the targets as they are.
var exact = bounds{1, 1}

// meets reports whether pool c meets each target times its bound,
// computing the TTFT percentile only when the E2E target holds.
func (m *classModel) meets(c int, b bounds) bool {
	st, se := m.slo()
	if se > 0 && m.e2e95(c) > b.e2e*se {
		return false
	}
	return st == 0 || m.ttft95(c) <= b.ttft*st
}

// stableStart is the smallest pool whose queue is stable, c > λ·E[S(c)].
func (m *classModel) stableStart() (int, bool) {
	if m.lambda == 0 {
		return 1, true
	}
	if m.static != nil {
		c := int(math.Floor(model.LittleConcurrency(m.lambda, m.static.mean))) + 1 // offered load A
		return c, c <= searchLimit
	}
	// c > λ·E[S(c)] is X(c) > λ.
	return m.firstAbove(m.lambda, 1, searchLimit)
}

// findMinPool sets min_pool (DESIGN §3.4): the smallest stable pool whose
// predicted p95s meet the SLOs. When no pool meets a target, min_pool is
// the pool that comes closest (for load-independent latency: the smallest
// pool within 5 % of that p95 without queueing, while meeting the other
// target), so that the SLO remedy names what it would achieve. Without
// demand it is 1.
func (m *classModel) findMinPool() {
	start, ok := m.stableStart()
	if !ok {
		return
	}
	if m.lambda == 0 {
		m.minPool = &start
		return
	}
	if m.static != nil {
		st, se := m.slo()
		k := minPoolKey{service: m.svcKey, lambda: m.lambda, ca2: m.ca2, ttft: st, e2e: se}
		if c, ok := minPoolCache.Get(k); ok {
			m.minPool = &c
			return
		}
		b := exact
		if st > 0 {
			b.ttft = math.Max(1, m.noWait95(true)/st*1.05)
		}
		if se > 0 {
			b.e2e = math.Max(1, m.noWait95(false)/se*1.05)
		}
		c := m.firstAtMost(start, b)
		minPoolCache.Add(k, c)
		m.minPool = &c
		return
	}
	if m.meets(start, exact) {
		m.minPool = &start
		return
	}
	// Latency that grows with load: the violation falls as the queue
	// shrinks, then rises as the endpoint saturates. Gallop up to bracket
	// the first pool that meets the SLOs, or the bottom of the valley.
	lastFail, best, bestV := start, start, m.violation(start)
	for step := 1; ; step *= 2 {
		c := min(start+step, searchLimit)
		v := m.violation(c)
		if v <= 1 {
			found := m.firstAtMostIn(lastFail, c, exact)
			m.minPool = &found
			return
		}
		if v > bestV || c == searchLimit {
			m.minPool = &best
			return
		}
		lastFail, best, bestV = c, c, v
	}
}

// noWait95 is the p95 of TTFT (ttft true) or of S without any queueing,
// for load-independent latency.
func (m *classModel) noWait95(ttft bool) float64 {
	t, e := m.tails(m.static)
	if ttft {
		return t.Quantile(model.Wait{})
	}
	return e.Quantile(model.Wait{})
}

// firstAtMost is the smallest pool ≥ start that meets the targets within
// b, for load-independent latency (the percentiles then fall as the pool
// grows). A quick estimate of the percentiles (Tail.Estimate) picks the
// pool to try first; the exact Monte Carlo then confirms it and its
// neighbour, galloping away only when the estimate was off.
func (m *classModel) firstAtMost(start int, b bounds) int {
	st, se := m.slo()
	t, e := m.tails(m.static)
	estimate := func(c int) bool {
		w := m.waitAt(c, m.lambda)
		return (se == 0 || e.Estimate(w) <= b.e2e*se) && (st == 0 || t.Estimate(w) <= b.ttft*st)
	}
	guess := firstTrue(start, estimate)
	if m.meets(guess, b) {
		hi := guess
		for step := 1; hi > start; step *= 2 {
			lo := max(start, hi-step)
			if !m.meets(lo, b) {
				return m.firstAtMostIn(lo, hi, b)
			}
			hi = lo
		}
		return start
	}
	lo := guess
	for step := 1; lo < searchLimit; step *= 2 {
		hi := min(searchLimit, lo+step)
		if m.meets(hi, b) {
			return m.firstAtMostIn(lo, hi, b)
		}
		lo = hi
	}
	return searchLimit
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

// firstAtMostIn binary-searches (lo, hi] for the first pool that meets the
// targets within b, given that lo does not and hi does.
func (m *classModel) firstAtMostIn(lo, hi int, b bounds) int {
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if m.meets(mid, b) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}
