package scenario

import (
	"fmt"
	"math"
	"reflect"

	"github.com/plannerdev/planner/internal/fieldpath"
)

// FieldError is one problem in a scenario, located by its path
// (for example "classes[1].output_tokens.p95"): the shared fieldpath.Error.
type FieldError = fieldpath.Error

// Errors is every problem found in a scenario.
type Errors = fieldpath.Errors

// checker collects problems under a path prefix.
type checker struct{ errs Errors }

func (c *checker) add(path, format string, args ...any) {
	c.errs = append(c.errs, FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}

// Check returns the problems that the schema alone cannot express: rules
// that span fields (p95 >= p50, one form per distribution, names that must
// exist or be unique, a latency profile for every class). It assumes nothing
// about the values the schema checks, so it is safe on a scenario that
// failed schema validation.
func (s Scenario) Check() Errors {
	var c checker
	if len(s.Quotas) == 0 {
		c.add("quotas", "give at least one quota")
	}
	if len(s.Classes) == 0 {
		c.add("classes", "give at least one class")
	}
	quotas := map[string]Quota{}
	currency := ""
	for i, q := range s.Quotas {
		p := fmt.Sprintf("quotas[%d]", i)
		if _, dup := quotas[q.Name]; dup && q.Name != "" {
			c.add(p+".name", "duplicate quota name %q", q.Name)
		}
		quotas[q.Name] = q
		if !q.HasLimit() {
			c.add(p, "%s", NoLimit)
		}
		c.dailyRates(p, q)
		if q.Price != nil {
			c.price(p+".price", *q.Price)
			switch cur := q.Price.CurrencyOr(); {
			case currency == "":
				currency = cur
			case cur != currency:
				c.add(p+".price.currency", "every price of a scenario is in one currency, and an earlier quota's is %s, not %s", currency, cur)
			}
		}
	}
	if !s.Latency.IsZero() {
		c.latency("latency", s.Latency)
	}
	endpoints := map[string]bool{}
	for i, e := range s.Endpoints {
		p := fmt.Sprintf("endpoints[%d]", i)
		switch {
		case e.Name == DefaultEndpoint:
			c.add(p+".name", "%q names the top-level latency; choose another name", DefaultEndpoint)
		case endpoints[e.Name] && e.Name != "":
			c.add(p+".name", "duplicate endpoint name %q", e.Name)
		}
		endpoints[e.Name] = true
		if e.Latency.IsZero() {
			c.add(p+".latency", "give ttft_ms and tpot_ms or a curve")
			continue
		}
		c.latency(p+".latency", e.Latency)
		c.profile(p+".latency", e.Latency)
	}
	names := map[string]bool{}
	for i, cl := range s.Classes {
		p := fmt.Sprintf("classes[%d]", i)
		if names[cl.Name] && cl.Name != "" {
			c.add(p+".name", "duplicate class name %q", cl.Name)
		}
		names[cl.Name] = true
		q, ok := quotas[cl.Quota]
		if !ok && cl.Quota != "" {
			c.add(p+".quota", "no quota named %q", cl.Quota)
		}
		if ok && q.TokenAccounting == AccountingMaxTokens && cl.MaxTokens == 0 {
			c.add(p+".max_tokens", "required: quota %q counts max_tokens at admission", q.Name)
		}
		if active := activeHours(q); ok && cl.Schedule != nil && cl.Schedule.HoursPerDay() > active {
			c.add(p+".schedule.hours", "%g hours a day are more than the active_hours of %g of quota %q, the hours a day it is used, over which its daily limits are spread: shorten the schedule or raise active_hours", cl.Schedule.HoursPerDay(), active, q.Name)
		}
		if cl.Demand != nil {
			c.demand(p+".demand", *cl.Demand)
			if d := cl.Demand; ok && cl.Schedule == nil && d.Requests > 0 && d.WithinHours <= 24 && d.WithinHours > activeHours(q) {
				c.add(p+".demand.within_hours", "%g hours are more than the active_hours of %g of quota %q, the hours a day it is used: a batch of one day runs while its key is used; give fewer hours or raise active_hours", d.WithinHours, activeHours(q), q.Name)
			}
			if d := cl.Demand; cl.Schedule != nil && d.Requests > 0 && d.WithinHours > cl.Schedule.HoursPerDay() {
				c.add(p+".demand.within_hours", "%g hours do not fit in the class's schedule of %g hours a day: a batch must finish within its window", d.WithinHours, cl.Schedule.HoursPerDay())
			}
		}
		if cl.SLO != nil {
			c.slo(p+".slo", *cl.SLO)
		}
		if sum := cl.CachedInputFraction + cl.CacheWriteFraction; sum > 1 {
			c.add(p+".cache_write_fraction", "cached_input_fraction and cache_write_fraction are shares of the same input and come to %g, more than 1", sum)
		}
		c.dist(p+".input_tokens", cl.InputTokens)
		c.dist(p+".output_tokens", cl.OutputTokens)
		if d := cl.OutputTokens.Max; d != nil && *d < 1 {
			c.add(p+".output_tokens.max", "must be at least 1: every answer has a first token")
		}
		c.task(p, cl, taskLatency(s, cl))
		own := cl.Latency != nil && !cl.Latency.IsZero()
		switch {
		case cl.Endpoint != "" && own:
			c.add(p+".endpoint", "give endpoint or latency, not both")
		case cl.Endpoint != "":
			if !endpoints[cl.Endpoint] {
				c.add(p+".endpoint", "no endpoint named %q", cl.Endpoint)
			}
		case own:
			c.latency(p+".latency", *cl.Latency)
			c.profile(p+".latency", *cl.Latency)
		case s.Latency.IsZero():
			c.add(p+".latency", "no latency profile: give ttft_ms and tpot_ms or a curve here or at the top level, or name an endpoint")
		default:
			c.profile("latency", s.Latency)
		}
	}
	return dedupe(c.errs)
}

// activeHours is q's active_hours, the default when it sets none.
func activeHours(q Quota) float64 {
	if q.ActiveHours <= 0 {
		return DefaultActiveHours
	}
	return q.ActiveHours
}

// dailyRates bounds the rates that daily limits come to over a key's
// active hours: spread over a vanishing number of hours, a daily limit
// would allow more a second than any per-minute limit may state, or an
// infinite rate.
func (c *checker) dailyRates(p string, q Quota) {
	if q.ActiveHours <= 0 {
		return // the default, 24 hours
	}
	limits := quotaBounds().LimitMax
	for _, d := range []struct {
		name, per string
		limit     float64
	}{{"rpd", "rpm", q.RPD}, {"tpd", "tpm", q.TPD}} {
		rate := d.limit / (q.ActiveHours * 3600)
		if most := limits[d.per] / 60; d.limit > 0 && !(rate <= most) {
			c.add(p+".active_hours", "%s over active_hours comes to %.3g a second, more than the %.3g that %s may state at most: give more active hours", d.name, rate, most, d.per)
		}
	}
}

// price requires one form of a price: per-token prices for input and
// output (pay as you go), or per_hour (provisioned), not both.
func (c *checker) price(p string, pr Price) {
	perToken := pr.InputPerMtok != nil || pr.CachedInputPerMtok != nil || pr.CacheWritePerMtok != nil || pr.OutputPerMtok != nil
	switch {
	case perToken && pr.PerHour != nil:
		c.add(p, "give per-token prices (pay as you go) or per_hour (provisioned capacity), not both")
	case !perToken && pr.PerHour == nil:
		c.add(p, "give input_per_mtok and output_per_mtok (pay as you go) or per_hour (provisioned capacity)")
	case perToken:
		if pr.InputPerMtok == nil {
			c.add(p+".input_per_mtok", "required with per-token prices: every request has input")
		}
		if pr.OutputPerMtok == nil {
			c.add(p+".output_per_mtok", "required with per-token prices: every request has output")
		}
	}
}

// CheckPrice returns the problems of a price given apart from a
// scenario, such as a tier's in the catalogue, located under path: the
// field rules of a scenario's price (the tags of Price) and its form.
func CheckPrice(path string, pr Price) Errors {
	var v validator
	doc, err := generic(pr)
	if err != nil {
		return Errors{{Path: path, Message: err.Error()}}
	}
	v.value(path, doc, reflect.TypeFor[Price](), "")
	var c checker
	c.price(path, pr)
	return append(v.errs, onlyNewPaths(v.errs, c.errs)...)
}

// profile requires a usable latency model: a curve, or both TTFT and TPOT.
func (c *checker) profile(p string, l Latency) {
	if len(l.Curve) > 0 {
		return
	}
	if l.TTFTMs == nil {
		c.add(p+".ttft_ms", "required without a curve")
	}
	if l.TPOTMs == nil {
		c.add(p+".tpot_ms", "required without a curve")
	}
}

func (c *checker) latency(p string, l Latency) {
	if l.Knee == nil && l.KneeLowerBound {
		c.add(p+".knee_lower_bound", "requires knee: it says the knee is a lower bound")
	}
	if l.Knee == nil && l.KneeRefined != nil {
		c.add(p+".knee_refined", "requires knee: a refined knee comes from a probe that measured one")
	}
	if l.KneeLowerBound && l.KneeRefined != nil {
		c.add(p+".knee_refined", "a refined knee lies below a step that failed the knee rule, so the knee is measured: drop knee_lower_bound or knee_refined")
	}
	if l.TTFTMs != nil {
		c.dist(p+".ttft_ms", *l.TTFTMs)
	}
	if l.TPOTMs != nil {
		c.dist(p+".tpot_ms", *l.TPOTMs)
	}
	seen := map[int]bool{}
	for i, pt := range l.Curve {
		pp := fmt.Sprintf("%s.curve[%d]", p, i)
		if seen[pt.Concurrency] {
			c.add(pp+".concurrency", "concurrency %d appears twice", pt.Concurrency)
		}
		seen[pt.Concurrency] = true
		if pt.TTFTP95Ms < pt.TTFTP50Ms {
			c.add(pp+".ttft_p95_ms", "must be >= ttft_p50_ms")
		}
		if pt.TPOTP95Ms < pt.TPOTP50Ms {
			c.add(pp+".tpot_p95_ms", "must be >= tpot_p50_ms")
		}
		if pt.E2EP95Ms > 0 && pt.E2EP95Ms < pt.E2EP50Ms {
			c.add(pp+".e2e_p95_ms", "must be >= e2e_p50_ms")
		}
	}
}

func (c *checker) demand(p string, d Demand) {
	forms := 0
	for _, v := range []float64{d.RPS, d.RPM, d.Requests} {
		if v > 0 {
			forms++
		}
	}
	switch {
	case forms != 1:
		c.add(p, "give exactly one of rps, rpm, or requests with within_hours")
	case d.Requests > 0 && d.WithinHours <= 0:
		c.add(p+".within_hours", "required with requests")
	case d.Requests <= 0 && d.WithinHours > 0:
		c.add(p+".requests", "required with within_hours")
	case d.Requests > 0 && !(d.Rate() <= maxRate()): // NaN and +Inf fail too
		c.add(p+".within_hours", "requests / within_hours comes to more than the %.3g requests per second a demand may have (rpm's maximum): give more hours or fewer requests", maxRate())
	}
	end := 0.0
	for i, w := range d.Profile {
		if i > 0 && w.StartS < end {
			c.add(fmt.Sprintf("%s.profile[%d].start_s", p, i), "windows must be in order of start_s and must not overlap: the window before ends at %g s", end)
		}
		end = max(end, w.StartS+w.DurationS)
	}
}

// dist checks that exactly one form is given and that its values fit it.
func (c *checker) dist(p string, d Dist) {
	forms := 0
	if d.Fixed != nil {
		forms++
	}
	if d.P50 != nil || d.P95 != nil {
		forms++
		switch {
		case d.P50 == nil:
			c.add(p+".p50", "required with p95")
		case d.P95 == nil:
			c.add(p+".p95", "required with p50")
		case *d.P95 < *d.P50:
			c.add(p+".p95", "must be >= p50")
		}
	}
	if d.Mean != nil || d.Stddev != nil {
		forms++
		switch {
		case d.Mean == nil:
			c.add(p+".mean", "required with stddev")
		case d.Stddev == nil:
			c.add(p+".stddev", "required with mean")
		}
	}
	if d.Samples != nil {
		forms++
		for i, v := range d.Samples {
			if !(v >= 0) || math.IsInf(v, 0) || v > 1e9 {
				c.add(fmt.Sprintf("%s.samples[%d]", p, i), "must be a finite number between 0 and 1e9")
				break
			}
		}
	}
	switch forms {
	case 0:
		c.add(p, "give one of fixed, p50 and p95, mean and stddev, or samples")
	case 1:
	default:
		c.add(p, "give only one of fixed, p50 and p95, mean and stddev, or samples")
	}
}

func dedupe(es Errors) Errors {
	seen := map[FieldError]bool{}
	out := es[:0]
	for _, e := range es {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}
