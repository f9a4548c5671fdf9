package simulate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/testutil"
)

// TestTargetMetByItsValue: a value meets its target when it lies at or
// below it, whatever its interval; nothing completed never meets it.
func TestTargetMetByItsValue(t *testing.T) {
	for _, tc := range []struct {
		got, hw *float64
		met     bool
	}{
		{new(900.0), new(50.0), true},
		{new(1000.0), new(50.0), true},
		{new(1000.5), new(50.0), false},
		{new(1040.0), new(50.0), false},
		{new(1001.0), nil, false},
		{new(1000.0), nil, true},
		{nil, nil, false},
	} {
		if tg := (Target{Bound: 1000, Got: tc.got, CI95: tc.hw}); tg.Met() != tc.met {
			t.Errorf("value %v ± %v against 1,000: met %v, want %v", deref(tc.got), deref(tc.hw), tg.Met(), tc.met)
		}
	}
}

// TestVerdictJudgesSLOsByTheirValue: the verdict breaks a TTFT target
// that the run's p95 exceeds by less than its interval's half-width, and
// says the value with its interval, as the plan's check does; it holds one
// at the p95, at its edge since the interval reaches past it, and one
// beyond the interval plainly. The pool is capped so that the targets do
// not move it.
func TestVerdictJudgesSLOsByTheirValue(t *testing.T) {
	withTarget := func(ms float64) ClassRun {
		sc := parse(t, fmt.Sprintf(`
quotas: [{name: k, rpm: 100000}]
latency: {ttft_ms: {p50: 400, p95: 900}, tpot_ms: {fixed: 10}}
policy: {max_pool: 3}
classes:
  - {name: c, quota: k, mode: interactive, demand: {rps: 2}, input_tokens: {fixed: 500}, output_tokens: {fixed: 50},
     slo: {ttft_p95_ms: %g}}
`, ms))
		return run(t, sc, Options{DurationS: 1800}).Classes[0]
	}
	base := withTarget(1e6)
	p95, hw := base.Simulated.TTFTP95Ms, base.Simulated.TTFTP95CI95Ms
	if p95 == nil || hw == nil || *hw <= 0 {
		t.Fatalf("TTFT p95 %v ± %v: want a value with an interval", deref(p95), deref(hw))
	}
	for _, tc := range []struct {
		target float64
		holds  bool
		reason string
	}{
		{*p95, true, " ± " + Num(*hw) + " ms meets the SLO of " + Num(*p95) + " ms at its edge: its 95 % interval reaches " + Num(*p95+*hw) + " ms"},
		{*p95 + 2**hw, true, " ms meets the SLO of " + Num(*p95+2**hw) + " ms; "},
		{*p95 - *hw/2, false, " ± " + Num(*hw) + " ms breaks the SLO"},
	} {
		c := withTarget(tc.target)
		if c.Pool != base.Pool || *c.Simulated.TTFTP95Ms != *p95 {
			t.Fatalf("target %.0f ms: pool %d, TTFT p95 %v; the run with no binding target had %d, %v", tc.target, c.Pool, deref(c.Simulated.TTFTP95Ms), base.Pool, *p95)
		}
		if reasons := strings.Join(c.Verdict.Reasons, "; "); c.Verdict.Holds != tc.holds || !strings.Contains(reasons, tc.reason) {
			t.Errorf("TTFT p95 %.0f ± %.0f ms against %.0f: holds %v (%s), want %v and %q", *p95, *hw, tc.target, c.Verdict.Holds, reasons, tc.holds, tc.reason)
		}
	}
}

// TestAgentVerdictCountsTasks: an agent task class's arrivals are tasks,
// and its verdict counts what it loses, what it leaves waiting and its
// rate in tasks, as its demand does.
func TestAgentVerdictCountsTasks(t *testing.T) {
	sc := testutil.Example(t, "agent")
	sc.Classes = append([]scenario.Class(nil), sc.Classes...)
	found := false
	for i, c := range sc.Classes {
		if c.Task == nil || c.Demand == nil {
			continue
		}
		found = true
		d := *c.Demand
		d.RPS *= 40 // far beyond its pool: it falls behind
		sc.Classes[i].Demand = &d
	}
	if !found {
		t.Fatal("the agent example has no task class with a demand")
	}
	r := run(t, sc, Options{DurationS: 1800})
	for i, c := range r.Classes {
		if sc.Classes[i].Task == nil {
			continue
		}
		text := strings.Join(c.Verdict.Reasons, "; ")
		if c.Verdict.Holds || !strings.Contains(text, "tasks") || strings.Contains(text, "requests waiting") || strings.Contains(text, "requests lost") {
			t.Errorf("%s: holds %v: %s", c.Name, c.Verdict.Holds, text)
		}
	}
}

// TestAgentVerdictTellsRatesInTasks: an agent task class's verdict tells
// its throughput against the plan's, and why a run had nothing to judge,
// in tasks, as its demand counts them, and its E2E as the task's: a run
// that holds, one too short for a task to end and one too light for a
// task to arrive.
func TestAgentVerdictTellsRatesInTasks(t *testing.T) {
	base := testutil.Example(t, "agent")
	i := slices.IndexFunc(base.Classes, func(c scenario.Class) bool { return c.Task != nil && c.Demand != nil })
	if i < 0 {
		t.Fatal("the agent example has no task class with a demand")
	}
	light := base
	light.Classes = slices.Clone(base.Classes)
	light.Classes[i].Demand = &scenario.Demand{RPS: 1e-6}
	for _, tc := range []struct {
		name string
		sc   scenario.Scenario
		o    Options
		want string
	}{
		{"a run that holds", base, Options{DurationS: 1800}, "tasks/s against the plan's"},
		{"too short", base, Options{DurationS: 20}, "tasks arrived and none completed"},
		{"too light", light, Options{DurationS: 60}, "tasks/s no task arrived"},
	} {
		r := run(t, tc.sc, tc.o)
		text := strings.Join(r.Classes[i].Verdict.Reasons, "; ")
		if !strings.Contains(text, tc.want) || strings.Contains(text, "req/s") || strings.Contains(text, "requests arrived") || strings.Contains(text, "no request") ||
			strings.Contains(text, "; E2E p95") || strings.Contains(text, "plan's E2E p95") {
			t.Errorf("%s: %s, want %q in tasks", tc.name, text, tc.want)
		}
	}
}

// TestDailyLimitSpentBeforeTheDayEndsBreaksThePlan: a run shorter than
// the time its pace takes to spend a daily limit meets no 429 from it,
// yet at that pace the key's day runs out before its active hours do.
// docs/examples/daily-limit-batch.yaml's batch, bound by its rpd at a pool
// of 10, run for 20 minutes at a pool of 60 that a team set uses about
// twice its rpd over the day: the verdict does not hold, and says when
// the limit is spent, rather than "the plan holds" beside "rpd 196.5 %
// used". At the plan's pool the pace stays within the day.
func TestDailyLimitSpentBeforeTheDayEndsBreaksThePlan(t *testing.T) {
	sc := testutil.Example(t, "daily-limit-batch")
	p, err := engine.Plan(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	raised := *p
	raised.Classes = slices.Clone(p.Classes)
	raised.Classes[0].Pool = 60
	res, err := RunPlan(context.Background(), engine, sc, &raised, Options{DurationS: 1200})
	if err != nil {
		t.Fatal(err)
	}
	var rpd *LimitUse
	for i, d := range res.Quotas[0].Dimensions {
		if d.Dimension == "rpd" {
			rpd = &res.Quotas[0].Dimensions[i]
		}
	}
	if rpd == nil || rpd.UseMean <= 1 || rpd.RateLimited != 0 {
		t.Fatalf("rpd %+v: want a use over 1 without a 429, the case under test", rpd)
	}
	want := fmt.Sprintf("key batch-key: at this run's pace its rpd of 100,000 a day is spent after %s h of its 10 active hours", Num(10/rpd.UseMean))
	if res.Verdict.Holds || !strings.Contains(res.Verdict.Summary, want) || !slices.ContainsFunc(res.Verdict.Reasons, func(r string) bool { return strings.Contains(r, want) }) {
		t.Errorf("verdict %+v: want it not to hold, with %q", res.Verdict, want)
	}
	if res := run(t, sc, Options{DurationS: 1200}); strings.Contains(res.Verdict.Summary, "rpd") {
		t.Errorf("verdict at the plan's pool: %s, want no daily limit named", res.Verdict.Summary)
	}
}

// TestNum: a simulation's numbers, and its check's, read with grouped
// thousands, fewer decimals the larger they are, halves away from zero,
// and a number that two decimals would write as 0 with two significant
// digits (a target of 0.004 ms is not one of 0, which is no target).
func TestNum(t *testing.T) {
	for v, want := range map[float64]string{0.004: "0.004", 0.0001234: "0.00012", -0.004: "-0.004", 0.3: "0.3", 0.345: "0.35",
		12.34: "12.3", 1234.5: "1,235", 0: "0", -0.001: "-0.001"} {
		if got := Num(v); got != want {
			t.Errorf("Num(%g) = %q, want %q", v, got, want)
		}
	}
}
