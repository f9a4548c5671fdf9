package plan

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

// TestPricedExampleCostByHand holds the plan to the worked example of
// docs/concepts.md ("Worked example: cost"), computed there by hand:
//
//   - support, pay as you go at 2.50 per million input and 10 per million
//     output tokens: (1,500 × 2.5 + 300 × 10) / 10⁶ = 0.00675 a request;
//     2 req/s is 172,800 a day, 1,166.40 a day and 48.60 an hour.
//   - assistant reads 75 % of its 4,000 input tokens from the cache at
//     0.25: (1,000 × 2.5 + 3,000 × 0.25 + 250 × 10) / 10⁶ = 0.00575 a
//     request against 0.0125 without the cache; 86,400 a day cost 496.80
//     and the cache saves 583.20.
//   - nightly has the provisioned key to itself: 12 an hour for 24 hours,
//     288 a day, for 20,000 requests: 14.40 per 1,000.
func TestPricedExampleCostByHand(t *testing.T) {
	p := mustPlan(t, example(t, "priced"))
	want := map[string]Cost{
		"support": {Currency: "USD", Pricing: PricingPayAsYouGo, PerHour: 48.6, PerDay: 1166.4, RequestsPerDay: 172800,
			Per1KRequests: f(6.75)},
		"assistant": {Currency: "USD", Pricing: PricingPayAsYouGo, PerHour: 20.7, PerDay: 496.8, RequestsPerDay: 86400,
			Per1KRequests: f(5.75), CacheSavingPerDay: 583.2},
		"nightly": {Currency: "USD", Pricing: PricingProvisioned, PerHour: 12, PerDay: 288, RequestsPerDay: 20000,
			Per1KRequests: f(14.4), PerBatch: f(288)},
	}
	for _, c := range p.Classes {
		if !c.Feasible {
			t.Errorf("%s does not fit: the example's costs are of a plan that holds", c.Name)
		}
		if c.Cost == nil || !reflect.DeepEqual(*c.Cost, want[c.Name]) {
			t.Errorf("%s costs %s, want %s", c.Name, js(c.Cost), js(want[c.Name]))
		}
	}
	keys := map[string]Cost{
		"payg": {Currency: "USD", Pricing: PricingPayAsYouGo, PerHour: 69.3, PerDay: 1663.2, RequestsPerDay: 259200,
			Per1KRequests: f(6.4167), CacheSavingPerDay: 583.2},
		"reserved": {Currency: "USD", Pricing: PricingProvisioned, PerHour: 12, PerDay: 288, RequestsPerDay: 20000, Per1KRequests: f(14.4)},
	}
	for _, q := range p.Quotas {
		if q.Cost == nil || !reflect.DeepEqual(*q.Cost, keys[q.Name]) {
			t.Errorf("key %s costs %s, want %s", q.Name, js(q.Cost), js(keys[q.Name]))
		}
	}
	total := Cost{Currency: "USD", Pricing: PricingMixed, PerHour: 81.3, PerDay: 1951.2, RequestsPerDay: 279200,
		Per1KRequests: f(6.9885), CacheSavingPerDay: 583.2}
	if p.Cost == nil || !reflect.DeepEqual(*p.Cost, total) {
		t.Errorf("the plan costs %s, want %s", js(p.Cost), js(total))
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestPricesChangeNoEngineNumber: a plan with prices is the plan without
// them, cost aside.
func TestPricesChangeNoEngineNumber(t *testing.T) {
	for _, name := range []string{"priced", "chat-and-batch", "daily-limit-batch"} {
		s := example(t, name)
		bare := s
		bare.Quotas = slices.Clone(s.Quotas)
		for i := range bare.Quotas {
			bare.Quotas[i].Price = nil
		}
		priced := s
		priced.Quotas = slices.Clone(s.Quotas)
		for i := range priced.Quotas {
			priced.Quotas[i].Price = &scenario.Price{InputPerMtok: f(1), OutputPerMtok: f(4)}
		}
		p, q := *mustPlan(t, priced), *mustPlan(t, bare)
		if q.Cost != nil {
			t.Fatalf("%s: an unpriced plan has a cost", name)
		}
		p.Cost = nil
		p.Classes = slices.Clone(p.Classes)
		p.Quotas = slices.Clone(p.Quotas)
		for i := range p.Classes {
			p.Classes[i].Cost = nil
			p.Classes[i].Remedies = slices.Clone(p.Classes[i].Remedies)
			for j := range p.Classes[i].Remedies {
				p.Classes[i].Remedies[j].Cost = nil
			}
		}
		for i := range p.Quotas {
			p.Quotas[i].Cost = nil
		}
		if js(p) != js(q) {
			t.Errorf("%s: prices changed the plan:\n%s\n%s", name, js(p), js(q))
		}
	}
}

// TestCostRules: a key without a price is left out of the total and named;
// a batch over several days costs its requests in each; output is billed
// as used, capped at max_tokens, even where the key counts max_tokens; a
// class without a demand costs its pool's rate; cache writes cost their
// own price.
func TestCostRules(t *testing.T) {
	s := scenario.Scenario{
		Quotas: []scenario.Quota{
			{Name: "paid", RPM: 6000, TPM: 1e8, TokenAccounting: scenario.AccountingMaxTokens,
				Price: &scenario.Price{InputPerMtok: f(2), CachedInputPerMtok: f(0.5), CacheWritePerMtok: f(4), OutputPerMtok: f(10)}},
			{Name: "free", RPM: 600},
		},
		Latency: scenario.Latency{TTFTMs: fixedMs(500), TPOTMs: fixedMs(20)},
		Classes: []scenario.Class{
			{Name: "backlog", Quota: "paid", Mode: scenario.ModeBatch, Demand: &scenario.Demand{Requests: 90000, WithinHours: 60},
				InputTokens: fixed(1000), OutputTokens: fixed(101), MaxTokens: 400, CachedInputFraction: 0.5, CacheWriteFraction: 0.25},
			{Name: "fill", Quota: "paid", Mode: scenario.ModeBatch, InputTokens: fixed(1000), OutputTokens: fixed(101), MaxTokens: 400},
			{Name: "elsewhere", Quota: "free", Mode: scenario.ModeSemi, Demand: &scenario.Demand{RPS: 1}, InputTokens: fixed(1000), OutputTokens: fixed(101)},
		},
		Policy: scenario.Policy{MonteCarloDraws: 2000},
	}
	p := mustPlan(t, s)
	// backlog: (1000·0.25·2 + 1000·0.5·0.5 + 1000·0.25·4 + 101·10)/10⁶ =
	// (500 + 250 + 1000 + 1010)/10⁶ = 0.00276 a request, 0.00301 without
	// the cache; 60 hours are 3 days of 30,000 requests.
	b := p.Classes[0].Cost
	if b == nil || !near(b.PerDay, 30000*0.00276) || !near(*b.PerBatch, 90000*0.00276) || b.RequestsPerDay != 30000 ||
		!near(b.CacheSavingPerDay, 30000*0.00025) || !near(*b.Per1KRequests, 2.76) || !near(b.PerHour, 90000.0/60*0.00276) {
		t.Errorf("backlog costs %s", js(b))
	}
	// fill runs as fast as its pool: pool / E[S] = pool / 2.5 s, all day.
	fill := p.Classes[1]
	rate := float64(fill.Pool) / 2.5
	if c := fill.Cost; c == nil || !near(c.PerDay, rate*86400*0.00301) || !near(c.RequestsPerDay, rate*86400) {
		t.Errorf("fill (pool %d) costs %s, want %g a day", fill.Pool, js(c), rate*86400*0.00301)
	}
	if p.Classes[2].Cost != nil || p.Quotas[1].Cost != nil {
		t.Errorf("an unpriced key has a cost: %s %s", js(p.Classes[2].Cost), js(p.Quotas[1].Cost))
	}
	if p.Cost == nil || !slices.Equal(p.Cost.Unpriced, []string{"free"}) || !near(p.Cost.PerDay, b.PerDay+fill.Cost.PerDay) {
		t.Errorf("total %s", js(p.Cost))
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-4*math.Max(1, math.Abs(b)) }

// costCatalogue is a catalogue of five tiers: small does not give the
// limit, the max_tokens tier counts output as the key does not, and of
// the three that give it large is the cheapest at the class's use
// (medium's tokens cost more, provisioned's 40 an hour more still).
var costCatalogue = []scenario.Quota{
	{Name: "small", RPM: 600, TPM: 120000, Price: &scenario.Price{InputPerMtok: f(2), OutputPerMtok: f(8)}},
	{Name: "medium", RPM: 1000, TPM: 300000, Price: &scenario.Price{InputPerMtok: f(3), OutputPerMtok: f(12)}},
	{Name: "maxtok", RPM: 5000, TPM: 1e6, TokenAccounting: scenario.AccountingMaxTokens, Price: &scenario.Price{InputPerMtok: f(1), OutputPerMtok: f(4)}},
	{Name: "provisioned", RPM: 2000, TPM: 500000, Price: &scenario.Price{PerHour: f(40)}},
	{Name: "large", RPM: 5000, TPM: 1e6, Price: &scenario.Price{InputPerMtok: f(2.5), OutputPerMtok: f(10)}},
}

// tightKey is a class of 2 req/s of 1,000 input and 200 output tokens on
// a key of 100,000 tpm, priced 2 and 8 a million: it needs 2,400 tokens a
// second and more, the key gives 0.9 × 100,000 / 60 = 1,500.
func tightKey() scenario.Scenario {
	return scenario.Scenario{
		Quotas:  []scenario.Quota{{Name: "key", RPM: 600, TPM: 100000, Price: &scenario.Price{InputPerMtok: f(2), OutputPerMtok: f(8)}}},
		Latency: scenario.Latency{TTFTMs: fixedMs(500), TPOTMs: fixedMs(20)},
		Classes: []scenario.Class{{Name: "chat", Quota: "key", Mode: scenario.ModeInteractive, Demand: &scenario.Demand{RPS: 2},
			InputTokens: fixed(1000), OutputTokens: fixed(200)}},
		Policy: scenario.Policy{MonteCarloDraws: 2000},
	}
}

// TestRemedyNamesTheCheapestTierThatGivesIt: the tpm remedy names large,
// the cheapest tier in which the class fits, and what the change costs a
// day: (1,000 × 2.5 + 200 × 10)/10⁶ = 0.0045 against (1,000 × 2 +
// 200 × 8)/10⁶ = 0.0036 a request, for 172,800 requests a day: 777.60
// against 622.08, 155.52 more.
func TestRemedyNamesTheCheapestTierThatGivesIt(t *testing.T) {
	p, err := New(Options{Tiers: costCatalogue}).Plan(context.Background(), tightKey())
	if err != nil {
		t.Fatal(err)
	}
	c := p.Classes[0]
	if c.Feasible || c.BindingConstraint != "tpm" {
		t.Fatalf("chat fits (%v) or is bound by %s: the test wants a tpm remedy", c.Feasible, c.BindingConstraint)
	}
	var rem *Remedy
	for i := range c.Remedies {
		if c.Remedies[i].Constraint == "tpm" {
			rem = &c.Remedies[i]
		}
	}
	if rem == nil {
		t.Fatalf("no tpm remedy in %s", js(c.Remedies))
	}
	want := RemedyCost{Tier: "large", Currency: "USD", PerDay: f(777.6), ChangePerDay: f(155.52)}
	if rem.Cost == nil || !reflect.DeepEqual(*rem.Cost, want) {
		t.Fatalf("the tpm remedy costs %s, want %s", js(rem.Cost), js(want))
	}
	if c.Cost == nil || c.Cost.PerDay != 622.08 {
		t.Errorf("chat costs %s today, want 622.08 a day", js(c.Cost))
	}
}

// TestRemedyCostWithoutATier: with no tier that gives the limit, a
// pay-as-you-go key raised to it costs the same at the same demand, and a
// provisioned key costs as many times more as its limit grows.
func TestRemedyCostWithoutATier(t *testing.T) {
	s := tightKey()
	p := mustPlan(t, s)
	rem := p.Classes[0].Remedies[0]
	if rem.Constraint != "tpm" || rem.Cost == nil || rem.Cost.Tier != "" || *rem.Cost.ChangePerDay != 0 || *rem.Cost.PerDay != 622.08 {
		t.Errorf("pay as you go: remedy %s", js(rem))
	}
	s.Quotas = []scenario.Quota{s.Quotas[0]}
	s.Quotas[0].Price = &scenario.Price{PerHour: f(10)}
	p = mustPlan(t, s)
	rem = p.Classes[0].Remedies[0]
	after := 10 * rem.Value / 100000 * 24
	if rem.Cost == nil || rem.Cost.Tier != "" || !near(*rem.Cost.PerDay, after) || !near(*rem.Cost.ChangePerDay, after-240) {
		t.Errorf("provisioned: remedy %s, want %g a day", js(rem), after)
	}
	s.Quotas[0].Price = nil
	if rem := mustPlan(t, s).Classes[0].Remedies[0]; rem.Cost != nil {
		t.Errorf("an unpriced key's remedy has a cost: %s", js(rem.Cost))
	}
}

// TestKeyCostIsRoundedAsItsParts: the classes' costs are rounded to four
// places, and so is their sum: 0.1 + 0.2 is 0.3, not 0.30000000000000004.
func TestKeyCostIsRoundedAsItsParts(t *testing.T) {
	p := &Plan{Classes: []ClassPlan{{Quota: "k", Cost: &Cost{PerDay: 0.1}}, {Quota: "k", Cost: &Cost{PerDay: 0.2}}, {Quota: "other", Cost: &Cost{PerDay: 5}}}}
	if got := keyCost(p, "k"); got == nil || *got != 0.3 {
		t.Fatalf("key k costs %v a day, want 0.3", got)
	}
	if got := keyCost(p, "none"); got != nil {
		t.Fatalf("a key without classes costs %v", *got)
	}
}

// TestScheduledClassesCostTheirHours: with schedules the plan is made
// window by window and still costs every class: support running 12 hours
// of the day costs half its day (86,400 requests at 0.00675: 583.20), the
// nightly batch in its 6 hours costs what it does without a schedule (its
// key is provisioned all day), and assistant is unchanged.
func TestScheduledClassesCostTheirHours(t *testing.T) {
	s := example(t, "priced")
	s.Classes = slices.Clone(s.Classes)
	s.Classes[0].Schedule = &scenario.Schedule{StartHour: 8, Hours: 12}
	s.Classes[2].Schedule = &scenario.Schedule{StartHour: 22, Hours: 6}
	p := mustPlan(t, s)
	if len(p.Windows) == 0 {
		t.Fatal("the plan with schedules has no windows")
	}
	perDay := map[string]float64{"support": 583.2, "assistant": 496.8, "nightly": 288}
	for _, c := range p.Classes {
		if c.Cost == nil || !near(c.Cost.PerDay, perDay[c.Name]) {
			t.Errorf("%s costs %s a day, want %.2f", c.Name, js(c.Cost), perDay[c.Name])
		}
	}
	if p.Cost == nil || !near(p.Cost.PerDay, 583.2+496.8+288) || p.Quotas[0].Cost == nil || !near(p.Quotas[0].Cost.PerDay, 583.2+496.8) {
		t.Errorf("the plan costs %s, key payg %s", js(p.Cost), js(p.Quotas[0].Cost))
	}
}
