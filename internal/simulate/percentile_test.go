package simulate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/testutil"
)

// atP99 moves every SLO of a scenario to the same targets at percentile 99.
func atP99(sc scenario.Scenario) scenario.Scenario {
	sc.Classes = append([]scenario.Class(nil), sc.Classes...)
	for i, c := range sc.Classes {
		if c.SLO != nil {
			sc.Classes[i].SLO = &scenario.SLO{TTFTMs: c.SLO.TTFT(), E2EMs: c.SLO.E2E(), TaskE2EMs: c.SLO.TaskE2E(), Percentile: 99}
		}
	}
	return sc
}

// meetsAtP99 checks that every class of the run whose plan fits meets its
// SLO at p99 in the simulation, and counts the targets it checked.
func meetsAtP99(t *testing.T, r *Simulation, sc scenario.Scenario) int {
	t.Helper()
	n := 0
	for i, c := range r.Classes {
		slo := sc.Classes[i].SLO
		if slo == nil || !c.Feasible {
			continue
		}
		if c.Simulated.Percentile == nil || *c.Simulated.Percentile != 99 {
			t.Fatalf("%s: the simulation gives no values at p99: %+v", c.Name, c.Simulated)
		}
		for _, m := range []struct {
			name         string
			target       float64
			got, planned *float64
		}{
			{"TTFT", slo.TTFT(), c.Simulated.TTFTMsAtPercentile, c.Predicted.TTFTMsAtPercentile},
			{"E2E", slo.E2E(), c.Simulated.E2EMsAtPercentile, c.Predicted.E2EMsAtPercentile},
			{"task E2E", slo.TaskE2E(), c.Simulated.E2EMsAtPercentile, c.Predicted.E2EMsAtPercentile},
		} {
			if m.target <= 0 {
				continue
			}
			n++
			if m.got != nil && testing.Verbose() {
				t.Logf("%s %s: %.0f of %.0f ms (plan %v)", c.Name, m.name, *m.got, m.target, deref(m.planned))
			}
			if m.got == nil || *m.got > m.target {
				t.Errorf("%s: %s p99 %v ms in simulation (plan %v) over the %g ms target", c.Name, m.name, deref(m.got), deref(m.planned), m.target)
			}
		}
	}
	return n
}

// TestShippedExamplesAtP99MeetTheirSLO plans the shipped examples with
// their targets at p99 and holds every class that fits to them in its own
// simulation.
func TestShippedExamplesAtP99MeetTheirSLO(t *testing.T) {
	checked := 0
	for _, name := range []string{"chat", "chat-and-batch", "three-classes", "backfill", "priced", "measured-curve"} {
		sc := atP99(testutil.Example(t, name))
		sc.Policy.MonteCarloDraws = 200000
		r := run(t, sc, Options{DurationS: 4 * 3600})
		checked += meetsAtP99(t, r, sc)
	}
	if checked < 6 {
		t.Fatalf("only %d targets of fitting classes checked", checked)
	}
}

// TestRandomPlansAtP99MeetTheirSLO draws scenarios of lognormal latency
// and tokens, smooth, Poisson or bursty arrivals, and targets 5 % to 50 %
// above the p99 without queueing; each is planned at min_pool (the smallest pool the
// plan accepts) and simulated.
func TestRandomPlansAtP99MeetTheirSLO(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 16 scenarios")
	}
	rng := rand.New(rand.NewPCG(99, 1))
	u := func(lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }
	checked := 0
	for k := range 16 {
		ttft50, tpot50, in50, out50 := u(150, 800), u(10, 40), u(200, 3000), u(50, 400)
		scv := []float64{0.5, 1, 1, 2}[k%4]
		doc := fmt.Sprintf(`
quotas: [{name: key, rpm: 100000}]
latency: {ttft_ms: {p50: %.0f, p95: %.0f}, tpot_ms: {p50: %.1f, p95: %.1f}, prefill_ms_per_1k_tokens: %.1f}
classes:
  - {name: c, quota: key, mode: interactive, demand: {rps: %.2f}, arrival_scv: %g,
     input_tokens: {p50: %.0f, p95: %.0f}, output_tokens: {p50: %.0f, p95: %.0f}, max_tokens: 2000,
     slo: {ttft_ms: 1e7, e2e_ms: 1e8, percentile: 99}}
`, ttft50, ttft50*u(1.3, 3), tpot50, tpot50*u(1.2, 2), u(0, 60), u(0.5, 4), scv, in50, in50*u(1.2, 3), out50, out50*u(1.3, 3))
		sc := parse(t, doc)
		// A p99 of 20,000 draws rests on 200 of them: as for the shipped
		// examples, the plan takes 200,000, so that min_pool is the
		// model's and not its sampling's.
		sc.Policy.MonteCarloDraws = 200000
		// The p99s without queueing: the class alone, without demand,
		// at a pool of 1.
		alone := sc
		alone.Classes = []scenario.Class{sc.Classes[0]}
		alone.Classes[0].Demand, alone.Policy.MaxPool = nil, 1
		ap, err := engine.Plan(context.Background(), alone)
		if err != nil {
			t.Fatal(err)
		}
		pr := ap.Classes[0].Predicted
		sc.Classes[0].SLO = &scenario.SLO{TTFTMs: *pr.TTFTMsAtPercentile * u(1.05, 1.5), E2EMs: *pr.E2EMsAtPercentile * u(1.05, 1.3), Percentile: 99}
		p, err := engine.Plan(context.Background(), sc)
		if err != nil {
			t.Fatal(err)
		}
		cp := p.Classes[0]
		if cp.MinPool == nil || !cp.Feasible {
			continue
		}
		sc.Policy.MaxPool = *cp.MinPool
		r := run(t, sc, Options{DurationS: 4 * 3600})
		if n := meetsAtP99(t, r, sc); n > 0 {
			checked++
		} else {
			t.Logf("scenario %d: pool %d, feasible %v in the run", k, r.Classes[0].Pool, r.Classes[0].Feasible)
		}
	}
	t.Logf("%d of 16 scenarios fit at p99", checked)
	if checked < 10 {
		t.Fatalf("only %d of 16 scenarios fit at p99", checked)
	}
}

// TestEveryTargetIsAMissTheSchemaNames: each figure Targets holds a class
// to, at the 95th percentile or at its SLO's, and its predicted form, is
// one that a check's miss may name (plan.Miss's enum, which openapi.yaml
// declares).
func TestEveryTargetIsAMissTheSchemaNames(t *testing.T) {
	f, _ := reflect.TypeFor[plan.Miss]().FieldByName("Metric")
	enum := strings.Split(f.Tag.Get("enum"), ",")
	slo := &scenario.SLO{TTFTMs: 1, E2EMs: 1, TPOTMs: 1, TaskE2EMs: 1}
	for _, pct := range []*float64{nil, new(99.0)} {
		for _, tg := range Targets(slo, Simulated{Percentile: pct}) {
			if !slices.Contains(enum, tg.Metric) {
				t.Errorf("%s (percentile %v) is not in plan.Miss's enum %q", tg.Metric, pct, enum)
			}
			if pct != nil && !slices.Contains(enum, "predicted_"+tg.Metric) {
				t.Errorf("predicted_%s is not in plan.Miss's enum %q", tg.Metric, enum)
			}
		}
	}
}
