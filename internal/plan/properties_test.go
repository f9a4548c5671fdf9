package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

// randomScenario draws a small but varied scenario: one or two keys, one to
// three classes of every mode, with and without demand, SLOs, max_tokens,
// a knee, and sometimes a measured curve.
func randomScenario(r *rand.Rand) scenario.Scenario {
	s := scenario.Scenario{Policy: scenario.Policy{MonteCarloDraws: 1000, MaxPool: 400}}
	if r.IntN(2) == 0 {
		s.Policy.Allocation = scenario.AllocationWeighted
	}
	for i := range 1 + r.IntN(2) {
		q := scenario.Quota{Name: fmt.Sprintf("key%d", i)}
		if r.IntN(3) == 0 {
			q.TokenAccounting = scenario.AccountingMaxTokens
		}
		set := false
		for !set {
			if r.IntN(2) == 0 {
				q.RPM, set = float64(60+r.IntN(3000)), true
			}
			if r.IntN(2) == 0 {
				q.TPM, set = float64(20000+r.IntN(3_000_000)), true
			}
			if r.IntN(4) == 0 {
				q.OTPM, set = float64(5000+r.IntN(300_000)), true
			}
			if r.IntN(4) == 0 {
				q.RPD, set = float64(1000+r.IntN(500_000)), true
			}
		}
		s.Quotas = append(s.Quotas, q)
	}
	if r.IntN(3) == 0 {
		s.Latency.Curve = []scenario.CurvePoint{
			{Concurrency: 1, TTFTP50Ms: 150, TTFTP95Ms: 220, TPOTP50Ms: 15, TPOTP95Ms: 20, ThroughputRPS: 0.4},
			{Concurrency: 8, TTFTP50Ms: 180, TTFTP95Ms: 300, TPOTP50Ms: 18, TPOTP95Ms: 25, ThroughputRPS: 2.8},
			{Concurrency: 16, TTFTP50Ms: 400, TTFTP95Ms: 800, TPOTP50Ms: 24, TPOTP95Ms: 33, ThroughputRPS: 4.2},
			{Concurrency: 32, TTFTP50Ms: 1400, TTFTP95Ms: 2500, TPOTP50Ms: 30, TPOTP95Ms: 45, ThroughputRPS: 4.6},
		}
	} else {
		p50 := 100 + r.Float64()*600
		s.Latency.TTFTMs = &scenario.Dist{P50: f(p50), P95: f(p50 * (1 + 2*r.Float64()))}
		v := 8 + r.Float64()*30
		s.Latency.TPOTMs = &scenario.Dist{P50: f(v), P95: f(v * (1 + r.Float64()))}
	}
	if r.IntN(2) == 0 {
		s.Latency.Knee = intPtr(4 + r.IntN(60))
	}
	modes := []string{scenario.ModeInteractive, scenario.ModeSemi, scenario.ModeBatch}
	for i := range 1 + r.IntN(3) {
		in := 100 + r.Float64()*3000
		out := 20 + r.Float64()*600
		c := scenario.Class{
			Name: fmt.Sprintf("class%d", i), Quota: s.Quotas[r.IntN(len(s.Quotas))].Name, Mode: modes[r.IntN(3)],
			InputTokens: pct(in, in*(1+2*r.Float64())), OutputTokens: pct(out, out*(1+2*r.Float64())),
			Weight: 0.5 + r.Float64()*2, MaxTokens: int(out * (1 + 3*r.Float64())),
		}
		if r.IntN(3) > 0 {
			c.Demand = &scenario.Demand{RPS: 0.05 + r.Float64()*5}
		}
		if r.IntN(3) > 0 {
			c.SLO = &scenario.SLO{E2EP95Ms: 2000 + r.Float64()*60000}
			if r.IntN(2) == 0 {
				c.SLO.TTFTP95Ms = 300 + r.Float64()*5000
			}
		}
		s.Classes = append(s.Classes, c)
	}
	return s
}

// mutable copies a scenario deeply enough to change quotas, classes and policy.
func mutable(s scenario.Scenario) scenario.Scenario {
	b, _ := json.Marshal(s)
	var out scenario.Scenario
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

func encode(t *testing.T, p *Plan) []byte {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("plan does not encode (NaN or Inf?): %v", err)
	}
	return b
}

const trials = 60

func TestPropertyPoolIsSmallestCeiling(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for trial := range trials {
		s := randomScenario(r)
		for _, cp := range mustPlan(t, s).Classes {
			smallest, name := math.MaxInt, ""
			for _, c := range cp.Ceilings {
				if c.MaxPool != nil && *c.MaxPool < smallest {
					smallest, name = *c.MaxPool, c.Constraint
				}
			}
			if cp.Pool != smallest || cp.BindingConstraint != name {
				t.Fatalf("trial %d class %s: pool %d by %s, smallest ceiling %d by %s", trial, cp.Name, cp.Pool, cp.BindingConstraint, smallest, name)
			}
			if cp.Feasible != (cp.MinPool != nil && *cp.MinPool <= cp.Pool && cp.Pool >= 1) {
				t.Fatalf("trial %d class %s: feasible %v with pool %d and min_pool %v", trial, cp.Name, cp.Feasible, cp.Pool, cp.MinPool)
			}
		}
	}
}

func TestPropertyMoreQuotaNeverShrinksAPool(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for trial := range trials {
		s := randomScenario(r)
		before := mustPlan(t, s)
		more := mutable(s)
		q := &more.Quotas[r.IntN(len(more.Quotas))]
		factor := 1.1 + 3*r.Float64()
		for _, l := range []*float64{&q.RPM, &q.TPM, &q.ITPM, &q.OTPM, &q.RPD, &q.TPD} {
			if *l > 0 && r.IntN(2) == 0 {
				*l *= factor
			}
		}
		after := mustPlan(t, more)
		for i := range before.Classes {
			if after.Classes[i].Pool < before.Classes[i].Pool {
				t.Fatalf("trial %d: more quota on %s shrank %s from %d to %d", trial, q.Name, before.Classes[i].Name, before.Classes[i].Pool, after.Classes[i].Pool)
			}
		}
	}
}

func TestPropertyHigherKneeNeverShrinksAPool(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for trial := range trials {
		s := randomScenario(r)
		s.Latency.Knee = intPtr(2 + r.IntN(40))
		before := mustPlan(t, s)
		higher := mutable(s)
		higher.Latency.Knee = intPtr(*s.Latency.Knee + 1 + r.IntN(40))
		after := mustPlan(t, higher)
		for i := range before.Classes {
			if after.Classes[i].Pool < before.Classes[i].Pool {
				t.Fatalf("trial %d: knee %d → %d shrank %s from %d to %d", trial, *s.Latency.Knee, *higher.Latency.Knee, before.Classes[i].Name, before.Classes[i].Pool, after.Classes[i].Pool)
			}
		}
	}
}

func TestPropertyDeterministicFiniteJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for trial := range trials {
		s := randomScenario(r)
		a := encode(t, mustPlan(t, s))
		tailCache.Purge() // the caches must not change the answer
		planCache.Purge()
		percentileCache.Purge()
		minPoolCache.Purge()
		b := encode(t, mustPlan(t, mutable(s)))
		if !bytes.Equal(a, b) {
			t.Fatalf("trial %d: the same scenario gave different plans:\n%s\n%s", trial, a, b)
		}
	}
}

// applyRemedies writes every remedy of class ci into the scenario.
func applyRemedies(t *testing.T, s scenario.Scenario, ci int, rs []Remedy) scenario.Scenario {
	t.Helper()
	out := mutable(s)
	c := &out.Classes[ci]
	for _, r := range rs {
		switch r.Constraint {
		case "rpm", "tpm", "itpm", "otpm", "rpd", "tpd":
			for qi := range out.Quotas {
				q := &out.Quotas[qi]
				if q.Name != c.Quota {
					continue
				}
				*map[string]*float64{"rpm": &q.RPM, "tpm": &q.TPM, "itpm": &q.ITPM, "otpm": &q.OTPM, "rpd": &q.RPD, "tpd": &q.TPD}[r.Constraint] = r.Value
			}
		case ConstraintKnee:
			k := int(r.Value)
			if c.Latency != nil && c.Latency.Knee != nil {
				c.Latency.Knee = &k
			} else {
				out.Latency.Knee = &k
			}
		case ConstraintSLOTTFT:
			c.SLO.TTFTP95Ms = r.Value
		case ConstraintSLOE2E:
			c.SLO.E2EP95Ms = r.Value
		case ConstraintPolicy:
			out.Policy.MaxPool = int(r.Value)
		default:
			t.Fatalf("unknown remedy %q", r.Constraint)
		}
	}
	return out
}

func TestPropertyRemediesMakeTheClassFeasible(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	checked := 0
	for trial := 0; trial < 400 && checked < 40; trial++ {
		s := randomScenario(r)
		p := mustPlan(t, s)
		for ci, cp := range p.Classes {
			if cp.Feasible || cp.MinPool == nil {
				continue
			}
			checked++
			fixed := mustPlan(t, applyRemedies(t, s, ci, cp.Remedies)).Classes[ci]
			if !fixed.Feasible {
				t.Fatalf("trial %d class %s: remedies %+v left it infeasible: pool %d by %s, min_pool %v", trial, cp.Name, cp.Remedies, fixed.Pool, fixed.BindingConstraint, fixed.MinPool)
			}
			if cp.Shed != nil && cp.Shed.SustainableRPS > 0 {
				shed := mutable(s)
				shed.Classes[ci].Demand = &scenario.Demand{RPS: cp.Shed.SustainableRPS}
				if got := mustPlan(t, shed).Classes[ci]; !got.Feasible {
					t.Fatalf("trial %d class %s: at the sustainable %g req/s it is still infeasible (pool %d, min_pool %v)", trial, cp.Name, cp.Shed.SustainableRPS, got.Pool, got.MinPool)
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d infeasible classes drawn; the generator needs tuning", checked)
	}
}
