package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/plan"
)

// TestWhatIfNamesTheCheapestTier: POST /v1/what-if over the five priced
// tiers on the priced example's provisioned key ranks them by what the
// plan costs a day and names hourly, the cheapest tier in which every
// class fits: the payg key's 1,663.20 plus 120. Each tier's fit is the
// engine's own plan of the scenario with the tier, and no cheaper tier
// holds. Provisioned hourly (120 a day) is cheaper than pay-as-you-go
// payg (9 per 1,000 requests) above 120 / 0.009 = 13,333 requests a day.
func TestWhatIfNamesTheCheapestTier(t *testing.T) {
	s := newServer(t, Options{Tiers: pricedTiers})
	names := []string{"cheap-tight", "payg", "premium", "hourly", "hourly-small"}
	rec := send(s, http.MethodPost, "/v1/what-if", mustJSON(t, map[string]any{
		"scenario":   exampleDoc(t, "priced"),
		"variations": []map[string]any{{"path": "/quotas/1", "tiers": names}},
	}))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	w := cellsOf(t, rec.Body.Bytes())
	r := w.Ranking
	if r == nil || r.Cheapest == nil || *r.Cheapest != "hourly" {
		t.Fatalf("ranking %s", rec.Body)
	}
	base := exampleScenario(t, "priced")
	var order []string
	for _, rt := range r.Tiers {
		order = append(order, rt.Tier)
		k := slices.IndexFunc(pricedTiers, func(t config.Tier) bool { return t.Name == rt.Tier })
		sc := base
		sc.Quotas = slices.Clone(base.Quotas)
		sc.Quotas[1] = base.Quotas[1].WithLimitsOf(pricedTiers[k].Quota)
		p, err := plan.New(plan.Options{}).Plan(context.Background(), sc)
		if err != nil {
			t.Fatal(err)
		}
		fits := !slices.ContainsFunc(p.Classes, func(c plan.ClassPlan) bool { return !c.Feasible })
		if rt.Fits != fits || rt.Cost == nil || rt.Cost.PerDay != p.Cost.PerDay || rt.KeyCost.PerDay != p.Quotas[1].Cost.PerDay {
			t.Errorf("%s: fits %v costs %+v; the engine's plan fits %v and costs %v", rt.Tier, rt.Fits, rt.Cost, fits, p.Cost.PerDay)
		}
	}
	if want := []string{"hourly-small", "cheap-tight", "hourly", "payg", "premium"}; !slices.Equal(order, want) {
		t.Errorf("ranked %v, want %v", order, want)
	}
	if r.Tiers[0].Fits || r.Tiers[1].Fits || !r.Tiers[2].Fits || r.Tiers[2].Cost.PerDay != 1783.2 || r.Tiers[2].KeyCost.PerDay != 120 {
		t.Errorf("ranking %+v", r.Tiers)
	}
	want := plan.BreakEven{Provisioned: "hourly", PayAsYouGo: "payg", RequestsPerDay: 13333, DemandPerDay: 20000}
	if r.BreakEven == nil || *r.BreakEven != want {
		t.Errorf("break-even %+v, want %+v", r.BreakEven, want)
	}
	for i, c := range w.Cells {
		if c.Values[0] != names[i] || c.Cost == nil {
			t.Errorf("cell %d: values %v cost %v", i, c.Values, c.Cost)
		}
	}
}

// TestPlanRemedyNamesATier: with the nightly batch's key cut to 100,000
// tpm, POST /v1/plans says to raise tpm, names hourly, the cheapest tier
// of the catalogue in which the batch fits, and the change a day: 120
// against the key's 12 an hour for 24 hours, 168 less.
func TestPlanRemedyNamesATier(t *testing.T) {
	s := newServer(t, Options{Tiers: pricedTiers})
	doc := exampleDoc(t, "priced")
	doc["quotas"].([]any)[1].(map[string]any)["tpm"] = 100000
	rec := send(s, http.MethodPost, "/v1/plans", mustJSON(t, map[string]any{"scenario": doc}))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var p plan.Plan
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	c := p.Classes[2]
	if c.Feasible || len(c.Remedies) == 0 {
		t.Fatalf("nightly fits at 100,000 tpm: %s", rec.Body)
	}
	r := c.Remedies[0]
	want := plan.RemedyCost{Tier: "hourly", Currency: "USD", PerDay: ptr(120.0), ChangePerDay: ptr(-168.0)}
	if r.Constraint != "tpm" || r.Cost == nil || r.Cost.Tier != want.Tier || *r.Cost.PerDay != *want.PerDay || *r.Cost.ChangePerDay != *want.ChangePerDay || r.Cost.Currency != "USD" {
		t.Errorf("remedy %+v cost %+v, want %+v", r, r.Cost, want)
	}
}
