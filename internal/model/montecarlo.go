package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// Draws are the random numbers of one seeded Monte Carlo run. Every class and
// every candidate pool of a plan reuses them (common random numbers), so that
// the same scenario always gives the same percentiles and a change of pool
// moves a percentile only through the model, never through noise.
type Draws struct {
	Seed                    uint64
	N                       int
	ZTTFT, ZTPOT, ZIn, ZOut []float64 // standard normal draws, one per quantity
	U                       []float64 // uniform on [0, 1): does the request wait?
	E                       []float64 // standard exponential: how long, in mean waits
	// UP and EP are a second uniform and exponential, independent of the
	// others, for the wait at the key's pacing buckets.
	UP, EP []float64
	// UPMin and UPMax are the least and the largest of UP.
	UPMin, UPMax float64
	// ByUP is the draws' indices in ascending order of UP, so that the
	// draws of a range of pacing uniforms are found by bisection.
	ByUP       []int32
	byU        []int32   // indices in ascending order of U
	rankU      []int32   // each draw's position in byU
	uByU, eByU []float64 // U and E in that order, shared by every Tail
}

// NewDraws generates n draws from a PCG generator seeded with seed.
func NewDraws(seed uint64, n int) *Draws {
	r := rand.New(rand.NewPCG(seed, 0x706c616e6e6572)) // stream: "planner"
	d := &Draws{Seed: seed, N: n}
	for _, z := range []*[]float64{&d.ZTTFT, &d.ZTPOT, &d.ZIn, &d.ZOut} {
		*z = make([]float64, n)
		for i := range *z {
			(*z)[i] = r.NormFloat64()
		}
	}
	d.U = make([]float64, n)
	d.E = make([]float64, n)
	for i := range n {
		d.U[i] = r.Float64()
		d.E[i] = r.ExpFloat64()
	}
	// Drawn after the others, so that adding them left every other column
	// as it was.
	d.UP, d.EP = make([]float64, n), make([]float64, n)
	for i := range n {
		d.UP[i] = r.Float64()
		d.EP[i] = r.ExpFloat64()
	}
	if n > 0 {
		d.UPMin, d.UPMax = slices.Min(d.UP), slices.Max(d.UP)
	}
	d.ByUP, d.byU = ascending(d.UP), ascending(d.U)
	d.rankU = make([]int32, n)
	for j, i := range d.byU {
		d.rankU[i] = int32(j)
	}
	d.uByU, d.eByU = make([]float64, n), make([]float64, n)
	for j, i := range d.byU {
		d.uByU[j], d.eByU[j] = d.U[i], d.E[i]
	}
	return d
}

// ascending is the indices of v, uniforms in [0, 1), in ascending order
// of their values (equal values by index): a least-significant-digit
// radix sort of the values' bits, whose order is the values' own for
// floats that are not negative, 11 bits a pass.
func ascending(v []float64) []int32 {
	const bits = 11
	n := len(v)
	idx, keys := make([]int32, n), make([]uint64, n)
	tmpIdx, tmpKeys := make([]int32, n), make([]uint64, n)
	for i, x := range v {
		idx[i], keys[i] = int32(i), math.Float64bits(x)
	}
	var count [1 << bits]int
	for shift := 0; shift < 64; shift += bits {
		clear(count[:])
		for _, k := range keys {
			count[(k>>shift)&(1<<bits-1)]++
		}
		if slices.Contains(count[:], n) {
			continue // every key has this digit: the pass would keep the order
		}
		sum := 0
		for b, c := range count {
			count[b], sum = sum, sum+c
		}
		for j, k := range keys {
			b := (k >> shift) & (1<<bits - 1)
			tmpIdx[count[b]], tmpKeys[count[b]] = idx[j], k
			count[b]++
		}
		idx, tmpIdx, keys, tmpKeys = tmpIdx, idx, tmpKeys, keys
	}
	return idx
}

// Tail answers "what is the p-quantile of X + W" for one Monte Carlo sample
// of X (a service time or a TTFT) and any number of wait laws W, where the
// i-th request waits Draws.E[i]·W.Mean when Draws.U[i] < W.Prob.
//
// The type-7 quantile interpolates between the order statistics of rank k
// and k+1, that is, the K-th and (K−1)-th largest values with K = n − k.
// Because W ≥ 0, every order statistic of X + W is at least the same order
// statistic of X, so the K largest values of X + W are found among the K
// draws whose X is largest (the "high" draws) and the waiting draws. A query
// therefore starts from the high draws with their waits as a min-heap of
// size K and offers it only the waiting draws: about (1 − p + P(wait))·n
// draws instead of n. The K leaders are kept with a buffer of challengers
// above their minimum; when the buffer fills, one selection over the 2K
// values keeps the new leaders and raises the minimum (a buffered top-K),
// so each challenger costs O(1) amortised.
type Tail struct {
	p        float64 // the quantile's probability
	k        int     // rank of the quantile's lower order statistic
	frac     float64 // type-7 interpolation weight towards rank k+1
	hiX, hiU []float64
	hiE      []float64
	// hiD and dByU are each draw's head start D (NewPacedTail): nil
	// without one.
	hiD, dByU []float64
	// hiIdx are the high draws' indices; t is the rank-k value of X and
	// lastTie the last index of a draw equal to it among the high draws.
	hiIdx   []int32
	t       float64
	lastTie int
	// A sparse tail (NewSparsePacedTail) has, besides its leaders, the
	// draws with a head start outside them as challengers of every query
	// (exX = X + D, exU, exE, exD), and skip, their positions in the order
	// of U, which a query's pass over xByU (X without D) leaves out.
	exX, exU, exE, exD []float64
	skip               []int
	sparse             bool
	// xByU is X in ascending order of U, −Inf for the high draws (already
	// among the leaders); U and E in that order are the draws' own.
	xByU       []float64
	uByU, eByU []float64
	base       float64 // the p-quantile of X alone, the answer when nobody waits
	est        *Estimator
	sample     []float64 // the sorted strided subsample of X the estimator summarises
	scratch    sync.Pool // *[]float64 of length 2K, so that queries may run concurrently
}

// NewPacedTail prepares p-quantile queries of X + max(W, D) on the
// sample x = X + D, where the i-th draw has the head start head[i] = D:
// a wait W that overlaps D adds only what it lasts beyond it,
// (W − D)⁺ (a request that waits for a slot finds the pacing buckets
// refilled meanwhile). head nil is no head start: the p-quantile of x
// plus the wait.
func NewPacedTail(x, head []float64, d *Draws, p float64) *Tail {
	n := len(x)
	tl := &Tail{p: p, uByU: d.uByU, eByU: d.eByU}
	tl.k, tl.frac = quantileRank(n, p)
	top := n - tl.k // K
	sample := subsample(x, nil)
	// The K largest values of x are the high draws: all above the rank-k
	// value t, then as many equal to t as needed, lowest index first (those
	// at or below index lastTie).
	t, above := rankValue(x, tl.k, sample)
	lastTie := -1
	for i, v := range x {
		if above == top {
			break
		}
		if v == t {
			lastTie = i
			above++
		}
	}
	// One allocation holds the columns, filled by index: appending to the
	// struct's slices would cost a write barrier per draw.
	size := 3*top + n
	if head != nil {
		size += top + n
	}
	cols := make([]float64, size)
	hiX, hiU, hiE := cols[:top:top], cols[top:2*top:2*top], cols[2*top:3*top:3*top]
	xByU := cols[3*top : 3*top+n : 3*top+n]
	var hiD, dByU []float64
	if head != nil {
		hiD, dByU = cols[3*top+n:4*top+n:4*top+n], cols[4*top+n:]
	}
	hiIdx := make([]int32, top)
	h := 0
	for j, i := range d.byU {
		v := x[i]
		if head != nil {
			dByU[j] = head[i]
		}
		if v > t || (v == t && int(i) <= lastTie) {
			hiX[h], hiU[h], hiE[h], hiIdx[h] = v, d.uByU[j], d.eByU[j], i
			if head != nil {
				hiD[h] = head[i]
			}
			h++
			v = math.Inf(-1)
		}
		xByU[j] = v
	}
	tl.hiX, tl.hiU, tl.hiE, tl.xByU, tl.hiD, tl.dByU = hiX, hiU, hiE, xByU, hiD, dByU
	tl.hiIdx, tl.t, tl.lastTie = hiIdx, t, lastTie
	tl.finish(sample)
	return tl
}

// finish sets the tail's scratch buffers, its answer without a wait, and
// its estimator from a sorted subsample of its sample.
func (tl *Tail) finish(sample []float64) {
	top := len(tl.hiX)
	tl.scratch.New = func() any { b := make([]float64, 2*top); return &b }
	tl.base = tl.query(Wait{})
	tl.sample, tl.est = sample, newEstimator(sample, tl.p, tl.base)
}

// NewSparsePacedTail is NewPacedTail on the sample x + head for a head
// start that is zero at most draws, built from base, the tail of x at the
// same percentile on the same draws d, without a selection over the
// draws: at lists the draws whose head start is positive. Because
// X + max(W, D) ≥ X + W, the K largest values of x + max(W, head) are
// among base's high draws (with their head starts), the draws of at and
// the draws that wait: base's high draws are the new tail's leaders, the
// draws of at outside them challenge every query, and a query's pass over
// the waiting draws takes the others' X from base. Each draw's value is
// the expression NewPacedTail's query evaluates (x + 0 is x), so every
// answer is NewPacedTail's, bit for bit.
func NewSparsePacedTail(base *Tail, x, head []float64, at []int32, d *Draws) *Tail {
	top := len(base.hiX)
	tl := &Tail{p: base.p, k: base.k, frac: base.frac, uByU: base.uByU, eByU: base.eByU, xByU: base.xByU,
		hiU: base.hiU, hiE: base.hiE, hiIdx: base.hiIdx, t: base.t, lastTie: base.lastTie, sparse: true}
	cols := make([]float64, 2*top)
	tl.hiX, tl.hiD = cols[:top:top], cols[top:]
	for h, i := range base.hiIdx {
		tl.hiX[h], tl.hiD[h] = x[i]+head[i], head[i]
	}
	var extra []int32
	for _, i := range at {
		if v := x[i]; !(v > base.t || (v == base.t && int(i) <= base.lastTie)) {
			extra = append(extra, i)
		}
	}
	ex := make([]float64, 4*len(extra))
	m := len(extra)
	tl.exX, tl.exU, tl.exE, tl.exD = ex[:m:m], ex[m:2*m:2*m], ex[2*m:3*m:3*m], ex[3*m:]
	tl.skip = make([]int, m)
	for e, i := range extra {
		tl.exX[e], tl.exU[e], tl.exE[e], tl.exD[e] = x[i]+head[i], d.U[i], d.E[i], head[i]
		tl.skip[e] = int(d.rankU[i])
	}
	slices.Sort(tl.skip)
	// The subsample of x + head is base's with the values of its draws
	// that have a head start moved up.
	sample := slices.Clone(base.sample)
	step := max(1, len(x)/subsampleSize)
	for _, i := range at {
		if int(i)%step != 0 {
			continue
		}
		old, v := x[i], x[i]+head[i]
		j, _ := slices.BinarySearch(sample, old)
		for j+1 < len(sample) && sample[j+1] < v {
			sample[j] = sample[j+1]
			j++
		}
		sample[j] = v
	}
	tl.finish(sample)
	return tl
}

// subsampleSize is about how many draws a subsample keeps: enough for the
// estimator's summary quantiles and to bracket the rank a tail selects.
const subsampleSize = 512

// subsample is a strided subsample of x (plus head, when given), sorted.
// The draws are independent, so every stride is a random sample of X.
func subsample(x, head []float64) []float64 {
	step := max(1, len(x)/subsampleSize)
	sample := make([]float64, 0, len(x)/step+1)
	for i := 0; i < len(x); i += step {
		if head != nil {
			sample = append(sample, x[i]+head[i])
		} else {
			sample = append(sample, x[i])
		}
	}
	slices.Sort(sample)
	return sample
}

// rankValue is the value of rank k (0-based) of x, and how many values of
// x lie above it, without reordering x. The sorted subsample brackets the
// rank: one pass counts the values below the bracket and keeps those
// inside it, and a selection among them (a few per cent of x) finds the
// value. The bracket is the subsample's rank k·m/n ± 4 standard deviations
// of a binomial rank, so it misses about once in 10⁴ tails; a full
// selection over a copy answers then.
func rankValue(x []float64, k int, sample []float64) (float64, int) {
	n, m := len(x), len(sample)
	r := int(float64(k) * float64(m) / float64(n))
	q := float64(k) / float64(n)
	delta := int(math.Ceil(4*math.Sqrt(float64(m)*q*(1-q)))) + 2
	lo, hi := math.Inf(-1), math.Inf(1)
	if r-delta >= 0 {
		lo = sample[r-delta]
	}
	if r+delta < m {
		hi = sample[r+delta]
	}
	below, over := 0, 0
	band := make([]float64, 0, 2*(delta+1)*max(1, n/m)+16)
	for _, v := range x {
		switch {
		case v < lo:
			below++
		case v > hi:
			over++
		default:
			band = append(band, v)
		}
	}
	if k < below || k >= below+len(band) {
		a := slices.Clone(x)
		t := selectK(a, k)
		above := 0
		for _, v := range a[k+1:] {
			if v > t {
				above++
			}
		}
		return t, above
	}
	t := selectK(band, k-below)
	for _, v := range band[k-below+1:] {
		if v > t {
			over++
		}
	}
	return t, over
}

// NewSampleEstimator builds an Estimator of p-quantiles of X + W from a
// Monte Carlo sample of X whose p-quantile is base. Estimates only guide
// searches, so a strided subsample of the draws is summary enough.
func NewSampleEstimator(x []float64, p, base float64) *Estimator {
	return newEstimator(subsample(x, nil), p, base)
}

// newEstimator builds an Estimator from a sorted sample of X.
func newEstimator(sorted []float64, p, base float64) *Estimator {
	summary := make([]float64, summaryPoints)
	for i := range summary {
		summary[i] = sorted[(2*i+1)*len(sorted)/(2*summaryPoints)]
	}
	return &Estimator{p: p, base: base, summary: summary}
}

// summaryPoints is the number of quantiles of X that an Estimator uses.
const summaryPoints = 32

// Estimate approximates the p-quantile of X + W (see Estimator).
func (tl *Tail) Estimate(w Wait) float64 { return tl.est.Estimate(w) }

// P is the percentile, a probability, that the tail answers.
func (tl *Tail) P() float64 { return tl.p }

// N is the number of draws the tail was prepared on.
func (tl *Tail) N() int { return len(tl.xByU) }

// Paced reports whether the tail has a head start per draw (NewPacedTail).
func (tl *Tail) Paced() bool { return tl.dByU != nil }

// Sparse reports whether the tail was built by NewSparsePacedTail: it
// keeps its base's columns and adds Extra challengers.
func (tl *Tail) Sparse() bool { return tl.sparse }

// Extra is how many challengers a sparse tail adds to its base's draws.
func (tl *Tail) Extra() int { return len(tl.exX) }

// Estimator approximates the p-quantile of X + W in microseconds rather
// than a pass over Monte Carlo draws, from X's quantiles at evenly spaced
// ranks. Searches use it to decide where to ask an exact quantile, never
// as the answer.
type Estimator struct {
	p       float64
	base    float64   // the p-quantile of X
	summary []float64 // quantiles of X at ranks (2i+1)/(2k)
}

// NewEstimator builds an Estimator of p-quantiles of d + W from d's own
// quantiles, without drawing.
func NewEstimator(d Dist, p float64) *Estimator {
	e := &Estimator{p: p, base: d.Quantile(p), summary: make([]float64, summaryPoints)}
	for i := range e.summary {
		e.summary[i] = d.Quantile((2*float64(i) + 1) / (2 * summaryPoints))
	}
	return e
}

// Base is the p-quantile of X alone.
func (e *Estimator) Base() float64 { return e.base }

// Estimate solves (1 − C)·P(X > t) + C·P(X + E·m > t) = 1 − p for t by
// bisection, with X represented by its summary quantiles, C = w.Prob and
// m = w.Mean.
func (e *Estimator) Estimate(w Wait) float64 {
	if !w.Stable() {
		return math.Inf(1)
	}
	if w.Prob == 0 {
		return e.base
	}
	exceed := func(t float64) float64 {
		var noWait, withWait float64
		for _, x := range e.summary {
			if x > t {
				noWait++
				withWait++
			} else {
				withWait += math.Exp(-(t - x) / w.Mean)
			}
		}
		k := float64(len(e.summary))
		return (1-w.Prob)*noWait/k + w.Prob*withWait/k
	}
	lo := e.base
	hi := math.Max(lo, e.summary[len(e.summary)-1]) + w.Mean*(1+math.Max(0, math.Log(w.Prob/(1-e.p))))
	// Doubling overflows to +Inf, where nothing exceeds, within about
	// 2,100 steps: the bound only states it.
	for range 2100 {
		if !(exceed(hi) > 1-e.p) {
			break
		}
		hi = 2*hi + w.Mean
	}
	for range 18 {
		mid := (lo + hi) / 2
		if exceed(mid) > 1-e.p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// Quantile is the p-quantile of X + W (type 7). An unstable wait gives +Inf.
// A wait whose probability is at most the least of the draws' uniforms
// makes no draw wait: the answer is the p-quantile of X alone, the value
// a query would select again (a large pool's wait is often that rare).
// A Tail is immutable after NewPacedTail, so Quantile is safe for concurrent use.
func (tl *Tail) Quantile(w Wait) float64 {
	switch {
	case !w.Stable():
		return math.Inf(1)
	case w.Prob == 0 || len(tl.uByU) > 0 && w.Prob <= tl.uByU[0]:
		return tl.base
	}
	return tl.query(w)
}

func (tl *Tail) query(w Wait) float64 {
	buf := tl.scratch.Get().(*[]float64)
	defer tl.scratch.Put(buf)
	all := *buf
	top := len(tl.hiX) // K
	for i, v := range tl.hiX {
		if tl.hiU[i] < w.Prob {
			if tl.hiD != nil {
				v += math.Max(0, tl.hiE[i]*w.Mean-tl.hiD[i])
			} else {
				v += tl.hiE[i] * w.Mean
			}
		}
		all[i] = v
	}
	threshold := slices.Min(all[:top])
	n := top // leaders in all[:top], challengers in all[top:n]
	for e, v := range tl.exX {
		if tl.exU[e] < w.Prob {
			v += math.Max(0, tl.exE[e]*w.Mean-tl.exD[e])
		}
		if v > threshold {
			all[n] = v
			n++
			if n == len(all) {
				threshold = keepTop(all, top)
				n = top
			}
		}
	}
	// The waiting draws, U < w.Prob, but those at the skipped positions.
	end, _ := slices.BinarySearch(tl.uByU, w.Prob)
	skip := tl.skip
	for j := 0; j < end; j++ {
		if len(skip) > 0 && skip[0] == j {
			skip = skip[1:]
			continue
		}
		v := tl.xByU[j] + tl.eByU[j]*w.Mean
		if tl.dByU != nil {
			v = tl.xByU[j] + math.Max(0, tl.eByU[j]*w.Mean-tl.dByU[j])
		}
		if v > threshold {
			all[n] = v
			n++
			if n == len(all) {
				threshold = keepTop(all, top)
				n = top
			}
		}
	}
	q := keepTop(all[:n], top) // the K-th largest: rank k
	if tl.frac == 0 || top < 2 {
		return q
	}
	next := slices.Min(all[1:top]) // the (K−1)-th largest: rank k+1
	return q + tl.frac*(next-q)
}

// keepTop moves the k largest values of a to a[:k], with the smallest of
// them at a[0], and returns it.
func keepTop(a []float64, k int) float64 {
	cut := len(a) - k
	v := selectK(a, cut)
	copy(a, a[cut:])
	return v
}

// QuantileWithPacedWait is the p-quantile of X + max(W, D) over the
// draws for x = X + D and head[i] = D (as NewPacedTail): the i-th draw
// adds (E[i]·w.Mean − head[i])⁺ when U[i] < w.Prob. head nil is the
// p-quantile of X + W, where the i-th draw waits E[i]·w.Mean when
// U[i] < w.Prob: the same value a Tail gives, for one query without
// building a Tail. scratch must have length len(x) and is overwritten.
func QuantileWithPacedWait(x, head []float64, d *Draws, w Wait, p float64, scratch []float64) float64 {
	return QuantileWithSplitWait(x, x, head, d, w, p, scratch)
}

// QuantileWithSparsePacedWait is QuantileWithPacedWait(d, h, dr, w, p,
// scratch) with the head start h[i] = overlap·d[i], the p-quantile of
// max(W + (1 − overlap)·D, D) over the draws (max(W, D) for overlap 1),
// for a pacing wait d that is zero but at the draws of at (in any order):
// only those and the draws that wait for W are selected among, the others
// being zeros below them, and each value is the expression the whole
// selection evaluates (0 + (E·m − 0)⁺ is E·m), so the answer is the same,
// bit for bit. scratch must have length len(d) and is overwritten.
func QuantileWithSparsePacedWait(d []float64, at []int32, dr *Draws, w Wait, overlap, p float64, scratch []float64) float64 {
	if !w.Stable() {
		return math.Inf(1)
	}
	c := 0
	for _, i := range at {
		if !(dr.U[i] < w.Prob) {
			scratch[c] = d[i]
			c++
		}
	}
	end, _ := slices.BinarySearch(dr.uByU, w.Prob)
	for j, i := range dr.byU[:end] {
		v := d[i]
		if v > 0 {
			v += math.Max(0, dr.eByU[j]*w.Mean-overlap*v)
		} else {
			v = dr.eByU[j] * w.Mean
		}
		scratch[c] = v
		c++
	}
	cand, zeros := scratch[:c], len(d)-c
	k, frac := quantileRank(len(d), p)
	// The sorted values are zeros zeros, then the candidates sorted.
	var q float64
	if k >= zeros {
		q = selectK(cand, k-zeros)
	}
	if frac == 0 || k+1 >= len(d) {
		return q
	}
	var next float64
	switch {
	case k >= zeros:
		next = slices.Min(cand[k-zeros+1:])
	case k+1 == zeros:
		next = slices.Min(cand)
	}
	return q + frac*(next-q)
}

// QuantileWithSplitWait is QuantileWithPacedWait with the draws that wait
// taking their value from xWait instead of x: a request that waits for a
// slot starts when the pool is full, at a higher load than one that does
// not.
func QuantileWithSplitWait(x, xWait, head []float64, d *Draws, w Wait, p float64, scratch []float64) float64 {
	if !w.Stable() {
		return math.Inf(1)
	}
	for i, v := range x {
		if d.U[i] < w.Prob {
			v = xWait[i]
			if head != nil {
				v += math.Max(0, d.E[i]*w.Mean-head[i])
			} else {
				v += d.E[i] * w.Mean
			}
		}
		scratch[i] = v
	}
	k, frac := quantileRank(len(x), p)
	q := selectK(scratch, k)
	if frac == 0 || k+1 >= len(x) {
		return q
	}
	return q + frac*(slices.Min(scratch[k+1:])-q)
}

// QuantileServed is QuantileWithSplitWait over the draws a client that
// sheds at τ serves: those whose wait for a slot, E[i]·w.Mean when
// U[i] < w.Prob, is at most cut = w.Cut(τ), the share of the draws the
// wait's law puts beyond τ being left out; a wait the draws put between τ
// and cut counts as τ, the most a request served waits. The draws are the
// queue without shedding, so the ones kept are its law given W ≤ τ, which
// is the law of the requests served of a queue with patience τ
// (ShedShare). A request that also waits for the pacing buckets (head) is
// kept on its wait for a slot alone.
func QuantileServed(x, xWait, head []float64, d *Draws, w Wait, p, tau float64, scratch []float64) float64 {
	if !w.Stable() {
		return math.Inf(1)
	}
	cut := w.Cut(tau)
	n := 0
	for i, v := range x {
		if d.U[i] < w.Prob {
			wq := d.E[i] * w.Mean
			if wq > cut {
				continue
			}
			wq = math.Min(wq, tau)
			v = xWait[i]
			if head != nil {
				v += math.Max(0, wq-head[i])
			} else {
				v += wq
			}
		}
		scratch[n] = v
		n++
	}
	if n == 0 {
		return math.Inf(1)
	}
	s := scratch[:n]
	k, frac := quantileRank(n, p)
	q := selectK(s, k)
	if frac == 0 || k+1 >= n {
		return q
	}
	return q + frac*(slices.Min(s[k+1:])-q)
}
