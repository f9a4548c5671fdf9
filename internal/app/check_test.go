package app

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/simulate"
	"github.com/plannerdev/planner/internal/testutil"
)

var testApp = New(plan.New(plan.Options{}))

func parse(t *testing.T, doc string) scenario.Scenario {
	t.Helper()
	s, err := scenario.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustPlan(t *testing.T, s scenario.Scenario) *plan.Plan {
	t.Helper()
	p, err := testApp.Plan(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// consistent holds a checked plan to its rules: every class carries its
// check; a class fits only when it is feasible and its check holds; a
// check that does not hold names what breaks; and the figures are the
// plan's own simulation, reproduced by simulating the plan again with the
// run's options.
func consistent(t *testing.T, s scenario.Scenario, p *plan.Plan) {
	t.Helper()
	if p.Check == nil || len(p.Check.Runs) == 0 {
		t.Fatalf("no check: %+v", p.Check)
	}
	holds := true
	for i, c := range p.Classes {
		cc := c.Check
		if cc == nil {
			t.Fatalf("%s carries no check", c.Name)
		}
		holds = holds && cc.Holds
		if c.Fitting() && (!c.Feasible || !cc.Holds || len(cc.Misses) > 0) {
			t.Errorf("%s fits, but feasible %v, check %+v", c.Name, c.Feasible, cc)
		}
		if !c.Fitting() && strings.Contains(c.Explanation, "it fits") {
			t.Errorf("%s does not fit, and its explanation says it does: %q", c.Name, c.Explanation)
		}
		if !cc.Holds && len(cc.Misses) == 0 {
			t.Errorf("%s: the check breaks without naming what", c.Name)
		}
		for _, m := range cc.Misses {
			// Nothing completed (a class without a pool): no value, no
			// percentage; otherwise both.
			if unmeasured := strings.HasPrefix(m.Detail, "no request completed"); unmeasured != (m.Value == nil) || (m.Value == nil) != (m.OverPct == nil) {
				t.Errorf("%s: miss %+v: a value and its percentage when something completed, neither when nothing did", c.Name, m)
				continue
			}
			if m.Detail == "" || (m.Value != nil && m.Metric != "events" && *m.Value <= m.Bound && !slices.Contains(withinInterval, m.Metric)) {
				t.Errorf("%s: miss %+v", c.Name, m)
			}
		}
		run := p.Check.Runs[slices.IndexFunc(p.Check.Runs, func(r plan.CheckRun) bool { return r.StartHour == cc.StartHour })]
		if run.Events == 0 || cc.TTFTP95Ms == nil {
			continue
		}
		sim, err := simulate.RunPlan(context.Background(), testApp.eng, s, p, simulate.Options{
			DurationS: run.DurationS, StartHour: run.StartHour, MaxEvents: run.MaxEvents, IntervalS: run.DurationS / 20})
		if err != nil {
			t.Fatal(err)
		}
		if got := sim.Classes[i].Simulated; got.Requests != cc.Requests || *got.TTFTP95Ms != cc.TTFTP95Ms.Value {
			t.Errorf("%s: the check says %d requests and TTFT p95 %g; its plan simulated again gives %d and %g", c.Name, cc.Requests, cc.TTFTP95Ms.Value, got.Requests, *got.TTFTP95Ms)
		}
	}
	if p.Check.Holds != holds {
		t.Errorf("the check holds %v, its classes %v", p.Check.Holds, holds)
	}
}

// TestEveryExampleCarriesItsCheck: every shipped example's plan carries a
// check that keeps the rules.
func TestEveryExampleCarriesItsCheck(t *testing.T) {
	for _, name := range planner.ExampleNames() {
		t.Run(name, func(t *testing.T) {
			s := testutil.Example(t, name)
			consistent(t, s, mustPlan(t, s))
		})
	}
}

// supportChat is the support chat of the plans-that-hold report: 2 req/s,
// input p50 1,200 / p95 3,500, output p50 200 / p95 600, max_tokens 800,
// on a key of 5,000 RPM and 450,000 TPM counting max_tokens, with an SLO
// of TTFT p95 2,500 ms.
const supportChat = `
quotas:
  - {name: support, rpm: 5000, tpm: 450000, token_accounting: max_tokens}
latency:
  ttft_ms: {p50: 600, p95: 1600}
  tpot_ms: {p50: 18, p95: 30}
classes:
  - name: chat
    quota: support
    mode: interactive
    demand: {rps: 2}
    input_tokens: {p50: 1200, p95: 3500}
    output_tokens: {p50: 200, p95: 600}
    max_tokens: 800
    slo: {ttft_p95_ms: 2500}
`

// TestSupportChatFitsOnlyWhereItsSimulationHolds: the chat either fits and
// its simulation holds, or it does not fit and its check names what
// breaks, by how much.
func TestSupportChatFitsOnlyWhereItsSimulationHolds(t *testing.T) {
	s := parse(t, supportChat)
	p := mustPlan(t, s)
	consistent(t, s, p)
	c := p.Classes[0]
	switch {
	case c.Fitting():
		if !c.Check.Holds || c.Check.TTFTP95Ms.Value-*c.Check.TTFTP95Ms.CI95 > 2500 {
			t.Errorf("fits with a check %+v", c.Check)
		}
	default:
		if !strings.Contains(p.Check.Summary, "chat") || !slices.ContainsFunc(c.Check.Misses, func(m plan.Miss) bool { return m.OverPct != nil && *m.OverPct > 0 && m.Detail != "" }) {
			t.Errorf("does not fit, and the check says %q with misses %+v", p.Check.Summary, c.Check.Misses)
		}
		if c.Feasible && !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "does not fit by its own simulation") }) {
			t.Errorf("feasible but unfit, and no warning says why: %q", p.Warnings)
		}
	}
}

// TestCheckBudgetsForTheArrivalsOfAClassWithoutAPool: a class that gets
// no pool (its E2E target is below its service time) still has its 100
// req/s arrive in the check's run, each shed; the run is sized with them
// in its event budget, so it runs, and the class that fits holds.
func TestCheckBudgetsForTheArrivalsOfAClassWithoutAPool(t *testing.T) {
	p := mustPlan(t, parse(t, `
quotas:
  - {name: k, rpm: 100000, tpm: 10000000}
latency: {ttft_ms: {p50: 300, p95: 700}, tpot_ms: {p50: 15, p95: 25}}
classes:
  - {name: a, quota: k, mode: interactive, demand: {rps: 1}, input_tokens: {p50: 500, p95: 1500}, output_tokens: {p50: 150, p95: 400}, slo: {ttft_p95_ms: 2000, e2e_p95_ms: 15000}}
  - {name: b, quota: k, mode: interactive, demand: {rps: 100}, input_tokens: {p50: 500, p95: 1500}, output_tokens: {p50: 150, p95: 400}, slo: {e2e_p95_ms: 1000}}
`))
	a, b := p.Classes[0], p.Classes[1]
	if b.Pool != 0 || b.Feasible {
		t.Fatalf("b: pool %d, feasible %v; want no pool", b.Pool, b.Feasible)
	}
	if !a.Feasible || !a.Fitting() || !a.Check.Holds || a.Check.Requests == 0 {
		t.Fatalf("a: feasible %v, fits %v, check %+v", a.Feasible, a.Fitting(), a.Check)
	}
}

// TestCheckRaisesMinPoolWhereItsSimulationBreaks: a plan whose chat pool
// is too small for its demand (here set by hand to 12 where it needs
// about twice that) breaks in its own simulation; the check plans again
// with min_pool raised until the simulation holds, and says so.
func TestCheckRaisesMinPoolWhereItsSimulationBreaks(t *testing.T) {
	s := testutil.Example(t, "three-classes")
	ctx := context.Background()
	p, err := testApp.eng.Plan(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	bad := *p
	bad.Classes = slices.Clone(p.Classes)
	bad.Classes[0].Pool, bad.Classes[0].MinPool = 12, ptr(12)
	var asked []map[string]int
	replan := func(ctx context.Context, floors map[string]int) (*plan.Plan, error) {
		asked = append(asked, floors)
		return testApp.eng.Plan(ctx, s) // min_pool 19 ≥ every floor asked for here
	}
	out, err := testApp.check(ctx, s, &bad, replan)
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0]["chat"] <= 12 {
		t.Fatalf("floors asked for: %v, want one round raising chat above its pool of 12", asked)
	}
	c := out.Classes[0]
	if !c.Fitting() || !c.Check.Holds || c.Check.MinPoolRaisedFrom == nil || *c.Check.MinPoolRaisedFrom != 12 || out.Check.Rounds != 1 {
		t.Fatalf("chat: fits %v, check %+v, rounds %d", c.Fitting(), c.Check, out.Check.Rounds)
	}
	if !slices.ContainsFunc(c.Warnings, func(w string) bool {
		return strings.HasPrefix(w, "min_pool raised from 12 to 19 by the plan's check: at a pool of 12 its own simulation broke")
	}) {
		t.Errorf("warnings %q", c.Warnings)
	}
	if p.Classes[0].Check != nil || p.Check != nil {
		t.Error("the check wrote into the plan it was given")
	}
}

// TestNightlyBatchIsCheckedAtNight: a plan of windows is checked in each
// window from its start; the batch is done in its window at night.
func TestNightlyBatchIsCheckedAtNight(t *testing.T) {
	s := parse(t, supportChat+`    schedule: {start_hour: 8, hours: 14}
  - name: nightly
    quota: support
    mode: batch
    demand: {requests: 8000, within_hours: 6}
    input_tokens: {p50: 1500, p95: 3000}
    output_tokens: {p50: 300, p95: 600}
    max_tokens: 800
    schedule: {start_hour: 22, hours: 6}
`)
	p := mustPlan(t, s)
	consistent(t, s, p)
	if len(p.Check.Runs) != 2 || p.Check.Runs[1].StartHour != 22 || !slices.Equal(p.Check.Runs[1].Classes, []string{"nightly"}) {
		t.Fatalf("runs %+v", p.Check.Runs)
	}
	n := p.Classes[1]
	if !n.Fitting() || n.Check.StartHour != 22 || n.Check.BatchDone == nil || !*n.Check.BatchDone || n.Check.Requests == 0 {
		t.Errorf("nightly: fits %v, check %+v", n.Fitting(), n.Check)
	}
}

// withinInterval are the metrics a check may miss on although the value
// is within its bound: those judged within their intervals.
var withinInterval = []string{"ttft_p95_ms", "e2e_p95_ms", "ttft_ms_at_percentile", "e2e_ms_at_percentile"}

// TestCheckJudgesAtTheSLOsPercentile holds a class's check to its SLO at
// the percentile the SLO names, by simulate.Targets: a run whose TTFT p95
// meets 1,000 ms but whose p99 of 1,400 ± 100 ms does not breaks for a
// p99 SLO and holds for the p95 one; the same run holds for a p99 target
// of 1,450 ms, within the p99's interval, at that target's edge; and an
// agent task's target task_e2e_ms is held to its E2E at the percentile.
func TestCheckJudgesAtTheSLOsPercentile(t *testing.T) {
	sm := simulate.Simulated{Requests: 4000, Completed: 4000, Sends: 4000,
		TTFTP95Ms: ptr(900.0), TTFTP95CI95Ms: ptr(20.0), E2EP95Ms: ptr(5000.0), E2EP95CI95Ms: ptr(100.0)}
	at99 := sm
	at99.Percentile, at99.TTFTMsAtPercentile, at99.TTFTCI95MsAtPercentile = ptr(99.0), ptr(1400.0), ptr(100.0)
	at99.E2EMsAtPercentile, at99.E2ECI95MsAtPercentile = ptr(7000.0), ptr(300.0)
	run := func(sm simulate.Simulated) simulate.ClassRun {
		return simulate.ClassRun{Pool: 10, Arrivals: simulate.ArrivalsClosedLoop, Simulated: sm}
	}
	for _, tc := range []struct {
		name   string
		slo    scenario.SLO
		sm     simulate.Simulated
		metric string // the miss, "" when it holds
		words  string // in its summary
		edge   string // the target it meets at its edge, "" when none
	}{
		{"p99 over", scenario.SLO{TTFTMs: 1000, Percentile: 99}, at99, "ttft_ms_at_percentile", "TTFT p99 1,400 ± 100 ms is over the SLO of 1,000 ms by 40 %", ""},
		{"p95 of the same run", scenario.SLO{TTFTP95Ms: 1000}, sm, "", "TTFT p95 900 ± 20 ms within 1,000 ms", ""},
		{"p99 within its interval", scenario.SLO{TTFTMs: 1450, Percentile: 99}, at99, "", "TTFT p99 1,400 ± 100 ms within 1,450 ms",
			"TTFT p99 1,400 ± 100 ms is within the SLO of 1,450 ms, but its 95 % interval reaches 1,500 ms"},
		{"task E2E at p99", scenario.SLO{TaskE2EMs: 6500, Percentile: 99}, at99, "e2e_ms_at_percentile", "task E2E p99 7,000 ± 300 ms is over the SLO of 6,500 ms", ""},
	} {
		cc, edges := judge(scenario.Class{Name: "c", SLO: &tc.slo}, run(tc.sm), 0)
		if got := strings.Join(edges, "; "); got != tc.edge {
			t.Errorf("%s: at its edge %q, want %q", tc.name, got, tc.edge)
		}
		var metrics []string
		for _, m := range cc.Misses {
			metrics = append(metrics, m.Metric)
		}
		if want := tc.metric; (want == "") != cc.Holds || (want != "" && !slices.Equal(metrics, []string{want})) {
			t.Errorf("%s: holds %v with misses %q, want %q", tc.name, cc.Holds, metrics, want)
		}
		if !strings.Contains(cc.Summary, tc.words) {
			t.Errorf("%s: summary %q does not say %q", tc.name, cc.Summary, tc.words)
		}
	}
}

// TestCheckNamesASmallTargetAsGiven: a TPOT target of 0.004 ms (one a
// plan can never meet, and not 0, which is no target) is named as given
// where nothing completed, not as "the TPOT SLO of 0 ms".
func TestCheckNamesASmallTargetAsGiven(t *testing.T) {
	run := simulate.ClassRun{Pool: 10, Arrivals: simulate.ArrivalsClosedLoop, Simulated: simulate.Simulated{Requests: 100, Sends: 100}}
	cc, _ := judge(scenario.Class{Name: "c", SLO: &scenario.SLO{TPOTMs: 0.004}}, run, 0)
	if cc.Holds || !strings.Contains(cc.Summary, "the TPOT SLO of 0.004 ms is not met") {
		t.Errorf("summary %q: want the TPOT SLO of 0.004 ms named as given", cc.Summary)
	}
}

// TestAgentTaskAtP99IsCheckedInItsHours: an agent task class with an SLO
// at p99 and a schedule is planned in its hours and checked there, at
// its percentile, by the rules every checked plan keeps.
func TestAgentTaskAtP99IsCheckedInItsHours(t *testing.T) {
	s := parse(t, `
quotas:
  - {name: agents, rpm: 3000, tpm: 8000000}
latency:
  ttft_ms: {p50: 450, p95: 1100}
  tpot_ms: {p50: 18, p95: 30}
  prefill_ms_per_1k_tokens: 20
  knee: 96
classes:
  - name: coder
    quota: agents
    mode: interactive
    demand: {rps: 0.3}
    input_tokens: {p50: 3000, p95: 6000}
    output_tokens: {p50: 250, p95: 700}
    task:
      calls: {p50: 4, p95: 8, max: 20}
      tool_ms: {p50: 1500, p95: 6000}
      tool_result_tokens: {p50: 600, p95: 2500}
    slo: {ttft_ms: 6000, task_e2e_ms: 200000, percentile: 99}
    schedule: {start_hour: 8, hours: 10}
`)
	p := mustPlan(t, s)
	consistent(t, s, p)
	c := p.Classes[0]
	if len(p.Check.Runs) != 1 || p.Check.Runs[0].StartHour != 8 || c.Check.Requests == 0 {
		t.Fatalf("runs %+v, check %+v", p.Check.Runs, c.Check)
	}
	if !c.Fitting() || !strings.Contains(c.Check.Summary, "TTFT p99") || !strings.Contains(c.Check.Summary, "task E2E p99") {
		t.Errorf("fits %v, check %q", c.Fitting(), c.Check.Summary)
	}
}

// TestWhatIfChecksWhenAsked: cells say whether a class fits only when the
// grid was checked.
func TestWhatIfChecksWhenAsked(t *testing.T) {
	s := testutil.Example(t, "chat")
	vars := []plan.Variation{{Path: "/classes/0/demand/rps", Values: []any{1, 2}}}
	for _, check := range []bool{false, true} {
		g, err := testApp.WhatIf(context.Background(), s, vars, check)
		if err != nil {
			t.Fatal(err)
		}
		for _, cell := range g.Cells {
			c := cell.Classes[0]
			if (c.Fits != nil) != check || (check && *c.Fits && !c.Feasible) {
				t.Errorf("check %v: cell %v: fits %v, feasible %v", check, cell.Values, c.Fits, c.Feasible)
			}
		}
	}
}

// TestPropertyNoPlanFitsWhereItsCheckBreaks: over random scenarios (keys
// shared by classes of every mode, batches, schedules, bursty arrivals,
// tight and loose quotas), no plan says a class fits where its own
// simulation breaks, and every check is the plan's own (consistent). The
// scenarios must hold classes that fit and classes that do not; a class
// that the queueing model finds feasible but its simulation breaks is
// rare once the plan predicts its pacing wait, and that path is pinned by
// TestCheckRaisesMinPoolWhereItsSimulationBreaks.
func TestPropertyNoPlanFitsWhereItsCheckBreaks(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 27))
	fits, unfit, breaks := 0, 0, 0
	for k := range 24 {
		s := randomScenario(r)
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			p := mustPlan(t, s)
			consistent(t, s, p)
			for _, c := range p.Classes {
				if c.Fitting() {
					fits++
				} else {
					unfit++
				}
				if c.Feasible && !c.Check.Holds {
					breaks++
				}
			}
		})
	}
	if fits == 0 || unfit == 0 {
		t.Errorf("%d classes fit and %d do not: the scenarios should show both", fits, unfit)
	}
	t.Logf("%d classes fit, %d do not; %d feasible ones break by their own simulation", fits, unfit, breaks)
}

// randomScenario draws one or two keys shared by up to three classes.
func randomScenario(r *rand.Rand) scenario.Scenario {
	f := func(v float64) *float64 { return &v }
	s := scenario.Scenario{Policy: scenario.Policy{MonteCarloDraws: 2000}}
	if r.IntN(2) == 0 {
		s.Policy.Allocation = scenario.AllocationWeighted
	}
	for i := range 1 + r.IntN(2) {
		q := scenario.Quota{Name: fmt.Sprintf("key%d", i), RPM: float64(100 + r.IntN(3000)), TPM: float64(50_000 + r.IntN(2_000_000))}
		if r.IntN(2) == 0 {
			q.TokenAccounting = scenario.AccountingMaxTokens
		}
		s.Quotas = append(s.Quotas, q)
	}
	p50 := 200 + r.Float64()*600
	s.Latency = scenario.Latency{TTFTMs: &scenario.Dist{P50: f(p50), P95: f(p50 * (1.5 + r.Float64()))}, TPOTMs: &scenario.Dist{P50: f(15), P95: f(15 * (1.2 + r.Float64()))}}
	modes := []string{scenario.ModeInteractive, scenario.ModeSemi, scenario.ModeBatch}
	for i := range 1 + r.IntN(3) {
		in, out := 200+r.Float64()*2000, 50+r.Float64()*400
		c := scenario.Class{Name: fmt.Sprintf("class%d", i), Quota: s.Quotas[r.IntN(len(s.Quotas))].Name, Mode: modes[r.IntN(3)],
			InputTokens: scenario.Dist{P50: f(in), P95: f(in * (1.5 + r.Float64()))}, OutputTokens: scenario.Dist{P50: f(out), P95: f(out * (1.5 + r.Float64()))},
			MaxTokens: int(out * 3)}
		switch r.IntN(4) {
		case 0: // closed loop
		case 1:
			c.Demand = &scenario.Demand{Requests: float64(1000 + r.IntN(20000)), WithinHours: float64(2 + r.IntN(4))}
		default:
			c.Demand = &scenario.Demand{RPS: 0.2 + r.Float64()*4}
		}
		if r.IntN(3) == 0 {
			c.ArrivalSCV = f(r.Float64() * 6)
		}
		if c.Mode != scenario.ModeBatch && r.IntN(3) > 0 {
			c.SLO = &scenario.SLO{TTFTP95Ms: 800 + r.Float64()*3000, E2EP95Ms: 8000 + r.Float64()*30000}
		}
		if r.IntN(4) == 0 {
			c.Schedule = &scenario.Schedule{StartHour: float64(r.IntN(24)), Hours: float64(6 + r.IntN(12))}
		}
		s.Classes = append(s.Classes, c)
	}
	return s
}

// TestAMissOfATargetNearZeroIsFinite: an SLO target of the smallest
// positive number is met by no request; its misses say so with a finite
// over_pct, and the plan encodes.
func TestAMissOfATargetNearZeroIsFinite(t *testing.T) {
	sc, err := scenario.Parse([]byte(`
quotas: [{name: k, rpm: 6000}]
latency: {ttft_ms: {p50: 400, p95: 900}, tpot_ms: {p50: 15, p95: 25}}
classes:
  - {name: c, quota: k, mode: interactive, demand: {rps: 0.2}, input_tokens: {fixed: 2000}, output_tokens: {fixed: 200}, slo: {ttft_p95_ms: 4.9e-324}}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(plan.New(plan.Options{})).Plan(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Classes[0]
	if c.Fits == nil || *c.Fits || c.Check == nil || len(c.Check.Misses) == 0 {
		t.Fatalf("fits %v, check %+v", c.Fits, c.Check)
	}
	for _, m := range c.Check.Misses {
		if m.OverPct == nil || *m.OverPct != maxOverPct {
			t.Errorf("%s: over by %v %%, want the bound %v", m.Metric, m.OverPct, maxOverPct)
		}
	}
}

// TestRelaxedTargetsHoldInTheirOwnSimulation: a chat whose targets at the
// 99.9th percentile no pool meets gets remedies that relax them, and the
// scenario with the remedies written in, planned again, fits: its own
// simulation sees the tail a little above the queueing model's value,
// so a target relaxed to that value alone would break it again.
func TestRelaxedTargetsHoldInTheirOwnSimulation(t *testing.T) {
	s := parse(t, `
quotas: [{name: prod, rpm: 3000, tpm: 1000000, token_accounting: max_tokens}]
latency: {ttft_ms: {p50: 350, p95: 800}, tpot_ms: {p50: 18, p95: 30}}
classes:
  - {name: chat, quota: prod, mode: interactive, demand: {rps: 2}, input_tokens: {p50: 600, p95: 2000}, output_tokens: {p50: 150, p95: 450},
     max_tokens: 700, slo: {ttft_ms: 1200, e2e_ms: 15000, percentile: 99.9}}
`)
	c := mustPlan(t, s).Classes[0]
	if c.Fitting() || len(c.Remedies) == 0 {
		t.Fatalf("chat should not fit and have remedies: fits %v, remedies %+v", c.Fitting(), c.Remedies)
	}
	fixed, err := plan.WithRemedies(s, c.Remedies)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustPlan(t, fixed).Classes[0]; !got.Fitting() {
		t.Fatalf("remedies %+v applied: chat still does not fit: %s", c.Remedies, got.Check.Summary)
	}
	for _, rm := range c.Remedies {
		if !strings.Contains(c.Explanation, rm.Change) {
			t.Errorf("the explanation does not give the remedy %q: %s", rm.Change, c.Explanation)
		}
	}
}

// TestPropertyRelaxedTargetsMakeTheClassFit: on random scenarios with
// tight targets, every class whose remedies only relax its targets fits
// once they are written into the scenario.
func TestPropertyRelaxedTargetsMakeTheClassFit(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 13))
	checked := 0
	for k := 0; k < 60 && checked < 12; k++ {
		s := randomScenario(r)
		for i := range s.Classes {
			if c := &s.Classes[i]; c.SLO != nil {
				pct := []float64{90, 95, 99, 99.9}[r.IntN(4)]
				c.SLO = &scenario.SLO{TTFTMs: c.SLO.TTFTP95Ms / 3, E2EMs: c.SLO.E2EP95Ms, Percentile: pct}
			}
		}
		p := mustPlan(t, s)
		for i, c := range p.Classes {
			if c.Fitting() || len(c.Remedies) == 0 || slices.ContainsFunc(c.Remedies, func(rm plan.Remedy) bool { return !strings.Contains(rm.Path, "/slo/") }) {
				continue
			}
			checked++
			fixed, err := plan.WithRemedies(s, c.Remedies)
			if err != nil {
				t.Fatal(err)
			}
			if got := mustPlan(t, fixed).Classes[i]; !got.Fitting() {
				t.Errorf("scenario %d class %s: remedies %+v applied, it still does not fit: %s", k, c.Name, c.Remedies, got.Check.Summary)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("only %d classes had targets to relax", checked)
	}
}

// TestAgentTaskCheckCountsTasks: the check of an agent task class whose
// task target no pool meets counts what it sheds in tasks, as its demand
// and pool do, not in requests.
func TestAgentTaskCheckCountsTasks(t *testing.T) {
	s := testutil.Example(t, "agent")
	s.Classes = slices.Clone(s.Classes)
	s.Classes[0].SLO = &scenario.SLO{TTFTMs: 3000, TaskE2EMs: 150000, Percentile: 99}
	c := mustPlan(t, s).Classes[0]
	if c.Fitting() || !strings.Contains(c.Check.Summary, " tasks shed or given up") || !strings.Contains(c.Check.Summary, "no task completed") || strings.Contains(c.Check.Summary, "request") {
		t.Errorf("check of a task class: %q", c.Check.Summary)
	}
}

// TestFitsAtTheEdgeOfItsSLOSaysSo: a chat of arrival scv 4 on a key bound
// by its 185 requests per minute, whose plan predicts a TTFT p95 of
// 7,281 ms against its target of 7,335, fits, and its check's TTFT p95
// of 6,610 ± 1,418 ms meets the target while its interval reaches past
// it (four-hour runs of it break in one seed of three): the class's
// warnings say that it fits at the edge, with the check's figure. The
// shipped examples, whose checks meet their targets by more than their
// intervals, carry no such warning.
func TestFitsAtTheEdgeOfItsSLOSaysSo(t *testing.T) {
	ctx := context.Background()
	p, err := testApp.Plan(ctx, parse(t, `
quotas:
  - {name: key, rpm: 185, tpm: 956826, token_accounting: max_tokens, burst_window_s: 60}
latency: {ttft_ms: {p50: 500, p95: 1200}, tpot_ms: {p50: 20, p95: 35}}
classes:
  - {name: chat, quota: key, mode: interactive, demand: {rps: 1.82}, arrival_scv: 4, input_tokens: {p50: 1294, p95: 2301}, output_tokens: {p50: 126, p95: 268}, max_tokens: 349, slo: {ttft_p95_ms: 7335}}
`))
	if err != nil {
		t.Fatal(err)
	}
	c := p.Classes[0]
	want := "fits at the edge of its SLO: in the check's run TTFT p95 6,610 ± 1,418 ms is within the SLO of 7,335 ms, but its 95 % interval reaches 8,028 ms"
	if !c.Fitting() || !slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
		t.Errorf("fits %v with warnings %q, want it to fit and say %q", c.Fitting(), c.Warnings, want)
	}
	for _, name := range planner.ExampleNames() {
		p, err := testApp.Plan(ctx, testutil.Example(t, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Classes {
			if slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.Contains(w, "at the edge of its SLO") }) {
				t.Errorf("example %s: %s says it fits at the edge of its SLO: %q", name, c.Name, c.Warnings)
			}
		}
	}
}
