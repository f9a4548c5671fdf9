package plan

import (
	"context"
	"math"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// taskScenario is handScenario's call made an agent task of 4 calls, each
// followed by a tool run of 1 s returning 399 tokens, with the context
// accumulating and a prefill slope of 100 ms per 1,000 input tokens.
// By hand (docs/concepts.md, "Agent tasks"): Σ in = 4·1000 + 6·(101 + 399)
// = 7,000; Σ out = 404; Σ S = 4·(0.5 + 0.02·100) + 0.0001·7,000 = 10.7 s;
// T = 10.7 + 4·1 = 14.7 s; p = 10.7/14.7.
func taskScenario(q scenario.Quota) scenario.Scenario {
	s := handScenario(q)
	s.Latency.PrefillMsPer1K = 100
	s.Classes[0].Task = &scenario.Task{Calls: fixed(4), ToolMs: fixedMs(1000), ToolResultTokens: fixedMs(399)}
	return s
}

func TestTaskPerTaskFiguresByHand(t *testing.T) {
	s := taskScenario(scenario.Quota{RPM: 600, TPM: 1e6})
	s.Classes[0].Demand = &scenario.Demand{RPS: 0.5}
	cp := mustPlan(t, s).Classes[0]
	want := TaskPlan{Calls: 4, InputTokens: 7000, OutputTokens: 404, TimeMs: 14700, CallTimeMs: 10700,
		InCallShare: signed.Round(10.7/14.7, 4), TasksInFlight: 7.35, CallsInFlightP95: binomial95(cp.Pool, 10.7/14.7)}
	if cp.Task == nil || *cp.Task != want {
		t.Fatalf("task %+v, want %+v", cp.Task, want)
	}
	// Quota use at the demand: 0.5 tasks/s × 4 requests × 60 s / 600 rpm,
	// and 0.5 × 7,404 tokens × 60 / 1e6 tpm.
	if u := cp.Predicted.Utilization; u["rpm"] != 0.2 || u["tpm"] != 0.2221 {
		t.Fatalf("utilization %v, want rpm 0.2 and tpm 0.2221", u)
	}
	// Ceilings flat out: 0.9 × 600/60 = 9 req/s ÷ 4 = 2.25 tasks/s × 14.7 s
	// = 33.075 → 33; 0.9 × 1e6/60 = 15,000 tokens/s ÷ 7,404 × 14.7 = 29.78 → 29.
	if c := ceiling(cp, "rpm"); c == nil || c.MaxPool == nil || *c.MaxPool != 33 {
		t.Fatalf("rpm ceiling %+v, want 33", c)
	}
	if c := ceiling(cp, "tpm"); c == nil || c.MaxPool == nil || *c.MaxPool != 29 {
		t.Fatalf("tpm ceiling %+v, want 29", c)
	}
	if cp.Pool != 29 || cp.BindingConstraint != "tpm" {
		t.Fatalf("pool %d bound by %s, want 29 by tpm", cp.Pool, cp.BindingConstraint)
	}
	// Little's law on tasks: 0.5 tasks/s × 14.7 s.
	if !strings.Contains(cp.Explanation, "0.5 × 14.7 s = 7.35 tasks in flight") {
		t.Fatalf("explanation without Little's law on tasks: %s", cp.Explanation)
	}
	if mp := cp.MinPool; mp == nil || *mp < 8 {
		t.Fatalf("min_pool %v, want at least ⌈7.35/0.95⌉ = 8", mp)
	}
}

func TestTaskFreshContextByHand(t *testing.T) {
	s := taskScenario(scenario.Quota{RPM: 600})
	s.Classes[0].Task.Context = scenario.ContextFresh
	cp := mustPlan(t, s).Classes[0]
	// Σ in = 4·1000; Σ S = 4·(0.5 + 2) + 0.0001·4,000 = 10.4 s; T = 14.4 s.
	if cp.Task.InputTokens != 4000 || cp.Task.CallTimeMs != 10400 || cp.Task.TimeMs != 14400 {
		t.Fatalf("task %+v", cp.Task)
	}
	// 9 req/s ÷ 4 × 14.4 s = 32.4 → 32.
	if cp.Pool != 32 || cp.BindingConstraint != "rpm" {
		t.Fatalf("pool %d bound by %s, want 32 by rpm", cp.Pool, cp.BindingConstraint)
	}
}

func TestTaskMaxTokensAccounting(t *testing.T) {
	s := taskScenario(scenario.Quota{TPM: 1e6, TokenAccounting: scenario.AccountingMaxTokens})
	s.Classes[0].MaxTokens = 200
	cp := mustPlan(t, s).Classes[0]
	// Each call reserves max_tokens: 7,000 + 4·200 = 7,800 tokens a task;
	// 15,000/7,800 × 14.7 s = 28.27 → 28.
	if c := ceiling(cp, "tpm"); c == nil || c.MaxPool == nil || *c.MaxPool != 28 {
		t.Fatalf("tpm ceiling %+v, want 28", c)
	}
}

// A task in flight is in a call with probability p; a pool counts the
// p95 of its calls in flight, binomial(pool, p), against its endpoint's
// knee budget: with a budget of ⌊0.7 × 20⌋ = 14, the largest pool whose
// p95 is at most 14 is 16 (binomial95 counts it term by term).
func TestTaskPoolRespectsTheKneeBudget(t *testing.T) {
	s := taskScenario(scenario.Quota{RPM: 6000})
	s.Latency.Knee = new(20)
	cp := mustPlan(t, s).Classes[0]
	p := 10.7 / 14.7
	if cp.BindingConstraint != ConstraintKnee || cp.Pool != 16 {
		t.Fatalf("pool %d bound by %s, want 16 by the knee", cp.Pool, cp.BindingConstraint)
	}
	if binomial95(16, p) != 14 || binomial95(17, p) != 15 || cp.Task.CallsInFlightP95 != 14 {
		t.Fatalf("calls in flight p95 %d", cp.Task.CallsInFlightP95)
	}
}

// Every pool of a task class keeps the p95 of its calls in flight within
// the knee budget, and the next pool would not.
func TestTaskPoolsWithinBudgetAtEveryKnee(t *testing.T) {
	for _, knee := range []int{2, 5, 13, 40, 150} {
		for _, tool := range []float64{0, 300, 5000} {
			s := taskScenario(scenario.Quota{RPM: 1e7})
			s.Latency.Knee = new(knee)
			s.Classes[0].Task.ToolMs = fixedMs(tool)
			s.Policy.MaxPool = 100000
			cp := mustPlan(t, s).Classes[0]
			budget := int(math.Floor(0.7*float64(knee) + 1e-9))
			p := 10.7 / (10.7 + 4*tool/1000)
			if cp.BindingConstraint != ConstraintKnee {
				t.Fatalf("knee %d tool %g: bound by %s", knee, tool, cp.BindingConstraint)
			}
			if got := binomial95(cp.Pool, p); got > budget {
				t.Errorf("knee %d tool %g: pool %d keeps %d calls in flight at p95, over the budget %d", knee, tool, cp.Pool, got, budget)
			}
			if got := binomial95(cp.Pool+1, p); got <= budget {
				t.Errorf("knee %d tool %g: pool %d is not the largest within the budget %d", knee, tool, cp.Pool, budget)
			}
		}
	}
}

// binomial95 is the 95th percentile of binomial(c, p), summed term by
// term from the binomial coefficients in 256-bit floating point.
func binomial95(c int, p float64) int {
	const prec = 256
	fl := func(v float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(v) }
	pk, qk := make([]*big.Float, c+1), make([]*big.Float, c+1)
	pk[0], qk[0] = fl(1), fl(1)
	for k := 1; k <= c; k++ {
		pk[k] = new(big.Float).SetPrec(prec).Mul(pk[k-1], fl(p))
		qk[k] = new(big.Float).SetPrec(prec).Mul(qk[k-1], fl(1-p))
	}
	cdf, target := fl(0), fl(0.95)
	for k := 0; k <= c; k++ {
		term := new(big.Float).SetPrec(prec).SetInt(new(big.Int).Binomial(int64(c), int64(k)))
		term.Mul(term, pk[k]).Mul(term, qk[c-k])
		cdf.Add(cdf, term)
		if cdf.Cmp(target) >= 0 {
			return k
		}
	}
	return c
}

// A task class is billed for its tasks' tokens: 7,000 input tokens at
// 1 USD and 404 output tokens at 4 USD a million come to 0.008616 USD a
// task; 0.5 tasks/s for a day is 43,200 tasks and 372.2112 USD.
func TestTaskCostByHand(t *testing.T) {
	s := taskScenario(scenario.Quota{RPM: 600, Price: &scenario.Price{InputPerMtok: f(1), OutputPerMtok: f(4)}})
	s.Classes[0].Demand = &scenario.Demand{RPS: 0.5}
	c := mustPlan(t, s).Classes[0].Cost
	if c == nil || c.RequestsPerDay != 43200 || math.Abs(c.PerDay-372.2112) > 0.01 {
		t.Fatalf("cost %+v, want 43,200 tasks and 372.21 USD a day", c)
	}
}

// A task class's client paces calls: its share of rpm, 9 req/s, is 9
// calls a second, in bursts of 0.9 × 600 / 60 × 1 s = 9 calls.
func TestTaskPacingPacesCalls(t *testing.T) {
	cp := mustPlan(t, taskScenario(scenario.Quota{RPM: 600})).Classes[0]
	if cp.Pacing.RateRPS != 9 || cp.Pacing.Burst != 9 {
		t.Fatalf("pacing %+v, want 9 calls/s in bursts of 9", cp.Pacing)
	}
}

// A task target no pool meets (a task takes 14.7 s) is relaxed where it
// is written, slo.task_e2e_ms, to what the pool achieves.
func TestTaskTargetRemedy(t *testing.T) {
	s := taskScenario(scenario.Quota{RPM: 600})
	s.Classes[0].Demand = &scenario.Demand{RPS: 0.5}
	s.Classes[0].SLO = &scenario.SLO{TaskE2EMs: 10000}
	cp := mustPlan(t, s).Classes[0]
	if cp.Feasible || len(cp.Remedies) == 0 {
		t.Fatalf("feasible %v, remedies %v", cp.Feasible, cp.Remedies)
	}
	rm := cp.Remedies[0]
	if rm.Path != "/classes/0/slo/task_e2e_ms" || rm.Value < 14700 {
		t.Fatalf("remedy %+v, want slo.task_e2e_ms relaxed to at least 14,700 ms", rm)
	}
}

// An accumulating task's last call carries the whole earlier context:
// 1,000 + 3 × 500 = 2,500 input tokens, which with 600 tokens of
// max_tokens is 3,100 tokens of tpm at admission. A tpm of 180,000 allows
// 0.9 × 180,000/60 × 1 s = 2,700 tokens a window: the last call never
// passes, though the first (1,600 tokens) would.
func TestTaskLastCallMustFitAWindow(t *testing.T) {
	s := taskScenario(scenario.Quota{TPM: 180000, TokenAccounting: scenario.AccountingMaxTokens})
	s.Classes[0].MaxTokens = 600
	cp := mustPlan(t, s).Classes[0]
	if c := ceiling(cp, "tpm"); c == nil || c.MaxPool == nil || *c.MaxPool != 0 || !strings.Contains(c.Detail, "3,100") {
		t.Fatalf("tpm ceiling %+v, want 0 for a charge of 3,100 tokens", c)
	}
	// A cap on the first input does not bound the context the last call
	// carries: no remedy offers one.
	for _, r := range cp.Remedies {
		if strings.HasSuffix(r.Path, "/input_tokens/max") {
			t.Errorf("remedy %q caps the first input", r.Change)
		}
	}
	s.Classes[0].Task.Context = scenario.ContextFresh
	if c := ceiling(mustPlan(t, s).Classes[0], "tpm"); c == nil || c.MaxPool == nil || *c.MaxPool == 0 {
		t.Fatalf("fresh context: tpm ceiling %+v, want a pool", c)
	}
}

// On an endpoint shared with a class of single calls, a task class's
// share of the knee budget is in calls: with ⌊0.7 × 20⌋ = 14 split
// evenly, the single calls get 7 and the tasks the largest pool whose
// p95 of calls in flight is at most 7.
func TestTaskSharesTheKneeBudgetInCalls(t *testing.T) {
	s := taskScenario(scenario.Quota{RPM: 1e6})
	s.Latency.Knee = new(20)
	calls := s.Classes[0]
	calls.Name, calls.Task = "single", nil
	s.Classes = append(s.Classes, calls)
	p := mustPlan(t, s)
	task, single := p.Classes[0], p.Classes[1]
	if single.Pool != 7 || single.BindingConstraint != ConstraintKnee {
		t.Fatalf("single calls: pool %d bound by %s, want 7 by the knee", single.Pool, single.BindingConstraint)
	}
	q := 10.7 / 14.7
	if task.BindingConstraint != ConstraintKnee || binomial95(task.Pool, q) > 7 || binomial95(task.Pool+1, q) <= 7 {
		t.Fatalf("tasks: pool %d bound by %s keeps %d calls in flight at p95, want the largest within 7", task.Pool, task.BindingConstraint, binomial95(task.Pool, q))
	}
}

// An agent task's calls in flight grow in steps with its pool, so that
// weighted shares of a knee budget can alternate between two states for
// ever: the pools are then what the last shares allow, the same in the
// classes' plans and in their endpoint's allocations, together within the
// budget in calls in flight, and bound by it rather than by the key, whose
// ceilings keep their usual reading.
func TestUnsettledSharesKeepPoolsAndAllocationsTogether(t *testing.T) {
	s, err := scenario.Parse([]byte(`
quotas:
  - {name: k, otpm: 1000000, token_accounting: max_tokens}
latency:
  ttft_ms: {p50: 450, p95: 1100}
  tpot_ms: {p50: 18, p95: 30}
  knee: 96
classes:
  - name: a
    quota: k
    mode: interactive
    demand: {rps: 0.2}
    arrival_scv: 30
    input_tokens: {p50: 3000, p95: 6000}
    output_tokens: {p50: 250, p95: 700}
    max_tokens: 1500
    weight: 3
    task:
      calls: {p50: 6, p95: 14}
      tool_ms: {p50: 1500, p95: 6000}
    slo: {task_e2e_ms: 180000, percentile: 99}
  - name: b
    quota: k
    mode: interactive
    demand: {rps: 2}
    input_tokens: {p50: 1500, p95: 3000}
    output_tokens: {p50: 500, p95: 1400}
    max_tokens: 3000
    priority: -2
policy: {allocation: weighted}
`))
	if err != nil {
		t.Fatal(err)
	}
	run, _, err := New(Options{}).planRun(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := mustPlan(t, s)
	if !run.unsettled {
		t.Fatal("the shares settled: the scenario no longer tests the fallback")
	}
	ep := p.Endpoints[0]
	inFlight := 0
	for _, al := range ep.Allocations {
		for _, c := range p.Classes {
			if c.Name != al.Class {
				continue
			}
			if c.Pool != al.Pool {
				t.Errorf("class %s: pool %d, its endpoint allocates it %d", c.Name, c.Pool, al.Pool)
			}
			if c.BindingConstraint != ConstraintKnee { // the key has room: its otpm is half used
				t.Errorf("class %s: bound by %s, want the knee budget", c.Name, c.BindingConstraint)
			}
			use := c.Pool
			if c.Task != nil {
				use = c.Task.CallsInFlightP95
			}
			inFlight += use
		}
	}
	if inFlight > *ep.Budget {
		t.Errorf("the pools keep %d calls in flight, over the budget %d", inFlight, *ep.Budget)
	}
}

// The rate an agent class sustains is the most its pool serves within
// its SLO, read as its percentiles are: at that rate the class is
// feasible and 3 % above it not. With a TTFT target, only a task's first
// call waits for the slot; reading the task's wait on every call, it
// once offered a rate well below what the pool serves.
func TestTaskSustainableRateIsTheMostItServes(t *testing.T) {
	s := taskScenario(scenario.Quota{RPM: 1e6, TPM: 1e9})
	s.Policy.MaxPool = 4
	s.Classes[0].Demand = &scenario.Demand{RPS: 0.95 * 4 / 14.7}
	s.Classes[0].SLO = &scenario.SLO{TTFTP95Ms: 2000}
	cp := mustPlan(t, s).Classes[0]
	if cp.Feasible || cp.Shed == nil || !(cp.Shed.SustainableRPS > 0) {
		t.Fatalf("feasible %v, shed %+v, want not feasible with a sustainable rate: %s", cp.Feasible, cp.Shed, cp.Explanation)
	}
	at := func(rps float64) ClassPlan {
		s.Classes[0].Demand = &scenario.Demand{RPS: rps}
		return mustPlan(t, s).Classes[0]
	}
	sus := cp.Shed.SustainableRPS
	if c := at(sus); !c.Feasible {
		t.Errorf("at the sustainable %g tasks/s: not feasible, TTFT p95 %v: %s", sus, *c.Predicted.TTFTP95Ms, c.Explanation)
	}
	if c := at(1.03 * sus); c.Feasible {
		t.Errorf("at 3 %% above the sustainable %g tasks/s: feasible, TTFT p95 %v", sus, *c.Predicted.TTFTP95Ms)
	}
	t.Logf("sustains %g of %g tasks/s", sus, 0.95*4/14.7)
}

// TestTaskCeilingsTellTheDemandInTasks: the ceilings of an agent task
// class that its demand holds (a daily limit within which the demand's
// volume fits, a slot that could send faster) and the warning of a peak
// in its demand profile tell its demand in tasks, as its demand counts
// them, not as as many requests.
func TestTaskCeilingsTellTheDemandInTasks(t *testing.T) {
	s := taskScenario(scenario.Quota{RPM: 600, RPD: 1e6})
	s.Classes[0].Demand = &scenario.Demand{RPS: 0.05, Profile: []scenario.DemandWindow{{StartS: 60, DurationS: 60, Factor: 2}}}
	cp := mustPlan(t, s).Classes[0]
	rpd := ceiling(cp, "rpd")
	if rpd == nil || !strings.Contains(rpd.Detail, "its demand of 0.1 tasks/s is within it") {
		t.Errorf("rpd ceiling %+v, want the demand of 0.1 tasks/s", rpd)
	}
	if !slices.ContainsFunc(cp.Warnings, func(w string) bool {
		return strings.Contains(w, "sized at the peak of its demand profile: 2 × its steady 0.05 tasks/s, 0.1 tasks/s")
	}) {
		t.Errorf("warnings %q, want the peak in tasks/s", cp.Warnings)
	}
	for _, c := range cp.Ceilings {
		if strings.Contains(c.Detail, "req/s is within it") {
			t.Errorf("ceiling %s tells the demand in requests: %s", c.Constraint, c.Detail)
		}
	}
}
