package plan

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/scenario"
)

// within runs f and fails the test when it has not returned after a
// minute: f stands for a search that once never ended, so the bound is
// far above the milliseconds it takes.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("still computing after a minute")
	}
}

// TestNoRemedyCarriesInfinity: a headroom or a knee safety so small that
// no limit or knee within the scenario's bounds lifts the class's ceiling
// gives a plan without such a remedy, whose every number is finite (JSON
// encodes it), and a warning that says no finite change helps; the plan
// ends (the knee's search for a remedy once counted up from the lowest
// int).
func TestNoRemedyCarriesInfinity(t *testing.T) {
	tiny := 2.2250738585072014e-308
	for _, tc := range []struct {
		name, warning string
		edit          func(*scenario.Scenario)
	}{
		{"headroom", "no finite limit helps", func(s *scenario.Scenario) { s.Quotas[0].Headroom = tiny }},
		{"knee safety", "no finite knee helps", func(s *scenario.Scenario) {
			s.Latency.Knee = new(10)
			s.Policy.KneeSafety = &scenario.KneeSafety{Interactive: 1e-300}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := handScenario(scenario.Quota{RPM: 6000})
			s.Classes[0].Demand = &scenario.Demand{RPS: 2}
			tc.edit(&s)
			var p *Plan
			var err error
			within(t, func() { p, err = compute(s) })
			if err != nil {
				t.Fatal(err)
			}
			cp := p.Classes[0]
			if cp.Feasible || len(cp.Remedies) != 0 {
				t.Fatalf("feasible %v, remedies %+v: want none that fits", cp.Feasible, cp.Remedies)
			}
			if _, err := json.Marshal(p); err != nil {
				t.Fatalf("the plan does not encode: %v", err)
			}
			if !strings.Contains(strings.Join(cp.Warnings, "\n"), tc.warning) {
				t.Errorf("warnings %q lack %q", cp.Warnings, tc.warning)
			}
		})
	}
}

// TestShedSearchIsBounded: the bisection of the sustainable rate ends
// whatever the class's demand, even one so large that floating point
// cannot halve the interval down to the resolution, or an infinite one
// (a rate of requests within 1e-300 hours once was).
func TestShedSearchIsBounded(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 600})
	s.Classes[0].Demand = &scenario.Demand{RPS: 1000}
	r, err := testEngine.newRun(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, lambda := range []float64{1e7, 1e20, 1e300, math.Inf(1)} {
		r.models[0].lambda = lambda
		var sh *Shed
		within(t, func() { sh, err = r.shed(context.Background(), 0, 9) })
		if err != nil {
			t.Fatal(err)
		}
		// A pool of 9 with a 2.5 s service time serves 9 / 2.5 × 0.95 req/s.
		if want := 9 / 2.5 * 0.95; sh == nil || math.Abs(sh.SustainableRPS-want) > 1e-3 {
			t.Errorf("demand %g: shed %+v, want a sustainable %.4f req/s", lambda, sh, want)
		}
	}
}

// TestDerivedRateBeyondTheLimitIsRefused: a batch whose requests and hours
// come to an infinite or absurd rate is refused at within_hours, by the
// engine too, rather than searched for ever.
func TestDerivedRateBeyondTheLimitIsRefused(t *testing.T) {
	for _, d := range []scenario.Demand{
		{Requests: 1e12, WithinHours: 1e-300},
		{Requests: 1, WithinHours: 1e-300},
		{Requests: 1e12, WithinHours: 1e-5},
	} {
		s := handScenario(scenario.Quota{RPM: 600})
		s.Classes[0].Demand = &d
		var err error
		within(t, func() { _, err = compute(s) })
		var errs scenario.Errors
		if !errors.As(err, &errs) || errs[0].Path != "classes[0].demand.within_hours" || !strings.Contains(errs[0].Message, "requests / within_hours") {
			t.Errorf("%+v: %v, want a problem at classes[0].demand.within_hours", d, err)
		}
	}
	// The largest rate a demand may state is still planned.
	s := handScenario(scenario.Quota{RPM: 600})
	s.Classes[0].Demand = &scenario.Demand{Requests: 1e12, WithinHours: 1e12 / (1e9 / 60) / 3600}
	if _, err := compute(s); err != nil {
		t.Errorf("a batch at rpm's largest rate: %v", err)
	}
}

// TestMeanServiceTimeThatIsNotANumber: a latency so small, or so far from
// its p95, that the mean of its lognormal is not a number is refused at
// the class with a message that says so, not as "NaN s" or "zero".
func TestMeanServiceTimeThatIsNotANumber(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 600})
	s.Latency.TTFTMs = &scenario.Dist{P50: new(1e-320), P95: new(900.0)}
	_, err := compute(s)
	var errs scenario.Errors
	if !errors.As(err, &errs) || errs[0].Path != "classes[0]" || !strings.Contains(errs[0].Message, "the mean service time is not a number") {
		t.Errorf("a TTFT p50 of 1e-320 ms: %v", err)
	}
}

// TestMeanServiceTimeOutOfRange: a mean service time under a microsecond
// (flat latency or a curve's first point) or too large to represent is
// refused at the class with a message that says which, never one that
// prints an infinite rate or "+Inf s".
func TestMeanServiceTimeOutOfRange(t *testing.T) {
	tiny := handScenario(scenario.Quota{RPM: 600})
	tiny.Latency = scenario.Latency{TTFTMs: fixedMs(1e-320), TPOTMs: fixedMs(1e-320)}
	curve := handScenario(scenario.Quota{RPM: 600})
	curve.Latency = scenario.Latency{Curve: []scenario.CurvePoint{{Concurrency: 1, TTFTP50Ms: 1e-320, TTFTP95Ms: 1e-320, TPOTP50Ms: 1e-320, TPOTP95Ms: 1e-320}}}
	huge := handScenario(scenario.Quota{RPM: 600})
	huge.Latency.TTFTMs = &scenario.Dist{P50: new(1e-300), P95: new(800.0)}
	for _, tc := range []struct {
		name string
		s    scenario.Scenario
		want string
	}{
		{"flat latency of 1e-320 ms", tiny, "s, under the 1 µs the planner accepts"},
		{"a curve of 1e-320 ms", curve, "the mean service time at one request in flight is"},
		{"a TTFT p50 of 1e-300 ms beside a p95 of 800", huge, "the mean service time is too large to represent"},
	} {
		_, err := compute(tc.s)
		var errs scenario.Errors
		if !errors.As(err, &errs) || errs[0].Path != "classes[0]" || !strings.Contains(errs[0].Message, tc.want) || strings.Contains(errs[0].Message, "Inf") {
			t.Errorf("%s: %v, want a problem at classes[0] saying %q", tc.name, err, tc.want)
		}
	}
}

// TestHeavyTailedTTFTAtP99Plans: a TTFT whose p95 is a thousand times its
// p50, under an E2E target at the 99th percentile that leaves no wait
// for a slot, once made the plan select a quantile at a probability that
// was not a number (a panic); every such plan is made, and encodes.
func TestHeavyTailedTTFTAtP99Plans(t *testing.T) {
	for _, ttft := range [][2]float64{{5, 5000}, {1.5, 900}, {100, 90000}} {
		for _, pct := range []float64{95, 99, 99.9} {
			s := handScenario(scenario.Quota{RPM: 3000, TPM: 2000000})
			s.Latency.TTFTMs = &scenario.Dist{P50: new(ttft[0]), P95: new(ttft[1])}
			s.Classes[0].Demand = &scenario.Demand{RPS: 2}
			s.Classes[0].SLO = &scenario.SLO{E2EMs: 12000, Percentile: pct}
			var p *Plan
			var err error
			within(t, func() { p, err = compute(s) })
			if err != nil {
				t.Errorf("TTFT %v, p%v: %v", ttft, pct, err)
				continue
			}
			if _, err := json.Marshal(p); err != nil {
				t.Errorf("TTFT %v, p%v: %v", ttft, pct, err)
			}
		}
	}
}
