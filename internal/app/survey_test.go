//go:build !race

package app

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/simulate"
)

// surveyScenario draws a scenario of one key shared by one to three
// classes, as teams write them: the key counts max_tokens or the tokens
// used, in windows of 1, 10 or 60 s, its classes by priority or weighted;
// the first class interactive, the second semi-interactive, the third a
// batch of a few thousand documents in a few hours (any but the first
// sometimes interactive or semi instead), each with its own lognormal
// token lengths, arrival scv from 0 to 9 and SLO. The key's tpm is set so
// that the demand uses 0.5 to 0.95 of what the key allows (headroom 0.9)
// under its accounting; one key in three is bound by its rpm instead, at
// the same use, with three times the tpm.
func surveyScenario(rng *rand.Rand) string {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	accounting := pick("max_tokens", "max_tokens", "actual")
	window := pick("1", "10", "60")
	allocation := pick("priority", "weighted")
	n := 1 + rng.IntN(3)
	var classes []string
	tokensPerS, requestsPerS := 0.0, 0.0
	for i := range n {
		mode := []string{"interactive", "semi", "batch"}[i]
		if i > 0 && rng.IntN(3) == 0 {
			mode = pick("interactive", "semi")
		}
		in50 := float64(200 + rng.IntN(2000))
		in95 := in50 * (1.5 + 2*rng.Float64())
		out50 := float64(50 + rng.IntN(300))
		out95 := out50 * (1.5 + 2*rng.Float64())
		maxTokens := math.Ceil(out95 * 1.3)
		scv := pick("0", "0.5", "1", "2", "4", "9")
		var demand string
		var rps float64
		if mode == "batch" {
			requests, hours := 2000+rng.IntN(20000), 2+rng.IntN(8)
			rps = float64(requests) / float64(hours*3600)
			demand = fmt.Sprintf("demand: {requests: %d, within_hours: %d}", requests, hours)
		} else {
			rps = 0.2 + 4*rng.Float64()
			demand = fmt.Sprintf("demand: {rps: %.2f}, arrival_scv: %s", rps, scv)
		}
		// The mean of a lognormal of median m and p95 q is
		// m·exp(σ²/2), σ = ln(q/m)/1.645.
		mean := func(m, q float64) float64 {
			s := math.Log(q/m) / 1.645
			return m * math.Exp(s*s/2)
		}
		charge := mean(in50, in95) + maxTokens
		if accounting == "actual" {
			charge = mean(in50, in95) + mean(out50, out95)
		}
		tokensPerS += rps * charge
		requestsPerS += rps
		slo := ""
		switch mode {
		case "interactive":
			slo = fmt.Sprintf(", slo: {ttft_p95_ms: %d}", 1500+rng.IntN(6000))
		case "semi":
			slo = fmt.Sprintf(", slo: {e2e_p95_ms: %d}", 20000+rng.IntN(40000))
		}
		weight := ""
		if allocation == "weighted" {
			weight = fmt.Sprintf(", weight: %d", 1+rng.IntN(5))
		}
		classes = append(classes, fmt.Sprintf("  - {name: c%d, quota: key, mode: %s%s, %s, input_tokens: {p50: %.0f, p95: %.0f}, output_tokens: {p50: %.0f, p95: %.0f}, max_tokens: %.0f%s}\n",
			i, mode, weight, demand, in50, in95, out50, out95, maxTokens, slo))
	}
	use := 0.5 + 0.45*rng.Float64()
	tpm, rpm := math.Ceil(tokensPerS*60/0.9/use), 100000.0
	if rng.IntN(3) == 0 {
		rpm, tpm = math.Ceil(requestsPerS*60/0.9/use), 3*tpm
	}
	return fmt.Sprintf(`quotas:
  - {name: key, rpm: %.0f, tpm: %.0f, token_accounting: %s, burst_window_s: %s}
latency: {ttft_ms: {p50: 500, p95: 1200}, tpot_ms: {p50: 20, p95: 35}}
policy: {allocation: %s}
classes:
%s`, rpm, tpm, accounting, window, allocation, strings.Join(classes, ""))
}

// TestSurveyOfScenariosAgainstTheirSimulation plans 150 scenarios drawn by
// surveyScenario (seeds 0 to 149) and runs planner simulate of each for
// four hours, three replications. It holds the plan to three rules:
//
//   - "fits" is never optimistic: a class the plan says fits meets its
//     targets on the replications' mean (TTFT p95 and E2E p95 within its
//     SLO, at most 1 % of its requests lost and of its sends answered
//     429);
//   - and breaks in at most 1 % of its runs. A p95 of four hours varies
//     between runs by a tenth at arrival scv 4, so a class within that of
//     a target can break in one run and hold in the others (the plan may
//     also say such a class does not fit where the simulation holds: that
//     errs on the safe side);
//   - of the classes that fit, at least 90 % have their predicted TTFT p95
//     and E2E p95 within −5 % and +20 % of the replications' mean. The
//     rest are listed (docs/simulate.md, "Where the plan is known to read
//     the pacing wait short").
func TestSurveyOfScenariosAgainstTheirSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 1,800 hours of traffic")
	}
	const runs = 3
	a := New(plan.New(plan.Options{}))
	ctx := context.Background()
	fitting, inBand, broke := 0, 0, 0
	for k := range uint64(150) {
		doc := surveyScenario(rand.New(rand.NewPCG(k, 7)))
		sc, err := scenario.Parse([]byte(doc))
		if err != nil {
			t.Fatalf("scenario %d: %v\n%s", k, err, doc)
		}
		p, err := a.Plan(ctx, sc)
		if err != nil {
			t.Fatalf("scenario %d: %v\n%s", k, err, doc)
		}
		type mean struct{ ttft, e2e, lost, limited float64 }
		n := len(p.Classes)
		means, holds := make([]mean, n), make([]int, n)
		for seed := uint64(1); seed <= runs; seed++ {
			r, err := a.Simulate(ctx, sc, simulate.Options{DurationS: 4 * 3600, Seed: &seed, MaxEvents: 20_000_000})
			if err != nil {
				t.Fatalf("scenario %d: %v\n%s", k, err, doc)
			}
			for i, c := range r.Classes {
				s, m := c.Simulated, &means[i]
				m.ttft += value(s.TTFTP95Ms) / runs
				m.e2e += value(s.E2EP95Ms) / runs
				m.lost += float64(s.Shed+s.GaveUp) / float64(max(1, s.Requests)) / runs
				m.limited += float64(s.RateLimited) / float64(max(1, s.Sends)) / runs
				if c.Verdict.Holds {
					holds[i]++
				}
			}
		}
		for i, cp := range p.Classes {
			if !cp.Fitting() {
				continue
			}
			fitting++
			broke += runs - holds[i]
			m, slo := means[i], sc.Classes[i].SLO
			if slo != nil && (slo.TTFTP95Ms > 0 && m.ttft > slo.TTFTP95Ms || slo.E2EP95Ms > 0 && m.e2e > slo.E2EP95Ms) ||
				m.lost > 0.01 || m.limited > 0.01 {
				t.Errorf("scenario %d: %s fits, its simulation's means break it: TTFT p95 %.0f ms, E2E p95 %.0f ms, %.2f %% lost, %.2f %% of its sends answered 429\n%s",
					k, cp.Name, m.ttft, m.e2e, 100*m.lost, 100*m.limited, doc)
			}
			pt, pe := value(cp.Predicted.TTFTP95Ms), value(cp.Predicted.E2EP95Ms)
			if rt, re := pt/m.ttft, pe/m.e2e; rt >= 0.95 && rt <= 1.2 && re >= 0.95 && re <= 1.2 {
				inBand++
			} else {
				t.Logf("scenario %d: %s's TTFT p95 %.0f ms against %.0f (%.2f times), E2E p95 %.0f against %.0f (%.2f times)",
					k, cp.Name, pt, m.ttft, rt, pe, m.e2e, re)
			}
		}
	}
	share := float64(inBand) / float64(fitting)
	t.Logf("%d of %d classes that fit have their TTFT p95 and E2E p95 within −5 %% and +20 %% of the simulation's (%.1f %%); %d of their %d runs break",
		inBand, fitting, 100*share, broke, runs*fitting)
	if fitting < 200 || share < 0.9 {
		t.Errorf("%d of %d classes that fit within the band (%.1f %%); want at least 200 classes and 90 %%", inBand, fitting, 100*share)
	}
	if broke > runs*fitting/100 {
		t.Errorf("%d of the %d runs of classes that fit break; want at most 1 %%", broke, runs*fitting)
	}
}
