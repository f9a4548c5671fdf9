package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/optional"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
)

// cancelAt cancels a run after its n-th finished request.
type cancelAt struct {
	n, seen int
	cancel  func()
}

func (o *cancelAt) StepStarted(int, int) {}
func (o *cancelAt) Record(measure.Record) {
	if o.seen++; o.seen == o.n {
		o.cancel()
	}
}
func (o *cancelAt) StepDone(measure.Step) {}

// outputs writes the run's files and returns steps.json's knee fields and
// curve.yaml ("" when none was written).
func outputs(t *testing.T, res *Result) (knee *int, lowerBound bool, curve string) {
	t.Helper()
	dir := t.TempDir()
	if _, err := WriteFiles(dir, res); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, StepsFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Knee           *int `json:"knee"`
		KneeLowerBound bool `json:"knee_lower_bound"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if c, err := os.ReadFile(filepath.Join(dir, CurveFile)); err == nil {
		curve = string(c)
	}
	return doc.Knee, doc.KneeLowerBound, curve
}

// planWith plans a batch class of rps requests per second, 8-token
// answers, on the curve file's latency.
func planWith(t *testing.T, curve string, rps float64) *plan.Plan {
	t.Helper()
	sc, err := scenario.Parse([]byte(fmt.Sprintf(`quotas: [{name: k, rpm: 1000000}]
classes:
  - {name: docs, quota: k, mode: batch, demand: {rps: %g}, input_tokens: {fixed: 32}, output_tokens: {fixed: 8}, max_tokens: 8}
`, rps) + curve))
	if err != nil {
		t.Fatalf("the curve file does not make a scenario: %v\n%s", err, curve)
	}
	p, err := plan.New(plan.Options{}).Plan(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLowerBoundKnee: a ladder 1, 2, 4 against 8 slots passes every step,
// and a ladder cancelled after its third step stops before any step
// failed: both write their last step as a knee that is a lower bound, in
// steps.json and in curve.yaml, and a plan on that curve whose demand
// needs about twice the knee (a request takes 270 ms) is held to it but
// told to probe further, never to add serving capacity. A
// probe cancelled in its first step measured one concurrency: no knee.
func TestLowerBoundKnee(t *testing.T) {
	for _, tc := range []struct {
		name     string
		steps    []int
		cancelAt int // the finished request after which to cancel; 0: never
		knee     int // 0: none
		stop     string
	}{
		{"every step passed", []int{1, 2, 4}, 0, 4, StopCompleted},
		{"cancelled after three steps", []int{1, 2, 4, 8}, 41 + 42 + 44, 4, StopCancelled},
		{"cancelled in the first step", []int{1, 2, 4}, 30, 0, StopCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bubble(t, slotsSim(8), func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				cfg := kneeConfig(base, dial)
				cfg.Steps = tc.steps
				var obs Observer
				if tc.cancelAt > 0 {
					cfg.Pause = optional.Of(time.Minute) // the cancel lands in the pause, or in the step
					obs = &cancelAt{n: tc.cancelAt, cancel: cancel}
				}
				res := run(t, ctx, cfg, obs)
				if res.StopReason != tc.stop {
					t.Fatalf("stop %s (%s), want %s", res.StopReason, res.StopDetail, tc.stop)
				}
				knee, lower, curve := outputs(t, res)
				if tc.knee == 0 {
					if knee != nil || lower || strings.Contains(curve, "knee") {
						t.Fatalf("knee %v, lower bound %v, curve.yaml:\n%s\nwant no knee", knee, lower, curve)
					}
					if p := planWith(t, curve, 1); len(p.Endpoints) != 1 || p.Endpoints[0].Knee != nil {
						t.Errorf("a plan without a knee has endpoints %+v", p.Endpoints)
					}
					return
				}
				if knee == nil || *knee != tc.knee || !lower {
					t.Fatalf("steps.json: knee %v, lower bound %v; want %d, a lower bound", knee, lower, tc.knee)
				}
				if !strings.Contains(curve, "  knee_lower_bound: true\n") || strings.Contains(curve, "knee_refined") {
					t.Errorf("curve.yaml lacks knee_lower_bound:\n%s", curve)
				}
				if tc.stop == StopCancelled && !strings.Contains(curve, "The run stopped (cancelled) before any step failed the knee rule") {
					t.Errorf("curve.yaml does not say why its knee is a lower bound:\n%s", curve)
				}
				p := planWith(t, curve, 2*float64(tc.knee)/0.27)
				cp := p.Classes[0]
				if cp.Feasible || cp.BindingConstraint != plan.ConstraintKnee || cp.Pool != tc.knee || !p.Endpoints[0].KneeLowerBound {
					t.Fatalf("plan: pool %d by %s, feasible %v, endpoint %+v", cp.Pool, cp.BindingConstraint, cp.Feasible, p.Endpoints[0])
				}
				if strings.Contains(cp.Explanation, "serving capacity") || !strings.Contains(cp.Explanation, "To fit: probe endpoint default further, to at least ") {
					t.Errorf("explanation: %s", cp.Explanation)
				}
			})
		})
	}
}

// TestPlanFromASearchUsesKneeRefined: the 12-slot search of
// TestKneeRefinedBetweenPowersOfTwo writes knee 16 and knee_refined 12 to
// curve.yaml, and a plan from it budgets the endpoint with 12.
func TestPlanFromASearchUsesKneeRefined(t *testing.T) {
	bubble(t, slotsSim(12), func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
		cfg := kneeConfig(base, dial)
		cfg.Search, cfg.SearchMax = true, optional.Of(64)
		knee, lower, curve := outputs(t, run(t, t.Context(), cfg, nil))
		if knee == nil || *knee != 16 || lower || !strings.Contains(curve, "  knee: 16\n  knee_refined: 12\n") {
			t.Fatalf("knee %v, lower bound %v, curve.yaml:\n%s", knee, lower, curve)
		}
		p := planWith(t, curve, 30)
		if e := p.Endpoints[0]; e.Knee == nil || *e.Knee != 12 || e.KneeField != plan.KneeFieldRefined {
			t.Errorf("endpoint %+v: want the budget of knee_refined 12", e)
		}
		if cp := p.Classes[0]; cp.Pool != 12 || cp.BindingConstraint != plan.ConstraintKnee {
			t.Errorf("pool %d by %s, want 12 by the refined knee", cp.Pool, cp.BindingConstraint)
		}
	})
}
