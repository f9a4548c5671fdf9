package plan

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// pacingDims are the dimensions a key paces: its per-minute limits.
// Daily limits are kept by the pools' ceilings (a pool cannot send faster
// than its share of them) and are not enforced per window.
func pacingDims(k quota.Key) []scenario.Dimension {
	var out []scenario.Dimension
	for d := range scenario.NumDimensions {
		if !d.Daily() && k.Limit(d) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// bucketSize is what the pacing bucket of a per-minute limit holds:
// one enforcement window's allowance, h·L·w/60, with h the headroom and w
// burst_window_s; it refills at h·L/60 per second (quota.Key.Capacity).
func bucketSize(k quota.Key, d scenario.Dimension) float64 {
	return k.Capacity(d) * k.BurstWindowS
}

// keyPacing lists key ki's pacing buckets, with its classes in priority
// order.
func (r *run) keyPacing(ki int) []KeyPacing {
	k := r.keys[ki]
	var classes []string
	for _, i := range r.order {
		if r.s.Classes[i].Quota == k.Name {
			classes = append(classes, r.models[i].spec.Name)
		}
	}
	out := []KeyPacing{}
	if len(classes) == 0 {
		return out
	}
	for _, d := range pacingDims(k) {
		out = append(out, KeyPacing{Dimension: d.String(), RatePerS: signed.Round(k.Capacity(d), 4), Capacity: signed.Round(bucketSize(k, d), 4), Classes: classes})
	}
	return out
}

// pacing is what the key's buckets come to in class i's own requests: the
// request rate its allotment sustains on the tightest per-minute limit,
// allotment ÷ mean charge, and how many of its requests of mean charge a
// full set of buckets passes at once (at least 1, at most the pool)
// (docs/concepts.md, "Pacing"). Without a per-minute limit the rate is
// its pool's throughput. A class without a pool sends nothing: no rate,
// no burst.
func (r *run) pacing(i, pool int, allot quota.Vector) Pacing {
	if pool < 1 {
		return Pacing{}
	}
	m := r.models[i]
	rate, burst := math.Inf(1), math.Inf(1)
	for _, d := range pacingDims(m.key) {
		if u := m.callUse(d); u > 0 {
			rate = math.Min(rate, allot[d]/u)
			burst = math.Min(burst, bucketSize(m.key, d)/u)
		}
	}
	if math.IsInf(rate, 1) {
		rate = float64(pool) / m.at(r.load(i)).mean * m.callsPer()
	}
	b := searchLimit
	if v := burst + tolerance; v < float64(searchLimit) {
		b = max(1, int(math.Floor(v)))
	}
	return Pacing{RateRPS: signed.Round(rate, 4), Burst: min(b, pool)}
}

// The pacing wait (docs/concepts.md, "The pacing wait"). A key's bucket on
// one dimension is a single server of rate r′ whose work is the charges:
// with τ(t) the tokens it holds and b its capacity, X(t) = (b − τ(t)) +
// the charges waiting is the workload of a queue served at r′ (network
// calculus's token-bucket shaper; Le Boudec and Thiran, Network Calculus,
// 2001, §1.2), and a send of charge k that finds work V ahead of it (in
// seconds of the server's time) leaves after D = (V + k/r′ − b/r′)⁺, by
// Lindley's recursion. r′ is the refill rate h·L/60 plus the flow of
// unused max_tokens that completions refund. The key's classes are served
// in priority order: a send waits for the work of its own and higher
// classes, loses the bucket's credit when the lower classes keep it
// drained, and is overtaken by higher classes' sends while it waits
// (Cobham, Oper. Res. 2(1), 1954: the wait stretches by 1/(1 − σ) with σ
// the load of the higher classes).

// pacingDim is class p's pacing wait on one dimension of its key: a send
// of charge k = adm0 + admIn·input waits
//
//   - with probability pOwn, when its own and the higher classes' work is
//     beyond the bucket's credit, that excess (exponential, of mean
//     thetaOwn, raised for the higher classes' bursts: busyTail) plus
//     k/r′;
//   - with probability pDrained − pOwn, when the whole key's work is
//     beyond the credit and the bucket holds no credit for it: with
//     probability pBusy the send that waits at the bucket is of its own
//     or a higher class (as often as their share ρ_p/ρ of the key's
//     work, but no more often than the class's sends find that work
//     queued at all, own.Prob), and it waits for their work
//     (exponential, of mean thetaOwn) plus k/r′, since the bucket passes
//     the charges ahead at its rate;
//     otherwise a lower send waits, which
//     it overtakes, and it waits (k − L)⁺/r′, with L the tokens that the
//     lower send has gathered so far, uniform between 0 and gathered, the
//     mean work of their sends;
//   - otherwise the bucket holds some of its credit: the work of every
//     class, 0 with probability 1 − piAll and otherwise exponential of
//     mean thetaAll, taken below b/r′, gives (X + (k − b)/r′)⁺;
//
// every wait stretched by stretch = 1/(1 − σ_{p−1}).
type pacingDim struct {
	on              bool
	rate, size      float64 // r′, units per second, and b, units
	pOwn, thetaOwn  float64
	pDrained, pBusy float64
	gathered        float64
	piAll, thetaAll float64
	stretch         float64
	top             float64 // 1 − e^{−b/(r′·thetaAll)}: the mass of the truncated X
	// qMin is the uniform below which the truncated X keeps every draw's
	// send from waiting, set for a sample (prepared); 0 otherwise.
	qMin        float64
	adm0, admIn float64
}

// rounded is the law with its figures to six significant digits: the
// rounds of solve settle on one law instead of ones that differ in the
// last digits, and the caches see one key.
func (p pacingDim) rounded() pacingDim {
	for _, v := range []*float64{&p.rate, &p.size, &p.pOwn, &p.thetaOwn, &p.pDrained, &p.pBusy, &p.gathered, &p.piAll, &p.thetaAll, &p.stretch} {
		*v = sig6(*v)
	}
	if p.thetaAll > 0 {
		p.top = -math.Expm1(-p.size / (p.rate * p.thetaAll))
	}
	return p
}

// prepared is the law with each dimension's qMin set for a sample whose
// largest input is maxIn: X < (b − k)/r′ for the largest charge k when
// the uniform is below (1 − e^{−(b − k)/(r′θ)})/top.
func (l pacingLaw) prepared(maxIn float64) pacingLaw {
	for d := range l.dims {
		p := &l.dims[d]
		if !p.on || p.top == 0 {
			continue
		}
		if x0 := (p.size - (p.adm0 + p.admIn*maxIn)) / p.rate; x0 > 0 {
			p.qMin = -math.Expm1(-x0/p.thetaAll) / p.top
		}
	}
	return l
}

// sig6 is v to six significant digits.
func sig6(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	e := math.Pow(10, 5-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*e) / e
}

// pacingLaw is a class's pacing wait on each paced dimension of its key;
// a send waits for the longest (the same draw sets every dimension's
// state: the buckets of a key fill with the same sends). A zero law has
// no wait; an unstable one has an unbounded wait.
type pacingLaw struct {
	dims     [scenario.NumDimensions]pacingDim
	unstable bool
	// others is the share of the key's work that is not the class's own,
	// 1 − ρ_own/ρ_all, the largest over its paced dimensions: the part of
	// its pacing wait that other classes' sends cause; burst is how many
	// of its sends of mean charge the buckets let go at once, the least
	// over them (sendsCA2).
	others, burst float64
}

// overlap is the share of the pacing wait that a request's wait for a
// slot overlaps, 1 − others: the part its own class's sends cause, since
// the requests ahead of it that hold the slots are the same ones whose
// sends hold the bucket. The part that other classes' sends cause (the
// buckets held by them while the request's class gathers its requests,
// which then go together and wait for the slots: "The clumps the buckets
// make") comes on top of its wait for a slot: it waits max(W + others·D,
// D), max(W, D) for a class alone on its key.
func (l pacingLaw) overlap() float64 { return 1 - l.others }

// waits reports whether the law can make a send wait.
func (l pacingLaw) waits() bool {
	if l.unstable {
		return true
	}
	for _, d := range l.dims {
		if d.on && (d.pDrained > 0 || d.pOwn > 0 || d.piAll > 0 || d.adm0+d.admIn > 0 && d.size < math.Inf(1)) {
			return true
		}
	}
	return false
}

// sample is D for every draw, at the draws' pacing uniforms and
// exponentials and their input tokens in, none above inHi: the longest of
// its dimensions' waits (the same draw sets every dimension's state),
// worked out one dimension at a time over the draws. A dimension on which
// no draw can wait (never) is left out: it adds only zeros to the longest;
// on the others, the draws whose uniform keeps them from waiting whatever
// their input (idleSpan) are left out the same way.
func (l pacingLaw) sample(dr *model.Draws, in []float64, inHi float64) []float64 {
	d := make([]float64, len(in))
	if l.unstable {
		for i := range d {
			d[i] = math.Inf(1)
		}
		return d
	}
	for j := range l.dims {
		p := &l.dims[j]
		if !p.on || p.never(dr.UPMin, dr.UPMax, inHi) {
			continue
		}
		q, inCap := p.qMin, math.Inf(1)
		if !(q > 0) {
			q, inCap = p.capped()
		}
		lo, hi := p.idleSpan(dr, q)
		for _, order := range [][]int32{dr.ByUP[:lo], dr.ByUP[hi:]} {
			for _, i := range order {
				d[i] = math.Max(d[i], p.wait(dr.UP[i], dr.EP[i], in[i]))
			}
		}
		if lo < hi && inCap < inHi {
			// The span holds for inputs up to inCap: the larger ones are
			// worked out wherever they lie (again, for those outside it,
			// to the same value).
			for i, v := range in {
				if v > inCap {
					d[i] = math.Max(d[i], p.wait(dr.UP[i], dr.EP[i], v))
				}
			}
		}
	}
	return d
}

// idleSpan is the range [lo, hi) of the draws in ascending order of their
// pacing uniform (Draws.ByUP) past the first two cases of wait whose X is
// 0 (v < idle) or whose truncated uniform is below q (0 < q ≤ qMin, or
// capped's bound for the inputs it names): their wait is 0. Each step
// from u to q is monotone in u, so the span is one range, found by
// bisection with the same expressions wait evaluates; with q = 0 it is
// empty.
func (p *pacingDim) idleSpan(dr *model.Draws, q float64) (lo, hi int) {
	n := len(dr.ByUP)
	if !(q > 0) || p.admIn < 0 || !(p.thetaAll > 0) {
		return n, n
	}
	u := func(j int) float64 { return dr.UP[dr.ByUP[j]] }
	lo = sort.Search(n, func(j int) bool { return !(u(j) < p.pOwn) && !(u(j) < p.pDrained) })
	hi = lo + sort.Search(n-lo, func(j int) bool {
		v := (u(lo+j) - p.pDrained) / (1 - p.pDrained)
		idle := (1 - p.piAll) / (1 - p.pDrained)
		if !(v >= idle) {
			return false // X is 0, and every charge fits the credit
		}
		return !((v-idle)/(1-idle) < q)
	})
	return lo, hi
}

// capped is, for a law whose largest charge does not fit the credit (no
// qMin), a bound on the truncated uniform below which a send of at most
// inCap input tokens does not wait: inCap is the input whose charge
// leaves half the credit beyond the bare charge adm0, and the bound is
// qMin's for that charge less a relative 10⁻⁶, so that X, as wait
// computes it (within an ulp or two of its exact value), stays below
// (b − k)/r′ with a margin far above rounding, and (X + (k − b)/r′)⁺ is 0.
// It is 0 when no send fits (adm0 ≥ b) or the law has no truncated X.
func (p *pacingDim) capped() (q, inCap float64) {
	if !(p.admIn > 0) || !(p.thetaAll > 0) || !(p.top > 0) || !(p.adm0 < p.size) {
		return 0, math.Inf(1)
	}
	inCap = (p.size - p.adm0) / 2 / p.admIn
	k := p.adm0 + p.admIn*inCap
	if !(k < p.size) {
		return 0, math.Inf(1)
	}
	x0 := (p.size - k) / p.rate
	return -math.Expm1(-x0/p.thetaAll) / p.top * (1 - 1e-6), inCap
}

// never reports whether wait is 0 for every draw whose pacing uniform lies
// in [uLo, uHi] and whose input is at most inHi: no draw falls in the
// cases below pDrained (u ≥ pDrained), every charge fits the bucket's credit
// (k ≤ b), and the largest uniform keeps X below the credit that every
// charge leaves (q < qMin) or finds the bucket idle. Each step of wait is
// monotone in u and in the input, so the extremes decide for every draw.
func (p *pacingDim) never(uLo, uHi, inHi float64) bool {
	if uLo < p.pDrained || uLo < p.pOwn || p.pDrained >= 1 || p.admIn < 0 {
		return false
	}
	if !(p.adm0+p.admIn*inHi-p.size <= 0) {
		return false
	}
	v := (uHi - p.pDrained) / (1 - p.pDrained)
	idle := (1 - p.piAll) / (1 - p.pDrained)
	if v < idle || p.thetaAll <= 0 {
		return true
	}
	return (v-idle)/(1-idle) < p.qMin
}

func (p *pacingDim) wait(u, e, in float64) float64 {
	k := p.adm0 + p.admIn*in
	var d float64
	switch {
	case u < p.pOwn:
		d = e*p.thetaOwn + k/p.rate
	case u < p.pDrained:
		// The draw's uniform within this case says whether sends of its
		// own and the higher classes are ahead, and else the tokens that
		// the lower send that waits has gathered.
		v := (u - p.pOwn) / (p.pDrained - p.pOwn)
		if v < p.pBusy {
			d = e*p.thetaOwn + k/p.rate
			break
		}
		v = (v - p.pBusy) / (1 - p.pBusy)
		d = math.Max(0, k-v*p.gathered) / p.rate
	default:
		v := (u - p.pDrained) / (1 - p.pDrained)
		x := 0.0
		if idle := (1 - p.piAll) / (1 - p.pDrained); v >= idle && p.thetaAll > 0 {
			// X given 0 < X < b/r′: the exponential truncated there, by
			// its inverse at the draw's uniform within this case (v − idle)
			// / (1 − idle); top = 1 − e^{−b/(r′θ)} is the truncation's mass.
			q := (v - idle) / (1 - idle)
			if q < p.qMin {
				return 0 // X stays below (b − k)/r′ for every draw's k
			}
			x = -p.thetaAll * math.Log1p(-q*p.top)
		}
		d = math.Max(0, x+(k-p.size)/p.rate)
	}
	return d * p.stretch
}

// flow is one class's sends into a bucket of its key: their rate and
// arrival variability, the moments of the work a send brings (its charge
// at admission and, under actual accounting, its output at completion),
// its admission charge adm0 + admIn·input, and the refund of unused
// max_tokens it brings back on completion, on average. adm is the mean
// admission charge, the part of the work a send waits for. held is how
// many slots of a flow whose sends are its pool's completions (a closed
// loop, or a pool its demand keeps full) can hold a send waiting at the
// bucket: a send the bucket holds back holds its slot, so once every
// slot's send waits the flow sends no more, and its work beyond the
// bucket's credit stops at held · adm; 0 for a flow that sends as its
// demand comes.
type flow struct {
	rate, ca2   float64
	m1, m2, m3  float64
	adm0, admIn float64
	adm         float64
	refund      float64
	held        float64
}

// flowOf is class i's flow on dimension d of its key at pool.
func (r *run) flowOf(i int, d scenario.Dimension, pool int) flow {
	m := r.models[i]
	mt := float64(m.spec.MaxTokens)
	a0 := m.key.Admission(0, mt, m.cachedFraction())[d]
	a1 := m.key.Admission(1, mt, m.cachedFraction())[d] - a0
	f := flow{adm0: a0, admIn: a1, ca2: m.ca2, rate: m.lambda}
	if pool < 1 {
		f.rate = 0 // no pool: it sends nothing
	}
	// The work is a0 + a1·in + c·out, with c = 1 where actual accounting
	// counts the output at completion.
	c := 0.0
	if n := m.key.Completion(1, mt)[d]; n > 0 {
		c = 1
	} else if n < 0 {
		f.refund = -m.key.Completion(m.base.Out.Mean(), mt)[d]
	}
	in, out := m.base.In, m.base.Out
	mean := a0 + a1*in.Mean() + c*out.Mean()
	v := a1*a1*in.Var() + c*c*out.Var()
	k3 := a1*a1*a1*third(in) + c*c*c*third(out)
	f.m1, f.m2, f.m3 = mean, v+mean*mean, k3+3*mean*v+mean*mean*mean
	s := m.at(r.load(i))
	switch {
	case m.lambda == 0 && pool >= 1:
		// A closed loop sends when a slot frees: the completions of its
		// pool, at its rate flat out.
		f.rate = float64(pool) / s.mean
		f.ca2 = math.Max(0, 1+(s.scv-1)/math.Sqrt(float64(pool)))
		f.held = float64(pool)
	case pool >= 1 && m.lambda > 0:
		// A request is sent as it arrives when it finds a slot free, and
		// when a slot frees when it waits for one: the sends are the
		// arrivals but for the share π that wait (the pool's probability
		// of waiting at S), which leave as the pool's completions, at
		// most at its rate flat out, c/E[S], with the ca² of a closed
		// loop's sends above. So a pool that queues its bursts sends them
		// smoothed, and one that never queues sends its arrivals.
		c := float64(pool)
		f.rate = math.Min(m.lambda, c/s.mean)
		pi := 1.0
		if w := m.waitAt(pool, s); w.Stable() {
			pi = w.Prob
		} else {
			f.held = c
		}
		f.ca2 = (1-pi)*m.ca2 + pi*math.Max(0, 1+(s.scv-1)/math.Sqrt(c))
	}
	if t := m.task; t != nil {
		t.callFlow(&f, m.base.In.Mean())
	}
	f.adm = f.m1 - c*out.Mean()
	return f
}

// third is the third central moment of a distribution.
func third(x model.Dist) float64 {
	m1, m2 := x.Mean(), x.SecondMoment()
	return x.ThirdMoment() - 3*m1*m2 + 2*m1*m1*m1
}

// workload is the wait law of a bucket of rate r′ fed by flows: an
// arriving send finds the server busy (work ahead of it) with
// probability Prob, and that work is exponential of mean Mean (a GI/G/1
// queue; model.Queue), and the load ρ.
func (r *run) workload(flows []flow, rate float64) (model.Wait, float64) {
	q, rho := merged(flows, rate)
	if q.Lambda == 0 || q.Mean == 0 {
		return model.Wait{}, 0
	}
	if rho >= 1 {
		return model.Wait{Prob: 1, Mean: math.Inf(1)}, rho
	}
	return r.eng.wait(q), rho
}

// merged is the single-server queue of a bucket of rate r′ fed by flows:
// their sends merged into one stream, and the moments of a send's
// service time k/r′; and its load ρ. The merged stream's ca² is the
// larger of the rate-weighted one, Σλ·ca²/λ, and the work-weighted one,
// 1 + Σλ·E[B]²·(ca² − 1)/(λ·Ē[B]²): in the diffusion limit the work the
// flows bring in t has the variance Σλ·(E[B²] + (ca² − 1)·E[B]²)·t, each
// flow's burstiness carried by its own charges, which a renewal stream of
// the mean charge reads as Ē[B]²·Σλ·(ca² − 1) (Whitt, Stochastic-Process
// Limits, Springer 2002, §5.4). The two agree for one flow or equal
// charges; a bursty flow of large charges makes the second the larger
// (the work a Poisson class finds beside a chat of scv 9 read at 0.69 of
// a Lindley recursion's with the first, 1.10 with the second:
// TestMergedWorkAgainstLindley), and where its charges are the smaller
// the first is kept, which reads long, on the safe side, as the pacing
// wait's tail (busyTail, seenBy) was calibrated against it.
func merged(flows []flow, rate float64) (model.Queue, float64) {
	var lam, b1, b2, b3, burst, ca2 float64
	for _, f := range flows {
		lam += f.rate
		b1 += f.rate * f.m1 / rate
		b2 += f.rate * f.m2 / (rate * rate)
		b3 += f.rate * f.m3 / (rate * rate * rate)
		burst += f.rate * f.m1 * f.m1 * (f.ca2 - 1) / (rate * rate)
		ca2 += f.rate * f.ca2
	}
	if lam == 0 || b1 == 0 {
		return model.Queue{}, 0
	}
	rho := b1
	b1, b2, b3 = b1/lam, b2/lam, b3/lam
	ca2 = math.Max(ca2/lam, 1+burst/(lam*b1*b1))
	q := model.Queue{C: 1, Lambda: lam, CA2: ca2, Mean: b1, CS2: math.Max(0, b2/(b1*b1)-1)}
	if b2 > 0 {
		q.Tail = b1 * b3 / (b2 * b2)
	}
	return q, rho
}

// heldWork is the most work the lower classes' flows can have waiting
// at the bucket, in units; false unless every one of them that sends is
// held (flow.held).
func heldWork(lower []flow) (float64, bool) {
	var w float64
	for _, f := range lower {
		if f.rate == 0 {
			continue
		}
		if f.held == 0 {
			return 0, false
		}
		w += f.held * f.adm
	}
	return w, w > 0
}

// drainedHeld is how often a higher send finds the bucket without credit
// when every lower send is held (heldWork). The key's work X (the
// bucket's deficit and the charges waiting, in seconds of the bucket's
// rate) is the open law, exponential of mean theta, up to the credit
// B = b/r′; beyond it the held flows' sends wait and hold their slots,
// so that X stops at B + H, H the work their slots can hold waiting,
// where they send no more. X is taken as the open law truncated to
// [0, B + H] (the stationary law of a Brownian motion reflected at both
// ends; Harrison, Brownian Motion and Stochastic Flow Systems, Wiley
// 1985, §5.6): P(X > B) = (e^{−B/θ} − e^{−(B+H)/θ})/(1 − e^{−(B+H)/θ}),
// where the open law gives e^{−B/θ}.
func drainedHeld(B, H, theta float64) float64 {
	if theta <= 0 {
		return 0
	}
	return (math.Exp(-B/theta) - math.Exp(-(B+H)/theta)) / -math.Expm1(-(B+H)/theta)
}

// heldBusy bounds how often a send that finds the bucket drained by a
// held lower send (drainedHeld) finds a send of its own or a higher class
// waiting ahead of it: the drained spell is that send gathering its
// charge, and a send of charge k that comes during it, with L of the
// lower charge gathered (uniform between 0 and gathered), waits
// (k − L)⁺/r′, and the sends of its own and higher classes that come
// meanwhile wait behind it for as long as their busy period that this
// wait starts, (k − L)⁺/(r′(1 − ρ)), ρ their load (a busy period
// started by work x lasts x/(1 − ρ) on average). By Little's law they
// number λ·E[(k − L)⁺]/(r′(1 − ρ)) on average, λ their rate, which is at
// least the chance that one waits. With lower sends that pile up (an
// open queue) the spell lasts as long as their queue, and the class's own
// queue is what it is at any time (own.Prob).
func heldBusy(own []flow, k, gathered, rate, rho float64) float64 {
	var lam float64
	for _, f := range own {
		lam += f.rate
	}
	var excess float64 // E[(k − L)⁺]
	switch {
	case gathered <= 0:
		excess = k
	case k >= gathered:
		excess = k - gathered/2
	default:
		excess = k * k / (2 * gathered)
	}
	return lam * excess / (rate * (1 - rho))
}

// busyTail is the mean of the exponential that the Monte Carlo draws for
// the excess of a class's own and the higher classes' work beyond the
// bucket's credit, theta, where the higher classes' sends are bursty: a
// send that finds excess Y (the excess and its own charge, of mean
// theta + k, k its charge in seconds) leaves when the higher classes'
// busy period that Y starts ends, which lasts Y/(1 − σ) on average (the
// stretch), but varies with their arrivals. Taking the work that the
// higher flows bring in a time t as a Brownian motion of drift σ and
// variance v·t, v = Σ λ·(E[B²] + E[B]²·(I − 1)), I the index of
// dispersion of a flow's sends over t (flowIDC), the busy period is the
// first passage of Y down to 0 at drift 1 − σ: mean Y/(1 − σ), variance
// Y·v/(1 − σ)³. So the wait beyond the charge has the mean stretch·theta
// and the squared coefficient of variation c = 1 + stretch·v·(theta +
// k)/theta², where the exponential has 1 (v = 0: Poisson sends of a fixed
// charge above keep it near 1, bursty ones do not). The Monte Carlo keeps
// drawing exponentials: theta is raised so that the exponential has the
// gamma's quantile (mean theta, scv c) at the level that the class's
// percentile p needs among the sends that wait for that work,
// max(0.5, 1 − (1 − p)/pWait), as model.Queue.Wait matches the wait for a
// slot; it is never lowered, since the exponential's mean is what the
// plan's mean wait is read from, and a class whose percentile lies low in
// the wait of those who wait keeps the exponential there.
func busyTail(theta, stretch, k float64, higher []flow, rate, pWait, p float64) float64 {
	if !(theta > 0) || math.IsInf(theta, 1) || !(pWait > 0) || len(higher) == 0 {
		return theta
	}
	t := stretch * (theta + k) // the mean wait of those who wait, beyond the charge's own
	var v float64
	for _, f := range higher {
		v += f.rate * (f.m2 + f.m1*f.m1*(flowIDC(f, t)-1)) / (rate * rate)
	}
	c := 1 + stretch*math.Max(0, v)*(theta+k)/(theta*theta)
	if !(c > 1+1e-9) || math.IsInf(c, 1) {
		return theta
	}
	level := math.Max(0.5, 1-(1-p)/math.Min(1, pWait))
	e := -math.Log1p(-level)
	a := 1 / c
	g := distuv.Gamma{Alpha: a, Beta: a / theta}.Quantile(level)
	return theta * math.Max(1, g/(theta*e))
}

// flowIDC is the index of dispersion of a flow's sends counted over t
// seconds, Var N(t)/E[N(t)]: 1 for Poisson sends, ca² over long spans.
// For a renewal stream of gamma gaps of scv ca² > 1 (the law
// internal/simulate draws), Var N(t) = ca²·λt − (1 + 6ca² + ca⁴)/6 +
// o(1) (Cox, Renewal Theory, 1962, §4.5, with the gamma's third moment),
// and the index is taken as 1 + (ca² − 1)·λt/(λt + κ), κ = (1 + 6ca² +
// ca⁴)/(6(ca² − 1)), which has that asymptote and is 1 at t = 0: a wait
// of a few gaps sees little of the bursts' clustering. Streams no
// burstier than Poisson keep their ca².
func flowIDC(f flow, t float64) float64 {
	c := f.ca2
	if !(c > 1) {
		return c
	}
	n := f.rate * t
	kappa := (1 + 6*c + c*c) / (6 * (c - 1))
	return 1 + (c-1)*n/(n+kappa)
}

// meanWork is the mean work of a send of flows, units, weighted by their
// rates; 0 when they send nothing.
func meanWork(flows []flow) float64 {
	var lam, w float64
	for _, f := range flows {
		lam += f.rate
		w += f.rate * f.m1
	}
	if lam == 0 {
		return 0
	}
	return w / lam
}

// seenBy is the work that the sends of one class, whose arrivals have
// squared coefficient of variation ca2, find in a bucket fed by flows,
// from w, the work the merged sends find. The time-average work of a
// GI/G/1 queue is V = ρ·W_q + λ·E[B²]/2 (Brumelle, J. Appl. Prob. 8(3),
// 1971): what Poisson arrivals find (PASTA), more than the merged
// arrivals find when the merged stream is smoother than Poisson, less
// when it is burstier. With the Allen–Cunneen wait of the merged stream,
// W_q = ρ·E[B]·(ca²_m + cs²)/(2(1 − ρ)), a stream of ca² finds
// V + ρ·E[B]·(ca² − 1)/2, which is W_q·(ρ + (1 − ρ)·(ca² + cs²)/(ca²_m +
// cs²)): W_q itself for ca² = ca²_m (a class alone on its key), and the
// rate-weighted mean over the streams is W_q. So a Poisson class behind
// smooth interactive arrivals finds the time average, not the little
// that those arrivals find. For a merged stream burstier than Poisson
// the wait is the GI/M/c law's, the worse of two laws of the gaps
// (model.Queue.Wait), not Allen–Cunneen's: its work is kept as it is,
// and how often a stream finds the server busy goes from the merged
// stream's π_m, for a stream as bursty, down to the time average ρ for
// one no burstier than Poisson (by PASTA), linearly in ca² between:
// a smooth class beside a bursty one does not meet its bursts. A stream
// smoother than Poisson finds it busy less often still, by the
// Allen–Cunneen ratio above taken against Poisson sends, to the power ¾:
// (ρ + (1 − ρ)·(ca² + cs²)/(1 + cs²))^¾ (fitted to internal/simulate, on
// the safe side: evenly spaced sends below a bursty class had their wait
// over-predicted by two fifths).
func seenBy(flows []flow, rate float64, w model.Wait, ca2 float64) model.Wait {
	q, rho := merged(flows, rate)
	if w.Prob == 0 || !w.Stable() || q.CA2+q.CS2 == 0 {
		return w
	}
	if q.CA2 > 1 {
		if ca2 < q.CA2 && w.Prob > rho {
			t := math.Max(0, ca2-1) / (q.CA2 - 1)
			w.Prob = rho + t*(w.Prob-rho)
		}
		if ca2 < 1 {
			w.Prob *= math.Pow(rho+(1-rho)*(ca2+q.CS2)/(1+q.CS2), 0.75)
		}
		return w
	}
	w.Mean *= rho + (1-rho)*(ca2+q.CS2)/(q.CA2+q.CS2)
	return w
}

// pacingLaws sets the pacing wait of every class with demand from the
// classes' flows at their pools: the work of its own and higher classes
// and of the whole key. It reports whether any class's wait changed.
func (r *run) pacingLaws() bool {
	changed := false
	for _, k := range r.keys {
		var members []int
		for _, i := range r.order {
			if r.s.Classes[i].Quota == k.Name {
				members = append(members, i)
			}
		}
		// In a window of the day only its classes send into the key's
		// per-minute buckets: one that runs at another time is no work
		// ahead of them.
		members = r.activeOnly(members)
		laws := make([]pacingLaw, len(members))
		for _, d := range pacingDims(k) {
			flows := make([]flow, len(members))
			var refund float64
			for j, i := range members {
				flows[j] = r.flowOf(i, d, r.pools[i])
				refund += flows[j].rate * flows[j].refund
			}
			rate, size := k.Capacity(d)+refund, bucketSize(k, d)
			whole, rhoAll := r.workload(flows, rate)
			for j, i := range members {
				if r.models[i].lambda == 0 {
					continue
				}
				own, rhoOwn := r.workload(flows[:j+1], rate)
				_, rhoHigh := r.workload(flows[:j], rate)
				if rhoOwn >= 1 || rhoHigh >= 1 {
					laws[j].unstable = true
					continue
				}
				// The work its own sends find, of its own and the higher
				// classes and of the whole key.
				own = seenBy(flows[:j+1], rate, own, flows[j].ca2)
				all := seenBy(flows, rate, whole, flows[j].ca2)
				drainedAll, pBusy := 1.0, math.Min(rhoOwn/rhoAll, own.Prob)
				if h, ok := heldWork(flows[j+1:]); ok && rhoAll < 1 {
					drainedAll = all.Prob * drainedHeld(size/rate, h/rate, all.Mean)
					pBusy = math.Min(pBusy, heldBusy(flows[:j+1], flows[j].adm, meanWork(flows[j+1:]), rate, rhoOwn))
				} else if rhoAll < 1 {
					drainedAll = all.Prob * math.Exp(-size/(rate*all.Mean))
				}
				pd := pacingDim{on: true, rate: rate, size: size, adm0: flows[j].adm0, admIn: flows[j].admIn,
					thetaOwn: own.Mean, pBusy: pBusy, piAll: all.Prob, thetaAll: all.Mean, stretch: 1 / (1 - rhoHigh)}
				if own.Prob > 0 {
					pd.pOwn = own.Prob * math.Exp(-size/(rate*own.Mean))
				}
				pd.pDrained = math.Max(pd.pOwn, drainedAll)
				// The draws that wait for the work of their own and the
				// higher classes: its tail carries the higher classes'
				// variability.
				pWait := pd.pOwn + (pd.pDrained-pd.pOwn)*pBusy
				pd.thetaOwn = busyTail(own.Mean, pd.stretch, flows[j].adm/rate, flows[:j], rate, pWait, r.models[i].pct)
				pd.gathered = meanWork(flows[j+1:])
				if pd.pDrained >= 1 {
					pd.pDrained, pd.piAll = 1, 1
				}
				laws[j].dims[d] = pd.rounded()
				if rhoAll > 0 && flows[j].rate > 0 {
					// A class without a pool sends nothing for the
					// buckets to hold back: its min_pool is what it needs
					// once it sends.
					laws[j].others = math.Max(laws[j].others, sig6(1-(rhoOwn-rhoHigh)/rhoAll))
				}
				if b := sig6(size / flows[j].m1); laws[j].burst == 0 || b < laws[j].burst {
					laws[j].burst = b
				}
			}
		}
		for j, i := range members {
			if r.models[i].setPacing(laws[j]) {
				changed = true
			}
		}
	}
	return changed
}

// setPacing sets the class's pacing wait and reports whether it changed.
func (m *classModel) setPacing(l pacingLaw) bool {
	if l == m.pace {
		return false
	}
	m.pace, m.paceD, m.paced, m.paceQ, m.paceH = l, nil, nil, nil, nil
	m.paceNZ, m.paceAtOK = nil, false
	return true
}

// pacedOf is the service time s with the class's pacing wait added to
// every draw, or s itself when the class's sends never wait for pacing,
// or when the key cannot carry its demand at all (an unstable wait): then
// the quota holds its pool below what the demand needs, and min_pool is
// what it would need with the key able to carry it (the quota's remedy).
// Its samples, tails, percentiles and min_pool are its own, cached under
// its own keys, and its moments are those of S + D: a request at the head
// of the queue that waits for the buckets keeps the slot it would take
// idle, so that the pool's queue sees each request for S + D.
func (m *classModel) pacedOf(s *service) *service {
	if s.base != nil || !m.pace.waits() || m.pace.unstable {
		return s
	}
	if p, ok := m.paced[s]; ok {
		return p
	}
	law := m.pace.appendKey(nil)
	p := &service{svc: s.svc, extrapolated: s.extrapolated, load: s.load, base: s,
		key:     sha256.Sum256(append(s.key[:], law...)),
		ttftKey: sha256.Sum256(append(s.ttftKey[:], law...))}
	var d1, d2, d3 float64
	for _, v := range m.paceSample() {
		d1, d2, d3 = d1+v, d2+v*v, d3+v*v*v
	}
	n := float64(m.draws.N)
	p.d = [3]float64{d1 / n, d2 / n, d3 / n}
	o := p.occupancy(1)
	p.mean, p.scv, p.tail = o.mean, o.scv, o.tail
	if m.paced == nil {
		m.paced = map[*service]*service{}
	}
	m.paced[s] = p
	return p
}

// occupancy is how long a request holds, or keeps idle, a slot of the
// pool, S + f·D with S and D independent, as a service time's moments for
// the pool's queue.
func (p *service) occupancy(f float64) *service {
	s := p.base
	s1 := s.mean
	s2 := s1 * s1 * (1 + s.scv)
	s3 := s.tail * s2 * s2 / s1
	d1, d2, d3 := f*p.d[0], f*f*p.d[1], f*f*f*p.d[2]
	m1, m2 := s1+d1, s2+2*s1*d1+d2
	m3 := s3 + 3*s2*d1 + 3*s1*d2 + d3
	return &service{mean: m1, scv: m2/(m1*m1) - 1, tail: m1 * m3 / (m2 * m2), d: p.d}
}

// paceSample is the pacing wait of every draw: the law at the draw's
// pacing uniform and exponential and its own input tokens (the same
// input the service time's draw has). Plans with the same law and inputs
// share it through the engine's cache of samples.
func (m *classModel) paceSample() []float64 {
	if m.paceD == nil {
		ip := inputPart(m.base.In, m.draws)
		key := sha256.Sum256(append(m.pace.appendKey(ip.key[:]), 'p'))
		d, _ := cachedOnce(context.Background(), m.eng, m.eng.samples, key, func() ([]float64, error) {
			in := m.eng.sampled(ip)
			inHi := slices.Max(in)
			law := m.pace.prepared(inHi)
			return law.sample(m.draws, in, inHi), nil
		})
		var sum float64
		for _, v := range d {
			sum += v
		}
		m.paceD, m.paceD1 = d, sum/float64(len(d))
	}
	return m.paceD
}

// paceQuantile is the p-quantile over the draws of max(W, D), the longer
// of a request's waits for a slot (w) and for the buckets (its draw's D):
// with w zero, the p-quantile of the pacing wait alone. It is selected
// among the draws that wait for either (the others are zeros below them). Each prediction of
// the class asks it again at the same waits, so the class keeps them, by
// wait and percentile, until its law changes.
func (m *classModel) paceQuantile(w model.Wait, p float64) float64 {
	if w.Prob == 0 && w.Stable() {
		w = model.Wait{} // no draw waits for a slot: the pacing wait alone
	}
	k := paceKey{wait: w, p: p}
	if v, ok := m.paceQ[k]; ok {
		return v
	}
	v := model.QuantileWithSparsePacedWait(m.paceSample(), m.paceAt(), m.draws, w, m.pace.overlap(), p, m.scratch())
	if m.paceQ == nil {
		m.paceQ = map[paceKey]float64{}
	}
	m.paceQ[k] = v
	return v
}

// paceKey is a query of paceQuantile: the wait for a slot and the
// percentile, a probability.
type paceKey struct {
	wait model.Wait
	p    float64
}

// paceAt is the draws whose pacing wait is positive, in ascending order.
func (m *classModel) paceAt() []int32 {
	if !m.paceAtOK {
		for i, v := range m.paceSample() {
			if v > 0 {
				m.paceNZ = append(m.paceNZ, int32(i))
			}
		}
		m.paceAtOK = true
	}
	return m.paceNZ
}

// paceNever reports whether no draw of the class waits for its pacing
// buckets: the waits are never below zero, so their mean is zero only
// when every one is.
func (m *classModel) paceNever() bool {
	m.paceSample()
	return m.paceD1 == 0
}

// paceMean is the pacing wait's mean over the draws.
func (m *classModel) paceMean() float64 {
	if !m.pace.waits() {
		return 0
	}
	if m.pace.unstable {
		return math.Inf(1)
	}
	m.paceSample()
	return m.paceD1
}

// appendKey encodes the law for cache keys.
func (l pacingLaw) appendKey(b []byte) []byte {
	if l.unstable {
		return append(b, 1)
	}
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(l.others))
	for d, p := range l.dims {
		if !p.on {
			continue
		}
		b = append(b, byte(d))
		for _, v := range []float64{p.rate, p.size, p.pOwn, p.thetaOwn, p.pDrained, p.pBusy, p.gathered, p.piAll, p.thetaAll, p.stretch, p.adm0, p.admIn} {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
	}
	return b
}

// windowCharge is the charge that class i's requests are held to on a
// per-minute dimension of its key: their admission charge at the p99 of
// the input (with max_tokens where the key counts it at admission),
// the largest a request sends but for one in a hundred.
func (m *classModel) windowCharge(d scenario.Dimension) float64 {
	mt := float64(m.spec.MaxTokens)
	a0 := m.key.Admission(0, mt, m.cachedFraction())[d]
	a1 := m.key.Admission(1, mt, m.cachedFraction())[d] - a0
	return a0 + a1*m.inputP99()
}

// overWindow reports whether class i's requests exceed one window's
// allowance on dimension d (docs/concepts.md, "Per-window enforcement"):
// such a request can never pass the key's pacing bucket, or the
// provider's window, without waiting for a full one, so the class gets no
// pool there.
func (r *run) overWindow(i int, d scenario.Dimension) bool {
	m := r.models[i]
	return !d.Daily() && m.key.Limit(d) > 0 && m.windowCharge(d) > bucketSize(m.key, d)*(1+tolerance)
}

// withoutPacing is what class i's sends would get from its key's provider
// if no client paced them (docs/concepts.md, "Without pacing"). The
// provider's bucket of one per-minute limit L holds A = L·w/60 (w =
// burst_window_s) and refills at L/60 plus the max_tokens that completions
// refund: a queue whose work is the key's charges, with the work ahead of
// a send V (0 with probability 1 − π, else exponential of mean θ: model.Queue
// at c = 1, as for the pacing wait). A send of charge k is refused when
// the bucket lacks it, V > (A − k)/r, with probability π·e^{−(A − k)/(rθ)}:
// a refused charge does not enter the bucket, but comes back when told,
// so the work ahead is taken as if every charge did. Refused, a send is told to wait until the bucket holds
// it, θ on average (the exponential's mean excess), at most k/r. The share
// is the largest over the limits; each draw's own charge is averaged over.
func (r *run) withoutPacing(i int) WithoutPacing {
	m := r.models[i]
	k := m.key
	var members []int
	for _, j := range r.order {
		if r.s.Classes[j].Quota == k.Name {
			members = append(members, j)
		}
	}
	in := m.eng.sampled(inputPart(m.base.In, m.draws))
	var out WithoutPacing
	for _, d := range pacingDims(k) {
		flows := make([]flow, len(members))
		var refund float64
		own := 0
		for j, c := range members {
			flows[j] = r.flowOf(c, d, r.pools[c])
			refund += flows[j].rate * flows[j].refund
			if c == i {
				own = j
			}
		}
		rate, allow := k.Limit(d)/60+refund, k.Limit(d)*k.BurstWindowS/60
		v, rho := r.workload(flows, rate)
		f := flows[own]
		var p, wait float64
		switch {
		case rho >= 1:
			p, wait = 1, allow/rate
		case v.Prob > 0:
			// Over a strided subsample of the draws' inputs: an estimate.
			step, n := max(1, len(in)/512), 0
			for j := 0; j < len(in); j += step {
				c := f.adm0 + f.admIn*in[j]
				p += v.Prob * math.Exp(-math.Max(0, allow-c)/(rate*v.Mean))
				wait += math.Min(v.Mean, c/rate)
				n++
			}
			p /= float64(n)
			wait /= float64(n)
		}
		if p > out.RateLimitedShare {
			out.RateLimitedShare, out.RetryAfterMs = p, wait*1000
		}
	}
	out.RateLimitedShare = signed.Round(out.RateLimitedShare, 4)
	out.RetryAfterMs = signed.Round(out.RetryAfterMs, 1)
	return out
}
