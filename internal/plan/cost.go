package plan

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// The cost of a plan (docs/concepts.md, "Cost") follows from two things
// only: the scenario's prices and what the plan predicts each class uses.
// It is computed after the pools and changes none of the engine's numbers.

// classUse is what one class's requests use: all that its cost depends on.
type classUse struct {
	quota int // the index of its key in the scenario
	// rate is its requests per second while it runs; perDay its requests
	// a day; batch the requests of its whole batch (0 for a class that is
	// no batch) and days the days the batch spreads over (1 otherwise).
	rate, perDay, batch, days float64
	// in and out are a request's mean tokens as a provider bills them:
	// the tokens used, output capped at max_tokens, whatever the key's
	// token_accounting counts against its limits.
	in, out float64
	// cached and written are the fractions of the input read from and
	// written into the prompt cache.
	cached, written float64
}

// perRequest is what one request costs at a pay-as-you-go price, and what
// it would cost with no prompt cache:
//
//	c  = (in·(1 − r − w)·p_in + in·r·p_read + in·w·p_write + out·p_out) / 10⁶
//	c₀ = (in·p_in + out·p_out) / 10⁶
//
// with r = cached_input_fraction, w = cache_write_fraction, and the
// cache's prices p_read and p_write p_in where the price gives none.
func perRequest(p scenario.Price, u classUse) (c, noCache float64) {
	in, out := deref(p.InputPerMtok), deref(p.OutputPerMtok)
	read, write := in, in
	if p.CachedInputPerMtok != nil {
		read = *p.CachedInputPerMtok
	}
	if p.CacheWritePerMtok != nil {
		write = *p.CacheWritePerMtok
	}
	c = (u.in*(1-u.cached-u.written)*in + u.in*u.cached*read + u.in*u.written*write + u.out*out) / 1e6
	noCache = (u.in*in + u.out*out) / 1e6
	return c, noCache
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// costs is the cost of every class, of every key and of the whole plan,
// from the keys (with defaults) and what each class uses; nil where a key
// has no price, and a nil total when none has.
//
//   - Pay as you go: a class costs c per request (perRequest): c·rate·3600
//     an hour, c·requests a day (a batch's requests in each of its days),
//     1,000·c per 1,000 requests; the cache saves (c₀ − c) per request.
//   - Provisioned: a key costs per_hour for each of its active_hours,
//     whatever it carries; each class pays the share of it that its
//     tokens a day are of the key's (equal shares when none uses any), and
//     per 1,000 requests its share a day over its requests a day.
//
// A key's cost is the sum of its classes' (per hour, the hour in which all
// run); a provisioned key's is its price, classes or not. The total is
// the sum over the keys with a price.
func costs(quotas []scenario.Quota, uses []classUse) (classes, keys []*Cost, total *Cost) {
	classes = make([]*Cost, len(uses))
	keys = make([]*Cost, len(quotas))
	for k, q := range quotas {
		if q.Price == nil {
			continue
		}
		pr := *q.Price
		kc := &Cost{Currency: pr.CurrencyOr(), Pricing: PricingPayAsYouGo}
		var members []int
		tokens := 0.0
		for i, u := range uses {
			if u.quota == k {
				members = append(members, i)
				tokens += u.perDay * (u.in + u.out)
			}
		}
		if pr.Provisioned() {
			kc.Pricing = PricingProvisioned
			kc.PerHour = *pr.PerHour
			kc.PerDay = *pr.PerHour * q.ActiveHours
		}
		for _, i := range members {
			u := uses[i]
			cc := &Cost{Currency: kc.Currency, Pricing: kc.Pricing, RequestsPerDay: u.perDay}
			if pr.Provisioned() {
				share := 1 / float64(len(members))
				if tokens > 0 {
					share = u.perDay * (u.in + u.out) / tokens
				}
				cc.PerHour, cc.PerDay = share*kc.PerHour, share*kc.PerDay
				cc.Per1KRequests = per1K(cc.PerDay, u.perDay)
			} else {
				c, noCache := perRequest(pr, u)
				cc.PerHour = c * u.rate * 3600
				cc.PerDay = c * u.perDay
				cc.Per1KRequests = ptrTo(1000 * c)
				cc.CacheSavingPerDay = (noCache - c) * u.perDay
				kc.PerHour += cc.PerHour
				kc.PerDay += cc.PerDay
				kc.CacheSavingPerDay += cc.CacheSavingPerDay
			}
			if u.batch > 0 {
				cc.PerBatch = ptrTo(cc.PerDay * u.days)
			}
			kc.RequestsPerDay += u.perDay
			classes[i] = cc
		}
		kc.Per1KRequests = per1K(kc.PerDay, kc.RequestsPerDay)
		keys[k] = kc
		if total == nil {
			total = &Cost{Currency: kc.Currency, Pricing: kc.Pricing}
		} else if total.Pricing != kc.Pricing {
			total.Pricing = PricingMixed
		}
		total.PerHour += kc.PerHour
		total.PerDay += kc.PerDay
		total.RequestsPerDay += kc.RequestsPerDay
		total.CacheSavingPerDay += kc.CacheSavingPerDay
	}
	if total != nil {
		total.Per1KRequests = per1K(total.PerDay, total.RequestsPerDay)
		for _, q := range quotas {
			if q.Price == nil {
				total.Unpriced = append(total.Unpriced, q.Name)
			}
		}
	}
	for _, c := range slices.Concat(classes, keys, []*Cost{total}) {
		c.round()
	}
	return classes, keys, total
}

// per1K is the cost of 1,000 requests of a day that costs perDay for
// requests requests; nil without requests.
func per1K(perDay, requests float64) *float64 {
	if requests <= 0 {
		return nil
	}
	return ptrTo(perDay / requests * 1000)
}

// round rounds amounts to 1e-4 of the currency (a price per request is
// often a fraction of a cent) and requests to 0.01.
func (c *Cost) round() {
	if c == nil {
		return
	}
	for _, v := range []*float64{&c.PerHour, &c.PerDay, &c.CacheSavingPerDay, c.Per1KRequests, c.PerBatch} {
		if v != nil {
			*v = signed.Round(*v, 4)
		}
	}
	c.RequestsPerDay = signed.Round(c.RequestsPerDay, 2)
}

// uses is what each class of the run uses: at its stated demand, whether
// or not its pool serves it, or without a demand at its pool's rate; a
// day is the key's active_hours (a class with a schedule runs its own
// hours of them), and a batch runs once in each of the days it spreads
// over.
func (r *run) uses() []classUse {
	out := make([]classUse, len(r.models))
	for i, m := range r.models {
		k := slices.IndexFunc(r.keys, func(k quota.Key) bool { return k.Name == m.spec.Quota })
		u := classUse{quota: k, days: 1, in: m.base.In.Mean(), out: m.base.Out.Mean(),
			cached: m.cachedFraction(), written: m.spec.CacheWriteFraction}
		if t := m.task; t != nil {
			u.in, u.out = t.in, t.out // an agent task's tokens, every call's
		}
		if d := m.spec.Demand; d != nil && d.Requests > 0 {
			u.days = batchDays(*d)
			u.batch, u.rate, u.perDay = d.Requests, m.lambda, d.Requests/u.days
		} else {
			u.rate = m.lambda
			if u.rate == 0 {
				u.rate = r.runRate(i, r.pools[i])
			}
			u.perDay = u.rate * 3600 * r.keys[k].ActiveHours * r.dayShare(i)
		}
		out[i] = u
	}
	return out
}

// batchDays is the number of days a batch spreads over: its within_hours
// in whole days, at least one. A batch's daily limits and its cost a day
// count its requests over these days.
func batchDays(d scenario.Demand) float64 { return math.Max(1, math.Ceil(d.WithinHours/24)) }

// quotas are the run's keys as scenario quotas, with defaults.
func (r *run) quotas() []scenario.Quota {
	out := make([]scenario.Quota, len(r.keys))
	for k, key := range r.keys {
		out[k] = key.Quota
	}
	return out
}

// setCosts puts the cost of every class, key and of the whole plan on p,
// whose classes (and keys, when it has them) are the run's.
func (r *run) setCosts(p *Plan) { setCosts(p, r.quotas(), r.uses()) }

// setCosts puts on p the cost of every class, of every key of quotas and
// of the whole plan, for what its classes use.
func setCosts(p *Plan, quotas []scenario.Quota, uses []classUse) {
	classes, keys, total := costs(quotas, uses)
	for i := range p.Classes {
		p.Classes[i].Cost = classes[i]
	}
	for k := range p.Quotas {
		p.Quotas[k].Cost = keys[k]
	}
	p.Cost = total
}

// keyCost is what the classes of the named key cost a day in p, nil when
// the key has no price: a provisioned key's classes share all of its cost.
func keyCost(p *Plan, key string) *float64 {
	var sum *float64
	for _, c := range p.Classes {
		if c.Quota == key && c.Cost != nil {
			sum = ptrTo(deref(sum) + c.Cost.PerDay)
		}
	}
	if sum != nil {
		*sum = signed.Round(*sum, 4) // a sum of rounded costs, rounded as they are
	}
	return sum
}

// maxTierTrials bounds the catalogue tiers planned for one key's remedies:
// the cheapest that could give the limits are tried in order of cost.
const maxTierTrials = 3

// costRemedies attaches to class i's remedies that raise a key's limits
// what the change costs (docs/concepts.md, "Cost"): the cheapest tier of
// the engine's catalogue in which the class fits, planned with the
// class's other remedies, or else the key raised to the limits at its own
// prices (provisioned capacity costs in proportion to the limit). now is
// the plan the remedies are of; the remedies of one key share one cost.
func (r *run) costRemedies(ctx context.Context, in scenario.Scenario, i int, rems []Remedy, now *Plan) error {
	byKey := map[int][]int{}
	for j, rm := range rems {
		if k, ok := limitRemedy(rm); ok {
			byKey[k] = append(byKey[k], j)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		rc, err := r.remedyCost(ctx, in, i, k, rems, byKey[k], now)
		if err != nil {
			return err
		}
		for _, j := range byKey[k] {
			if rc != nil {
				c := *rc
				rems[j].Cost = &c
			}
		}
	}
	return nil
}

// limitRemedy is the index of the key whose limit a remedy raises, and
// whether it raises one (its path is /quotas/N/rpm and the like).
func limitRemedy(rm Remedy) (int, bool) {
	if _, ok := scenario.DimensionNamed(rm.Constraint); !ok {
		return 0, false
	}
	rest, ok := strings.CutPrefix(rm.Path, "/quotas/")
	if !ok {
		return 0, false
	}
	n, _, _ := strings.Cut(rest, "/")
	k, err := strconv.Atoi(n)
	return k, err == nil
}

// remedyCost is the cost of the remedies idx of class i, which raise key
// k's limits.
func (r *run) remedyCost(ctx context.Context, in scenario.Scenario, i, k int, rems []Remedy, idx []int, now *Plan) (*RemedyCost, error) {
	key := in.Quotas[k]
	before := keyCost(now, key.Name)
	var rest []Remedy
	for j, rm := range rems {
		if !slices.Contains(idx, j) {
			rest = append(rest, rm)
		}
	}
	base, err := withRemedies(in, rest)
	if err != nil {
		return nil, nil
	}
	for _, t := range r.candidateTiers(k, rems, idx) {
		changed := base
		changed.Quotas = slices.Clone(base.Quotas)
		changed.Quotas[k] = key.WithLimitsOf(t)
		_, p2, err := r.eng.leanPlan(ctx, changed, r.floors)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			continue
		}
		if !p2.Classes[i].Feasible {
			continue
		}
		rc := &RemedyCost{Tier: t.Name, PerDay: keyCost(p2, key.Name), ChangePerDay: difference(keyCost(p2, key.Name), before)}
		if t.Price != nil {
			rc.Currency = t.Price.CurrencyOr()
		}
		return rc, nil
	}
	if key.Price == nil {
		return nil, nil
	}
	changed, err := withRemedies(in, rems)
	if err != nil {
		return nil, nil
	}
	if key.Price.Provisioned() {
		// Provisioned capacity is bought in proportion to its limits:
		// the key costs as many times more as its most raised limit.
		factor := 1.0
		for _, j := range idx {
			d, _ := scenario.DimensionNamed(rems[j].Constraint)
			if l := key.Limit(d); l > 0 {
				factor = math.Max(factor, rems[j].Value/l)
			}
		}
		pr := *key.Price
		pr.PerHour = ptrTo(*pr.PerHour * factor)
		changed.Quotas = slices.Clone(changed.Quotas)
		changed.Quotas[k].Price = &pr
	}
	_, p2, err := r.eng.leanPlan(ctx, changed, r.floors)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, nil
	}
	after := keyCost(p2, key.Name)
	return &RemedyCost{Currency: key.Price.CurrencyOr(), PerDay: after, ChangePerDay: difference(after, before)}, nil
}

// difference is after − before, rounded as costs are; nil when either is
// unknown.
func difference(after, before *float64) *float64 {
	if after == nil || before == nil {
		return nil
	}
	return ptrTo(signed.Round(*after-*before, 4))
}

// candidateTiers are the tiers of the engine's catalogue that could give
// key k the limits of class i's remedies idx, cheapest first at the run's
// use (tiers without a price last, then in catalogue order), at most
// maxTierTrials: a tier whose limit on every dimension is none or at least
// what the remedies ask (the key's own limit on the others), that counts
// output as the key does or counts the tokens produced, and whose price
// is in the currency of the scenario's other prices.
func (r *run) candidateTiers(k int, rems []Remedy, idx []int) []scenario.Quota {
	quotas := r.quotas()
	key := quotas[k]
	var need [scenario.NumDimensions]float64
	for d := range scenario.NumDimensions {
		need[d] = key.Limit(d)
	}
	for _, j := range idx {
		d, _ := scenario.DimensionNamed(rems[j].Constraint)
		need[d] = rems[j].Value
	}
	currency := ""
	for j, q := range quotas {
		if j != k && q.Price != nil {
			currency = q.Price.CurrencyOr()
		}
	}
	type candidate struct {
		tier scenario.Quota
		cost float64
	}
	uses := r.uses()
	var cands []candidate
	for _, t := range r.eng.tiers {
		if acc := cmp.Or(t.TokenAccounting, scenario.DefaultTokenAccounting); acc != scenario.AccountingActual && acc != key.TokenAccounting {
			continue
		}
		if t.Price != nil && currency != "" && t.Price.CurrencyOr() != currency {
			continue
		}
		gives := true
		for d := range scenario.NumDimensions {
			if l := t.Limit(d); need[d] > 0 && l > 0 && l < need[d] {
				gives = false
			}
		}
		if !gives {
			continue
		}
		cost := math.Inf(1)
		if t.Price != nil {
			priced := slices.Clone(quotas)
			priced[k] = key.WithLimitsOf(t)
			_, keys, _ := costs(priced, uses)
			cost = keys[k].PerDay
		}
		cands = append(cands, candidate{t, cost})
	}
	slices.SortStableFunc(cands, func(a, b candidate) int { return cmp.Compare(a.cost, b.cost) })
	out := make([]scenario.Quota, 0, maxTierTrials)
	for _, c := range cands[:min(len(cands), maxTierTrials)] {
		out = append(out, c.tier)
	}
	return out
}
