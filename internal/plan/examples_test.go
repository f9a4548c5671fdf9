package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/scenario"
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

// TestDailyLimitShortOfABatch: a batch of 200,000 requests within
// 10 h, on a key active ten hours a day whose rpd (or tpd) share covers
// 90,000 of them, is not done in its window: its daily limit binds its
// pool, it does not fit, and every reason says so. Its explanation names
// the daily limit, never that the batch is done within its window or
// that it fits; its remedy raises the daily limit to what carries the
// batch, and its shedding keeps what the day's budget covers.
func TestDailyLimitShortOfABatch(t *testing.T) {
	for _, tc := range []struct{ limit, dim string }{
		{"rpd: 100000", "rpd"},
		{"tpd: 300000000", "tpd"},
	} {
		t.Run(tc.dim, func(t *testing.T) {
			doc := fmt.Sprintf(`quotas:
  - {name: batch-key, rpm: 10000, tpm: 5000000, %s, active_hours: 10}
latency:
  ttft_ms: {p50: 500, p95: 1500}
  tpot_ms: {p50: 15, p95: 25}
classes:
  - name: nightly
    quota: batch-key
    mode: batch
    demand: {requests: 200000, within_hours: 10}
    input_tokens: {p50: 1500, p95: 3000}
    output_tokens: {p50: 200, p95: 400}
    max_tokens: 600
`, tc.limit)
			s, err := scenario.Parse([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			cp := mustPlan(t, s).Classes[0]
			if cp.Batch == nil || len(cp.Batch.DailyLimits) != 1 || cp.Batch.DailyLimits[0].OK || cp.BindingConstraint != tc.dim {
				t.Fatalf("bound by %s, batch %+v; want a pool bound by %s, its daily limit short", cp.BindingConstraint, cp.Batch, tc.dim)
			}
			if cp.Batch.MeetsWindow {
				t.Errorf("meets_window true: the batch is not done in its window, its daily limit short")
			}
			d := cp.Batch.DailyLimits[0]
			if cp.Feasible {
				t.Errorf("a batch that its %s share covers %g of %g is feasible", tc.dim, d.Available, d.Needed)
			}
			for _, wrong := range []string{"within its 10 h window", fitsWith} {
				if strings.Contains(cp.Explanation, wrong) {
					t.Errorf("the explanation says %q beside its short %s: %s", wrong, tc.dim, cp.Explanation)
				}
			}
			for _, right := range []string{"It does not fit", "longer than its 10 h window", "Its share of " + tc.dim + " allows"} {
				if !strings.Contains(cp.Explanation, right) {
					t.Errorf("the explanation does not say %q: %s", right, cp.Explanation)
				}
			}
			if len(cp.Remedies) != 1 || cp.Remedies[0].Constraint != tc.dim || cp.Remedies[0].Path != "/quotas/0/"+tc.dim {
				t.Fatalf("remedies %+v, want one raising %s", cp.Remedies, tc.dim)
			}
			raised := s
			raised.Quotas = append([]scenario.Quota(nil), s.Quotas...)
			if tc.dim == "rpd" {
				raised.Quotas[0].RPD = cp.Remedies[0].Value
			} else {
				raised.Quotas[0].TPD = cp.Remedies[0].Value
			}
			if again := mustPlan(t, raised).Classes[0]; !again.Feasible {
				t.Errorf("with %s raised to %g the batch still does not fit: %s", tc.dim, cp.Remedies[0].Value, again.Explanation)
			}
			if sh := cp.Shed; sh == nil || sh.SustainableRPS > 200000/36000.0*d.Available/d.Needed+1e-9 || sh.SustainableRPS <= 0 {
				t.Errorf("shed %+v, want it to sustain at most the %g of %g the daily share covers", sh, d.Available, d.Needed)
			}
		})
	}
}
