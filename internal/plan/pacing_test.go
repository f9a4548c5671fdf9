package plan

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/plannerdev/planner/internal/model"
)

// wait is D for one draw, the longest of its dimensions' waits, one draw
// at a time with every dimension of the law: u and e are the draw's
// pacing uniform and exponential, in its input tokens.
func (l *pacingLaw) wait(u, e, in float64) float64 {
	if l.unstable {
		return math.Inf(1)
	}
	d := 0.0
	for i := range l.dims {
		if p := &l.dims[i]; p.on {
			d = math.Max(d, p.wait(u, e, in))
		}
	}
	return d
}

// TestPacingSampleLeavesOutOnlyDimensionsThatNeverWait holds the draws'
// pacing waits, worked out a dimension at a time with the dimensions on
// which no draw can wait left out, and on the others the draws whose
// uniform keeps them from waiting (for their input, where the largest
// charge does not fit the credit), to the law's wait at every draw with
// every dimension, bit for bit, over random laws: buckets
// idle, busy and drained, charges that fit the credit and ones that do
// not, and laws on the edge where only the largest uniform or input waits.
func TestPacingSampleLeavesOutOnlyDimensionsThatNeverWait(t *testing.T) {
	draws := model.NewDraws(7, 4000)
	r := rand.New(rand.NewPCG(3, 4))
	in := make([]float64, draws.N)
	for i := range in {
		in[i] = math.Round(r.ExpFloat64() * 2000)
	}
	inHi := slices.Max(in)
	left, idle, capped := 0, 0, 0
	for trial := range 400 {
		var law pacingLaw
		for d := range 2 {
			rate := 50 + r.Float64()*20000
			p := pacingDim{on: true, rate: rate, size: rate * (0.5 + 2*r.Float64()),
				adm0: math.Round(r.Float64() * 1000), admIn: float64(r.IntN(2)), stretch: 1 + r.Float64()}
			switch r.IntN(4) {
			case 0: // nothing sent yet
			case 1: // an idle or lightly used bucket
				p.piAll, p.thetaAll = r.Float64()*0.3, r.Float64()*0.05
			case 2: // a busy one
				p.pOwn = r.Float64() * 0.2
				p.pDrained = p.pOwn + r.Float64()*0.3
				p.thetaOwn, p.piAll, p.thetaAll = r.Float64(), 0.5+r.Float64()*0.5, r.Float64()
			case 3: // waits so rare that no uniform is below them
				p.pOwn, p.pDrained = 1e-50, 1e-50
				p.piAll, p.thetaAll = r.Float64()*0.2, r.Float64()*0.02
			}
			if trial%5 == 0 {
				// The largest charge just at or over the credit.
				p.size = p.adm0 + p.admIn*inHi - float64(r.IntN(2))
			}
			law.dims[d] = p.rounded()
		}
		law = law.prepared(inHi)
		got := law.sample(draws, in, inHi)
		for d := range law.dims {
			if p := &law.dims[d]; p.on && p.never(draws.UPMin, draws.UPMax, inHi) {
				left++
			} else if p.on && p.qMin > 0 {
				lo, hi := p.idleSpan(draws, p.qMin)
				idle += hi - lo
			} else if q, _ := p.capped(); p.on && q > 0 {
				lo, hi := p.idleSpan(draws, q)
				capped += hi - lo
			}
		}
		for i := range got {
			want := law.wait(draws.UP[i], draws.EP[i], in[i])
			if math.Float64bits(got[i]) != math.Float64bits(want) {
				t.Fatalf("law %d, draw %d: the sample has %v, the law's wait %v (%+v)", trial, i, got[i], want, law)
			}
		}
	}
	if left == 0 || idle == 0 || capped == 0 {
		t.Fatalf("%d dimensions, %d draws and %d with inputs capped left out: the test does not reach the shortcuts", left, idle, capped)
	}
	t.Logf("%d dimensions of 800 left out, %d draws of the others, and %d of those whose largest charge does not fit, for their smaller inputs", left, idle, capped)
}

// TestPaceQuantileIsKeptByPercentile asks a class's quantile of
// max(W, D) at the p95, the p99 and the p95 again at one wait: each is
// the quantile over the draws at its own percentile, never one kept for
// another.
func TestPaceQuantileIsKeptByPercentile(t *testing.T) {
	d := model.NewDraws(5, 4000)
	r := rand.New(rand.NewPCG(1, 2))
	m := &classModel{eng: New(Options{}), draws: d, paceD: make([]float64, d.N)}
	for i := range m.paceD {
		m.paceD[i] = 0.2 * r.ExpFloat64()
	}
	w := model.Wait{Prob: 0.3, Mean: 0.5}
	for _, p := range []float64{0.95, 0.99, 0.95, 0.99} {
		want := model.QuantileWithPacedWait(m.paceD, m.paceD, d, w, p, make([]float64, d.N))
		if got := m.paceQuantile(w, p); got != want {
			t.Errorf("p=%g: %g, want %g", p, got, want)
		}
	}
	if p95, p99 := m.paceQuantile(w, 0.95), m.paceQuantile(w, 0.99); !(p99 > p95) {
		t.Errorf("p99 %g is not above p95 %g", p99, p95)
	}
}
