package model

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
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
	byU                     []int32   // indices in ascending order of U
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
	d.byU = make([]int32, n)
	for i := range n {
		d.U[i] = r.Float64()
		d.E[i] = r.ExpFloat64()
		d.byU[i] = int32(i)
	}
	slices.SortFunc(d.byU, func(a, b int32) int { return cmp.Compare(d.U[a], d.U[b]) })
	return d
}

// drawCache keeps the draws of the few most recent (seed, n) pairs: plans are
// usually made with the default seed and size, so the draws are generated
// once per process, and memory stays bounded whatever seeds clients send.
var drawCache = must(lru.New[drawKey, *Draws](drawCacheSize))

type drawKey struct {
	seed uint64
	n    int
}

const drawCacheSize = 4

// SharedDraws returns the draws for (seed, n) from a small process-wide cache.
// The result is shared and must not be modified.
func SharedDraws(seed uint64, n int) *Draws {
	k := drawKey{seed, n}
	if d, ok := drawCache.Get(k); ok {
		return d
	}
	d := NewDraws(seed, n)
	drawCache.Add(k, d)
	return d
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
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
// draws instead of n, with no full selection.
type Tail struct {
	k        int     // rank of the quantile's lower order statistic
	frac     float64 // type-7 interpolation weight towards rank k+1
	hiX, hiU []float64
	hiE      []float64
	loX, loU []float64 // the other draws, in ascending order of U
	loE      []float64
	heaps    sync.Pool // *[]float64 of length K, so that queries may run concurrently
}

// NewTail prepares p-quantile queries on the sample x (one value per draw of
// d; len(x) must be d.N).
func NewTail(x []float64, d *Draws, p float64) *Tail {
	n := len(x)
	tl := &Tail{}
	tl.k, tl.frac = quantileRank(n, p)
	top := n - tl.k // K
	// The K largest values of x are the high draws: all above the rank-k
	// value T, then as many equal to T as needed, lowest index first.
	t := selectK(slices.Clone(x), tl.k)
	high := make([]bool, n)
	above := 0
	for i, v := range x {
		if v > t {
			high[i] = true
			above++
		}
	}
	for i, v := range x {
		if above == top {
			break
		}
		if v == t {
			high[i] = true
			above++
		}
	}
	tl.hiX, tl.hiU, tl.hiE = make([]float64, 0, top), make([]float64, 0, top), make([]float64, 0, top)
	tl.loX, tl.loU, tl.loE = make([]float64, 0, n-top), make([]float64, 0, n-top), make([]float64, 0, n-top)
	for _, i := range d.byU {
		if high[i] {
			tl.hiX, tl.hiU, tl.hiE = append(tl.hiX, x[i]), append(tl.hiU, d.U[i]), append(tl.hiE, d.E[i])
		} else {
			tl.loX, tl.loU, tl.loE = append(tl.loX, x[i]), append(tl.loU, d.U[i]), append(tl.loE, d.E[i])
		}
	}
	tl.heaps.New = func() any { h := make([]float64, top); return &h }
	return tl
}

// Quantile is the p-quantile of X + W (type 7). An unstable wait gives +Inf.
// A Tail is immutable after NewTail, so Quantile is safe for concurrent use.
func (tl *Tail) Quantile(w Wait) float64 {
	if !w.Stable() {
		return math.Inf(1)
	}
	buf := tl.heaps.Get().(*[]float64)
	defer tl.heaps.Put(buf)
	h := *buf
	for i, v := range tl.hiX {
		if tl.hiU[i] < w.Prob {
			v += tl.hiE[i] * w.Mean
		}
		h[i] = v
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	for i, u := range tl.loU {
		if u >= w.Prob {
			break
		}
		if v := tl.loX[i] + tl.loE[i]*w.Mean; v > h[0] {
			h[0] = v
			siftDown(h, 0)
		}
	}
	q := h[0] // the K-th largest: rank k
	if tl.frac == 0 || len(h) < 2 {
		return q
	}
	next := h[1] // the (K−1)-th largest: rank k+1, the smaller child of the root
	if len(h) > 2 && h[2] < next {
		next = h[2]
	}
	return q + tl.frac*(next-q)
}

// QuantileWithWait is the p-quantile (type 7) of X + W over the draws, where
// the i-th draw waits E[i]·w.Mean when U[i] < w.Prob: the same value a Tail
// gives, for one query without building a Tail. scratch must have length
// len(x) and is overwritten.
func QuantileWithWait(x []float64, d *Draws, w Wait, p float64, scratch []float64) float64 {
	if !w.Stable() {
		return math.Inf(1)
	}
	for i, v := range x {
		if d.U[i] < w.Prob {
			v += d.E[i] * w.Mean
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

// siftDown restores the min-heap property of h below index i.
func siftDown(h []float64, i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r] < h[l] {
			m = r
		}
		if h[i] <= h[m] {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
