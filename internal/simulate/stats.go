package simulate

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/plannerdev/planner/internal/model"
)

// reservoir keeps a uniform sample of at most cap rows of a stream (Vitter's
// Algorithm R, ACM TOMS 11(1), 1985), so that percentiles need bounded
// memory: exact up to cap rows, estimated from cap uniformly chosen rows
// beyond.
type reservoir[T any] struct {
	rows []T
	seen int
	cap  int
	rng  *rand.Rand
}

func (r *reservoir[T]) add(v T) {
	r.seen++
	if len(r.rows) < r.cap {
		r.rows = append(r.rows, v)
		return
	}
	if j := r.rng.IntN(r.seen); j < r.cap {
		r.rows[j] = v
	}
}

// quantiles returns the p-quantiles (type 7, as everywhere in planner) of
// the values f picks from the rows, NaN when there are none.
func quantiles[T any](rows []T, f func(T) float64, ps ...float64) []float64 {
	xs := make([]float64, len(rows))
	for i, r := range rows {
		xs[i] = f(r)
	}
	slices.Sort(xs)
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = model.QuantileSorted(xs, p)
	}
	return out
}

// level is a quantity that changes at events (requests in flight, in the
// queue), integrated over time per interval for its time-average.
type level struct {
	v    float64
	last float64
	sum  []float64
}

// set changes the level at time now, integrating the old value up to now.
func (l *level) set(g *grid, now, v float64) {
	l.advance(g, now)
	l.v = v
}

func (l *level) advance(g *grid, now float64) {
	for l.last < now {
		i := g.index(l.last)
		edge := math.Min(now, g.edge(i))
		if edge <= l.last { // the last interval, or rounding at an edge
			edge = now
		}
		l.sum[i] += l.v * (edge - l.last)
		l.last = edge
	}
}

// means is the time-average of the level in every interval.
func (l *level) means(g *grid) []float64 {
	out := make([]float64, g.n)
	for i := range out {
		out[i] = round(l.sum[i]/g.width(i), 3)
	}
	return out
}

// grid cuts the run into intervals of the time series.
type grid struct {
	step, end float64
	n         int
}

func newGrid(end, step float64) *grid {
	return &grid{step: step, end: end, n: max(1, int(math.Ceil(end/step-1e-9)))}
}

// index is the interval that holds time t.
func (g *grid) index(t float64) int {
	return min(g.n-1, max(0, int(t/g.step)))
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
	span  float64
}

const batches = 20

func newBatchMeans(end float64) *batchMeans {
	return &batchMeans{sum: make([]float64, batches), count: make([]int, batches), span: end / batches}
}

func (b *batchMeans) add(t, v float64) {
	i := min(batches-1, max(0, int(t/b.span)))
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
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(means) - 1)}.Quantile(0.975)
	return t * stat.StdDev(means, nil) / math.Sqrt(float64(len(means))), true
}

// round rounds v to d decimals.
func round(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

// msPtr is seconds as milliseconds rounded to 0.1 ms, nil for NaN.
func msPtr(seconds float64) *float64 {
	if math.IsNaN(seconds) || math.IsInf(seconds, 0) {
		return nil
	}
	v := round(seconds*1000, 1)
	return &v
}
