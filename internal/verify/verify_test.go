package verify

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/optional"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/testutil"
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

// simProbe serves a simulator over an in-memory network, for a test under
// testing/synctest (the fake clock makes the measurements exact), and
// returns the base of a probe against it.
func simProbe(t *testing.T, cfg fakeendpoint.Config, budget probe.Budget) probe.Config {
	t.Helper()
	cfg.TimersOnly = true
	s, err := fakeendpoint.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base, dial := testutil.PipeServer(t, s)
	return probe.Config{BaseURL: base + "/v1", Model: fakeendpoint.DefaultModel, Pause: optional.Of(time.Duration(0)), Budget: budget, DialContext: dial}
}

func planOf(t *testing.T, text string) (scenario.Scenario, *plan.Plan) {
	t.Helper()
	sc, err := scenario.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.New(plan.Options{}).Plan(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	return sc, p
}

// run validates the plan of text against a simulator of cfg, under a
// fake clock.
func run(t *testing.T, text string, cfg fakeendpoint.Config) *Report {
	t.Helper()
	var rep *Report
	synctest.Test(t, func(t *testing.T) {
		sc, p := planOf(t, text)
		var err error
		rep, err = Run(context.Background(), sc, p, Options{Probe: simProbe(t, cfg, probe.Budget{MaxRequests: optional.Of(500)})})
		if err != nil {
			t.Fatal(err)
		}
	})
	return rep
}

// TestMatchedSimulatorValidates runs against a simulator with the
// scenario's latency profile: predicted and measured throughput agree
// at the pool and at 1.25 × it, and the verdict is ok.
func TestMatchedSimulatorValidates(t *testing.T) {
	rep := run(t, matched, fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 100 * time.Millisecond, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
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
		e := pt.RelativeErrorPct
		t.Logf("c=%d predicted %.2f req/s, measured %.2f (%+.1f %%); E2E p95 %.0f vs %.0f ms", pt.Concurrency,
			pt.Predicted.ThroughputRPS, pt.Measured.ThroughputRPS, e.ThroughputRPS, pt.Predicted.E2EP95Ms, pt.Measured.E2EP95Ms)
		// Fixed latencies and a fake clock: the measurement is the model's.
		if e.ThroughputRPS != 0 || e.TTFTP95Ms != 0 || e.E2EP95Ms != 0 {
			t.Errorf("at %d the errors are %+v, want none", pt.Concurrency, e)
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
// as slow as the scenario claims: the verdict says so, and which figures
// are off.
func TestSlowerSimulatorFails(t *testing.T) {
	rep := run(t, matched, fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 200 * time.Millisecond, ITL: 20 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
	c := rep.Classes[0]
	if c.Verdict != VerdictFails || rep.Verdict != VerdictFails {
		t.Fatalf("verdict %s / %s: %v", c.Verdict, rep.Verdict, c.Reasons)
	}
	all := strings.Join(c.Reasons, "\n")
	for _, want := range []string{"throughput at the pool of 4 is", "TTFT p95 at the pool of 4 is", "E2E p95 at 5 (1.25 × the pool) is"} {
		if !strings.Contains(all, want) {
			t.Errorf("reasons lack %q:\n%s", want, all)
		}
	}
	if c.Points[0].RelativeErrorPct.ThroughputRPS != -50 {
		t.Errorf("error %+v, want throughput −50 %%", c.Points[0].RelativeErrorPct)
	}
}

// TestTailUnderPredictedFails: throughput matches, but at 1.25 × the pool
// the TTFT p95 is half again the prediction: the verdict fails on it, as a
// throughput-only check would not.
func TestTailUnderPredictedFails(t *testing.T) {
	sc, _ := planOf(t, matched)
	at := Point{Concurrency: 4, Predicted: plan.Prediction{ThroughputRPS: 10, TTFTP95Ms: 100, E2EP95Ms: 170},
		Measured:         &Measured{OK: 40, ThroughputRPS: 10, TTFTP95Ms: 100, E2EP95Ms: 170, MeanOutputTokens: 8},
		RelativeErrorPct: &Errors{}}
	above := Point{Concurrency: 5, Predicted: plan.Prediction{ThroughputRPS: 12.5, TTFTP95Ms: 100, E2EP95Ms: 170},
		Measured:         &Measured{OK: 40, ThroughputRPS: 12.5, TTFTP95Ms: 150, E2EP95Ms: 190, MeanOutputTokens: 8},
		RelativeErrorPct: &Errors{TTFTP95Ms: 50, E2EP95Ms: relPct(190, 170)}}
	cr := &ClassReport{Class: "jobs", Pool: 4, OutputTokens: 8, Points: []Point{at, above}}
	judge(sc, plan.ClassPlan{Name: "jobs", BindingConstraint: "knee"}, cr, DefaultTolerancePct)
	if cr.Verdict != VerdictFails || !strings.Contains(cr.Reasons[0], "TTFT p95 at 5 (1.25 × the pool) is 150.0 ms, +50 % off the predicted 100.0 ms") {
		t.Fatalf("verdict %s: %v", cr.Verdict, cr.Reasons)
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
		{"within tolerance", "knee", point(4, 10, 8, 0, 0), point(5, 12.5, 15, 0, 0), VerdictOK},
		{"slower at the pool", "knee", point(4, 10, 7, 0, 0), point(5, 12.5, 12, 0, 0), VerdictFails},
		{"429 at the pool", "knee", point(4, 10, 10, 3, 0), point(5, 12.5, 12, 0, 0), VerdictFails},
		{"errors at the pool", "knee", point(4, 10, 10, 0, 1), point(5, 12.5, 12, 0, 0), VerdictFails},
		{"faster at the pool", "knee", point(4, 10, 13, 0, 0), point(5, 12.5, 15, 0, 0), VerdictFails},
		{"off above the pool", "knee", point(4, 10, 10, 0, 0), point(5, 12.5, 9, 0, 0), VerdictFails},
		{"429 above a knee-bound pool", "knee", point(4, 10, 10, 0, 0), point(5, 12.5, 12, 2, 0), VerdictDegraded},
		{"429 above a quota-bound pool", "rpm", point(4, 10, 10, 0, 0), point(5, 12.5, 12, 2, 0), VerdictOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := &ClassReport{Class: "jobs", Pool: 4, OutputTokens: 8, Points: []Point{tc.at, tc.hi}}
			judge(sc, plan.ClassPlan{Name: "jobs", BindingConstraint: tc.binding}, cr, DefaultTolerancePct)
			if cr.Verdict != tc.want {
				t.Fatalf("verdict %s, want %s: %v", cr.Verdict, tc.want, cr.Reasons)
			}
		})
	}
	over := point(4, 10, 10, 0, 0)
	over.Measured.E2EP95Ms = 1500
	cr := &ClassReport{Class: "jobs", Pool: 4, OutputTokens: 8, Points: []Point{over, point(5, 12.5, 12.5, 0, 0)}}
	judge(sc, plan.ClassPlan{Name: "jobs", BindingConstraint: "knee"}, cr, DefaultTolerancePct)
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

// TestBudgetSkipsClasses: two classes on one endpoint run together, so a
// budget that cannot pay for both steps at their pools skips both, saying
// how many requests they needed.
func TestBudgetSkipsClasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		two := strings.Replace(matched, "classes:\n", "classes:\n  - {name: first, quota: k, mode: batch, input_tokens: {fixed: 64}, output_tokens: {fixed: 8}, max_tokens: 8}\n", 1)
		sc, p := planOf(t, two)
		base := simProbe(t, fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 5 * time.Millisecond, ITL: time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth}, probe.Budget{MaxRequests: optional.Of(30)})
		rep, err := Run(context.Background(), sc, p, Options{Probe: base})
		if err != nil {
			t.Fatal(err)
		}
		want := "not run: the validation's request budget has 30 requests left, fewer than the 84 a step of classes first, jobs together needs"
		if len(rep.Classes) != 2 || rep.Verdict != VerdictFails {
			t.Fatalf("verdict %s, classes %+v", rep.Verdict, rep.Classes)
		}
		for _, c := range rep.Classes {
			if c.Verdict != VerdictSkipped || len(c.Reasons) != 1 || c.Reasons[0] != want || len(c.Points) != 0 {
				t.Errorf("class %s: %s %q, %d points; want skipped: %s", c.Class, c.Verdict, c.Reasons, len(c.Points), want)
			}
		}
	})
}

// TestCheck locates each problem of a validation at the option that
// causes it, or at the class whose plan does, before anything is sent.
func TestCheck(t *testing.T) {
	sc, p := planOf(t, matched)
	base := probe.Config{BaseURL: "http://127.0.0.1:9/v1", Model: "m"}
	caps := &probe.Caps{MaxConcurrency: 4, MaxRequests: 100, MaxTokens: 10_000, MaxDuration: time.Minute}
	for _, tc := range []struct {
		name       string
		opts       Options
		path, want string
	}{
		{"tolerance above the bound", Options{Probe: base, TolerancePct: optional.Of(999.5)}, "tolerance_pct", "outside (0, 999]"},
		{"tolerance of 0", Options{Probe: base, TolerancePct: optional.Of(0.0)}, "tolerance_pct", "outside (0, 999]"},
		{"steps too short", Options{Probe: base, RequestsPerStep: optional.Of(41)}, "requests_per_step", "37 measured at concurrency 4, fewer than the minimum max(40, 3c) = 40"},
		{"a deadline of 0", Options{Probe: func() probe.Config { c := base; c.Deadline = optional.Of(time.Duration(0)); return c }()}, "probe.deadline", "must be positive"},
		{"above the concurrency cap", Options{Probe: base, Caps: caps}, "classes[0]",
			"class jobs: it would run at 4 and 5 (its pool and 1.25 × it): 5 is above the server's limit probe.max_concurrency of 4"},
		{"a step size above the cap", Options{Probe: base, RequestsPerStep: optional.Of(200), Caps: &probe.Caps{MaxConcurrency: 8, MaxRequests: 100, MaxTokens: 10_000, MaxDuration: time.Minute}},
			"requests_per_step", "200 is above the server's limit probe.max_requests of 100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := Check(sc, p, tc.opts)
			if len(errs) != 1 || errs[0].Path != tc.path || !strings.Contains(errs[0].Message, tc.want) {
				t.Fatalf("problems %v, want one at %s saying %q", errs, tc.path, tc.want)
			}
		})
	}
	sct, pt := planOf(t, matched+"    task: {calls: {fixed: 1}}\n")
	if errs := Check(sct, pt, Options{Probe: base}); len(errs) != 1 || errs[0].Path != "classes[0]" || !strings.Contains(errs[0].Message, "class jobs: its tasks make 1 call on average") {
		t.Errorf("an agent task of one call: problems %v, want one at classes[0]", errs)
	}
	sct, pt = planOf(t, agentTask)
	if errs := Check(sct, pt, Options{Probe: base}); len(errs) != 0 {
		t.Errorf("an agent task class: problems %v", errs)
	}
	if errs := Check(sct, pt, Options{Probe: base, RequestsPerStep: optional.Of(12)}); len(errs) != 1 || errs[0].Path != "requests_per_step" ||
		!strings.Contains(errs[0].Message, "12 tasks with 12 of warm-up leave 0 measured") {
		t.Errorf("as many tasks as the pool: problems %v, want one at requests_per_step", errs)
	}
	if errs := Check(sct, pt, Options{Probe: base, Caps: caps}); len(errs) != 1 || errs[0].Path != "classes[0]" ||
		!strings.Contains(errs[0].Message, "class agent: its tasks at its pool of 12: 12 is above the server's limit probe.max_concurrency of 4") {
		t.Errorf("an agent task class above the concurrency cap: problems %v, want one at classes[0]", errs)
	}
	if errs := Check(sc, p, Options{Probe: base, Caps: &probe.Caps{MaxConcurrency: 8, MaxRequests: 100, MaxTokens: 10_000, MaxDuration: time.Minute}}); len(errs) > 0 {
		t.Errorf("a plan within the caps: %v", errs)
	}
}

// TestClassSizesAreBounded: a stored plan whose class asks for prompts
// past the probe's bound (300 million tokens once took the service's
// memory as the prompt was built) is refused at the class before any
// prompt is built or any request sent, and so is one whose answers are.
func TestClassSizesAreBounded(t *testing.T) {
	for _, tc := range []struct{ name, from, to, want string }{
		{"prompts", "input_tokens: {fixed: 64}", "input_tokens: {fixed: 2000000}", "prompts of its input p50: 2000000 tokens, above the most a probe sends, 1000000"},
		{"prompts of a stored plan", "input_tokens: {fixed: 64}", "input_tokens: {fixed: 300000000}", "300000000 tokens"},
		{"answers", "output_tokens: {fixed: 8}\n    max_tokens: 8", "output_tokens: {fixed: 2000000}", "answers of its mean output length: 2000000 tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sc, p := planOf(t, strings.Replace(matched, tc.from, tc.to, 1))
				s, err := fakeendpoint.New(fakeendpoint.Config{MaxNumSeqs: 64, TimersOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				base, dial := testutil.PipeServer(t, s)
				cfg := probe.Config{BaseURL: base + "/v1", Model: fakeendpoint.DefaultModel, DialContext: dial}
				rep, err := Run(context.Background(), sc, p, Options{Probe: cfg})
				var errs fieldpath.Errors
				if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Path != "classes[0]" || !strings.Contains(errs[0].Message, tc.want) {
					t.Fatalf("report %+v, error %v; want one problem at classes[0] saying %q", rep, err, tc.want)
				}
				if n := len(s.Arrivals()); n != 0 {
					t.Errorf("the endpoint got %d requests", n)
				}
			})
		})
	}
}

// shared is two classes on the default endpoint whose knee budget of 8
// they share, 4 each: with latency that does not follow the load, TTFT
// 100 ms and TPOT 10 ms, answers of 8 and 16 tokens.
const shared = `
quotas: [{name: k, rpm: 100000}]
latency: {ttft_ms: {fixed: 100}, tpot_ms: {fixed: 10}, knee: 8}
classes:
  - {name: jobs, quota: k, mode: batch, input_tokens: {fixed: 64}, output_tokens: {fixed: 8}, max_tokens: 8}
  - {name: docs, quota: k, mode: batch, input_tokens: {fixed: 32}, output_tokens: {fixed: 16}, max_tokens: 16}
`

// TestClassesRunTogether validates the two classes of one endpoint at
// once, at the endpoint's planned total of 8 (10 at 1.25 × the pools).
// Against 64 slots the measurement is the model's, for each class with
// its own request shape. Against 4 slots, each class alone (4 in flight)
// would fit them, so validating one class at a time passed this plan;
// together they queue for the slots, and the verdict fails, saying at
// which total.
func TestClassesRunTogether(t *testing.T) {
	rep := run(t, shared, fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 100 * time.Millisecond, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
	if rep.Verdict != VerdictOK || len(rep.Classes) != 2 {
		t.Fatalf("verdict %s, classes %+v", rep.Verdict, rep.Classes)
	}
	for k, c := range rep.Classes {
		other := rep.Classes[1-k].Class
		if c.Pool != 4 || c.Endpoint != "default" || len(c.Together) != 1 || c.Together[0] != other || c.StopReason != probe.StopCompleted {
			t.Errorf("class %s: pool %d, endpoint %s, together %v, stop %s", c.Class, c.Pool, c.Endpoint, c.Together, c.StopReason)
		}
		for i, pt := range c.Points {
			if want := []int{8, 10}[i]; pt.Load != want || pt.Predicted.Load != want || pt.Measured == nil {
				t.Fatalf("class %s point %d: load %d, measured %v; want %d in flight", c.Class, i, pt.Load, pt.Measured, want)
			}
			if e := pt.RelativeErrorPct; e.ThroughputRPS != 0 || e.TTFTP95Ms != 0 || e.E2EP95Ms != 0 {
				t.Errorf("class %s at %d: errors %+v, want none", c.Class, pt.Concurrency, e)
			}
			if pt.Measured.Requests < 40 || pt.Measured.MeanOutputTokens != float64(c.OutputTokens) {
				t.Errorf("class %s at %d: %+v", c.Class, pt.Concurrency, pt.Measured)
			}
		}
	}
	if rep.Classes[0].OutputTokens != 8 || rep.Classes[1].OutputTokens != 16 {
		t.Errorf("output lengths %d and %d, want each class's own", rep.Classes[0].OutputTokens, rep.Classes[1].OutputTokens)
	}

	rep = run(t, shared, fakeendpoint.Config{MaxNumSeqs: 4, TTFT: 100 * time.Millisecond, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
	if rep.Verdict != VerdictFails {
		t.Fatalf("8 in flight on 4 slots: verdict %s, %+v", rep.Verdict, rep.Classes)
	}
	for _, c := range rep.Classes {
		if c.Verdict != VerdictFails || !strings.Contains(strings.Join(c.Reasons, "\n"), "at the pool of 4 (8 in flight on its endpoint) is") {
			t.Errorf("class %s: %s %v", c.Class, c.Verdict, c.Reasons)
		}
	}
}

// TestLatencyAtThePlannedTotal: on an endpoint whose TTFT grows with what
// is in flight (half the base per request beyond the first, as the curve
// says), the classes' latency is predicted at their total, 450 ms at 8
// where each class's own 4 would give 250 ms, and measured there.
func TestLatencyAtThePlannedTotal(t *testing.T) {
	curve := strings.Replace(shared, "latency: {ttft_ms: {fixed: 100}, tpot_ms: {fixed: 10}, knee: 8}", `latency:
  knee: 8
  curve:
    - {concurrency: 1, ttft_p50_ms: 100, ttft_p95_ms: 100, tpot_p50_ms: 10, tpot_p95_ms: 10}
    - {concurrency: 4, ttft_p50_ms: 250, ttft_p95_ms: 250, tpot_p50_ms: 10, tpot_p95_ms: 10}
    - {concurrency: 8, ttft_p50_ms: 450, ttft_p95_ms: 450, tpot_p50_ms: 10, tpot_p95_ms: 10}
    - {concurrency: 10, ttft_p50_ms: 550, ttft_p95_ms: 550, tpot_p50_ms: 10, tpot_p95_ms: 10}
    - {concurrency: 16, ttft_p50_ms: 850, ttft_p95_ms: 850, tpot_p50_ms: 10, tpot_p95_ms: 10}`, 1)
	rep := run(t, curve, fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 100 * time.Millisecond, TTFTGrowth: 0.5, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
	for _, c := range rep.Classes {
		at := c.Points[0]
		if at.Predicted.TTFTP95Ms != 450 || at.Measured == nil || at.Measured.TTFTP95Ms != 450 || c.Verdict != VerdictOK {
			t.Errorf("class %s: predicted TTFT p95 %g, measured %+v, verdict %s %v; want 450 ms at 8 in flight", c.Class, at.Predicted.TTFTP95Ms, at.Measured, c.Verdict, c.Reasons)
		}
		if above := c.Points[1]; above.Predicted.TTFTP95Ms != 550 || above.Measured == nil || above.Measured.TTFTP95Ms != 550 {
			t.Errorf("class %s at 1.25 × the pool: predicted %g, measured %+v; want 550 ms at 10 in flight", c.Class, above.Predicted.TTFTP95Ms, above.Measured)
		}
	}
	if rep.Verdict != VerdictOK {
		t.Errorf("verdict %s: %s", rep.Verdict, rep.Summary)
	}
}

// TestVerdictUsesTheIntervals: a p95 measured 50 % above its prediction
// on a sample whose interval still holds the prediction is within the
// noise, and holds; the same p95 with an interval that lies 30 % above
// the prediction fails a 25 % tolerance, and passes a 35 % one.
func TestVerdictUsesTheIntervals(t *testing.T) {
	sc, _ := planOf(t, matched)
	point := func(c int, ci *measure.Interval) Point {
		pt := Point{Concurrency: c, Load: c, Predicted: plan.Prediction{ThroughputRPS: 10, TTFTP95Ms: 100, E2EP95Ms: 170},
			Measured: &Measured{OK: 40, ThroughputRPS: 10, TTFTP95Ms: 150, TTFTP95CI: ci, E2EP95Ms: 170, MeanOutputTokens: 8}}
		pt.IntervalErrorPct = intervalErrors(pt)
		return pt
	}
	for _, tc := range []struct {
		name string
		ci   *measure.Interval
		tol  float64
		want string
	}{
		{"the interval holds the prediction", &measure.Interval{Lo: 96, Hi: 160}, DefaultTolerancePct, VerdictOK},
		{"the interval lies beyond the tolerance", &measure.Interval{Lo: 130, Hi: 160}, DefaultTolerancePct, VerdictFails},
		{"the interval lies within a wider tolerance", &measure.Interval{Lo: 130, Hi: 160}, 35, VerdictOK},
		{"no interval: the point itself", nil, DefaultTolerancePct, VerdictFails},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := &ClassReport{Class: "jobs", Pool: 4, OutputTokens: 8, Points: []Point{point(4, tc.ci), point(5, tc.ci)}}
			judge(sc, plan.ClassPlan{Name: "jobs", BindingConstraint: "knee"}, cr, tc.tol)
			if cr.Verdict != tc.want {
				t.Fatalf("verdict %s, want %s: %v", cr.Verdict, tc.want, cr.Reasons)
			}
		})
	}
	if e := intervalErrors(point(4, &measure.Interval{Lo: 130, Hi: 160})); e.TTFTP95Ms != 30 || e.ThroughputRPS != 0 {
		t.Errorf("interval errors %+v, want TTFT p95 +30 %%", e)
	}
}

// TestSLOAttainment: each point reports the share of the class's requests
// that met its SLO's targets at once. The simulator's TTFT is exactly
// 100 ms and its E2E 170 ms: every request meets ttft 150 and e2e 1000,
// none meets ttft 99.
func TestSLOAttainment(t *testing.T) {
	sim := fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 100 * time.Millisecond, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth}
	for _, tc := range []struct {
		slo  string
		want float64
	}{{"{ttft_p95_ms: 150, e2e_p95_ms: 1000}", 1}, {"{ttft_p95_ms: 99}", 0}} {
		rep := run(t, matched+"    slo: "+tc.slo+"\n", sim)
		for _, pt := range rep.Classes[0].Points {
			s := pt.Measured.SLO
			if s == nil || s.Attainment != tc.want || s.Met != int(tc.want)*pt.Measured.Requests || s.AttainmentCI == nil {
				t.Errorf("slo %s at %d: %+v of %d requests, want an attainment of %g", tc.slo, pt.Concurrency, s, pt.Measured.Requests, tc.want)
			}
		}
	}
	for _, pt := range run(t, matched, sim).Classes[0].Points {
		if pt.Measured.SLO != nil {
			t.Errorf("a class without an SLO has an attainment: %+v", pt.Measured.SLO)
		}
	}
}

// agentTask is an agent task class whose latency is the simulator's
// below (TTFT 100 ms, TPOT 10 ms, 8 output tokens): 3 calls a task with
// 200 ms of tool time after each, so a task takes 3 × (100 + 7 × 10) +
// 3 × 200 = 1,110 ms; a knee of 8 calls in flight binds its pool at 12
// tasks (binomial(12, 0.46)'s p95 is 8).
const agentTask = `
quotas: [{name: k, rpm: 100000}]
latency: {ttft_ms: {fixed: 100}, tpot_ms: {fixed: 10}, knee: 8}
classes:
  - name: agent
    quota: k
    mode: batch
    input_tokens: {fixed: 64}
    output_tokens: {fixed: 8}
    max_tokens: 8
    task: {calls: {fixed: 3}, tool_ms: {fixed: 200}, tool_result_tokens: {fixed: 16}}
    slo: {ttft_ms: 500, task_e2e_ms: 2000, percentile: 99}
`

// TestAgentTaskValidates replays the plan's tasks against a simulator of
// the scenario's latency at the pool of tasks: each call's TTFT and the
// task's E2E at p99 are the model's, every task meets every target, and
// the verdict is ok.
func TestAgentTaskValidates(t *testing.T) {
	rep := run(t, agentTask, fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 100 * time.Millisecond, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
	c := rep.Classes[0]
	tc := c.Task
	if tc == nil || c.Pool != 12 || tc.TasksInFlight != 12 || tc.Calls != 3 || tc.ToolMs != 200 || tc.ToolResultTokens != 16 ||
		tc.Context != scenario.ContextAccumulate || tc.Percentile != 99 || len(c.Points) != 0 {
		t.Fatalf("class %+v, task %+v", c, tc)
	}
	if tc.Predicted != (TaskFigures{TTFTMs: 100, TaskE2EMs: 1110}) {
		t.Errorf("predicted %+v, want TTFT 100 ms and task E2E 1,110 ms", tc.Predicted)
	}
	m := tc.Measured
	if m == nil {
		t.Fatalf("nothing measured: %v", c.Reasons)
	}
	// 40 measured tasks after a round of 12 of warm-up, 3 calls each.
	if m.Tasks != 40 || m.FailedTasks != 0 || m.Calls != 120 || m.Errors != 0 || m.RateLimited != 0 ||
		m.TTFTMs != 100 || m.TaskE2EMs != 1110 || m.Goodput == nil || m.Goodput.Met != 40 || m.Goodput.Attainment != 1 {
		t.Errorf("measured %+v (goodput %+v)", m, m.Goodput)
	}
	if *tc.IntervalErrorPct != (TaskErrors{}) {
		t.Errorf("interval errors %+v, want none", tc.IntervalErrorPct)
	}
	if c.Verdict != VerdictOK || rep.Verdict != VerdictOK || !strings.Contains(rep.Summary, "every agent task class validated (1) measured TTFT and task E2E") {
		t.Fatalf("verdict %s / %s (%s): %v", c.Verdict, rep.Verdict, rep.Summary, c.Reasons)
	}
}

// TestAgentTaskTooTightFails: against a simulator three times as slow to
// the first token as the scenario says, TTFT and task E2E at p99 lie
// above the SLO, which the plan met on paper: the verdict fails, naming
// each metric, and no task meets the SLO.
func TestAgentTaskTooTightFails(t *testing.T) {
	tight := strings.Replace(agentTask, "slo: {ttft_ms: 500, task_e2e_ms: 2000, percentile: 99}", "slo: {ttft_ms: 250, task_e2e_ms: 1500, percentile: 99}", 1)
	rep := run(t, tight, fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 300 * time.Millisecond, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
	c := rep.Classes[0]
	if c.Verdict != VerdictFails || rep.Verdict != VerdictFails || c.Task == nil || c.Task.Measured == nil {
		t.Fatalf("verdict %s / %s: %v", c.Verdict, rep.Verdict, c.Reasons)
	}
	// Each call 300 + 70 ms: TTFT 300 ms, a task 3 × 370 + 600 = 1,710 ms.
	if m := c.Task.Measured; m.TTFTMs != 300 || m.TaskE2EMs != 1710 || m.Goodput.Met != 0 {
		t.Errorf("measured %+v", m)
	}
	all := strings.Join(c.Reasons, "\n")
	for _, want := range []string{
		"TTFT p99 at the pool of 12 tasks is 300 ms, above the SLO of 250 ms",
		"task E2E p99 at the pool of 12 tasks is 1710 ms, above the SLO of 1500 ms",
		"TTFT p99 at the pool of 12 tasks is 300.0 ms (95 %: 300.0–300.0), +200 % off the predicted 100.0 ms",
		"0 of 40 tasks (0.0 %) met every target of the SLO at once",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("reasons lack %q:\n%s", want, all)
		}
	}
}

// TestAgentTaskMissingTPOTFails: the plan predicts a TPOT of 8 ms, which
// meets the SLO's 8 ms (a TPOT that misses it would get no pool: slo_tpot
// binds at 0), and the tasks are as fast as predicted to their first
// tokens and within their task target, but every call's TPOT on the
// endpoint (10 ms) is over 8 ms: no task meets every target at once, so
// the class fails on its goodput, which no percentile of TTFT or task E2E
// names.
func TestAgentTaskMissingTPOTFails(t *testing.T) {
	tight := strings.Replace(agentTask, "slo: {ttft_ms: 500, task_e2e_ms: 2000, percentile: 99}", "slo: {ttft_ms: 500, task_e2e_ms: 2000, tpot_ms: 8, percentile: 99}", 1)
	tight = strings.Replace(tight, "tpot_ms: {fixed: 10}", "tpot_ms: {fixed: 8}", 1)
	rep := run(t, tight, fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 100 * time.Millisecond, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
	c := rep.Classes[0]
	if c.Verdict != VerdictFails || c.Task == nil || c.Task.Measured == nil || c.Task.Measured.Goodput == nil || c.Task.Measured.Goodput.Met != 0 {
		t.Fatalf("verdict %s: %v", c.Verdict, c.Reasons)
	}
	if all := strings.Join(c.Reasons, "\n"); !strings.Contains(all, "0 of 40 tasks (0.0 %) met every target of the SLO at once (goodput), fewer than the 99 % the SLO's p99 asks") {
		t.Errorf("reasons:\n%s", all)
	}
}

// TestAgentTaskContext: with 100 ms of prefill per 1,000 input tokens, a
// task whose context accumulates sends its last call 2 × (8 + 400) more
// input than its first, and one whose context is fresh sends every call
// the first input alone: the replay sends each as the class says, and
// each validates against its own prediction (TTFT p99 100 + 100 × 1.816
// ms and 100 + 100 ms).
func TestAgentTaskContext(t *testing.T) {
	const text = `
quotas: [{name: k, rpm: 100000}]
latency: {ttft_ms: {fixed: 100}, tpot_ms: {fixed: 10}, prefill_ms_per_1k_tokens: 100, knee: 8}
classes:
  - name: agent
    quota: k
    mode: batch
    input_tokens: {fixed: 1000}
    output_tokens: {fixed: 8}
    max_tokens: 8
    task: {calls: {fixed: 3}, tool_ms: {fixed: 200}, tool_result_tokens: {fixed: 400}, context: CONTEXT}
    slo: {ttft_ms: 1000, percentile: 99}
`
	for _, tc := range []struct {
		context string
		ttft    float64
	}{{scenario.ContextAccumulate, 281.6}, {scenario.ContextFresh, 200}} {
		rep := run(t, strings.Replace(text, "CONTEXT", tc.context, 1), fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 100 * time.Millisecond,
			PrefillPer1K: 100 * time.Millisecond, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
		c := rep.Classes[0]
		if c.Task == nil || c.Task.Measured == nil {
			t.Fatalf("%s: %+v", tc.context, c)
		}
		t.Logf("%s: predicted %+v, measured TTFT %.1f ms, task %.1f ms; %v", tc.context, c.Task.Predicted, c.Task.Measured.TTFTMs, c.Task.Measured.TaskE2EMs, c.Reasons)
		if c.Task.Context != tc.context || c.Task.Predicted.TTFTMs != tc.ttft || c.Verdict != VerdictOK ||
			math.Abs(c.Task.Measured.TTFTMs-tc.ttft) > 0.05*tc.ttft {
			t.Errorf("%s: %s, predicted %+v, measured %+v: %v", tc.context, c.Verdict, c.Task.Predicted, c.Task.Measured, c.Reasons)
		}
	}
}

// TestNothingSucceededSaysWhy: against an endpoint that fails every
// request, the class fails with the probe's own account of why in its
// reasons and in failure, and nothing is given as measured latency.
func TestNothingSucceededSaysWhy(t *testing.T) {
	rep := run(t, matched, fakeendpoint.Config{MaxNumSeqs: 64, TTFT: 100 * time.Millisecond, ITL: 10 * time.Millisecond, FailRate: 1, FailStatus: 500})
	c := rep.Classes[0]
	if c.Verdict != VerdictFails || c.Failure == "" || c.StopReason != probe.StopNoSuccess {
		t.Fatalf("verdict %s, stop %s, failure %q: %v", c.Verdict, c.StopReason, c.Failure, c.Reasons)
	}
	if want := "nothing succeeded at the pool of 4 (probe stopped: no_success): " + c.Failure; !slices.Contains(c.Reasons, want) {
		t.Errorf("reasons %q lack %q", c.Reasons, want)
	}
	if m := c.Points[0].Measured; m != nil && m.OK != 0 {
		t.Errorf("measured %+v at the pool", m)
	}
}
