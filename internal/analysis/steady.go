package analysis

import (
	"cmp"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/signed"
)

// A closed-loop step is measured only where it runs steadily: after its
// warm-up, before its drain, while all of its c slots are busy (see
// docs/probe.md, "Steady state"). The window of a step of concurrency c
// whose rows are sorted by start is [a, b] with
//
//	a = max(the end of the last warm-up request, the c-th send)
//	b = the first completion after the last send
//
// so that c requests are in flight all through it. Each request counts
// towards the window with the fraction f of its slot time [start, end]
// (first send to last output chunk or failure, retries included) that lies
// inside the window, so that a request spanning a boundary counts in part:
//
//	throughput = Σ f·ok / (b − a)        goodput = Σ f·good / (b − a)
//	output TPS = Σ f·ok·tokens / (b − a)
//
// With c slots busy through the window, Σ f·slot time = c·(b − a), so the
// throughput cannot pass c / E[S], S a request's slot time: the physical
// bound of a closed loop (Little's Law).

// MinMeasured is the least number of measured requests (warm-up excluded)
// a fixed-size step of concurrency c may have: max(40, 3c). Probes,
// validations and the page refuse smaller steps.
func MinMeasured(c int) int { return max(MinMeasuredFloor, MinMeasuredRounds*c) }

// The terms of MinMeasured: at least MinMeasuredFloor requests, and at
// least MinMeasuredRounds rounds of the step's concurrency.
const (
	MinMeasuredFloor  = 40
	MinMeasuredRounds = 3
)

// MinAdaptive is the least number of measured requests of any step, an
// adaptive one included: 2c + 10. A step with fewer (a step cut short by a
// cancel or a budget, or an old probe's too-short step) is left out of the
// knee rules.
func MinAdaptive(c int) int { return 2*c + 10 }

// TargetPrecision is the relative half-width of the goodput interval at
// which an adaptive step of the knee search ends (±5 %).
const TargetPrecision = 0.05

// confidence is the level of every interval a step carries.
const confidence = 0.95

// maxBatches is the number of batches of the goodput interval.
const maxBatches = 10

// steady is a closed-loop step's steady state.
type steady struct {
	a, b       float64 // the window, seconds from the start of the run
	throughput float64
	goodput    float64
	outputTPS  float64
	ci         measure.Interval // the goodput's interval, when hasCI
	hasCI      bool
	measured   int // requests overlapping the window
}

// goodputCI is the goodput's interval, nil when the window has too few
// requests for one.
func (st steady) goodputCI() *measure.Interval {
	if !st.hasCI {
		return nil
	}
	ci := st.ci
	return &ci
}

// steadyState measures a closed-loop step of concurrency c over its
// window; false when the rows never had c requests in flight after their
// warm-up (too few rows, or a step cut short).
func steadyState(rows []measure.Record, c int, goal measure.Goal) (steady, bool) {
	return steadyStateIn(rows, c, goal, &Scratch{})
}

// steadyStateIn is steadyState with the buffers of sc.
func steadyStateIn(rows []measure.Record, c int, goal measure.Goal, sc *Scratch) (steady, bool) {
	a, b, ok := window(rows, c, false, sc)
	if !ok {
		return steady{}, false
	}
	return measureWindow(rows, c, a, b, goal, sc), true
}

// Scratch holds the buffers that measuring a step uses, so that a running
// step's check after each send (Precision) reuses them rather than
// allocating. The zero value is ready; it serves one goroutine at a time.
type Scratch struct {
	rows   []measure.Record
	starts []float64
	parts  []part
	est    []float64
}

// part is a request's share of a window, for the batch means.
type part struct {
	start, f, slot float64
	good           bool
}

// window finds [a, b]. With running set, the step is still sending: b is
// the latest completion so far, and the window is what has been measured
// until now.
func window(rows []measure.Record, c int, running bool, sc *Scratch) (a, b float64, ok bool) {
	if c < 1 || len(rows) < c {
		return 0, 0, false
	}
	starts := sc.starts[:0]
	defer func() { sc.starts = starts[:0] }()
	lastStart, warmEnd := math.Inf(-1), math.Inf(-1)
	for _, r := range rows {
		starts = append(starts, r.StartS)
		lastStart = math.Max(lastStart, r.StartS)
		if r.Warmup {
			warmEnd = math.Max(warmEnd, r.EndS())
		}
	}
	slices.Sort(starts)
	a = math.Max(starts[c-1], warmEnd)
	b = math.Inf(1)
	if running {
		b = math.Inf(-1)
		for _, r := range rows {
			b = math.Max(b, r.EndS())
		}
	} else {
		for _, r := range rows {
			if e := r.EndS(); e > lastStart {
				b = math.Min(b, e)
			}
		}
	}
	if !(b > a) || math.IsInf(b, 0) {
		return 0, 0, false
	}
	return a, b, true
}

// fraction is the share of the request's slot time inside [a, b].
func fraction(r measure.Record, a, b float64) float64 {
	s, e := r.StartS, r.EndS()
	if e <= s {
		if s >= a && s <= b {
			return 1
		}
		return 0
	}
	overlap := math.Min(e, b) - math.Max(s, a)
	if overlap <= 0 {
		return 0
	}
	return overlap / (e - s)
}

// measureWindow counts the requests' fractions inside [a, b] and the goodput
// interval by batch means.
func measureWindow(rows []measure.Record, c int, a, b float64, goal measure.Goal, sc *Scratch) steady {
	st := steady{a: a, b: b}
	w := b - a
	parts := sc.parts[:0]
	defer func() { sc.parts = parts[:0] }()
	var ok, good, tokens float64
	for _, r := range rows {
		f := fraction(r, a, b)
		if f == 0 || r.Warmup {
			continue
		}
		st.measured++
		if r.OK {
			ok += f
			tokens += f * float64(r.OutputTokens)
		}
		g := goal.Good(r)
		if g {
			good += f
		}
		parts = append(parts, part{start: r.StartS, f: f, slot: r.SlotMs() / 1000, good: g})
	}
	st.throughput, st.goodput, st.outputTPS = ok/w, good/w, tokens/w

	// Batch means: consecutive requests (by send) in K batches; batch k
	// estimates goodput as c·Σf·good / Σf·slot, the closed loop's rate
	// over the slot time it used. The interval is the mean of the batch
	// estimates' spread, t-distributed with K − 1 degrees of freedom
	// (Law, Simulation Modeling and Analysis, §9.5.3), centred on the
	// window's goodput.
	k := min(maxBatches, len(parts)/2)
	if k < 2 {
		return st
	}
	slices.SortStableFunc(parts, func(x, y part) int { return cmp.Compare(x.start, y.start) })
	est := sc.est[:0]
	defer func() { sc.est = est[:0] }()
	for i := range k {
		lo, hi := i*len(parts)/k, (i+1)*len(parts)/k
		var num, den float64
		for _, p := range parts[lo:hi] {
			if p.good {
				num += p.f
			}
			den += p.f * p.slot
		}
		if den <= 0 {
			return st
		}
		est = append(est, float64(c)*num/den)
	}
	sd := stat.StdDev(est, nil)
	hw := tQuantile[k] * sd / math.Sqrt(float64(k))
	st.ci, st.hasCI = measure.Interval{Lo: math.Max(0, st.goodput-hw), Hi: st.goodput + hw}, true
	return st
}

// tQuantile[k] is t(k − 1, 0.975), the Student's t quantile of an interval
// of k batch means.
var tQuantile = func() (t [maxBatches + 1]float64) {
	for k := 2; k <= maxBatches; k++ {
		t[k] = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(k - 1)}.Quantile(1 - (1-confidence)/2)
	}
	return t
}()

// Precision reports how precisely a closed-loop step that is still
// running measures its goodput: the relative half-width of the goodput
// interval of the steady state of its first sent requests, those with an
// index below sent, all of which have completed, and the requests it
// measured. That is what the step would measure had it stopped sending
// there: the requests still in flight, whose slots the window would
// otherwise count as idle, take no part. The knee search ends a step once
// it is within the step's precision and the step has MinAdaptive(c)
// measured requests. sc's buffers are used, so that the check after each
// send allocates nothing once they have grown.
func Precision(rows []measure.Record, c int, goal measure.Goal, sent int, sc *Scratch) (rel float64, measured int) {
	done := sc.rows[:0]
	for _, r := range rows {
		if r.Index < sent {
			done = append(done, r)
		}
	}
	sc.rows = done[:0]
	st, ok := steadyStateIn(done, c, goal, sc)
	if !ok {
		return math.Inf(1), 0
	}
	if !st.hasCI {
		return math.Inf(1), st.measured
	}
	return st.ci.HalfWidthRel(st.goodput), st.measured
}

// quantileCI is the distribution-free confidence interval of the
// q-quantile from the order statistics of n sorted values: the ranks l and
// u with P(l ≤ B < u) ≥ 95 %, B ~ Binomial(n, q) the number of values
// below the quantile (Conover, Practical Nonparametric Statistics, §3.2).
// A rank beyond the data gives the extreme value, so the interval of a
// high quantile of a small sample reaches the maximum.
func quantileCI(sorted []float64, q float64) *measure.Interval {
	n := len(sorted)
	if n < 2 {
		return nil
	}
	bin := distuv.Binomial{N: float64(n), P: q}
	alpha := (1 - confidence) / 2
	// The CDF rises with k, so each rank is the boundary of a predicate
	// that holds up to it (l) or from it on (u): found by bisection, a
	// few dozen CDF evaluations where a scan over the ranks took O(n).
	// l: the largest k in [1, n] with P(B ≤ k−1) ≤ α/2, 0 when none.
	l := sort.Search(n, func(i int) bool { return bin.CDF(float64(i)) > alpha })
	// u: the smallest k in [1, n] with P(B ≤ k−1) ≥ 1 − α/2, n when none.
	u := sort.Search(n, func(i int) bool { return bin.CDF(float64(i)) >= 1-alpha }) + 1
	u = min(u, n)
	lo := sorted[0]
	if l >= 1 {
		lo = sorted[l-1]
	}
	return &measure.Interval{Lo: lo, Hi: sorted[u-1]}
}

// wilson is the Wilson score interval of a proportion k/n at 95 %
// (Wilson, "Probable inference, the law of succession, and statistical
// inference", JASA 1927): with z the normal quantile,
//
//	(p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n)
//
// which, unlike p ± z·√(p(1−p)/n), stays within [0, 1] and does not
// collapse to a point at k = 0 or k = n. nil for n = 0.
func wilson(k, n int) *measure.Interval {
	if n <= 0 {
		return nil
	}
	z := distuv.UnitNormal.Quantile(1 - (1-confidence)/2)
	p, nf := float64(k)/float64(n), float64(n)
	centre := p + z*z/(2*nf)
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	den := 1 + z*z/nf
	return &measure.Interval{Lo: signed.Round(math.Max(0, (centre-half)/den), 4), Hi: signed.Round(math.Min(1, (centre+half)/den), 4)}
}

// QuantileCI is the q-quantile of xs (type 7, model.Quantile) with its
// distribution-free 95 % interval (quantileCI); 0 and nil without values.
// It sorts xs.
func QuantileCI(xs []float64, q float64) (float64, *measure.Interval) {
	if len(xs) == 0 {
		return 0, nil
	}
	slices.Sort(xs)
	return model.QuantileSorted(xs, q), quantileCI(xs, q)
}

// Attainment is met of n counted as an SLO's attainment, with its Wilson
// interval: the share of n that met every target.
func Attainment(met, n int) *measure.SLOStats {
	if n <= 0 {
		return nil
	}
	return &measure.SLOStats{Met: met, Attainment: signed.Round(float64(met)/float64(n), 4), AttainmentCI: wilson(met, n)}
}
