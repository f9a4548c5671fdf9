package simulate

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/signed"
)

// reservoir keeps a uniform sample of at most cap rows of a stream (Vitter's
// Algorithm R, ACM TOMS 11(1), 1985), so that percentiles need bounded
// memory: exact up to cap rows, estimated from cap uniformly chosen rows
// beyond. Each row carries the section of the run it came in (a byte
// beside it, for the intervals of its percentiles).
//
// Once full, a new row replaces a random one. Those replacements are
// collected and made in batches: a random write into rows of megabytes
// misses the cache and evicts what the simulation works on, so that
// interleaved with every completion they cost more than the rest of it.
// The rows are the same as if each replacement were made at once (later
// ones win), and every reader flushes first (all).
type reservoir[T any] struct {
	rows     []T
	sections []uint8
	seen     int
	cap      int
	rng      *rand.Rand
	// hint is how many rows to make room for at the first: the rows
	// expected, at most cap, so that the rows are not copied as they grow.
	hint    int
	pending []replacement[T]
}

// replacement is a row waiting to replace row j.
type replacement[T any] struct {
	j       int
	v       T
	section uint8
}

// replacementBatch is how many replacements wait before they are made.
const replacementBatch = 1024

func (r *reservoir[T]) add(v T, section uint8) {
	if r.rows == nil {
		n := max(1, min(r.cap, r.hint))
		r.rows, r.sections = make([]T, 0, n), make([]uint8, 0, n)
	}
	r.seen++
	if len(r.rows) < r.cap {
		r.rows = append(r.rows, v)
		r.sections = append(r.sections, section)
		return
	}
	if j := r.rng.IntN(r.seen); j < r.cap {
		if r.pending == nil {
			r.pending = make([]replacement[T], 0, replacementBatch)
		}
		// The fields are written in place: a replacement built whole and
		// then appended is stored field by field and read back in wider
		// words, which stalls the store-to-load forwarding.
		n := len(r.pending)
		r.pending = r.pending[:n+1]
		p := &r.pending[n]
		p.j, p.v, p.section = j, v, section
		if n+1 == replacementBatch {
			r.flush()
		}
	}
}

// flush makes the waiting replacements, in the order they came.
func (r *reservoir[T]) flush() {
	for _, p := range r.pending {
		r.rows[p.j], r.sections[p.j] = p.v, p.section
	}
	r.pending = r.pending[:0]
}

// all is every row kept, replacements made.
func (r *reservoir[T]) all() []T {
	r.flush()
	return r.rows
}

// scratch is the array a class's percentiles are selected in, reused from
// one figure to the next: a class works out a dozen figures over up to
// options.Samples rows each, and a new array for each would allocate,
// fault in and collect megabytes that the run then drops at once.
type scratch struct{ xs []float64 }

// floats is the scratch array of length n, its contents unspecified.
func (s *scratch) floats(n int) []float64 {
	if cap(s.xs) < n {
		s.xs = make([]float64, n)
	}
	return s.xs[:n]
}

// quantiles returns the p-quantiles (type 7, as everywhere in planner) of
// the values f picks from the rows, NaN when there are none; ps ascending.
// It selects rather than sorts (model.QuantilesSelect), in buf.
func quantiles[T any](buf *scratch, rows []T, f func(T) float64, ps ...float64) []float64 {
	xs := buf.floats(len(rows))
	for i, r := range rows {
		xs[i] = f(r)
	}
	return model.QuantilesSelect(xs, ps...)
}

// sectionMin is the fewest samples a section needs for its own p95 to
// count in an interval: below 1/(1 − 0.95) a section's p95 is little more
// than its largest value.
const sectionMin = 20

// sectionsMin is the fewest sections with sectionMin samples an interval
// needs.
const sectionsMin = 4

// sectionHalfWidth is the half-width of the 95 % confidence interval of
// the p-quantile of the values f picks, by sectioning (Asmussen and
// Glynn, Stochastic Simulation, Springer 2007, §III.5): the run is cut
// into the same equal spans of time as the batch means, the p-quantile
// of each span with at least sectionMin samples is one observation ξⱼ,
// and the interval around the quantile of the whole run is
// t(0.975, b−1)·s/√b, s the standard deviation of the b spans'
// quantiles. Spans far apart are nearly independent, and centring on the
// whole run's quantile avoids the bias of a small span's. False when
// fewer than sectionsMin spans have enough samples. It selects in buf.
func sectionHalfWidth[T any](buf *scratch, r *reservoir[T], f func(T) float64, p float64) (float64, bool) {
	rows := r.all()
	var counts [batches]int
	for _, s := range r.sections {
		counts[s]++
	}
	var starts [batches + 1]int
	for i, n := range counts {
		starts[i+1] = starts[i] + n
	}
	xs := buf.floats(len(rows))
	next := starts
	for k, row := range rows {
		j := r.sections[k]
		xs[next[j]] = f(row)
		next[j]++
	}
	var qs []float64
	for i := range batches {
		if counts[i] >= sectionMin {
			qs = append(qs, model.QuantileSelect(xs[starts[i]:starts[i+1]], p))
		}
	}
	if len(qs) < sectionsMin {
		return 0, false
	}
	return tHalfWidth(qs), true
}

// tHalfWidth is t(0.975, n−1)·s/√n for n observations.
func tHalfWidth(obs []float64) float64 {
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(obs) - 1)}.Quantile(0.975)
	return t * stat.StdDev(obs, nil) / math.Sqrt(float64(len(obs)))
}

// level is a quantity that changes at events (requests in flight, in the
// queue), integrated over time per interval for its time-average. It
// keeps the interval it was last advanced in, so that advancing within
// one interval costs no division.
type level struct {
	v    float64
	last float64
	sum  []float64
	// i is the interval of last, valid while lo ≤ last < hi.
	i      int
	lo, hi float64
}

// set changes the level at time now, integrating the old value up to now.
func (l *level) set(g *grid, now, v float64) {
	l.advance(g, now)
	l.v = v
}

func (l *level) advance(g *grid, now float64) {
	if l.last >= l.lo && now < l.hi {
		if now > l.last {
			l.sum[l.i] += l.v * (now - l.last)
			l.last = now
		}
		return
	}
	for l.last < now {
		i := g.index(l.last)
		edge := min(now, g.edge(i))
		if edge <= l.last { // the last interval, or rounding at an edge
			edge = now
		}
		l.sum[i] += l.v * (edge - l.last)
		l.last = edge
	}
	l.i = g.index(l.last)
	l.lo, l.hi = float64(l.i)*g.step, g.edge(l.i)
	if l.i == g.n-1 {
		l.hi = math.Inf(1) // the last interval holds the rest
	}
}

// means is the time-average of the level in every interval.
func (l *level) means(g *grid) []float64 {
	out := make([]float64, g.n)
	for i := range out {
		out[i] = signed.Round(l.sum[i]/g.width(i), 3)
	}
	return out
}

// grid cuts the run into intervals of the time series.
type grid struct {
	step, end float64
	n         int
	// The interval last asked for: every t in [lo, hi) is in it. Times
	// asked for mostly rise with the clock, so that the next is most often
	// there, found without a division.
	cur    int
	lo, hi float64
}

func newGrid(end, step float64) *grid {
	return &grid{step: step, end: end, n: max(1, int(math.Ceil(end/step-1e-9)))}
}

// index is the interval that holds time t: min(n−1, ⌊t/step⌋), the
// quotient as the division rounds it.
func (g *grid) index(t float64) int {
	if t >= g.lo && t < g.hi {
		return g.cur
	}
	return g.move(t)
}

// move makes the interval of t the one last asked for, and returns it:
// index's slow path, apart so that index inlines.
func (g *grid) move(t float64) int {
	i := g.slowIndex(t)
	g.cur, g.lo, g.hi = i, g.first(i), g.first(i+1)
	return i
}

func (g *grid) slowIndex(t float64) int {
	return min(g.n-1, max(0, int(t/g.step)))
}

// first is the smallest time whose interval is at least i, by the
// rounding of slowIndex itself (near i·step, a few units in the last place
// either way), so that index's shortcut agrees with it exactly: slowIndex
// is monotone in t.
func (g *grid) first(i int) float64 {
	switch {
	case i <= 0:
		return math.Inf(-1)
	case i >= g.n:
		return math.Inf(1) // the last interval holds the rest
	}
	t := float64(i) * g.step
	for g.slowIndex(t) >= i {
		t = math.Nextafter(t, math.Inf(-1))
	}
	for g.slowIndex(t) < i {
		t = math.Nextafter(t, math.Inf(1))
	}
	return t
}

// edge is the end of interval i.
func (g *grid) edge(i int) float64 {
	if i >= g.n-1 {
		return g.end
	}
	return float64(i+1) * g.step
}

// width is the length of interval i (the last one may be shorter).
func (g *grid) width(i int) float64 {
	return g.edge(i) - float64(i)*g.step
}

// batchMeans is the half-width of the 95 % confidence interval of a mean by
// the method of batch means (Law, Simulation Modeling and Analysis, 5th
// ed., §9.5.3): the run is cut into equal spans of time, each span's mean
// is one observation, and the interval is t(0.975, b−1)·s/√b over the b
// spans that have data. Waits of requests close in time are correlated;
// means over long spans are nearly independent.
type batchMeans struct {
	sum   []float64
	count []int
	// spans cuts the run into the spans: a grid, whose index of a time
	// is the quotient by the span, worked out without a division while
	// times stay in the span last asked for.
	spans grid
}

const batches = 20

func newBatchMeans(end float64) *batchMeans {
	return &batchMeans{sum: make([]float64, batches), count: make([]int, batches), spans: grid{step: end / batches, end: end, n: batches}}
}

// section is the span of the run that time t falls in,
// min(batches − 1, ⌊t/span⌋).
func (b *batchMeans) section(t float64) uint8 {
	return uint8(b.spans.index(t))
}

// add counts v in section i.
func (b *batchMeans) add(i uint8, v float64) {
	b.sum[i] += v
	b.count[i]++
}

// halfWidth is the 95 % half-width, false with fewer than two spans.
func (b *batchMeans) halfWidth() (float64, bool) {
	var means []float64
	for i, n := range b.count {
		if n > 0 {
			means = append(means, b.sum[i]/float64(n))
		}
	}
	if len(means) < 2 {
		return 0, false
	}
	return tHalfWidth(means), true
}

// msPtr is seconds as milliseconds rounded to 0.1 ms, nil for NaN.
func msPtr(seconds float64) *float64 {
	if math.IsNaN(seconds) || math.IsInf(seconds, 0) {
		return nil
	}
	v := signed.Round(seconds*1000, 1)
	return &v
}
