package plan

import (
	"testing"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/testutil"
)

// example is a shipped example scenario.
var example = testutil.Example

func TestEveryExamplePlans(t *testing.T) {
	names := planner.ExampleNames()
	if len(names) < 4 {
		t.Fatalf("only %d examples", len(names))
	}
	infeasible := 0
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			s := example(t, name)
			p := mustPlan(t, s)
			encode(t, p)
			for ci, cp := range p.Classes {
				if cp.Feasible {
					continue
				}
				infeasible++
				if len(cp.Remedies) == 0 {
					t.Fatalf("%s is infeasible with no remedies", cp.Name)
				}
				fixed := mustPlan(t, applyRemedies(t, s, ci, cp.Remedies)).Classes[ci]
				if !fixed.Feasible {
					t.Fatalf("%s: remedies %+v did not make it fit (pool %d, min_pool %v)", cp.Name, cp.Remedies, fixed.Pool, fixed.MinPool)
				}
			}
		})
	}
	if infeasible == 0 {
		t.Error("no example shows an infeasible class with remedies")
	}
}

func TestDailyLimitExample(t *testing.T) {
	cp := mustPlan(t, example(t, "daily-limit-batch")).Classes[0]
	if cp.Feasible || cp.BindingConstraint != "rpd" || cp.Batch == nil || cp.Batch.DailyLimits[0].OK {
		t.Fatalf("daily-limit-batch: feasible %v bound by %s batch %+v; want the rpd limit to bind and fail", cp.Feasible, cp.BindingConstraint, cp.Batch)
	}
}

// TestMeasuredCurveExampleSharesTheKnee holds the engine to the worked
// example of docs/concepts.md ("Endpoints shared by classes"): both classes
// send to one endpoint, whose budget is ⌊0.7 × 24⌋ = 16 (the smallest knee
// safety of its classes, the interactive assistant's); the assistant
// reserves its min_pool and reports takes the rest, so the pools add up to
// 16 and neither is bound by the key's rpm, which the endpoint cannot come
// near; latency is predicted at what the classes keep in flight: reports
// its pool of 4, the assistant its 2 req/s × 4.0 s busy slots and half a
// standard deviation more, 9, 13 in all.
func TestMeasuredCurveExampleSharesTheKnee(t *testing.T) {
	p := mustPlan(t, example(t, "measured-curve"))
	assistant, reports := p.Classes[0], p.Classes[1]
	if len(p.Endpoints) != 1 || p.Endpoints[0].Budget == nil || *p.Endpoints[0].Budget != 16 || p.Endpoints[0].BudgetConstraint != "knee" {
		t.Fatalf("endpoints %+v, want one with a knee budget of 16", p.Endpoints)
	}
	if assistant.Pool+reports.Pool > 16 || p.Endpoints[0].TotalPool != assistant.Pool+reports.Pool {
		t.Fatalf("assistant %d + reports %d, endpoint total %d: want at most 16", assistant.Pool, reports.Pool, p.Endpoints[0].TotalPool)
	}
	if assistant.BindingConstraint != "knee" || reports.BindingConstraint != "knee" {
		t.Errorf("assistant bound by %s, reports by %s; want both by the shared knee", assistant.BindingConstraint, reports.BindingConstraint)
	}
	if !assistant.Feasible || assistant.Pool != *assistant.MinPool || reports.Pool != 16-*assistant.MinPool {
		t.Errorf("assistant pool %d min_pool %d, reports %d: the assistant reserves its min_pool, reports takes the rest", assistant.Pool, *assistant.MinPool, reports.Pool)
	}
	if l := p.Endpoints[0].Load; l == nil || *l != 13 {
		t.Errorf("latency predicted at %v in flight, want 13", l)
	}
}

// TestWorkedExampleInConcepts holds the engine to the numbers worked by hand
// in docs/concepts.md for docs/examples/chat.yaml.
func TestWorkedExampleInConcepts(t *testing.T) {
	cp := mustPlan(t, example(t, "chat")).Classes[0]
	if cp.Predicted.MeanServiceMs != 3879.7 {
		t.Errorf("E[S] = %g ms, want 3,879.7", cp.Predicted.MeanServiceMs)
	}
	for name, want := range map[string]int{"rpm": 174, "tpm": 39} {
		if c := ceiling(cp, name); c == nil || *c.MaxPool != want {
			t.Errorf("%s ceiling %+v, want %d", name, c, want)
		}
	}
	if ceiling(cp, "slo_ttft").MaxPool != nil || ceiling(cp, "slo_e2e").MaxPool != nil {
		t.Error("SLO ceilings should be unbounded")
	}
	if cp.Pool != 39 || cp.BindingConstraint != "tpm" || *cp.MinPool != 12 || !cp.Feasible {
		t.Errorf("pool %d by %s, min_pool %d, feasible %v; want 39 by tpm, 12, true", cp.Pool, cp.BindingConstraint, *cp.MinPool, cp.Feasible)
	}
	if cp.TruncationRisk != 0.0105 || cp.Pacing.RateRPS != 10.1056 || cp.Pacing.Burst != 10 {
		t.Errorf("truncation %g pacing %+v", cp.TruncationRisk, cp.Pacing)
	}
}
