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

// lindleyWork is the mean work that Poisson arrivals of the last stream
// find in a bucket of rate `rate` fed by independent streams, each of
// lognormal charges (median and σ) and gaps of scv ca2 (interarrival),
// by Lindley's recursion V ← max(0, V − gap) + charge/rate over n
// arrivals after n/10 of warm-up. By PASTA it is the time-average work.
func lindleyWork(rate float64, streams []lindleyStream, n int, seed uint64) float64 {
	r := rand.New(rand.NewPCG(seed, 5))
	next := make([]float64, len(streams))
	gaps := make([]func() float64, len(streams))
	for i, s := range streams {
		gaps[i] = interarrival(r, s.rate, s.ca2, lawGamma)
		next[i] = gaps[i]()
	}
	var v, now, found float64
	last := len(streams) - 1
	seen := 0
	for k := 0; seen < n; k++ {
		i := 0
		for j := range next {
			if next[j] < next[i] {
				i = j
			}
		}
		v = math.Max(0, v-(next[i]-now))
		now = next[i]
		if i == last && k > n/10 {
			found += v
			seen++
		}
		s := streams[i]
		v += s.median * math.Exp(s.sigma*r.NormFloat64()) / rate
		next[i] += gaps[i]()
	}
	return found / float64(n)
}

type lindleyStream struct{ rate, ca2, median, sigma float64 }

// flow is the stream's flow into the bucket: its rate, gaps and the
// moments of its lognormal charge, E[X^k] = m^k·exp(k²σ²/2).
func (s lindleyStream) flow() flow {
	mom := func(k float64) float64 { return math.Pow(s.median, k) * math.Exp(k*k*s.sigma*s.sigma/2) }
	return flow{rate: s.rate, ca2: s.ca2, m1: mom(1), m2: mom(2), m3: mom(3)}
}

// TestMergedWorkAgainstLindley holds the work that a Poisson class finds
// in its key's bucket, as the plan reads it from the merged flows
// (merged, model.Queue.Wait, seenBy), to Lindley's recursion of the
// streams themselves, for a class beside a bursty one whose charges are
// larger, as large, or smaller. A renewal stream of the rate-weighted
// ca² and the mean charge loses which class brings the bursts: beside a
// chat of arrival scv 9 and charges three times its own it read the work
// at 0.56 of the recursion's. Read with the work-weighted ca²,
// 1 + Σλ·E[B]²·(ca² − 1)/(λ·Ē[B]²) (the diffusion limit of the summed
// work, which keeps each stream's own term), and never below the
// rate-weighted one, the plan is to be within −10 % and +35 % of it
// where the bursty class's charges are at least as large as the other's,
// and never more than 10 % below it where they are smaller: there the
// rate-weighted ca² reads the work long (about twice the recursion's),
// on the safe side, and the pacing wait that the plan draws from it is
// calibrated to internal/simulate with that reading (docs/simulate.md,
// "A class below a bursty class of large charges").
func TestMergedWorkAgainstLindley(t *testing.T) {
	const rate = 15000.0 // tokens a second
	for _, tc := range []struct {
		name     string
		bursty   lindleyStream
		poisson  lindleyStream
		min, max float64
	}{
		{"larger charges", lindleyStream{2, 9, 2300, 0.67}, lindleyStream{3.3, 1, 1500, 0.35}, 0.9, 1.35},
		{"equal charges", lindleyStream{2, 9, 1500, 0.5}, lindleyStream{3.3, 1, 1500, 0.5}, 0.9, 1.35},
		{"smaller charges", lindleyStream{3.3, 9, 700, 0.5}, lindleyStream{2, 1, 2500, 0.5}, 0.9, math.Inf(1)},
		{"larger charges, scv 4", lindleyStream{2, 4, 2600, 0.67}, lindleyStream{4, 1, 1200, 0.35}, 0.9, 1.35},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flows := []flow{tc.bursty.flow(), tc.poisson.flow()}
			q, rho := merged(flows, rate)
			w := seenBy(flows, rate, q.Wait(), 1)
			plan := w.Prob * w.Mean
			want := lindleyWork(rate, []lindleyStream{tc.bursty, tc.poisson}, 2_000_000, 1)
			t.Logf("ρ %.2f: the plan reads %.3f s, the recursion %.3f s (%.2f times)", rho, plan, want, plan/want)
			if r := plan / want; r < tc.min || r > tc.max {
				t.Errorf("ρ %.2f: the plan reads the work a Poisson send finds at %.3f s, the recursion at %.3f s (%.2f times); want %.2f to %.2f",
					rho, plan, want, r, tc.min, tc.max)
			}
		})
	}
}
