package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// The sentences here are plain text: the Markdown writer escapes them for
// Markdown and the HTML template for HTML.

// scenarioWords is a scenario told in sentences.
type scenarioWords struct {
	Keys      []string // one per quota
	Latency   string   // the default latency profile
	Endpoints []string // one per endpoint besides the default one
	Classes   []string // one per class
	Policy    string
}

// describeScenario tells a scenario in words, with the defaults applied so
// that every figure the plan used is stated.
func describeScenario(sc scenario.Scenario) scenarioWords {
	s := sc.WithDefaults()
	var w scenarioWords
	for _, q := range s.Quotas {
		w.Keys = append(w.Keys, describeQuota(q))
	}
	w.Latency = describeLatency(s.Latency)
	for _, e := range s.Endpoints {
		w.Endpoints = append(w.Endpoints, fmt.Sprintf("Endpoint %s: %s.", e.Name, describeLatency(e.Latency)))
	}
	for i, c := range s.Classes {
		w.Classes = append(w.Classes, describeClass(c, sc.Classes[i].Latency != nil && !sc.Classes[i].Latency.IsZero()))
	}
	ks := s.Policy.KneeSafety
	w.Policy = fmt.Sprintf("Keys are shared by %s allocation; classes may use %s of the knee (interactive), %s (semi) and %s (batch); "+
		"min_pool keeps each pool slot at most %s %% busy (max_utilization); "+
		"percentiles come from %s Monte Carlo draws with seed %d; pools are searched up to %s.",
		s.Policy.Allocation, fmtNum(ks.Interactive), fmtNum(ks.Semi), fmtNum(ks.Batch), fmtNum(100*s.Policy.MaxUtilization),
		fmtNum(float64(s.Policy.MonteCarloDraws)), *s.Policy.Seed, fmtNum(float64(s.Policy.MaxPool)))
	return w
}

func describeQuota(q scenario.Quota) string {
	var lims []string
	daily := false
	for d := range scenario.NumDimensions {
		if v := q.Limit(d); v > 0 {
			lims = append(lims, fmtNum(v)+" "+d.Rate())
			daily = daily || d.Daily()
		}
	}
	parts := []string{fmt.Sprintf("Key %s: %s", q.Name, orNone(strings.Join(lims, ", "), "no limits"))}
	parts = append(parts, fmt.Sprintf("the plan uses %s %% of each limit", fmtNum(q.Headroom*100)))
	if q.TokenAccounting == scenario.AccountingMaxTokens {
		parts = append(parts, "output counts as max_tokens at admission")
	} else {
		parts = append(parts, "output counts as the tokens produced")
	}
	parts = append(parts, fmt.Sprintf("per-minute limits are enforced over %s s", fmtNum(q.BurstWindowS)))
	if daily {
		parts = append(parts, fmt.Sprintf("daily limits are spread over %s active hours", fmtNum(q.ActiveHours)))
	}
	switch {
	case q.CachedInputFree && q.CachedInputTPMFree:
		parts = append(parts, "cached input tokens do not count against itpm, tpm and tpd")
	case q.CachedInputFree:
		parts = append(parts, "cached input tokens do not count against itpm")
	case q.CachedInputTPMFree:
		parts = append(parts, "cached input tokens do not count against tpm and tpd")
	}
	if q.Price != nil {
		parts = append(parts, "price "+priceWords(q.Price))
	}
	return strings.Join(parts, "; ") + "."
}

// msNum writes a measured time in milliseconds to 0.1 ms, as the plan's
// figures beside it are (a probe's curve keeps two decimals).
func msNum(v float64) string { return fmtNum(signed.Round(v, 1)) }

func describeLatency(l scenario.Latency) string {
	var parts []string
	if n := len(l.Curve); n > 0 {
		first, last := l.Curve[0], l.Curve[n-1]
		if n == 1 {
			parts = append(parts, fmt.Sprintf("a measured curve of one point, at %d in flight (TTFT p95 %s ms, TPOT p95 %s ms per token)",
				first.Concurrency, msNum(first.TTFTP95Ms), msNum(first.TPOTP95Ms)))
		} else {
			parts = append(parts, fmt.Sprintf("a measured curve of %d points from %d to %d in flight (TTFT p95 %s to %s ms, TPOT p95 %s to %s ms per token)",
				n, first.Concurrency, last.Concurrency, msNum(first.TTFTP95Ms), msNum(last.TTFTP95Ms), msNum(first.TPOTP95Ms), msNum(last.TPOTP95Ms)))
		}
	} else {
		if l.TTFTMs != nil {
			parts = append(parts, "TTFT "+describeDist(*l.TTFTMs, "ms"))
		}
		if l.TPOTMs != nil {
			parts = append(parts, "TPOT "+describeDist(*l.TPOTMs, "ms per token"))
		}
		if l.PrefillMsPer1K > 0 {
			parts = append(parts, fmt.Sprintf("prefill adds %s ms per 1,000 input tokens", fmtNum(l.PrefillMsPer1K)))
		}
	}
	if c := l.Cache; c != nil {
		parts = append(parts, describeCache(*c))
	}
	switch {
	case l.Knee != nil && l.KneeLowerBound:
		parts = append(parts, fmt.Sprintf("knee ≥ %d in flight, a lower bound: the probe never reached it", *l.Knee))
	case l.Knee != nil && l.KneeRefined != nil:
		parts = append(parts, fmt.Sprintf("measured knee at %d in flight, refined to %d (knee_refined, which the plan budgets with)", *l.Knee, *l.KneeRefined))
	case l.Knee != nil:
		parts = append(parts, fmt.Sprintf("measured knee at %d in flight", *l.Knee))
	}
	if len(parts) == 0 {
		return "none given"
	}
	return strings.Join(parts, "; ")
}

// describeCache tells what the endpoint's prompt cache does: the share of
// a repeated prefix it serves (1 when not given), the shortest prefix it
// caches and the TTFT it saves.
func describeCache(c scenario.CacheProfile) string {
	s := "a prompt cache that serves " + fmtNum(c.Rate()*100) + " % of a repeated prefix"
	if c.HitRate == nil {
		s += " (no hit_rate given)"
	}
	if c.MinPrefixTokens > 0 {
		s += fmt.Sprintf(" of at least %s tokens", fmtNum(c.MinPrefixTokens))
	}
	if c.TTFTSavingMsPer1K > 0 {
		s += fmt.Sprintf(", saving %s ms of TTFT per 1,000 cached tokens", fmtNum(c.TTFTSavingMsPer1K))
	}
	return s
}

// describeDist tells a distribution: fixed, p50/p95, mean/sd or samples,
// and its clip.
func describeDist(d scenario.Dist, unit string) string {
	var s string
	switch {
	case d.Fixed != nil:
		s = "fixed at " + fmtNum(*d.Fixed)
	case d.P50 != nil && d.P95 != nil:
		s = fmt.Sprintf("p50 %s, p95 %s", fmtNum(*d.P50), fmtNum(*d.P95))
	case d.Mean != nil:
		s = "mean " + fmtNum(*d.Mean)
		if d.Stddev != nil {
			s += ", sd " + fmtNum(*d.Stddev)
		}
	case len(d.Samples) > 0:
		xs := slices.Clone(d.Samples)
		slices.Sort(xs)
		s = fmt.Sprintf("%d samples with median %s", len(xs), fmtNum(model.QuantileSorted(xs, 0.5)))
	default:
		return "not given"
	}
	s += " " + unit
	if d.Max != nil {
		s += ", clipped at " + fmtNum(*d.Max)
	}
	return s
}

// describeDemand tells a class's demand in its unit: requests, or tasks
// for an agent task class, whose demand counts tasks.
func describeDemand(d *scenario.Demand, task bool) string {
	unit, units := "req", "requests"
	if task {
		unit, units = "tasks", "tasks"
	}
	switch {
	case d == nil || d.Rate() == 0:
		return "no stated demand (runs as fast as its share allows)"
	case d.RPS > 0:
		return "demand " + fmtNum(d.RPS) + " " + unit + "/s" + describeProfile(d.Profile)
	case d.RPM > 0:
		return fmt.Sprintf("demand %s %s/min (%s %s/s)%s", fmtNum(d.RPM), unit, fmtNum(d.Rate()), unit, describeProfile(d.Profile))
	}
	return fmt.Sprintf("a batch of %s %s within %s h (%s %s/s)%s", fmtNum(d.Requests), units, fmtNum(d.WithinHours), fmtNum(d.Rate()), unit, describeProfile(d.Profile))
}

// describeProfile says how a demand profile varies the rate in
// simulations; empty without one.
func describeProfile(ws []scenario.DemandWindow) string {
	if len(ws) == 0 {
		return ""
	}
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = fmt.Sprintf("× %s for %s s from %s s", fmtNum(w.Factor), fmtNum(w.DurationS), fmtNum(w.StartS))
	}
	return ", in simulations " + strings.Join(parts, ", ")
}

func describeClass(c scenario.Class, ownLatency bool) string {
	parts := []string{fmt.Sprintf("%s (%s, key %s): %s", c.Name, c.Mode, c.Quota, describeDemand(c.Demand, c.Task != nil))}
	if c.Task != nil {
		parts = append(parts, describeTask(*c.Task))
	}
	parts = append(parts, "input "+describeDist(c.InputTokens, "tokens"), "output "+describeDist(c.OutputTokens, "tokens"))
	if c.MaxTokens > 0 {
		parts[len(parts)-1] += fmt.Sprintf(", capped by max_tokens %s", fmtNum(float64(c.MaxTokens)))
	}
	parts = append(parts, "SLO "+describeSLO(c.SLO))
	switch {
	case ownLatency:
		parts = append(parts, "its own latency profile: "+describeLatency(*c.Latency))
	case c.Endpoint != "" && c.Endpoint != scenario.DefaultEndpoint:
		parts = append(parts, "latency of endpoint "+c.Endpoint)
	default:
		parts = append(parts, "latency from the default profile")
	}
	if c.Weight != scenario.DefaultWeight {
		parts = append(parts, "weight "+fmtNum(c.Weight))
	}
	if c.Priority != 0 {
		parts = append(parts, "priority "+strconv.Itoa(c.Priority))
	}
	if c.Schedule != nil && c.Schedule.Hours < 24 {
		parts = append(parts, fmt.Sprintf("runs %s–%s UTC each day (%s h)", clock(c.Schedule.StartHour), clock(c.Schedule.StartHour+c.Schedule.Hours), fmtNum(c.Schedule.Hours)))
	}
	if c.CachedInputFraction > 0 {
		parts = append(parts, fmtNum(c.CachedInputFraction*100)+" % of input served from the prompt cache")
	}
	if c.CacheWriteFraction > 0 {
		parts = append(parts, fmtNum(c.CacheWriteFraction*100)+" % of input written into the prompt cache")
	}
	if c.ArrivalSCV != nil && *c.ArrivalSCV != scenario.DefaultArrivalSCV {
		parts = append(parts, "arrival variability (SCV) "+fmtNum(*c.ArrivalSCV))
	}
	return strings.Join(parts, "; ") + "."
}

// describeTask tells what an agent task does: its calls, the tool run
// after each and what it returns, and the context its calls carry.
func describeTask(t scenario.Task) string {
	parts := []string{"each task makes " + describeDist(t.Calls, "calls")}
	if t.ToolMs != nil {
		parts = append(parts, "a tool run after each call "+describeDist(*t.ToolMs, "ms"))
	}
	if t.ToolResultTokens != nil {
		parts = append(parts, "tool results "+describeDist(*t.ToolResultTokens, "tokens"))
	}
	if t.Accumulates() {
		parts = append(parts, "each call's input carries the task's earlier outputs and tool results (context accumulate)")
	} else {
		parts = append(parts, "each call's input is drawn afresh (context fresh)")
	}
	return strings.Join(parts, ", ")
}

// describeSLO tells every target of an SLO at its percentile: TTFT, E2E
// and TPOT on each request (an agent task's calls), and task E2E on a
// whole task; "none" without one.
func describeSLO(s *scenario.SLO) string {
	if s == nil {
		return "none"
	}
	at := "p" + fmtNum(s.At())
	var out []string
	for _, t := range []struct {
		name string
		v    float64
	}{{"TTFT", s.TTFT()}, {"E2E", s.E2E()}, {"TPOT", s.TPOT()}, {"task E2E", s.TaskE2E()}} {
		if t.v > 0 {
			out = append(out, t.name+" "+at+" "+fmtNum(t.v)+" ms")
		}
	}
	return orNone(strings.Join(out, ", "), "none")
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

// describeProbe tells what a probe measured, in sentences.
func describeProbe(p ProbeData) []string {
	r := p.Result
	var out []string
	head := fmt.Sprintf("Measured on %s, model %s", orNone(p.Endpoint, "an unnamed endpoint"), orNone(p.Model, "unnamed"))
	if !p.Date.IsZero() {
		head += ", on " + p.Date.UTC().Format("2006-01-02 15:04 UTC")
	}
	if p.DeadlineMs > 0 {
		head += fmt.Sprintf(", with a per-request deadline of %s ms", fmtNum(p.DeadlineMs))
	}
	out = append(out, head+".")
	if p.Source != "" {
		out = append(out, p.Source)
	}
	if k, ok := r.KneeStep(); ok && r.KneeLowerBound {
		out = append(out, fmt.Sprintf("Knee: ≥ %d requests in flight, a lower bound: no step failed the knee rule, so the probe never reached the knee; probe to higher concurrency to find it. At %d, E2E p95 was %s ms, TTFT p95 %s ms and goodput %s req/s.",
			k.Concurrency, k.Concurrency, fmtNum(k.E2EP95Ms), fmtNum(k.TTFTP95Ms), fmtNum(k.GoodputRPS)))
	} else if ok {
		out = append(out, fmt.Sprintf("Knee: %d requests in flight, where E2E p95 was %s ms, TTFT p95 %s ms and goodput %s req/s.",
			k.Concurrency, fmtNum(k.E2EP95Ms), fmtNum(k.TTFTP95Ms), fmtNum(k.GoodputRPS)))
	} else if r.Knee != nil && r.KneeLowerBound {
		out = append(out, fmt.Sprintf("Knee: ≥ %d requests in flight, a lower bound.", *r.Knee))
	} else if r.Knee != nil {
		out = append(out, fmt.Sprintf("Knee: %d requests in flight.", *r.Knee))
	} else {
		out = append(out, "No knee: the first step already failed the knee rule (goodput growth, E2E p95 under the deadline's share).")
	}
	if r.Collapse != nil {
		out = append(out, fmt.Sprintf("Goodput fell first at %d in flight (the collapse point).", *r.Collapse))
	}
	if r.QuotaLimited {
		out = append(out, "429s appeared at or below the knee: the quota, not the model, is the bottleneck.")
	}
	if u := r.USL; u != nil && finite(u.Alpha, u.Beta, u.Gamma, u.R2) {
		s := fmt.Sprintf("Universal Scalability Law fit to the throughput: α %s, β %s, γ %s req/s, R² %s",
			fmtSig(u.Alpha), fmtSig(u.Beta), fmtSig(u.Gamma), fmtSig(u.R2))
		switch {
		case u.Peak != nil && finite(*u.Peak) && u.PeakBeyondRange:
			s += fmt.Sprintf("; the fit peaks at %s in flight, beyond the measured range (up to %d in flight): an extrapolation, not a peak the probe saw", fmtNum(*u.Peak), measuredTop(r))
		case u.Peak != nil && finite(*u.Peak):
			s += fmt.Sprintf("; the model peaks at %s in flight", fmtNum(*u.Peak))
		}
		out = append(out, s+".")
	}
	return out
}

// measuredTop is the highest concurrency a ramp measured.
func measuredTop(r measure.Result) int {
	top := 0
	for _, s := range r.Steps {
		top = max(top, s.Concurrency)
	}
	return top
}

func finite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// fmtSig formats a fit parameter with three significant digits, since
// α and β are often far below 0.01.
func fmtSig(v float64) string {
	return strconv.FormatFloat(v, 'g', 3, 64)
}
