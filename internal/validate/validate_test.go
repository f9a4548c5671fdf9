package validate

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/sim"
)

// matched is a scenario whose latency is the simulator's below: TTFT 100
// ms, TPOT 10 ms whatever the load, 8 output tokens; a knee of 4 binds the
// batch class's pool at 4.
const matched = `
quotas: [{name: k, rpm: 100000}]
latency: {ttft_ms: {fixed: 100}, tpot_ms: {fixed: 10}, knee: 4}
classes:
  - name: jobs
    quota: k
    mode: batch
    input_tokens: {fixed: 64}
    output_tokens: {fixed: 8}
    max_tokens: 8
`

func simURL(t *testing.T, cfg sim.Config) string {
	t.Helper()
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func planOf(t *testing.T, text string) (scenario.Scenario, *plan.Plan) {
	t.Helper()
	sc, err := scenario.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Compute(sc)
	if err != nil {
		t.Fatal(err)
	}
	return sc, p
}

func run(t *testing.T, text string, cfg sim.Config) *Report {
	t.Helper()
	sc, p := planOf(t, text)
	rep, err := Run(context.Background(), sc, p, Options{
		Probe:           probe.Config{BaseURL: simURL(t, cfg), Model: sim.DefaultModel, Pause: -1, Budget: probe.Budget{MaxRequests: 200}},
		RequestsPerStep: 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestMatchedSimulatorValidates runs against a simulator with the
// scenario's latency profile: predicted and measured throughput agree
// within 15 % at the pool and at 1.25 × it, and the verdict is ok.
func TestMatchedSimulatorValidates(t *testing.T) {
	rep := run(t, matched, sim.Config{MaxNumSeqs: 64, TTFT: 100 * time.Millisecond, ITL: 10 * time.Millisecond, ITLGrowth: sim.NoGrowth})
	if len(rep.Classes) != 1 {
		t.Fatalf("%d classes", len(rep.Classes))
	}
	c := rep.Classes[0]
	if c.Pool != 4 || c.InputTokens != 64 || c.OutputTokens != 8 || len(c.Points) != 2 || c.Points[1].Concurrency != 5 {
		t.Fatalf("class %+v", c)
	}
	for _, pt := range c.Points {
		if pt.Measured == nil {
			t.Fatalf("nothing measured at %d", pt.Concurrency)
		}
		e := pt.RelativeErrorPct.ThroughputRPS
		t.Logf("c=%d predicted %.2f req/s, measured %.2f (%+.1f %%); E2E p95 %.0f vs %.0f ms", pt.Concurrency,
			pt.Predicted.ThroughputRPS, pt.Measured.ThroughputRPS, e, pt.Predicted.E2EP95Ms, pt.Measured.E2EP95Ms)
		if e < -15 || e > 15 {
			t.Errorf("at %d the throughput is %+.1f %% off the prediction", pt.Concurrency, e)
		}
		if pt.Measured.RateLimited != 0 || pt.Measured.Errors != 0 || pt.Measured.MeanOutputTokens != 8 {
			t.Errorf("at %d: %+v", pt.Concurrency, pt.Measured)
		}
	}
	if c.Verdict != VerdictOK || rep.Verdict != VerdictOK {
		t.Fatalf("verdict %s / %s: %v", c.Verdict, rep.Verdict, c.Reasons)
	}
}

// TestSlowerSimulatorFails runs the same plan against a simulator twice
// as slow as the scenario claims: the verdict says so.
func TestSlowerSimulatorFails(t *testing.T) {
	rep := run(t, matched, sim.Config{MaxNumSeqs: 64, TTFT: 200 * time.Millisecond, ITL: 20 * time.Millisecond, ITLGrowth: sim.NoGrowth})
	c := rep.Classes[0]
	if c.Verdict != VerdictFails || rep.Verdict != VerdictFails {
		t.Fatalf("verdict %s / %s: %v", c.Verdict, rep.Verdict, c.Reasons)
	}
	if !strings.Contains(c.Reasons[0], "below the predicted") || c.Points[0].RelativeErrorPct.ThroughputRPS > -30 {
		t.Errorf("reasons %v, error %+v", c.Reasons, c.Points[0].RelativeErrorPct)
	}
}

func TestJudge(t *testing.T) {
	sc, _ := planOf(t, matched+"    slo: {e2e_p95_ms: 1000}\n")
	point := func(c int, pred, meas float64, limited, errors int) Point {
		return Point{Concurrency: c, Predicted: plan.Prediction{ThroughputRPS: pred},
			Measured:         &Measured{OK: 10, ThroughputRPS: meas, RateLimited: limited, Errors: errors, E2EP95Ms: 500, MeanOutputTokens: 8},
			RelativeErrorPct: &Errors{ThroughputRPS: relPct(meas, pred)}}
	}
	for _, tc := range []struct {
		name    string
		binding string
		at, hi  Point
		want    string
	}{
		{"within tolerance", "knee", point(4, 10, 9.5, 0, 0), point(5, 12.5, 12, 0, 0), VerdictOK},
		{"slower at the pool", "knee", point(4, 10, 8, 0, 0), point(5, 12.5, 12, 0, 0), VerdictFails},
		{"429 at the pool", "knee", point(4, 10, 10, 3, 0), point(5, 12.5, 12, 0, 0), VerdictFails},
		{"errors at the pool", "knee", point(4, 10, 10, 0, 1), point(5, 12.5, 12, 0, 0), VerdictFails},
		{"faster at the pool", "knee", point(4, 10, 12, 0, 0), point(5, 12.5, 15, 0, 0), VerdictDegraded},
		{"off above the pool", "knee", point(4, 10, 10, 0, 0), point(5, 12.5, 9, 0, 0), VerdictDegraded},
		{"429 above a knee-bound pool", "knee", point(4, 10, 10, 0, 0), point(5, 12.5, 12, 2, 0), VerdictDegraded},
		{"429 above a quota-bound pool", "rpm", point(4, 10, 10, 0, 0), point(5, 12.5, 12, 2, 0), VerdictOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := &ClassReport{Class: "jobs", Pool: 4, OutputTokens: 8, Points: []Point{tc.at, tc.hi}}
			judge(sc, plan.ClassPlan{Name: "jobs", BindingConstraint: tc.binding}, cr)
			if cr.Verdict != tc.want {
				t.Fatalf("verdict %s, want %s: %v", cr.Verdict, tc.want, cr.Reasons)
			}
		})
	}
	over := point(4, 10, 10, 0, 0)
	over.Measured.E2EP95Ms = 1500
	cr := &ClassReport{Class: "jobs", Pool: 4, OutputTokens: 8, Points: []Point{over, point(5, 12.5, 12.5, 0, 0)}}
	judge(sc, plan.ClassPlan{Name: "jobs", BindingConstraint: "knee"}, cr)
	if cr.Verdict != VerdictFails || !strings.Contains(cr.Reasons[0], "above the SLO of 1000 ms") {
		t.Fatalf("SLO breach: %s %v", cr.Verdict, cr.Reasons)
	}
}

func TestOverall(t *testing.T) {
	for _, tc := range []struct {
		verdicts []string
		want     string
	}{
		{[]string{VerdictOK, VerdictOK}, VerdictOK},
		{[]string{VerdictOK, VerdictDegraded, VerdictSkipped}, VerdictDegraded},
		{[]string{VerdictDegraded, VerdictFails}, VerdictFails},
		{[]string{VerdictSkipped}, VerdictFails},
	} {
		var cs []ClassReport
		for i, v := range tc.verdicts {
			cs = append(cs, ClassReport{Class: string(rune('a' + i)), Verdict: v})
		}
		if got, _ := overall(cs); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.verdicts, got, tc.want)
		}
	}
}

func TestBudgetSkipsClasses(t *testing.T) {
	two := strings.Replace(matched, "classes:\n", "classes:\n  - {name: first, quota: k, mode: batch, input_tokens: {fixed: 64}, output_tokens: {fixed: 8}, max_tokens: 8}\n", 1)
	sc, p := planOf(t, two)
	rep, err := Run(context.Background(), sc, p, Options{
		Probe: probe.Config{BaseURL: simURL(t, sim.Config{MaxNumSeqs: 64, TTFT: 5 * time.Millisecond, ITL: time.Millisecond, ITLGrowth: sim.NoGrowth}),
			Model: sim.DefaultModel, Pause: -1, Budget: probe.Budget{MaxRequests: 30}},
		RequestsPerStep: 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Classes) != 2 || rep.Classes[1].Verdict != VerdictSkipped || !strings.Contains(rep.Classes[1].Reasons[0], "request budget") {
		t.Fatalf("classes %+v", rep.Classes)
	}
}
