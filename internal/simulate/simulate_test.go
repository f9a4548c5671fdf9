package simulate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/testutil"
)

// engine plans every test's scenarios, sharing its caches.
var engine = plan.New(plan.Options{})

// parse reads a scenario written for a test.
func parse(t testing.TB, doc string) scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("scenario: %v\n%s", err, doc)
	}
	return sc
}

// run simulates and fails the test on an error.
func run(t testing.TB, sc scenario.Scenario, o Options) *Simulation {
	t.Helper()
	r, err := Run(context.Background(), engine, sc, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// erlangC is the probability of waiting in an M/M/c queue with offered
// load a < c, from its definition: C = (aᶜ/c!)·c/(c−a) / (Σₖ₌₀^{c−1} aᵏ/k! +
// (aᶜ/c!)·c/(c−a)), summed in logarithms (Kleinrock, Queueing Systems,
// vol. 1, eq. 3.40). It shares no code with the engine's recursion.
func erlangC(c int, a float64) float64 {
	logTerm := func(k int) float64 {
		lg, _ := math.Lgamma(float64(k + 1))
		return float64(k)*math.Log(a) - lg
	}
	top := logTerm(c) + math.Log(float64(c)/(float64(c)-a))
	hi := top
	for k := range c {
		hi = math.Max(hi, logTerm(k))
	}
	var sum float64
	for k := range c {
		sum += math.Exp(logTerm(k) - hi)
	}
	wait := math.Exp(top - hi)
	return wait / (sum + wait)
}

func TestErlangCReference(t *testing.T) {
	// Published values: C(2 servers, 1 erlang) = 1/3; the engine's docs
	// give C(12, 10) = 0.449388 and C(55, 48) = 0.238701.
	for _, tc := range []struct {
		c     int
		a, c0 float64
	}{{2, 1, 1.0 / 3}, {12, 10, 0.449388}, {55, 48, 0.238701}, {1, 0.7, 0.7}} {
		if got := erlangC(tc.c, tc.a); math.Abs(got-tc.c0) > 5e-7 {
			t.Errorf("C(%d, %g) = %.7f, want %.7f", tc.c, tc.a, got, tc.c0)
		}
	}
}

// exponentialSamples are n service times in ms whose empirical
// distribution is the exponential of the given mean: its quantiles at
// (i + ½)/n.
func exponentialSamples(meanMs float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Round(-meanMs*math.Log(1-(float64(i)+0.5)/float64(n))*1000) / 1000
	}
	return out
}

// TestMMcMeanWaitIsErlangC simulates M/M/c queues: Poisson arrivals,
// exponential service times (a TTFT with the exponential's quantiles and a
// single output token), a pool of c and no quota pressure. The mean wait
// must match Erlang C's Wq = C(c, A)·E[S]/(c − A) within the simulation's
// own 95 % confidence interval. Under the race detector the runs are a
// quarter as long, and their intervals twice as wide.
func TestMMcMeanWaitIsErlangC(t *testing.T) {
	arrivals, width := 400000.0, 0.15
	if raceDetector {
		arrivals, width = 100000, 0.3
	}
	for _, tc := range []struct {
		c       int
		lambda  float64
		meanSMs float64
	}{
		{1, 0.7, 1000},
		{5, 4, 1000},
		{20, 9, 2000},
	} {
		t.Run(fmt.Sprintf("c=%d rho=%.2f", tc.c, tc.lambda*tc.meanSMs/1000/float64(tc.c)), func(t *testing.T) {
			t.Parallel()
			samples := exponentialSamples(tc.meanSMs, 10000)
			js, _ := json.Marshal(samples)
			sc := parse(t, fmt.Sprintf(`
quotas: [{name: k, rpm: 1e9}]
latency: {ttft_ms: {samples: %s}, tpot_ms: {fixed: 1}}
classes:
  - {name: q, quota: k, mode: batch, demand: {rps: %g}, input_tokens: {fixed: 1}, output_tokens: {fixed: 1}}
policy: {max_pool: %d}
`, js, tc.lambda, tc.c))
			var mean float64
			for _, v := range samples {
				mean += v / 1000
			}
			mean /= float64(len(samples))
			a := tc.lambda * mean
			want := erlangC(tc.c, a) * mean / (float64(tc.c) - a) * 1000 // ms
			duration := arrivals / tc.lambda
			r := run(t, sc, Options{DurationS: duration, NoPacing: true})
			c := r.Classes[0]
			if c.Pool != tc.c {
				t.Fatalf("pool %d, want %d", c.Pool, tc.c)
			}
			got, ci := c.Simulated.QueueWaitMeanMs, c.Simulated.QueueWaitMeanCI95Ms
			if ci == nil {
				t.Fatal("no confidence interval")
			}
			t.Logf("mean wait %.1f ± %.1f ms, Erlang C %.1f ms (plan %.1f)", got, *ci, want, *c.Predicted.QueueWaitMeanMs)
			if math.Abs(got-want) > *ci {
				t.Errorf("mean wait %.1f ± %.1f ms, Erlang C gives %.1f ms", got, *ci, want)
			}
			if *ci > width*want {
				t.Errorf("the interval ±%.1f ms is too wide to test %.1f ms", *ci, want)
			}
		})
	}
}

// TestShippedExamplesMatchThePlan runs the shipped examples where the
// plan's queueing model applies (Poisson arrivals into an M/G/c queue at
// the pool, no client-side throttling besides the pool, so pacing is off)
// and holds the simulation to the plan: throughput within 3 % of the rate
// the plan expects and E2E p95 within 10 % of its prediction.
//
// measured-curve is not among them: with a measured curve the plan
// predicts latency with every pool on the endpoint full, and its
// assistant's demand fills only about half its pool, so the endpoint is
// less loaded than the plan assumes (TestCurvePlanIsConservative; and
// TestCurveClassAloneMatchesThePlan for a curve whose pool is full).
func TestShippedExamplesMatchThePlan(t *testing.T) {
	for _, name := range []string{"chat", "chat-and-batch", "three-classes", "daily-limit-batch", "backfill"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := run(t, testutil.Example(t, name), Options{DurationS: 4 * 3600, NoPacing: true})
			for _, c := range r.Classes {
				checkAgainstPlan(t, c)
			}
		})
	}
}

func checkAgainstPlan(t *testing.T, c ClassRun) {
	t.Helper()
	v := c.VsPlan
	if v.ThroughputErrorPct == nil || math.Abs(*v.ThroughputErrorPct) > 3 {
		t.Errorf("%s: throughput %g req/s, the plan expects %g (%v %%)", c.Name, c.Simulated.ThroughputRPS, v.ExpectedRPS, deref(v.ThroughputErrorPct))
	}
	if c.Predicted.E2EP95Ms == nil {
		return // an unstable queue: the plan predicts no percentile
	}
	if v.E2EP95ErrorPct == nil || math.Abs(*v.E2EP95ErrorPct) > 10 {
		t.Errorf("%s: E2E p95 %v ms, the plan predicts %v (%v %%)", c.Name, deref(c.Simulated.E2EP95Ms), *c.Predicted.E2EP95Ms, deref(v.E2EP95ErrorPct))
	}
}

func deref(p *float64) any {
	if p == nil {
		return "null"
	}
	return *p
}

// TestCurveClassAloneMatchesThePlan runs the closed-loop class of
// measured-curve alone on its endpoint: its pool is always full, so the
// endpoint's load is the pool the plan predicts at.
func TestCurveClassAloneMatchesThePlan(t *testing.T) {
	sc := testutil.Example(t, "measured-curve")
	sc.Classes = sc.Classes[1:]
	r := run(t, sc, Options{DurationS: 4 * 3600, NoPacing: true})
	c := r.Classes[0]
	if c.Arrivals != ArrivalsClosedLoop || c.Series.InFlight[10] != float64(c.Pool) {
		t.Fatalf("%s: %s with %v in flight, want a full pool of %d", c.Name, c.Arrivals, c.Series.InFlight[10], c.Pool)
	}
	checkAgainstPlan(t, c)
}

// TestCurvePlanIsConservative: on measured-curve, whose demand class
// leaves part of its pool idle, the simulated endpoint carries less than
// the plan's full pools, so every class does no worse than the plan
// predicts: throughput at least the plan's (within 3 %), E2E p95 at most
// the plan's.
func TestCurvePlanIsConservative(t *testing.T) {
	r := run(t, testutil.Example(t, "measured-curve"), Options{DurationS: 4 * 3600, NoPacing: true})
	for _, c := range r.Classes {
		v := c.VsPlan
		if *v.ThroughputErrorPct < -3 || *v.E2EP95ErrorPct > 0 {
			t.Errorf("%s: throughput %+.1f %%, E2E p95 %+.1f %% of the plan's", c.Name, *v.ThroughputErrorPct, *v.E2EP95ErrorPct)
		}
	}
}

// burstAboveTheQuota triples a class's demand for five minutes beyond what
// its key allows: 4 req/s, then 12 req/s, against rpm 600 (10 req/s).
const burstAboveTheQuota = `
quotas: [{name: k, rpm: 600}]
latency: {ttft_ms: {p50: 800, p95: 1600}, tpot_ms: {fixed: 20}}
classes:
  - name: api
    quota: k
    mode: interactive
    demand: {rps: 4, profile: [{start_s: 600, duration_s: 300, factor: 3}]}
    input_tokens: {fixed: 500}
    output_tokens: {p50: 100, p95: 300}
    max_tokens: 600
    slo: {e2e_p95_ms: 30000}
`

// TestPacingPreventsTheBurstOf429s: a burst above the quota gets 429s from
// the provider without pacing and none with the plan's pacing, for a
// demand burst and for the start-up burst of a shared key
// (docs/examples/backfill.yaml, the worked example of docs/simulate.md).
func TestPacingPreventsTheBurstOf429s(t *testing.T) {
	for name, sc := range map[string]scenario.Scenario{
		"demand burst":   parse(t, burstAboveTheQuota),
		"start-up burst": testutil.Example(t, "backfill"),
	} {
		t.Run(name, func(t *testing.T) {
			off := run(t, sc, Options{DurationS: 1800, NoPacing: true})
			on := run(t, sc, Options{DurationS: 1800})
			if off.Quotas[0].RateLimited == 0 {
				t.Error("without pacing the provider answered no 429")
			}
			for i, c := range on.Classes {
				if c.Simulated.RateLimited != 0 {
					t.Errorf("%s: %d 429s with pacing", c.Name, c.Simulated.RateLimited)
				}
				if c.Simulated.Requests != off.Classes[i].Simulated.Requests && c.Arrivals != ArrivalsClosedLoop {
					t.Errorf("%s: %d requests with pacing, %d without: the arrivals should not change", c.Name, c.Simulated.Requests, off.Classes[i].Simulated.Requests)
				}
			}
			if on.Quotas[0].RateLimited != 0 {
				t.Errorf("key: %d 429s with pacing", on.Quotas[0].RateLimited)
			}
		})
	}
}

// TestAIMDSettlesAtTheQuota: a closed-loop class whose AIMD ceiling is
// above what its key allows keeps pushing past the limit; the window must
// settle within 10 % of the quota's ceiling, the concurrency at which the
// provider's rpm binds: L/60·E[S] = 10 req/s × 3.35 s ≈ 33.5.
func TestAIMDSettlesAtTheQuota(t *testing.T) {
	sc := parse(t, `
quotas: [{name: k, rpm: 600, tpm: 1000000}]
latency: {ttft_ms: {p50: 800, p95: 1600}, tpot_ms: {fixed: 20}}
classes:
  - {name: bulk, quota: k, mode: batch, input_tokens: {fixed: 500}, output_tokens: {p50: 100, p95: 300}}
`)
	r := run(t, sc, Options{DurationS: 3600, NoPacing: true, AIMD: true, IntervalS: 60})
	c := r.Classes[0]
	meanS := c.Predicted.MeanServiceMs / 1000
	ceiling := 600.0 / 60 * meanS
	if float64(c.Pool) >= ceiling || float64(c.Pool) < 0.85*ceiling {
		t.Fatalf("the plan's pool %d should sit under the limit's ceiling %.1f by the headroom", c.Pool, ceiling)
	}
	if c.Simulated.RateLimited == 0 {
		t.Fatal("AIMD never met the limit")
	}
	late := c.Series.Pool[len(c.Series.Pool)/2:]
	var mean float64
	for _, w := range late {
		mean += w / float64(len(late))
	}
	t.Logf("AIMD window over the second half %.2f, the limit's ceiling %.2f, the plan's pool %d", mean, ceiling, c.Pool)
	if math.Abs(mean-ceiling) > 0.1*ceiling {
		t.Errorf("AIMD window settles at %.2f, not within 10 %% of %.2f", mean, ceiling)
	}
}

// TestInfeasibleClassShedsWhatThePlanSays: a class the plan finds
// infeasible loses, at its full demand, what its pool cannot serve flat out
// (the client sheds it after the max queue wait, or it piles up unserved
// without an SLO), which is within what the plan says to shed; and once
// the plan's shedding is applied (the demand cut to its sustainable rate)
// the class keeps pace and meets its SLO. The plan's sustainable rate
// keeps the pool at policy.max_utilization, so what it sheds exceeds what
// a pool run flat out loses by that margin.
func TestInfeasibleClassShedsWhatThePlanSays(t *testing.T) {
	interactive := parse(t, `
quotas: [{name: k, rpm: 300}]
latency: {ttft_ms: {p50: 500, p95: 1000}, tpot_ms: {p50: 10, p95: 15}}
classes:
  - name: api
    quota: k
    mode: interactive
    demand: {rps: 8}
    input_tokens: {fixed: 500}
    output_tokens: {p50: 100, p95: 300}
    slo: {e2e_p95_ms: 60000}
`)
	for name, sc := range map[string]scenario.Scenario{
		"shed after the max queue wait": interactive,
		"unserved batch":                testutil.Example(t, "daily-limit-batch"),
	} {
		t.Run(name, func(t *testing.T) {
			r := run(t, sc, Options{DurationS: 4 * 3600, NoPacing: true})
			c := r.Classes[0]
			if c.Feasible || c.PlanShed == nil {
				t.Fatalf("the plan finds %s feasible", c.Name)
			}
			s := c.Simulated
			lost := s.OfferedRPS - s.ThroughputRPS
			flatOut := s.OfferedRPS - c.Predicted.ThroughputRPS
			t.Logf("lost %.4f req/s (shed %.4f), the pool flat out loses %.4f, the plan sheds %.4f", lost, float64(s.Shed)/r.Settings.DurationS, flatOut, c.PlanShed.ShedRPS)
			if math.Abs(lost-flatOut) > 0.05*flatOut || lost > c.PlanShed.ShedRPS {
				t.Errorf("lost %.4f req/s: want within 5 %% of %.4f and at most the plan's %.4f", lost, flatOut, c.PlanShed.ShedRPS)
			}
			if c.Verdict.Holds {
				t.Error("the verdict holds for an infeasible class")
			}
			shed := sc
			shed.Classes = slices.Clone(sc.Classes)
			shed.Classes[0].Demand = &scenario.Demand{RPS: c.PlanShed.SustainableRPS}
			after := run(t, shed, Options{DurationS: 4 * 3600}).Classes[0]
			if !after.Verdict.Holds || after.Simulated.Shed != 0 || math.Abs(after.Simulated.ThroughputRPS-c.PlanShed.SustainableRPS) > 0.03*c.PlanShed.SustainableRPS {
				t.Errorf("at the sustainable %.4f req/s: %+v, %+v", c.PlanShed.SustainableRPS, after.Simulated, after.Verdict)
			}
		})
	}
}

// TestSameSeedSameBytes runs a scenario with every mechanism at work
// (retries, AIMD, shedding, a profile) twice: the encoded results must be
// identical; another seed must change them.
func TestSameSeedSameBytes(t *testing.T) {
	sc := parse(t, burstAboveTheQuota)
	encode := func(o Options) []byte {
		b, err := json.Marshal(run(t, sc, o))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	o := Options{DurationS: 1800, NoPacing: true, AIMD: true}
	a, b := encode(o), encode(o)
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with the same seed differ")
	}
	seed := uint64(7)
	o.Seed = &seed
	if bytes.Equal(a, encode(o)) {
		t.Error("another seed gave the same run")
	}
}

func TestOptionsAreChecked(t *testing.T) {
	sc := testutil.Example(t, "three-classes")
	for _, tc := range []struct {
		name string
		o    Options
		path string
	}{
		{"negative duration", Options{DurationS: -1}, "duration_s"},
		{"over a week", Options{DurationS: 8 * 24 * 3600}, "duration_s"},
		{"too many points", Options{DurationS: 3600, IntervalS: 1}, "interval_s"},
		{"interval beyond the run", Options{DurationS: 60, IntervalS: 1000}, "interval_s"},
		{"unknown refill", Options{Refill: "sliding"}, "refill"},
		{"event cap", Options{MaxEvents: 1000}, "duration_s"},
		{"replay of no class", Options{Replay: []Replay{{Class: "nope", StartS: []float64{1}}}}, "replay[0].class"},
		{"replay twice", Options{Replay: []Replay{{Class: "chat", StartS: []float64{1}}, {Class: "chat", StartS: []float64{2}}}}, "replay[1].class"},
		{"negative start", Options{Replay: []Replay{{Class: "chat", StartS: []float64{1, -2}}}}, "replay[0].start_s[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), engine, sc, tc.o)
			var errs OptionErrors
			if !errors.As(err, &errs) || !slices.ContainsFunc(errs, func(e scenario.FieldError) bool { return e.Path == tc.path }) {
				t.Fatalf("error %v, want one at %s", err, tc.path)
			}
		})
	}
}

// TestDefaultIntervalIsNoProblem: a duration that is refused is the only
// problem; the time-series interval left to its default, worked out from
// it, is not reported as well.
func TestDefaultIntervalIsNoProblem(t *testing.T) {
	sc := testutil.Example(t, "three-classes")
	for _, d := range []float64{-1, -3600, 0.5, math.NaN(), math.Inf(1), math.Inf(-1), 8 * 24 * 3600, 1e300} {
		errs := CheckOptions(sc, Options{DurationS: d})
		if len(errs) != 1 || errs[0].Path != "duration_s" {
			t.Errorf("duration %g: %v, want only a problem at duration_s", d, errs)
		}
	}
	if errs := CheckOptions(sc, Options{DurationS: -1, IntervalS: -1}); len(errs) != 2 {
		t.Errorf("a given interval that is wrong too: %v, want problems at duration_s and interval_s", errs)
	}
}

// TestEventCapStopsARetryStorm: a run whose estimate fits the cap but
// whose retries do not is stopped at the cap.
func TestEventCapStopsARetryStorm(t *testing.T) {
	sc := testutil.Example(t, "backfill")
	o := Options{DurationS: 60, NoPacing: true}
	full := run(t, sc, o)
	o.MaxEvents = full.Settings.Events - 1
	_, err := Run(context.Background(), engine, sc, o)
	var errs OptionErrors
	if !errors.As(err, &errs) || errs[0].Path != "max_events" {
		t.Fatalf("error %v, want one at max_events", err)
	}
}

func TestInvalidScenarioAndCancel(t *testing.T) {
	sc := testutil.Example(t, "chat")
	bad := sc
	bad.Classes = []scenario.Class{sc.Classes[0], sc.Classes[0]}
	var errs scenario.Errors
	if _, err := Run(context.Background(), engine, bad, Options{}); !errors.As(err, &errs) {
		t.Errorf("duplicate classes: %v, want scenario.Errors", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, engine, sc, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestReplayedArrivals replays given start times instead of the demand.
func TestReplayedArrivals(t *testing.T) {
	sc := testutil.Example(t, "chat")
	starts := []float64{5, 1, 2, 2, 3600, 30}
	r := run(t, sc, Options{DurationS: 60, Replay: []Replay{{Class: "chat", StartS: starts}}})
	c := r.Classes[0]
	if c.Arrivals != ArrivalsReplay || c.Simulated.Requests != 5 || c.Simulated.Completed != 5 {
		t.Fatalf("%s: %d requests, %d completed; want 5 replayed within 60 s", c.Arrivals, c.Simulated.Requests, c.Simulated.Completed)
	}
	// The start at 3,600 s falls after the run: the warning says so
	// rather than leaving it out unsaid.
	if want := "class chat replays 5 of its 6 arrivals instead of its demand (the other 1 starts after the run's 60 s)"; len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], want) {
		t.Errorf("warnings %v, want %q", r.Warnings, want)
	}
	// None within the run: nothing to judge, said of the replay rather
	// than of the demand it replaces ("at 2 req/s no request arrived").
	r = run(t, sc, Options{DurationS: 60, Replay: []Replay{{Class: "chat", StartS: []float64{100, 200}}}})
	if v, want := r.Classes[0].Verdict, "none of its 2 replayed arrivals starts within the run's 60 s: nothing to judge"; !v.Holds || len(v.Reasons) != 1 || v.Reasons[0] != want {
		t.Errorf("verdict %+v, want %q", v, want)
	}
}
