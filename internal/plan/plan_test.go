package plan

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/scenario"
)

// TestSmallDemandIsKept: a demand too small for four decimals is given
// with its own digits, not left out as if there were none.
func TestSmallDemandIsKept(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 600})
	s.Classes[0].Demand = &scenario.Demand{RPS: 1.5e-5}
	if got := mustPlan(t, s).Classes[0].Predicted.OfferedRPS; got != 1.5e-5 {
		t.Errorf("offered_rps %v, want 1.5e-05", got)
	}
}

// TestOneSlotOnAFastEndpoint: a class whose demand fits its key's share
// gets a pool of 1 even where one slot running flat out would send faster
// than the share (the key's pacing holds its sends to it), and one whose
// demand does not fit gets none. E[S] = 5 ms + 0.1 ms × 100 = 15 ms; the
// key allows 0.9 × 100,000/60 = 1,500 tokens/s ÷ 1,101 = 1.36 req/s, so
// the flat-out ceiling is 1.36 × 0.015 = 0.02 → 0 slots.
func TestOneSlotOnAFastEndpoint(t *testing.T) {
	for _, tc := range []struct {
		rps  float64
		pool int
		fits bool
	}{
		{1, 1, true},
		{2, 0, false},
	} {
		s := handScenario(scenario.Quota{TPM: 100_000})
		s.Latency = scenario.Latency{TTFTMs: fixedMs(5), TPOTMs: fixedMs(0.1)}
		s.Classes[0].Demand = &scenario.Demand{RPS: tc.rps}
		cp := mustPlan(t, s).Classes[0]
		c := ceiling(cp, "tpm")
		if c == nil || c.MaxPool == nil || *c.MaxPool != tc.pool {
			t.Fatalf("%g req/s: tpm ceiling %+v, want %d", tc.rps, c, tc.pool)
		}
		if cp.Pool != tc.pool || cp.Feasible != tc.fits {
			t.Errorf("%g req/s: pool %d, fits %v; want %d, %v", tc.rps, cp.Pool, cp.Feasible, tc.pool, tc.fits)
		}
		if tc.fits && !strings.Contains(c.Detail, "pacing holds its sends") {
			t.Errorf("%g req/s: the ceiling's detail %q should say why one slot is allowed", tc.rps, c.Detail)
		}
	}
}

// TestHandWorkedCeilings checks each constraint against arithmetic done by
// hand, with the fixed service time E[S] = 0.5 + 0.02 × 100 = 2.5 s and
// headroom 0.9.
func TestHandWorkedCeilings(t *testing.T) {
	tests := []struct {
		name       string
		quota      scenario.Quota
		maxTokens  int
		constraint string
		want       int
	}{
		// 0.9 × 600/60 = 9 req/s; × 2.5 s = 22.5 → 22.
		{"rpm", scenario.Quota{RPM: 600}, 0, "rpm", 22},
		// 0.9 × 1,200,000/60 = 18,000 tokens/s ÷ 1,101 = 16.35 req/s; × 2.5 = 40.9 → 40.
		{"tpm actual", scenario.Quota{TPM: 1_200_000}, 0, "tpm", 40},
		// max_tokens 400 counted at admission: ÷ 1,400 = 12.86 req/s; × 2.5 = 32.1 → 32.
		{"tpm max_tokens", scenario.Quota{TPM: 1_200_000, TokenAccounting: "max_tokens"}, 400, "tpm", 32},
		// 0.9 × 600,000/60 = 9,000 input tokens/s ÷ 1,000 = 9 req/s; × 2.5 = 22.5 → 22.
		{"itpm", scenario.Quota{ITPM: 600_000}, 0, "itpm", 22},
		// 0.9 × 100,000/60 = 1,500 output tokens/s ÷ 101 = 14.85 req/s; × 2.5 = 37.1 → 37.
		{"otpm", scenario.Quota{OTPM: 100_000}, 0, "otpm", 37},
		// 0.9 × 1,000,000 / 86,400 s = 10.42 req/s; × 2.5 = 26.0 → 26.
		{"rpd", scenario.Quota{RPD: 1_000_000}, 0, "rpd", 26},
		// Over 8 active hours: 0.9 × 1,000,000 / 28,800 s = 31.25 req/s; × 2.5 = 78.1 → 78.
		{"rpd active hours", scenario.Quota{RPD: 1_000_000, ActiveHours: 8}, 0, "rpd", 78},
		// 0.9 × 2e9 / 86,400 = 20,833 tokens/s ÷ 1,101 = 18.92 req/s; × 2.5 = 47.3 → 47.
		{"tpd", scenario.Quota{TPD: 2_000_000_000}, 0, "tpd", 47},
		// Headroom 0.5: 0.5 × 600/60 = 5 req/s; × 2.5 = 12.5 → 12.
		{"headroom", scenario.Quota{RPM: 600, Headroom: 0.5}, 0, "rpm", 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := handScenario(tt.quota)
			s.Classes[0].MaxTokens = tt.maxTokens
			cp := mustPlan(t, s).Classes[0]
			c := ceiling(cp, tt.constraint)
			if c == nil || c.MaxPool == nil || *c.MaxPool != tt.want {
				t.Fatalf("%s ceiling = %+v, want %d", tt.constraint, c, tt.want)
			}
			if cp.Pool != tt.want || cp.BindingConstraint != tt.constraint {
				t.Errorf("pool %d bound by %s, want %d by %s", cp.Pool, cp.BindingConstraint, tt.want, tt.constraint)
			}
			if !strings.Contains(c.Detail, tt.constraint) || !strings.Contains(c.Detail, "2.5") {
				t.Errorf("detail %q should name the constraint and E[S] 2.5 s", c.Detail)
			}
		})
	}
}

func TestKneeCeilingAvoidsFloatingPointTrap(t *testing.T) {
	// 0.7 × 30 is 20.999999999999996 in floating point; the ceiling is 21.
	s := handScenario(scenario.Quota{RPM: 1e6})
	s.Latency.Knee = intPtr(30)
	cp := mustPlan(t, s).Classes[0]
	if c := ceiling(cp, "knee"); c == nil || *c.MaxPool != 21 || cp.BindingConstraint != "knee" {
		t.Fatalf("knee ceiling %+v, pool %d by %s; want 21 by knee", c, cp.Pool, cp.BindingConstraint)
	}
	s.Classes[0].Mode = scenario.ModeBatch
	if c := ceiling(mustPlan(t, s).Classes[0], "knee"); *c.MaxPool != 30 {
		t.Errorf("batch knee ceiling %d, want 30 (safety 1.0)", *c.MaxPool)
	}
}

// curveScenario has a measured curve of two points, TTFT 200 ms at 8 in
// flight and 1,400 ms at 16 (interpolated linearly between two points:
// 200 + 150·(c − 8) ms), TPOT 20 ms throughout, and 51 output tokens, so
// E2E(c) = TTFT(c) + 1,000 ms.
func curveScenario() scenario.Scenario {
	s := handScenario(scenario.Quota{RPM: 1e6})
	s.Latency = scenario.Latency{Curve: []scenario.CurvePoint{
		{Concurrency: 8, TTFTP50Ms: 200, TTFTP95Ms: 200, TPOTP50Ms: 20, TPOTP95Ms: 20},
		{Concurrency: 16, TTFTP50Ms: 1400, TTFTP95Ms: 1400, TPOTP50Ms: 20, TPOTP95Ms: 20},
	}}
	s.Classes[0].OutputTokens = fixed(51)
	return s
}

func TestSLOCeilingsOnACurve(t *testing.T) {
	s := curveScenario()
	// TTFT ≤ 800 ms: 200 + 150(c − 8) ≤ 800 → c ≤ 12.
	// E2E ≤ 2,000 ms: TTFT ≤ 1,000 ms → c ≤ 13.33 → 13.
	s.Classes[0].SLO = &scenario.SLO{TTFTP95Ms: 800, E2EP95Ms: 2000}
	cp := mustPlan(t, s).Classes[0]
	if c := ceiling(cp, "slo_ttft"); c == nil || c.MaxPool == nil || *c.MaxPool != 12 {
		t.Errorf("slo_ttft ceiling %+v, want 12", c)
	}
	if c := ceiling(cp, "slo_e2e"); c == nil || c.MaxPool == nil || *c.MaxPool != 13 {
		t.Errorf("slo_e2e ceiling %+v, want 13", c)
	}
	if cp.Pool != 12 || cp.BindingConstraint != "slo_ttft" {
		t.Errorf("pool %d by %s, want 12 by slo_ttft", cp.Pool, cp.BindingConstraint)
	}
}

func TestQuotaCeilingOnACurveIsSearched(t *testing.T) {
	// X(c) = c / E[S(c)]: flat 1.2 s up to 8 (X(8) = 6.67 req/s), then
	// E[S] = 1.2 + 0.15(c − 8) s, so X(c) tops out near 8 req/s at 16.
	s := curveScenario()
	s.Quotas[0].RPM = 7.5 * 60 / 0.9 // 7.5 req/s usable
	cp := mustPlan(t, s).Classes[0]
	// X(9) = 9/1.35 = 6.67, X(10) = 10/1.5 = 6.67, X(11) = 11/1.65 = 6.67:
	// c/(1.2 + 0.15(c−8)) = c/(0.15c) → 6.67 for every c ≥ 8, never 7.5,
	// but beyond 16 the saturated extrapolation keeps X flat too.
	if c := ceiling(cp, "rpm"); c == nil || c.MaxPool != nil {
		t.Fatalf("rpm ceiling %+v: the endpoint never sends 7.5 req/s, so it should be unbounded", c)
	}
	s.Quotas[0].RPM = 5 * 60 / 0.9 // 5 req/s: X(c) = c/1.2 > 5 from c = 7
	cp = mustPlan(t, s).Classes[0]
	if c := ceiling(cp, "rpm"); c == nil || c.MaxPool == nil || *c.MaxPool != 6 {
		t.Fatalf("rpm ceiling %+v, want 6", c)
	}
}

func TestPolicyCapWhenNothingLimits(t *testing.T) {
	s := curveScenario()
	s.Policy.MaxPool = 50
	cp := mustPlan(t, s).Classes[0]
	if cp.Pool != 50 || cp.BindingConstraint != ConstraintPolicy || len(cp.Warnings) == 0 {
		t.Fatalf("pool %d by %s warnings %v, want 50 by policy_cap with a warning", cp.Pool, cp.BindingConstraint, cp.Warnings)
	}
}

// TestMinPoolHandWorked: λ = 4 req/s and E[S] = 2.5 s (A = 10 erlangs,
// cs² = 0). The wait is 0 with probability 1 − C, else exponential with
// mean Wq/C, Wq = C/(c/E[S] − λ)·(1 + 0)/2, so p95(W) = (Wq/C)·ln(C/0.05):
// c = 13: C = 0.28527, p95 = 2.5 + 0.726 = 3.23 s > 3 s;
// c = 14: C = 0.17413, p95 = 2.5 + 0.390 = 2.89 s ≤ 3 s. The client sheds
// a request that waits τ = 3 − 2.5 = 0.5 s, and a pool may shed at most
// 1 %: with the plan's wait law (π = C, and θ = 0.36125 s at 14, 0.30679 s
// at 15, the mean of fixed service's wait matched at its p95), q =
// π·e^{−τ/θ} = 0.04363 and, as fixed service on several slots drains
// the wait beyond τ a tenth faster than exponential service (less so
// towards heavy traffic), r = (1 + 0.1·√((1 − ρ)/0.4))(1 − ρ) = 0.30986,
// qr/(1 − q(1 − r)) = 1.39 % at 14 (ρ = 10/14); q = 0.02000, r = 0.36376
// and 0.74 % at 15. So min_pool = 15.
func TestMinPoolHandWorked(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 600})
	s.Policy.MonteCarloDraws = 20000
	s.Classes[0].Demand = &scenario.Demand{RPS: 4}
	s.Classes[0].SLO = &scenario.SLO{E2EP95Ms: 3000}
	cp := mustPlan(t, s).Classes[0]
	if cp.MinPool == nil || *cp.MinPool != 15 {
		t.Fatalf("min_pool = %v, want 15", cp.MinPool)
	}
	// At 14 its p95s meet the target, but it sheds too much: it does not
	// fit, and says why.
	at14 := s
	at14.Policy.MaxPool = 14
	c14 := mustPlan(t, at14).Classes[0]
	if c14.Feasible || c14.Predicted.ShedShare != 0.0139 || *c14.Predicted.E2EP95Ms > 3000 ||
		!strings.Contains(c14.Explanation, "sheds 1.39 % of its requests") {
		t.Errorf("at 14: feasible %v, shed share %v, E2E p95 %v ms, want not feasible, 0.0139 and at most 3,000: %s",
			c14.Feasible, c14.Predicted.ShedShare, *c14.Predicted.E2EP95Ms, c14.Explanation)
	}
	// The rate it sustains is the most it serves shedding at most 1 %:
	// 3.8 req/s (ρ = 0.67857, q = 0.02808, r = 0.35024) sheds 1.002 %,
	// more.
	if c14.Shed == nil || !(c14.Shed.SustainableRPS > 3.7 && c14.Shed.SustainableRPS < 3.8) {
		t.Fatalf("at 14: shed %+v, want a sustainable rate between 3.7 and 3.8 req/s", c14.Shed)
	}
	at14.Classes = slices.Clone(at14.Classes)
	at14.Classes[0].Demand = &scenario.Demand{RPS: c14.Shed.SustainableRPS}
	if c := mustPlan(t, at14).Classes[0]; !c.Feasible || c.Predicted.ShedShare > 0.01 {
		t.Errorf("at its sustainable %g req/s: feasible %v, shed share %v", c14.Shed.SustainableRPS, c.Feasible, c.Predicted.ShedShare)
	}
	// rpm allows 22 (see TestHandWorkedCeilings): feasible, pool 22.
	if !cp.Feasible || cp.Pool != 22 {
		t.Fatalf("pool %d feasible %v, want 22 and feasible", cp.Pool, cp.Feasible)
	}
	// At 22 the wait is tiny: C(10, 22) ≈ 0.0002, Wq = C/(8.8 − 4)/2.
	wantWq := model.ErlangC(22, 10) / (22/2.5 - 4) / 2 * 1000
	if got := *cp.Predicted.QueueWaitMeanMs; math.Abs(got-wantWq) > 0.1 {
		t.Errorf("queue wait mean %g ms, want %g", got, wantWq)
	}
	if got := cp.Predicted.ThroughputRPS; got != 8.8 {
		t.Errorf("throughput %g, want 22/2.5 = 8.8 req/s", got)
	}
	if got := cp.Predicted.Utilization["rpm"]; got != 0.4 {
		t.Errorf("rpm utilization %g, want 4 × 60 / 600 = 0.4", got)
	}
}

func TestInfeasibleClassGetsRemediesAndShed(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 240}) // 3.6 req/s usable → ceiling 9
	s.Classes[0].Demand = &scenario.Demand{RPS: 4}
	s.Classes[0].SLO = &scenario.SLO{E2EP95Ms: 3000}
	cp := mustPlan(t, s).Classes[0]
	if cp.Feasible || cp.Pool != 9 {
		t.Fatalf("pool %d feasible %v, want 9 and infeasible", cp.Pool, cp.Feasible)
	}
	if len(cp.Remedies) != 1 || cp.Remedies[0].Constraint != "rpm" {
		t.Fatalf("remedies %+v, want one for rpm", cp.Remedies)
	}
	// min_pool 14 flat out sends 14/2.5 = 5.6 req/s: rpm = 5.6 × 60 / 0.9 =
	// 373.3 → 374. Checked there, the key's pacing bucket of 5.6 req/s
	// makes 4 req/s wait and min_pool is 15: 15/2.5 × 60/0.9 = 400 → 401.
	if got := cp.Remedies[0].Value; got != 401 {
		t.Errorf("rpm remedy %g, want 401", got)
	}
	if cp.Shed == nil || cp.Shed.SustainableRPS <= 0 || cp.Shed.SustainableRPS >= 4 || math.Abs(cp.Shed.SustainableRPS+cp.Shed.ShedRPS-4) > 1e-3 {
		t.Errorf("shed %+v", cp.Shed)
	}
	if !strings.Contains(cp.Explanation, "does not fit") || !strings.Contains(cp.Explanation, "401") {
		t.Errorf("explanation %q should say it does not fit and name the remedy", cp.Explanation)
	}
}

func TestTruncationRiskAndWarning(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 600})
	s.Classes[0].OutputTokens = pct(200, 600)
	s.Classes[0].MaxTokens = 400
	cp := mustPlan(t, s).Classes[0]
	// P(X ≥ 400) = 1 − Φ(ln 2 / σ), σ = ln 3 / 1.6449 = 0.6679: 1 − Φ(1.0378) = 0.1497.
	if math.Abs(cp.TruncationRisk-0.1497) > 1e-4 {
		t.Errorf("truncation risk %g, want 0.1497", cp.TruncationRisk)
	}
	if !strings.Contains(strings.Join(cp.Warnings, " "), "max_tokens 400") {
		t.Errorf("warnings %v should flag the truncation", cp.Warnings)
	}
}

func TestBatchCompletionAndDailyLimit(t *testing.T) {
	// 100,000 requests within 8 h; rpd 50,000: the daily share is
	// 0.9 × 50,000 = 45,000, short of 100,000.
	s := handScenario(scenario.Quota{RPM: 6000, RPD: 50000})
	s.Classes[0].Mode = scenario.ModeBatch
	s.Classes[0].Demand = &scenario.Demand{Requests: 100000, WithinHours: 8}
	cp := mustPlan(t, s).Classes[0]
	if cp.Batch == nil || len(cp.Batch.DailyLimits) != 1 || cp.Batch.DailyLimits[0].OK {
		t.Fatalf("batch %+v: want the rpd check to fail", cp.Batch)
	}
	if d := cp.Batch.DailyLimits[0]; d.Needed != 100000 || d.Available != 45000 {
		t.Errorf("rpd needed %g available %g, want 100,000 and 45,000", d.Needed, d.Available)
	}
	if cp.Feasible || cp.BindingConstraint != "rpd" {
		t.Errorf("feasible %v bound by %s: the daily limit should bind", cp.Feasible, cp.BindingConstraint)
	}
}

// A chat of 2 req/s with a five-minute burst to 3× is sized at 6 req/s,
// but a daily limit counts its day, 172,800 + 1,200 requests: on a key of
// 300,000 rpd (270,000 usable) it fits and uses 58 % of it, where the
// peak's rate all day (518,400) held its pool below its min_pool and
// asked for 605,297 rpd. A profile at 3× for two days sends 3× a day; a
// pause sends no less than a steady day, on the safe side.
func TestDailyLimitCountsTheProfilesBusiestDay(t *testing.T) {
	for _, tc := range []struct {
		name    string
		profile []scenario.DemandWindow
		use     float64
	}{
		{"a five-minute burst", []scenario.DemandWindow{{StartS: 0, DurationS: 300, Factor: 3}}, 174000.0 / 300000},
		{"two days at 3×", []scenario.DemandWindow{{StartS: 3600, DurationS: 2 * 86400, Factor: 3}}, 3 * 172800.0 / 300000},
		{"a burst on the second day", []scenario.DemandWindow{{StartS: 0, DurationS: 600, Factor: 0}, {StartS: 90000, DurationS: 600, Factor: 2}}, 174000.0 / 300000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := handScenario(scenario.Quota{RPM: 3000, TPM: 30_000_000, RPD: 300000})
			s.Classes[0].Demand = &scenario.Demand{RPS: 2, Profile: tc.profile}
			p := mustPlan(t, s)
			cp := p.Classes[0]
			if tc.use > 0.9 {
				// Its day does not fit: rpd binds and holds its pool to
				// what the day allows.
				if cp.Feasible || cp.BindingConstraint != "rpd" {
					t.Errorf("pool %d bound by %s, feasible %v, its day %.0f %% of rpd: want rpd to bind and the class not to fit", cp.Pool, cp.BindingConstraint, cp.Feasible, 100*tc.use)
				}
				return
			}
			if u := p.Quotas[0].Utilization["rpd"]; math.Abs(u-tc.use) > 1e-3 {
				t.Errorf("rpd use %g, want %.4f", u, tc.use)
			}
			if cp.BindingConstraint == "rpd" || !cp.Feasible {
				t.Errorf("pool %d bound by %s, feasible %v: want rpd to hold no pool back", cp.Pool, cp.BindingConstraint, cp.Feasible)
			}
		})
	}
}

// A batch of 80,000 requests within 6 h on a key of 100,000 rpd (90,000
// usable) fits: the daily limit counts the batch's 80,000 requests a
// day, not its rate of 3.7 req/s over all 24 h of the key's day (320,000),
// which held its pool to 4 and asked for 375,341 rpd.
func TestBatchDailyLimitCountsTheBatchOnce(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 6000, RPD: 100000})
	s.Classes[0].Mode = scenario.ModeBatch
	s.Classes[0].Demand = &scenario.Demand{Requests: 80000, WithinHours: 6}
	p := mustPlan(t, s)
	cp := p.Classes[0]
	if !cp.Feasible || cp.BindingConstraint == "rpd" || cp.Pool < 10 {
		t.Fatalf("pool %d bound by %s, feasible %v: want the batch to fit, its rpd holding no pool back", cp.Pool, cp.BindingConstraint, cp.Feasible)
	}
	if d := cp.Batch.DailyLimits[0]; !d.OK || d.Needed != 80000 {
		t.Errorf("rpd check %+v: want 80,000 needed and met", d)
	}
	if u := p.Quotas[0].Utilization["rpd"]; math.Abs(u-0.8) > 1e-3 {
		t.Errorf("rpd use %g, want 0.8 (80,000 of 100,000 a day)", u)
	}
	if r := ceiling(cp, "rpd"); r == nil || !strings.Contains(r.Detail, "this class runs 6 h of them") {
		t.Errorf("rpd ceiling %+v: want it to say the batch runs 6 h of the day", r)
	}
}

// A daily limit's ceiling divides the class's share while it runs by what
// one request uses: a batch of 6 h on a key of 10,000,000 tpd (9,000,000
// usable, 104.2/s over the day, 416.7/s over its 6 h) ÷ 1,101 tokens a
// request, not ÷ 275, its use scaled to its hours, which read as a
// request's tokens.
func TestDailyCeilingShowsTheUsePerRequest(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 6000, TPD: 1e7})
	s.Classes[0].Mode = scenario.ModeBatch
	s.Classes[0].Demand = &scenario.Demand{Requests: 8000, WithinHours: 6}
	c := ceiling(mustPlan(t, s).Classes[0], "tpd")
	if c == nil || !strings.Contains(c.Detail, "this class runs 6 h of them, 416.7/s while it runs ÷ 1,101 tokens/request = 0.378 req/s") {
		t.Errorf("tpd ceiling %+v: want 416.7/s while it runs ÷ 1,101 tokens/request = 0.378 req/s", c)
	}
}

// A batch scheduled for 6 h that must finish in 5 uses its daily limit for
// those 5 h: 30,000 requests a day, not its rate over all 6 (36,000).
func TestScheduledBatchDailyLimitCountsItsWindow(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 6000, RPD: 200000})
	s.Classes[0].Mode = scenario.ModeBatch
	s.Classes[0].Demand = &scenario.Demand{Requests: 30000, WithinHours: 5}
	s.Classes[0].Schedule = &scenario.Schedule{StartHour: 22, Hours: 6}
	day := s.Classes[0]
	day.Name, day.Mode, day.Demand, day.Schedule = "day", scenario.ModeInteractive, &scenario.Demand{RPS: 1}, &scenario.Schedule{StartHour: 8, Hours: 10}
	s.Classes = append(s.Classes, day)
	p := mustPlan(t, s)
	if u := p.Quotas[0].Utilization["rpd"]; math.Abs(u-(30000+36000)/200000.0) > 1e-3 {
		t.Errorf("rpd use %g, want 0.33 (30,000 and 36,000 of 200,000 a day)", u)
	}
	for _, a := range p.Quotas[0].Allocations {
		if a.Class == "work" && math.Abs(a.Reserved["rpd"]-30000) > 1 {
			t.Errorf("the batch reserves %g rpd, want 30,000", a.Reserved["rpd"])
		}
	}
}

func TestPacingAndClientSettings(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 600, BurstWindowS: 2})
	s.Classes[0].SLO = &scenario.SLO{E2EP95Ms: 6000}
	cp := mustPlan(t, s).Classes[0]
	if cp.Pacing.RateRPS != 9 || cp.Pacing.Burst != 18 {
		t.Errorf("pacing %+v, want 9 req/s with a burst of 18 (2 s window)", cp.Pacing)
	}
	// Admission: 6,000 − 2,500 ms p95 service = 3,500 ms.
	if a := cp.Admission.MaxQueueWaitMs; a == nil || *a != 3500 || cp.Admission.RetryAfterS != 3 {
		t.Errorf("admission %+v, want 3,500 ms and Retry-After 3 s", cp.Admission)
	}
	// Retry budget 3.5 s: sleeps 0.25 + 0.5 + 1 + 2 (cap 2) = 3.75 > 3.5, so 3 retries.
	if cp.Retry.MaxAttempts != 4 || cp.Retry.CapMs != 2000 {
		t.Errorf("retry %+v, want 4 attempts with a 2 s cap", cp.Retry)
	}
	if a := cp.Adaptive; a.Start != 22 || a.Ceiling != 22 || a.Floor != 1 || a.DecreaseFactor != 0.9 {
		t.Errorf("adaptive %+v", a)
	}
}

func TestComputeStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(Options{}).Plan(ctx, curveScenario()); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled plan returned %v", err)
	}
	if _, err := New(Options{}).Sweep(ctx, handScenario(scenario.Quota{RPM: 600}), []Variation{{Path: "/quotas/0/rpm", Values: []any{600, 700}}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled sweep returned %v", err)
	}
	// A live context plans as before.
	if _, err := compute(curveScenario()); err != nil {
		t.Fatal(err)
	}
}

func TestZeroServiceTimeIsRefused(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 600})
	s.Latency = scenario.Latency{TTFTMs: fixedMs(0), TPOTMs: fixedMs(0)}
	_, err := compute(s)
	var errs scenario.Errors
	if !errors.As(err, &errs) || errs[0].Path != "classes[0]" {
		t.Fatalf("zero service time gave %v", err)
	}
}

// TestUnattainableE2EDoesNotBlameTTFT: S is fixed at 2.5 s, so an E2E
// target of 2 s cannot be met at any pool, while a TTFT target of 1 s is met
// by any pool large enough to keep the queue short. The E2E ceiling binds;
// the TTFT ceiling stays unbounded; min_pool meets the TTFT target, and the
// E2E remedy alone makes the class fit.
func TestUnattainableE2EDoesNotBlameTTFT(t *testing.T) {
	s := handScenario(scenario.Quota{RPM: 6000})
	s.Classes[0].Demand = &scenario.Demand{RPS: 4}
	s.Classes[0].SLO = &scenario.SLO{TTFTP95Ms: 1000, E2EP95Ms: 2000}
	cp := mustPlan(t, s).Classes[0]
	if c := ceiling(cp, "slo_ttft"); c.MaxPool != nil {
		t.Errorf("slo_ttft ceiling %d, want unbounded: %s", *c.MaxPool, c.Detail)
	}
	if c := ceiling(cp, "slo_e2e"); c.MaxPool == nil || *c.MaxPool != 0 || cp.BindingConstraint != "slo_e2e" {
		t.Fatalf("slo_e2e ceiling %+v, binding %s", c, cp.BindingConstraint)
	}
	if len(cp.Remedies) != 1 || cp.Remedies[0].Constraint != "slo_e2e" {
		t.Fatalf("remedies %+v, want one for slo_e2e", cp.Remedies)
	}
	fixed := mustPlan(t, applyRemedies(t, s, 0, cp.Remedies)).Classes[0]
	if !fixed.Feasible {
		t.Fatalf("relaxing the E2E target to %g ms did not make it fit: %s", cp.Remedies[0].Value, fixed.Explanation)
	}
}

// TestFloorNumReadsAsItsFloor: a quantity shown before "→ c" gets the
// decimals that keep its shown floor at c, and no more.
func TestFloorNumReadsAsItsFloor(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		c    int
		want string
	}{
		{31.99, 31, "31.99"}, {31.96, 31, "31.96"}, {31.9, 31, "31.9"}, {28.8, 28, "28.8"}, {122.1, 122, "122.1"},
		{99.97, 99, "99.97"}, {1234.6, 1234, "1,234.6"}, {999.96, 999, "999.96"},
		{32, 32, "32"}, {31.9999999999, 32, "32"}, // a floor taken with the planner's tolerance
		{0.3, 0, "0.3"}, {2.5, 1, "2.5"}, // another floor than v's: as num
	} {
		if got := floorNum(tt.v, tt.c); got != tt.want {
			t.Errorf("floorNum(%g, %d) = %q, want %q", tt.v, tt.c, got, tt.want)
		}
	}
}

// TestNumRoundsForPeople: numbers in details are rounded, not cut.
func TestNumRoundsForPeople(t *testing.T) {
	for v, want := range map[float64]string{174.585: "174.6", 174.54: "174.5", 1499.6: "1,500", 0.06664: "0.0666", 12.345: "12.3", 0: "0",
		1234567.4: "1,234,567", -45000: "-45,000", 600: "600", 150.04: "150", -300: "-300", 100000: "100,000", 1e22: "10000000000000000000000"} {
		if got := num(v); got != want {
			t.Errorf("num(%g) = %q, want %q", v, got, want)
		}
	}
}

// TestNoPoolNoClientSettings: a class the plan gives no pool sends
// nothing, and its client settings say so: no pacing rate or burst and an
// AIMD window that starts, stays and ends at 0, rather than a rate to
// send at and a window to grow to the quota's ceiling beside a cap of 0.
func TestNoPoolNoClientSettings(t *testing.T) {
	s := parse(t, `
quotas:
  - {name: key, rpm: 5000, tpm: 200000, token_accounting: max_tokens}
latency: {ttft_ms: {p50: 600, p95: 1400}, tpot_ms: {p50: 20, p95: 30}}
classes:
  - {name: chat, quota: key, mode: interactive, demand: {rps: 2}, input_tokens: {p50: 1200, p95: 3500}, output_tokens: {p50: 200, p95: 600}, max_tokens: 800, slo: {ttft_p95_ms: 2500}}
  - {name: backfill, quota: key, mode: batch, input_tokens: {p50: 2000, p95: 4000}, output_tokens: {p50: 300, p95: 600}, max_tokens: 800}
`)
	p := mustPlan(t, s)
	none := 0
	for _, c := range p.Classes {
		if c.Pool >= 1 {
			continue
		}
		none++
		if c.Pacing != (Pacing{}) || c.Adaptive.Start != 0 || c.Adaptive.Floor != 0 || c.Adaptive.Ceiling != 0 {
			t.Errorf("%s has no pool, and pacing %+v, AIMD %+v", c.Name, c.Pacing, c.Adaptive)
		}
	}
	if none == 0 {
		t.Fatal("every class has a pool: the scenario no longer tests a class without one")
	}
}

// TestRPMWindowTellsARequestAsOne: a key whose window of rpm allows less
// than one request says that one request exceeds it, not that a charge of
// "1 requests at the p99 of its input" does, as a request's charge of rpm
// is one whatever its input; a token limit's charge names the p99 input.
func TestRPMWindowTellsARequestAsOne(t *testing.T) {
	cp := mustPlan(t, handScenario(scenario.Quota{RPM: 1, TPM: 100})).Classes[0]
	rpm, tpm := ceiling(cp, "rpm"), ceiling(cp, "tpm")
	if rpm == nil || !strings.HasPrefix(rpm.Detail, "rpm: one request exceeds one window's allowance, 0.9 × 1 requests/min × 1 s window = 0.015") {
		t.Errorf("rpm ceiling %+v", rpm)
	}
	if tpm == nil || !strings.Contains(tpm.Detail, "tpm: one request's charge, 1,000 tokens at the p99 of its input, exceeds one window's allowance") {
		t.Errorf("tpm ceiling %+v", tpm)
	}
}

// TestAIMDCeilingStaysWithinDailyLimits: a client's AIMD window grows
// until per-minute limits answer 429, but a daily limit answers only once
// the day's budget is spent, too late to tell it: docs/examples/
// daily-limit-batch.yaml's batch, bound by its rpd at a pool of 10 with
// rpm allowing 606, has its window's ceiling at its rpd ceiling (it was
// 606, and 20 simulated minutes with AIMD went at a pace that spends twice
// its rpd a day).
func TestAIMDCeilingStaysWithinDailyLimits(t *testing.T) {
	cp := mustPlan(t, example(t, "daily-limit-batch")).Classes[0]
	rpd := ceiling(cp, "rpd")
	if rpd == nil || rpd.MaxPool == nil || cp.BindingConstraint != "rpd" {
		t.Fatalf("binding %s, rpd ceiling %+v: want the batch bound by its rpd, the case under test", cp.BindingConstraint, rpd)
	}
	if cp.Adaptive.Ceiling != *rpd.MaxPool || cp.Adaptive.Ceiling < cp.Pool {
		t.Errorf("AIMD ceiling %d, want the rpd ceiling %d (pool %d)", cp.Adaptive.Ceiling, *rpd.MaxPool, cp.Pool)
	}
	chat := mustPlan(t, example(t, "chat")).Classes[0]
	if rpm := ceiling(chat, "rpm"); chat.Adaptive.Ceiling <= chat.Pool || rpm == nil || chat.Adaptive.Ceiling > *rpm.MaxPool {
		t.Errorf("chat's AIMD ceiling %d at pool %d: want it above the pool, up to its largest per-minute ceiling", chat.Adaptive.Ceiling, chat.Pool)
	}
}
