//go:build !race

package plan

// The simulation runs millions of requests; the race detector would make
// it take minutes, and it has no concurrency to check.

import (
	"container/heap"
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/testutil"
)

// The discrete-event simulation here is the reference the plan's queueing
// predictions are held to. It shares nothing with the engine's queueing
// formulas: it runs the pool as c servers that take arrivals first come,
// first served, and measures the waits, with service times drawn from the
// distributions the plan defines (plan.Workload) by a generator of its own.

// freeAt is a min-heap of the times the pool's slots free up.
type freeAt []float64

func (h freeAt) Len() int           { return len(h) }
func (h freeAt) Less(i, j int) bool { return h[i] < h[j] }
func (h freeAt) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *freeAt) Push(x any)        { *h = append(*h, x.(float64)) }
func (h *freeAt) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// interarrival draws gaps of mean 1/λ with squared coefficient of
// variation scv: evenly spaced for 0, exponential at 1, gamma (shape
// 1/scv) otherwise, or, for scv > 1 and the law h2, a two-phase
// hyperexponential with balanced means.
func interarrival(r *rand.Rand, lambda, scv float64, law string) func() float64 {
	switch {
	case scv == 0:
		return func() float64 { return 1 / lambda }
	case scv == 1:
		return func() float64 { return r.ExpFloat64() / lambda }
	case scv < 1 || law != lawH2:
		k := 1 / scv
		return func() float64 { return testutil.GammaDraw(r, k) / (k * lambda) }
	}
	p := (1 + math.Sqrt((scv-1)/(scv+1))) / 2
	m1, m2 := 2*p*lambda, 2*(1-p)*lambda
	return func() float64 {
		if r.Float64() < p {
			return r.ExpFloat64() / m1
		}
		return r.ExpFloat64() / m2
	}
}

// The laws of bursty gaps the comparison draws: gamma, as planner
// simulate draws them, and the balanced two-phase hyperexponential.
const (
	lawGamma = "gamma"
	lawH2    = "h2"
)

// simResult is what the simulation measured, in seconds.
type simResult struct {
	ttft95, e2e95, wait95, waitMean float64
	shedShare                       float64 // of the arrivals after the warm-up
}

// simulatePool runs n arrivals of the class's workload, with gaps of the
// given law, through a pool of c (with a measured curve, each request's
// latency at what is in flight when it starts) after n/10 arrivals of
// warm-up. As the plan's client does (Admission.MaxQueueWaitMs), it sheds
// a request that would wait longer than shed for a slot: it takes no slot
// and is left out of the percentiles; +Inf sheds nothing.
func simulatePool(w Workload, c int, lambda, scv float64, law string, n int, seed uint64, shed float64) simResult {
	r := rand.New(rand.NewPCG(seed, 99))
	svc := w.At(c)
	gap := interarrival(r, lambda, scv, law)
	free := make(freeAt, c)
	heap.Init(&free)
	warm := n / 10
	ttft, e2e, wait := make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	t := 0.0
	curve := w.m.loadDependent()
	shedN := 0
	for i := range n + warm {
		t += gap()
		start := math.Max(t, free[0])
		if start-t > shed {
			if i >= warm {
				shedN++
			}
			continue
		}
		if curve {
			// A measured curve's latency follows what is in flight when
			// the request starts, itself included.
			busy := 1
			for _, f := range free {
				if f > start {
					busy++
				}
			}
			svc = w.At(busy)
		}
		first := svc.TTFT.Sample(r.NormFloat64())
		if svc.Prefill != 0 {
			first += svc.Prefill * svc.In.Sample(r.NormFloat64())
		}
		s := first + svc.TPOT.Sample(r.NormFloat64())*(svc.Out.Sample(r.NormFloat64())-1)
		free[0] = start + s
		heap.Fix(&free, 0)
		if i >= warm {
			wq := start - t
			wait = append(wait, wq)
			ttft = append(ttft, wq+first)
			e2e = append(e2e, wq+s)
		}
	}
	var sum float64
	for _, v := range wait {
		sum += v
	}
	return simResult{ttft95: p95(ttft), e2e95: p95(e2e), wait95: p95(wait), waitMean: sum / float64(len(wait)), shedShare: float64(shedN) / float64(n)}
}

// p95 is the type-7 95th percentile.
func p95(xs []float64) float64 {
	slices.Sort(xs)
	h := float64(len(xs)-1) * 0.95
	k := int(h)
	return xs[k] + (h-float64(k))*(xs[k+1]-xs[k])
}

// desCase is one scenario of the comparison: a class alone on its key and
// endpoint with Poisson or other arrivals, and targets set relative to its
// latency without queueing so that min_pool lands where the queue matters.
type desCase struct {
	name       string
	ttft, tpot scenario.Dist
	out        scenario.Dist
	maxTokens  int
	curve      bool
	scv        float64
	law        string  // of the gaps when scv > 1
	load       float64 // offered load A, erlangs
	slack      float64 // the TTFT target as a multiple of its p95 without queueing; 2 when 0
}

func (d desCase) scenario(lambda float64) scenario.Scenario {
	s := scenario.Scenario{
		Quotas: []scenario.Quota{{Name: "k", RPM: 1e9}},
		Classes: []scenario.Class{{Name: "c", Quota: "k", Mode: "interactive", Demand: &scenario.Demand{RPS: lambda},
			InputTokens: pct(500, 1500), OutputTokens: d.out, MaxTokens: d.maxTokens, ArrivalSCV: f(d.scv)}},
	}
	if d.curve {
		s.Latency.Curve = []scenario.CurvePoint{
			{Concurrency: 1, TTFTP50Ms: 200, TTFTP95Ms: 320, TPOTP50Ms: 15, TPOTP95Ms: 18, ThroughputRPS: 0.3},
			{Concurrency: 8, TTFTP50Ms: 260, TTFTP95Ms: 420, TPOTP50Ms: 17, TPOTP95Ms: 21, ThroughputRPS: 2.2},
			{Concurrency: 32, TTFTP50Ms: 500, TTFTP95Ms: 900, TPOTP50Ms: 24, TPOTP95Ms: 30, ThroughputRPS: 6.5},
			{Concurrency: 128, TTFTP50Ms: 1500, TTFTP95Ms: 2600, TPOTP50Ms: 40, TPOTP95Ms: 52, ThroughputRPS: 14},
		}
	} else {
		s.Latency.TTFTMs, s.Latency.TPOTMs = &d.ttft, &d.tpot
	}
	return s
}

// desLong runs the comparison on its whole grid, with longer runs: go test
// ./internal/plan -run TestPlanAgainstSimulation -des.long (about four
// minutes); the default grid takes a few seconds.
var desLong = flag.Bool("des.long", false, "compare the plan with the discrete-event simulation on the whole grid")

// desCases spans light to heavy load (pools from 1 to about 300), service
// of moderate and high variability, arrivals from evenly spaced (scv 0)
// to very bursty (scv 9) with gamma and two-phase hyperexponential gaps
// above 1, with and without a measured curve. The default grid takes two
// loads of each; the long one five.
func desCases(long bool) []desCase {
	moderate := desCase{ttft: pct(300, 600), tpot: pct(20, 30), out: pct(200, 500), maxTokens: 1000}
	high := desCase{ttft: pct(300, 1200), tpot: pct(20, 40), out: pct(150, 900), maxTokens: 2000}
	loads := []float64{0.8, 20}
	if long {
		loads = []float64{0.8, 4, 20, 100, 250}
	}
	var out []desCase
	for _, v := range []struct {
		name string
		c    desCase
	}{{"moderate", moderate}, {"high", high}} {
		for _, scv := range []float64{0, 0.5, 1, 2, 4, 9} {
			laws := []string{""}
			if scv > 1 {
				laws = []string{lawGamma, lawH2}
			}
			for _, law := range laws {
				for _, load := range loads {
					c := v.c
					c.name = fmt.Sprintf("%s service, scv %g %s, A %g", v.name, scv, law, load)
					c.scv, c.law, c.load = scv, law, load
					out = append(out, c)
				}
			}
		}
	}
	for _, scv := range []float64{0, 1, 4} {
		for _, load := range []float64{2, 10} {
			c := moderate
			c.name = fmt.Sprintf("curve, scv %g, A %g", scv, load)
			c.curve, c.scv, c.law, c.load = true, scv, lawGamma, load
			out = append(out, c)
		}
	}
	// A pool of one: light load and a loose target.
	one := moderate
	one.name, one.scv, one.load, one.slack = "one slot, scv 1, A 0.2", 1, 0.2, 20
	lone := moderate
	lone.name, lone.scv, lone.law, lone.load, lone.slack = "one slot, scv 9 gamma, A 0.2", 9, lawGamma, 0.2, 40
	// Light traffic with evenly spaced arrivals and long answers, where a
	// wait for the one slot is rare and long.
	even := moderate
	even.out, even.maxTokens = pct(600, 1800), 2340
	even.name, even.scv, even.load, even.slack = "one slot, scv 0, A 0.3, long answers", 0, 0.3, 20
	out = append(out, one, lone, even)
	if !long {
		big := moderate
		big.name, big.scv, big.law, big.load = "about 300 slots, scv 4 gamma, A 250", 4, lawGamma, 250
		out = append(out, big)
	}
	return out
}

// TestPlanAgainstSimulation holds the plan's queueing predictions to a
// discrete-event simulation of the pool on every desCase: at min_pool
// (and, on the long grid, two slots above it) the predicted TTFT p95
// (wait included) and E2E p95 are never more than 5 % below the
// simulation's, and at most 20 % above it for gaps of the law planner
// simulate draws (gamma; the plan takes the worse of gamma and the
// hyperexponential at the same scv, so it over-predicts for the latter);
// and at min_pool the simulated p95s meet the SLOs.
func TestPlanAgainstSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates millions of requests")
	}
	cases := desCases(*desLong)
	if len(cases) < 40 {
		t.Fatalf("only %d scenarios", len(cases))
	}
	e := New(Options{})
	ctx := context.Background()
	var ratios []float64
	for _, d := range cases {
		t.Run(d.name, func(t *testing.T) {
			ws, err := e.Workloads(ctx, d.scenario(1))
			if err != nil {
				t.Fatal(err)
			}
			// λ for the offered load at the pool the load suggests.
			guess := max(1, int(d.load/0.9))
			lambda := d.load / ws[0].At(guess).Mean()
			s := d.scenario(lambda)
			ttft, _ := e.PredictAt(ctx, s, "c", guess)
			slack := d.slack
			if slack == 0 {
				slack = 2
			}
			s.Classes[0].SLO = &scenario.SLO{TTFTP95Ms: slack * ttft.TTFTP95Ms, E2EP95Ms: (1 + 0.15*slack) * ttft.E2EP95Ms}
			p, err := e.Plan(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			mp := p.Classes[0].MinPool
			if mp == nil {
				t.Fatalf("no min_pool: %s", p.Classes[0].Explanation)
			}
			pools := []int{*mp}
			if *desLong {
				pools = append(pools, *mp+2)
			}
			for _, want := range pools {
				at := s
				at.Policy.MaxPool = want
				cp := mustPlan(t, at).Classes[0]
				pool := cp.Pool // a curve's SLO budget may hold it below want
				if pool < *mp {
					t.Fatalf("pool %d below min_pool %d", pool, *mp)
				}
				w, _ := e.Workloads(ctx, at)
				rho := lambda * w[0].At(pool).Mean() / float64(pool)
				n := 200000
				if *desLong {
					n = 600000
				}
				if rho > 0.85 || d.scv > 2 {
					n *= 2
				}
				// The plan's percentiles are over the requests its client
				// serves: the simulation sheds as the client does.
				shed := math.Inf(1)
				if a := cp.Admission.MaxQueueWaitMs; a != nil {
					shed = *a / 1000
				}
				sim := simulatePool(w[0], pool, lambda, d.scv, d.law, n, 11, shed)
				for _, m := range []struct {
					name      string
					pred, sim float64
				}{{"TTFT p95", *cp.Predicted.TTFTP95Ms, sim.ttft95 * 1000}, {"E2E p95", *cp.Predicted.E2EP95Ms, sim.e2e95 * 1000}} {
					r := m.pred / m.sim
					upper := 1.2
					if d.law == lawH2 {
						upper = math.Inf(1)
					} else {
						ratios = append(ratios, r)
					}
					if r < 0.95 || r > upper {
						t.Errorf("pool %d (ρ %.2f): predicted %s %.0f ms, simulated %.0f ms (%+.0f %%)", pool, rho, m.name, m.pred, m.sim, 100*(r-1))
					}
				}
				if want == *mp {
					slo := s.Classes[0].SLO
					if sim.ttft95*1000 > slo.TTFTP95Ms || sim.e2e95*1000 > slo.E2EP95Ms {
						t.Errorf("at min_pool %d the simulation misses the SLO: TTFT p95 %.0f (target %.0f), E2E p95 %.0f (target %.0f)",
							pool, sim.ttft95*1000, slo.TTFTP95Ms, sim.e2e95*1000, slo.E2EP95Ms)
					}
				}
			}
		})
	}
	slices.Sort(ratios)
	t.Logf("predicted/simulated p95 over %d comparisons: min %.3f, median %.3f, max %.3f", len(ratios), ratios[0], ratios[len(ratios)/2], ratios[len(ratios)-1])
}

// TestShedShareAgainstSimulation holds the plan's shedding to the
// discrete-event simulation, in pools that shed from a fraction of a
// percent to most of their requests: a tight E2E target (its p95 without
// queueing plus half a mean service time) makes the client shed a
// request that waits half a mean service time for a slot. Arrivals are
// evenly spaced, Poisson and gamma of scv 4 and 9, on one slot and on
// about 30. At ρ 0.55, 0.75 and 0.95 the predicted share shed is within
// shedBand of the simulated one (above it, up to half again for evenly
// spaced arrivals); where it is at most a quarter, the
// predicted TTFT p95 and E2E p95 over the requests served are never more
// than 5 % below the simulation's, and for arrivals at least as variable
// as Poisson at most 20 % above it (evenly spaced arrivals on one slot
// wait less than the plan's law for smooth arrivals says, shedding or
// not).
func TestShedShareAgainstSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates millions of requests")
	}
	e := New(Options{})
	ctx := context.Background()
	moderate := desCase{ttft: pct(300, 600), tpot: pct(20, 30), out: pct(200, 500), maxTokens: 1000}
	var cases []desCase
	for _, scv := range []float64{0, 1, 4, 9} {
		for _, load := range []float64{0.8, 20} {
			c := moderate
			c.scv, c.law, c.load = scv, lawGamma, load
			c.name = fmt.Sprintf("scv %g, A %g", scv, load)
			cases = append(cases, c)
		}
	}
	for _, d := range cases {
		t.Run(d.name, func(t *testing.T) {
			ws, err := e.Workloads(ctx, d.scenario(1))
			if err != nil {
				t.Fatal(err)
			}
			for _, rho := range []float64{0.55, 0.75, 0.95} {
				pool := max(1, int(math.Round(d.load/rho)))
				mean := ws[0].At(pool).Mean()
				lambda := rho * float64(pool) / mean
				s := d.scenario(lambda)
				e2e, err := ws[0].QuantileAt(ctx, pool, false, 0.95)
				if err != nil {
					t.Fatal(err)
				}
				s.Classes[0].SLO = &scenario.SLO{E2EP95Ms: 1000 * (e2e + mean/2)}
				s.Policy.MaxPool = pool
				cp := mustPlan(t, s).Classes[0]
				if cp.Pool != pool || cp.Admission.MaxQueueWaitMs == nil {
					t.Fatalf("pool %d, want %d with shedding", cp.Pool, pool)
				}
				w, _ := e.Workloads(ctx, s)
				n := 400000
				if d.scv > 2 {
					n *= 2
				}
				sim := simulatePool(w[0], pool, lambda, d.scv, d.law, n, 13, *cp.Admission.MaxQueueWaitMs/1000)
				got := cp.Predicted.ShedShare
				t.Logf("pool %d (ρ %.2f): shed predicted %.4f, simulated %.4f; TTFT %.0f/%.0f, E2E %.0f/%.0f ms",
					pool, rho, got, sim.shedShare, inf(cp.Predicted.TTFTP95Ms), sim.ttft95*1000, inf(cp.Predicted.E2EP95Ms), sim.e2e95*1000)
				over := shedBand(sim.shedShare)
				if d.scv < 1 {
					// The wait's law puts the probability of waiting for
					// evenly spaced arrivals above the simulated one, so
					// a short patience sheds up to half again as many
					// as predicted, on the safe side.
					over = math.Max(over, 0.5*sim.shedShare)
				}
				if got > sim.shedShare+over || got < sim.shedShare-shedBand(sim.shedShare) {
					t.Errorf("pool %d (ρ %.2f): predicted shed share %.4f, simulated %.4f", pool, rho, got, sim.shedShare)
				}
				if got > 0.25 {
					// A bursty pool that sheds more than a quarter of its
					// requests serves most of the rest after a wait near
					// τ, more of them than the wait's law given W ≤ τ puts
					// there: its percentiles come out up to 11 % below.
					continue
				}
				upper := 1.2
				if d.scv < 1 {
					upper = math.Inf(1)
				}
				for _, m := range []struct {
					name      string
					pred, sim float64
				}{{"TTFT p95", inf(cp.Predicted.TTFTP95Ms), sim.ttft95 * 1000}, {"E2E p95", inf(cp.Predicted.E2EP95Ms), sim.e2e95 * 1000}} {
					if r := m.pred / m.sim; r < 0.95 || r > upper {
						t.Errorf("pool %d (ρ %.2f): predicted %s %.0f ms over the requests served, simulated %.0f ms (%+.0f %%)", pool, rho, m.name, m.pred, m.sim, 100*(r-1))
					}
				}
			}
		})
	}
}

// inf is *p, +Inf for nil (a queue without bound).
func inf(p *float64) float64 {
	if p == nil {
		return math.Inf(1)
	}
	return *p
}

// shedBand is how far a predicted share shed may be from a simulated one,
// sim: 0.75 percentage points, or a quarter of it where that is more. The
// plan's wait law for bursty arrivals is the worse of gamma and
// hyperexponential gaps (model.Queue.Wait), so it sheds up to about half
// again as many as gamma gaps do below a few percent; a model that
// ignores shedding, or that misses its law, fails it by far.
func shedBand(sim float64) float64 { return math.Max(0.0075, 0.25*sim) }

// TestShedShareNearTheLimitAgainstSimulation holds the plan's shedding to
// the discrete-event simulation where it decides whether a class fits:
// for arrivals evenly spaced, of scv ½ and Poisson, on pools of 1, 8 and
// 30 at ρ 0.7 and 0.9, the patience is set where the plan predicts 1 %
// shed (where a client that sheds every request that would wait sheds
// more), and the simulation of that client sheds at most a fifth more
// and at least four fifths as much: a plan that turned away classes
// that hold, as one whose drain rate does not fade towards heavy traffic
// did at ρ 0.9, fails it as one that lets through classes that shed too
// much does.
func TestShedShareNearTheLimitAgainstSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates millions of requests")
	}
	e := New(Options{})
	ctx := context.Background()
	for _, scv := range []float64{0, 0.5, 1} {
		d := desCase{ttft: pct(300, 600), tpot: pct(20, 30), out: pct(200, 500), maxTokens: 1000, scv: scv, law: lawGamma}
		ws, err := e.Workloads(ctx, d.scenario(1))
		if err != nil {
			t.Fatal(err)
		}
		for _, pool := range []int{1, 8, 30} {
			for _, rho := range []float64{0.7, 0.9} {
				mean := ws[0].At(pool).Mean()
				lambda := rho * float64(pool) / mean
				e2e, err := ws[0].QuantileAt(ctx, pool, false, 0.95)
				if err != nil {
					t.Fatal(err)
				}
				s := d.scenario(lambda)
				s.Policy.MaxPool = pool
				plan := func(tau float64) ClassPlan {
					s.Classes[0].SLO = &scenario.SLO{E2EP95Ms: 1000 * (e2e + tau)}
					return mustPlan(t, s).Classes[0]
				}
				if plan(0).Predicted.ShedShare <= 0.01 {
					continue // sheds little whatever its patience
				}
				// The least patience at which the plan sheds at most 1 %.
				lo, hi := 0.0, 30*mean
				for hi-lo > 1e-3*mean {
					if mid := (lo + hi) / 2; plan(mid).Predicted.ShedShare > 0.01 {
						lo = mid
					} else {
						hi = mid
					}
				}
				cp := plan(hi)
				if cp.Pool != pool || cp.Admission.MaxQueueWaitMs == nil {
					t.Fatalf("pool %d, want %d with shedding", cp.Pool, pool)
				}
				w, err := e.Workloads(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				sim := simulatePool(w[0], pool, lambda, scv, lawGamma, 800000, 17, *cp.Admission.MaxQueueWaitMs/1000)
				got := cp.Predicted.ShedShare
				t.Logf("scv %g, pool %d (ρ %.1f), τ %.2f E[S]: shed predicted %.4f, simulated %.4f", scv, pool, rho, hi/mean, got, sim.shedShare)
				if sim.shedShare > 1.2*got || sim.shedShare < 0.8*got {
					t.Errorf("scv %g, pool %d (ρ %.1f): predicted shed share %.4f, simulated %.4f", scv, pool, rho, got, sim.shedShare)
				}
			}
		}
	}
}
