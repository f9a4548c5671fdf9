package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// TierVariation is the what-if variation that puts catalogue tiers on the
// quota at path (/quotas/N): for each name, the quota with the tier's
// limits, token accounting and price (scenario.Quota.WithLimitsOf). The
// catalogue holds each tier as a quota named by the tier. Problems are
// located at "path" (not a quota of s) and "tiers[j]" (no such tier, or a
// price in another currency than the tiers before it: tiers are ranked by
// cost in one currency).
func TierVariation(s scenario.Scenario, path string, names []string, catalogue []scenario.Quota) (Variation, scenario.Errors) {
	var errs scenario.Errors
	n := -1
	if p, err := scenario.ParsePointer(path); err == nil {
		if i, ok := p.QuotaIndex(); ok && i < len(s.Quotas) {
			n = i
		}
	}
	if n < 0 {
		errs = append(errs, scenario.FieldError{Path: "path", Message: fmt.Sprintf("a tier variation must point at a quota of the scenario: /quotas/N with N below %d", len(s.Quotas))})
	}
	v := Variation{Path: path, Tiers: names, Values: make([]any, len(names))}
	currency := ""
	for j, name := range names {
		k := slices.IndexFunc(catalogue, func(t scenario.Quota) bool { return t.Name == name })
		if name == "" {
			errs = append(errs, scenario.FieldError{Path: fmt.Sprintf("tiers[%d]", j), Message: "a tier name is empty: give the names between the commas"})
			continue
		}
		if k < 0 {
			errs = append(errs, scenario.FieldError{Path: fmt.Sprintf("tiers[%d]", j), Message: fmt.Sprintf("no tier named %q in the catalogue (%s)", name, tierNames(catalogue))})
			continue
		}
		t := catalogue[k]
		if t.Price != nil {
			switch c := t.Price.CurrencyOr(); {
			case currency == "":
				currency = c
			case c != currency:
				errs = append(errs, scenario.FieldError{Path: fmt.Sprintf("tiers[%d]", j), Message: fmt.Sprintf("tier %q is priced in %s and the tiers before it in %s: tiers are ranked by cost in one currency", name, c, currency)})
			}
		}
		if n >= 0 {
			v.Values[j] = s.Quotas[n].WithLimitsOf(t)
		}
	}
	return v, errs
}

// tierNames lists a catalogue for a problem message, shortened when long.
func tierNames(catalogue []scenario.Quota) string {
	const most = 10
	if len(catalogue) == 0 {
		return "it is empty"
	}
	names := make([]string, 0, most+1)
	for i, t := range catalogue {
		if i == most {
			names = append(names, fmt.Sprintf("and %d more", len(catalogue)-most))
			break
		}
		names = append(names, t.Name)
	}
	return strings.Join(names, ", ")
}

// Holds reports whether the cell's plan holds: it is a valid scenario and
// every class fits, by the queueing model and by its own simulation (a
// checked cell; an unchecked one never holds). It is the one test of a
// cell that the tier ranking applies (RankTiers), so that what "fits"
// means for a tier changes here alone.
func (c Cell) Holds() bool {
	if len(c.Errors) > 0 || len(c.Classes) == 0 {
		return false
	}
	for _, cl := range c.Classes {
		if !cl.Fitting() {
			return false
		}
	}
	return true
}

// IsTierSweep reports whether the variations are one sweep over
// catalogue tiers (TierVariation), the sweep that RankTiers ranks.
func IsTierSweep(vars []Variation) bool {
	return len(vars) == 1 && len(vars[0].Tiers) > 0
}

// TierRanking ranks the tiers of a what-if sweep over catalogue tiers by
// what the plan costs a day with each, and names the cheapest in which the
// plan holds (docs/concepts.md, "Cost").
type TierRanking struct {
	Path  string       `json:"path" doc:"The quota the tiers were put on."`
	Tiers []RankedTier `json:"tiers" doc:"Every tier, cheapest first; tiers without a price last, in the order they were given."`
	// Cheapest is nil when the plan holds in no priced tier.
	Cheapest *string `json:"cheapest" doc:"The cheapest tier in which every class fits; null when there is none."`
	// BreakEven compares the cheapest provisioned and pay-as-you-go tiers
	// in which the plan holds, when there are both.
	BreakEven *BreakEven `json:"break_even,omitempty" doc:"The demand above which the cheapest provisioned tier in which every class fits costs less than the cheapest pay-as-you-go one."`
	Summary   string     `json:"summary" doc:"The answer in words."`
}

// RankedTier is one tier's plan: whether it holds and what it costs.
type RankedTier struct {
	Tier string `json:"tier"`
	Fits bool   `json:"fits" doc:"Every class fits with the tier."`
	// Unfit names the classes that do not fit; Problems says why the
	// tier makes the scenario invalid.
	Unfit    []string `json:"unfit,omitempty"`
	Problems []string `json:"problems,omitempty" doc:"Why the scenario with the tier is not valid."`
	Cost     *Cost    `json:"cost,omitempty" doc:"What the plan costs with the tier, over every key with a price; absent when the tier has no price."`
	KeyCost  *Cost    `json:"key_cost,omitempty" doc:"What the key at path costs with the tier; absent when the tier has no price."`
}

// BreakEven is the demand a day on a key above which a provisioned tier
// costs less than a pay-as-you-go one: the provisioned price a day over
// the pay-as-you-go cost of a request at the plan's mix of requests,
// N = per_day(provisioned) / (per_day(pay as you go) / requests a day).
type BreakEven struct {
	Provisioned    string  `json:"provisioned" doc:"The provisioned tier."`
	PayAsYouGo     string  `json:"pay_as_you_go" doc:"The pay-as-you-go tier."`
	RequestsPerDay float64 `json:"requests_per_day" doc:"Above this many requests a day the provisioned tier costs less, as long as its limits carry them."`
	DemandPerDay   float64 `json:"demand_per_day" doc:"The key's requests a day at the demand."`
}

// RankTiers ranks the tiers of a sweep of s whose one variation puts
// catalogue tiers on a quota (TierVariation); nil for any other sweep.
// Tiers rank by the plan's cost a day, which differs between them only
// by the key's; a tier in which the plan holds (Cell.Holds) is cheapest
// when no cheaper one holds.
func RankTiers(s scenario.Scenario, g *WhatIf) *TierRanking {
	if g == nil || !IsTierSweep(g.Variations) || len(g.Cells) != len(g.Variations[0].Tiers) {
		return nil
	}
	v := g.Variations[0]
	p, err := scenario.ParsePointer(v.Path)
	if err != nil {
		return nil
	}
	n, ok := p.QuotaIndex()
	if !ok || n >= len(s.Quotas) {
		return nil
	}
	key := s.Quotas[n].Name
	r := &TierRanking{Path: v.Path, Tiers: make([]RankedTier, len(v.Tiers))}
	for i, c := range g.Cells {
		t := RankedTier{Tier: v.Tiers[i], Fits: c.Holds()}
		for _, e := range c.Errors {
			t.Problems = append(t.Problems, e.Error())
		}
		for _, cl := range c.Classes {
			if !cl.Fitting() {
				t.Unfit = append(t.Unfit, cl.Name)
			}
		}
		if kc, ok := c.QuotaCosts[key]; ok && c.Cost != nil {
			total := *c.Cost
			t.Cost, t.KeyCost = &total, &kc
		}
		r.Tiers[i] = t
	}
	slices.SortStableFunc(r.Tiers, func(a, b RankedTier) int {
		if a.Cost == nil || b.Cost == nil {
			return cmp.Compare(costRank(a), costRank(b))
		}
		return cmp.Compare(a.Cost.PerDay, b.Cost.PerDay)
	})
	var cheapest, provisioned, payg *RankedTier
	for i := range r.Tiers {
		t := &r.Tiers[i]
		if !t.Fits || t.Cost == nil {
			continue
		}
		if cheapest == nil {
			cheapest = t
		}
		switch {
		case t.KeyCost.Pricing == PricingProvisioned && provisioned == nil:
			provisioned = t
		case t.KeyCost.Pricing == PricingPayAsYouGo && payg == nil:
			payg = t
		}
	}
	if cheapest != nil {
		r.Cheapest = &cheapest.Tier
		r.Summary = fmt.Sprintf("the cheapest tier in which every class fits is %s, at %s %s a day", cheapest.Tier, money(cheapest.Cost.PerDay), cheapest.Cost.Currency)
	} else {
		r.Summary = "no priced tier fits every class"
		if !slices.ContainsFunc(r.Tiers, func(t RankedTier) bool { return t.Cost != nil }) {
			r.Summary = "no tier has a price, so none is ranked by cost"
		}
	}
	var unpriced []string // tiers that fit but have no price to rank them by
	for _, t := range r.Tiers {
		if t.Cost == nil && t.Fits {
			unpriced = append(unpriced, t.Tier)
		}
	}
	if len(unpriced) > 0 {
		too := ""
		if cheapest != nil {
			too = " too"
		}
		verb, has, it := "fits", "has", "it is"
		if len(unpriced) > 1 {
			verb, has, it = "fit", "have", "they are"
		}
		r.Summary += fmt.Sprintf("; %s %s every class%s but %s no price, so %s not ranked by cost", strings.Join(unpriced, ", "), verb, too, has, it)
	}
	if provisioned != nil && payg != nil && payg.KeyCost.RequestsPerDay > 0 && payg.KeyCost.PerDay > 0 {
		perRequest := payg.KeyCost.PerDay / payg.KeyCost.RequestsPerDay
		r.BreakEven = &BreakEven{Provisioned: provisioned.Tier, PayAsYouGo: payg.Tier,
			RequestsPerDay: signed.Round(provisioned.KeyCost.PerDay/perRequest, 0), DemandPerDay: payg.KeyCost.RequestsPerDay}
		r.Summary += fmt.Sprintf("; provisioned %s (%s %s a day) is cheaper than pay-as-you-go %s (%s per 1,000 requests) above %s requests a day, and the demand is %s",
			provisioned.Tier, money(provisioned.KeyCost.PerDay), provisioned.KeyCost.Currency, payg.Tier,
			money(perRequest*1000), num(r.BreakEven.RequestsPerDay), num(r.BreakEven.DemandPerDay))
	}
	return r
}

// costRank orders tiers with a price before tiers without one.
func costRank(t RankedTier) int {
	if t.Cost == nil {
		return 1
	}
	return 0
}

// money writes an amount with two decimals and thousands separators, or
// with four significant digits below 1.
func money(v float64) string {
	if v != 0 && v < 1 && v > -1 {
		return fmt.Sprintf("%.4g", v)
	}
	whole, cents, _ := strings.Cut(strconv.FormatFloat(v, 'f', 2, 64), ".")
	return commas(whole) + "." + cents
}
