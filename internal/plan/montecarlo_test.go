package plan

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/scenario"
)

// TestPercentilesMatchBruteForce holds the engine's shortcuts (tails that
// select their rank from a subsample's bracket, TTFT tails shared by
// classes, samples drawn once on several cores and kept in caches) to the
// plain computation they replace: for every class of every shipped example
// and of random scenarios, the p95 of TTFT and of E2E at the planned pool
// equals the quantile of the whole Monte Carlo sample with the planned
// wait and the class's pacing wait at its key's buckets (its law at each
// draw's pacing uniform, exponential and input tokens; a request waits the
// longer of the two), drawn afresh from the same draws, whether the engine
// plans the scenario cold or after planning others that fill its caches;
// some of the paced tails are built from the tails without pacing and the
// few draws that wait.
func TestPercentilesMatchBruteForce(t *testing.T) {
	var scenarios []scenario.Scenario
	for _, name := range planner.ExampleNames() {
		scenarios = append(scenarios, example(t, name))
	}
	r := rand.New(rand.NewPCG(15, 15))
	for range 30 {
		scenarios = append(scenarios, randomScenario(r))
	}
	warm := New(Options{})
	sparse := 0 // paced tails built from the tails without pacing
	for si, s := range scenarios {
		for _, e := range []*Engine{New(Options{}), warm} {
			run, err := e.newRun(context.Background(), s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := run.solve(context.Background()); err != nil {
				t.Fatal(err)
			}
			for i, m := range run.models {
				pool := run.pools[i]
				if pool < 1 {
					continue
				}
				load := run.load(i)
				if m.fullLoad(pool, load) != load {
					// The draws that wait take a curve's service time at a
					// higher load: that percentile is a selection over all
					// draws already, with no shortcut to check.
					continue
				}
				svc := m.at(load)
				w := m.waitAt(pool, m.pacedOf(svc))
				first, total := make([]float64, m.draws.N), make([]float64, m.draws.N)
				svc.svc.Fill(m.draws, first, total)
				if m.task != nil {
					// An agent task's sample is drawn call by call; its
					// shortcuts are the tails over it.
					copy(first, svc.first)
					copy(total, svc.total)
				}
				var head []float64
				if m.lambda > 0 && m.pace.waits() && !m.pace.unstable {
					in := m.base.In.SampleAll(m.draws.ZIn)
					head = make([]float64, len(first))
					for k := range first {
						head[k] = m.pace.wait(m.draws.UP[k], m.draws.EP[k], in[k])
						first[k] += head[k]
						total[k] += head[k]
					}
				}
				for _, tc := range []struct {
					which percentile
					x     []float64
				}{{pctTTFT, first}, {pctE2E, total}} {
					got, err := m.p95(context.Background(), pool, load, tc.which)
					if err != nil {
						t.Fatal(err)
					}
					w := w
					if tc.which == pctTTFT && m.task != nil {
						w = m.task.firstCallWait(w) // only a task's first call waits for a slot
					}
					want := model.QuantileWithPacedWait(tc.x, head, m.draws, w, 0.95, make([]float64, m.draws.N))
					if math.IsInf(want, 1) && math.IsInf(got, 1) {
						continue
					}
					if math.Abs(got-want) > 1e-9*math.Abs(want) {
						t.Errorf("scenario %d, class %s at pool %d: p95 (%d) %g, brute force %g", si, s.Classes[i].Name, pool, tc.which, got, want)
					}
				}
				for _, tl := range m.pacedOf(svc).tails {
					if tl != nil && tl.Sparse() {
						sparse++
					}
				}
			}
		}
	}
	if sparse == 0 {
		t.Error("no paced tail was built from a tail without pacing: the test does not reach that shortcut")
	}
}
