package plan

import (
	"context"
	"slices"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

// holdsBut is a Checker for the ranking's tests, which cannot run the
// real check (internal/simulate imports this package; internal/app's and
// the command's tests rank with it): its simulation holds for every class
// except on a key with the rpm of breaks, where it breaks.
func holdsBut(breaks float64) Checker {
	return func(_ context.Context, s scenario.Scenario, p *Plan, _ Replanner) (*Plan, error) {
		c := *p // the plan may be shared: the check's copy is its own
		c.Classes = slices.Clone(p.Classes)
		for i := range c.Classes {
			cl := &c.Classes[i]
			holds := s.Quotas[0].RPM != breaks
			fits := cl.Feasible && holds
			cl.Check, cl.Fits = &ClassCheck{Holds: holds}, &fits
		}
		return &c, nil
	}
}

// TestRankTiers sweeps the five tiers of costCatalogue over tightKey's
// key: small is the cheapest tier but too small, maxtok counts max_tokens
// and the class gives none (an invalid scenario), and of medium (933.12 a
// day), provisioned (960) and large (777.60) large is the cheapest in
// which the class fits. Where large's check breaks, medium is the
// cheapest; an unchecked sweep has no tier that holds.
func TestRankTiers(t *testing.T) {
	s := tightKey()
	names := []string{"small", "medium", "maxtok", "provisioned", "large"}
	v, errs := TierVariation(s, "/quotas/0", names, costCatalogue)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	e := New(Options{})
	g, err := e.SweepChecked(context.Background(), s, []Variation{v}, holdsBut(-1))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range g.Cells {
		if c.Values[0] != names[i] {
			t.Errorf("cell %d shows %v, want the tier's name", i, c.Values[0])
		}
	}
	if g.Variations[0].Values != nil || !slices.Equal(g.Variations[0].Tiers, names) {
		t.Errorf("the variation shows %+v", g.Variations[0])
	}
	r := RankTiers(s, g)
	if r == nil || r.Cheapest == nil || *r.Cheapest != "large" {
		t.Fatalf("ranking %s", js(r))
	}
	var order []string
	fits := map[string]bool{}
	for _, rt := range r.Tiers {
		order = append(order, rt.Tier)
		fits[rt.Tier] = rt.Fits
	}
	if want := []string{"small", "large", "medium", "provisioned", "maxtok"}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v (maxtok's scenario is invalid: no cost, last)", order, want)
	}
	if fits["small"] || !fits["medium"] || fits["maxtok"] || !fits["provisioned"] || !fits["large"] {
		t.Errorf("fits %v", fits)
	}
	if r.Tiers[1].KeyCost.PerDay != 777.6 || r.Tiers[2].KeyCost.PerDay != 933.12 || r.Tiers[3].KeyCost.PerDay != 960 || len(r.Tiers[4].Problems) == 0 {
		t.Errorf("costs %s", js(r.Tiers))
	}
	// Provisioned at 960 a day against large's 777.60 for 172,800
	// requests (4.50 per 1,000): cheaper above 213,333 requests a day.
	if b := r.BreakEven; b == nil || b.Provisioned != "provisioned" || b.PayAsYouGo != "large" || b.RequestsPerDay != 213333 || b.DemandPerDay != 172800 {
		t.Errorf("break-even %+v", r.BreakEven)
	}
	large := costCatalogue[slices.IndexFunc(costCatalogue, func(q scenario.Quota) bool { return q.Name == "large" })]
	g, err = e.SweepChecked(context.Background(), s, []Variation{v}, holdsBut(large.RPM))
	if err != nil {
		t.Fatal(err)
	}
	if r := RankTiers(s, g); r.Cheapest == nil || *r.Cheapest != "medium" || r.Tiers[1].Tier != "large" || r.Tiers[1].Fits || !slices.Equal(r.Tiers[1].Unfit, []string{"chat"}) {
		t.Errorf("large's check breaks: ranking %s; want medium the cheapest, large unfit", js(r))
	}
	if g, err = e.Sweep(context.Background(), s, []Variation{v}); err != nil {
		t.Fatal(err)
	}
	if r := RankTiers(s, g); r.Cheapest != nil {
		t.Errorf("an unchecked sweep: cheapest %q; want none, as no cell was checked", *r.Cheapest)
	}
	if RankTiers(s, &WhatIf{Variations: []Variation{{Path: "/quotas/0/tpm", Values: []any{1.0}}}, Cells: []Cell{{}}}) != nil {
		t.Error("a sweep over values ranked")
	}
}

// TestTierVariationProblems: a tier variation points at a quota, names
// catalogue tiers, and ranks tiers priced in one currency.
func TestTierVariationProblems(t *testing.T) {
	eur := scenario.Quota{Name: "eur", RPM: 10, Price: &scenario.Price{Currency: "EUR", PerHour: f(1)}}
	catalogue := append(slices.Clone(costCatalogue), eur)
	for _, tt := range []struct {
		path  string
		names []string
		at    []string
	}{
		{"/quotas/0", []string{"small", "large"}, nil},
		{"/quotas/1", []string{"small"}, []string{"path"}},
		{"/quotas/0/tpm", []string{"small"}, []string{"path"}},
		{"/quotas/0", []string{"small", "gold"}, []string{"tiers[1]"}},
		{"/quotas/0", []string{"small", "eur"}, []string{"tiers[1]"}},
	} {
		_, errs := TierVariation(tightKey(), tt.path, tt.names, catalogue)
		var at []string
		for _, e := range errs {
			at = append(at, e.Path)
		}
		if !slices.Equal(at, tt.at) {
			t.Errorf("%s %v: problems %v, want at %v", tt.path, tt.names, errs, tt.at)
		}
	}
}
