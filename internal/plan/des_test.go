package plan

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
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
// variation scv: evenly spaced for 0, gamma (shape 1/scv) below 1,
// exponential at 1, and a balanced two-phase hyperexponential above.
func interarrival(r *rand.Rand, lambda, scv float64) func() float64 {
	switch {
	case scv == 0:
		return func() float64 { return 1 / lambda }
	case scv < 1:
		k := 1 / scv
		return func() float64 { return gammaDraw(r, k) / (k * lambda) }
	case scv == 1:
		return func() float64 { return r.ExpFloat64() / lambda }
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

// gammaDraw is a Gamma(k, 1) draw (Marsaglia and Tsang, ACM TOMS 26(3),
// 2000), with the boost k → k+1 for k < 1.
func gammaDraw(r *rand.Rand, k float64) float64 {
	if k < 1 {
		return gammaDraw(r, k+1) * math.Pow(r.Float64(), 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if math.Log(u) < x*x/2+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

// simResult is what the simulation measured, in seconds.
type simResult struct {
	ttft95, e2e95, wait95, waitMean float64
}

// simulatePool runs n arrivals of the class's workload through a pool of c
// at its endpoint's load (the pool's own, as in a plan of one class) after
// n/10 arrivals of warm-up.
func simulatePool(w Workload, c int, lambda, scv float64, n int, seed uint64) simResult {
	r := rand.New(rand.NewPCG(seed, 99))
	svc := w.At(c)
	gap := interarrival(r, lambda, scv)
	free := make(freeAt, c)
	heap.Init(&free)
	warm := n / 10
	ttft, e2e, wait := make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	t := 0.0
	for i := range n + warm {
		t += gap()
		start := math.Max(t, free[0])
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
	return simResult{ttft95: p95(ttft), e2e95: p95(e2e), wait95: p95(wait), waitMean: sum / float64(len(wait))}
}

// p95 is the type-7 95th percentile.
func p95(xs []float64) float64 {
	slices.Sort(xs)
	h := float64(len(xs)-1) * 0.95
	k := int(h)
	return xs[k] + (h-float64(k))*(xs[k+1]-xs[k])
}

func TestDESExplore(t *testing.T) {
	type sc struct {
		name        string
		ttft, tpot  scenario.Dist
		out         scenario.Dist
		maxTokens   int
		lambda, scv float64
		pool        int
		curve       bool
	}
	mk := func(x sc) (scenario.Scenario, Workload) {
		s := scenario.Scenario{
			Quotas:  []scenario.Quota{{Name: "k", RPM: 1e9}},
			Latency: scenario.Latency{TTFTMs: &x.ttft, TPOTMs: &x.tpot},
			Classes: []scenario.Class{{Name: "c", Quota: "k", Mode: "interactive", Demand: &scenario.Demand{RPS: x.lambda},
				InputTokens: fixed(500), OutputTokens: x.out, MaxTokens: x.maxTokens, ArrivalSCV: f(x.scv)}},
			Policy: scenario.Policy{MaxPool: x.pool},
		}
		ws, err := Workloads(s)
		if err != nil {
			t.Fatal(err)
		}
		return s, ws[0]
	}
	low := sc{ttft: pct(300, 400), tpot: pct(20, 24), out: pct(200, 260), maxTokens: 1000}
	high := sc{ttft: pct(300, 1200), tpot: pct(20, 40), out: pct(150, 900), maxTokens: 2000}
	for _, base := range []sc{low, high} {
		for _, scv := range []float64{0, 0.5, 1, 2, 4} {
			for _, pool := range []int{1, 3, 10, 40} {
				for _, rho := range []float64{0.5, 0.8, 0.93} {
					x := base
					x.scv, x.pool, x.lambda = scv, pool, 1
					s, w := mk(x)
					mean := w.At(pool).Mean()
					x.lambda = rho * float64(pool) / mean
					s, w = mk(x)
					p := mustPlan(t, s).Classes[0]
					sim := simulatePool(w, pool, x.lambda, scv, 400000, 7)
					t.Logf("var=%v scv=%g c=%d rho=%.2f  ttft %.0f/%.0f (%+.0f%%)  e2e %.0f/%.0f (%+.0f%%)  wait95 %.0f/%.0f  waitmean %.0f/%.0f",
						base.out.P95 != nil && *base.out.P95 > 500, scv, pool, rho,
						*p.Predicted.TTFTP95Ms, sim.ttft95*1000, 100*(*p.Predicted.TTFTP95Ms/(sim.ttft95*1000)-1),
						*p.Predicted.E2EP95Ms, sim.e2e95*1000, 100*(*p.Predicted.E2EP95Ms/(sim.e2e95*1000)-1),
						*p.Predicted.QueueWaitP95Ms, sim.wait95*1000, *p.Predicted.QueueWaitMeanMs, sim.waitMean*1000)
				}
			}
		}
	}
}
