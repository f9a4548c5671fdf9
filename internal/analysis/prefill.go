package analysis

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// The prompt's cost, measured by the probe's prefill, cache and
// conversation modes (docs/probe.md, "Prefill and the prompt cache"):
// each is judged from the rows alone, so that a requests.csv read back
// gives the same figures.

// measuredOK are the rows a prompt's cost is judged on: successful,
// measured (warm-up excluded) and not cancelled.
func measuredOK(recs []measure.Record) []measure.Record {
	var out []measure.Record
	for _, r := range recs {
		if r.OK && !r.Warmup && r.ErrorClass != measure.ErrCancelled {
			out = append(out, r)
		}
	}
	return out
}

// prefillGroupFactor is how far apart two inputs of one point of a
// prefill ladder may lie: a factor of 1.25 of the group's shortest.
const prefillGroupFactor = 1.25

// FitPrefill fits TTFT = base + slope · uncached input / 1000 to the
// measured successful rows of a prefill ladder by least squares, the
// uncached input being the input tokens the endpoint counted less those it
// served from its cache, with the slope's 95 % interval from its standard
// error, s / √Sxx with s² = SSE / (n − 2), and Student's t on n − 2
// degrees of freedom (Draper & Smith, Applied Regression Analysis, §1.4).
// It fails with fewer than three rows or without two different inputs.
func FitPrefill(recs []measure.Record) (*measure.PrefillFit, error) {
	var rows []measure.Record
	for _, r := range measuredOK(recs) {
		if r.InputTokens > 0 {
			rows = append(rows, r)
		}
	}
	n := len(rows)
	if n < 3 {
		return nil, fmt.Errorf("%d measured successful requests with input tokens, fewer than the 3 a line needs", n)
	}
	x, y := make([]float64, n), make([]float64, n)
	for i, r := range rows {
		x[i], y[i] = float64(r.UncachedInputTokens())/1000, r.TTFTMs
	}
	_, vx := stat.MeanVariance(x, nil) // Sxx / (n − 1)
	if !(vx > 0) {
		return nil, errors.New("every request had the same uncached input: a slope needs two input lengths or more")
	}
	base, slope := stat.LinearRegression(x, y, nil, false)
	var sse float64
	for i := range x {
		e := y[i] - (base + slope*x[i])
		sse += e * e
	}
	se := math.Sqrt(sse/float64(n-2)) / math.Sqrt(vx*float64(n-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 2)}.Quantile(1 - (1-confidence)/2)
	fit := &measure.PrefillFit{
		MsPer1K: signed.Round(slope, 3), MsPer1KCI: &measure.Interval{Lo: signed.Round(slope-t*se, 3), Hi: signed.Round(slope+t*se, 3)},
		BaseMs: signed.Round(base, 2), R2: signed.Round(rSquared(x, y, base, slope), 4), Requests: n,
	}
	slices.SortFunc(rows, func(a, b measure.Record) int { return cmp.Compare(a.InputTokens, b.InputTokens) })
	for start := 0; start < n; {
		end := start + 1
		for end < n && float64(rows[end].InputTokens) <= prefillGroupFactor*float64(rows[start].InputTokens) {
			end++
		}
		g := rows[start:end]
		var in, cached, ttft, uncached float64
		ts := make([]float64, len(g))
		for i, r := range g {
			in += float64(r.InputTokens)
			cached += float64(r.CachedTokens)
			uncached += float64(r.UncachedInputTokens())
			ttft += r.TTFTMs
			ts[i] = r.TTFTMs
		}
		k := float64(len(g))
		p50, _, _, _, _ := percentiles(ts)
		fit.Points = append(fit.Points, measure.PrefillPoint{
			InputTokens: signed.Round(in/k, 1), CachedTokens: signed.Round(cached/k, 1), Requests: len(g),
			TTFTP50Ms: signed.Round(p50, 2), TTFTMeanMs: signed.Round(ttft/k, 2), FittedMs: signed.Round(base+slope*uncached/k/1000, 2),
		})
		start = end
	}
	return fit, nil
}

// rSquared is 1 − SSE/SST of the line, 1 when y does not vary (a line
// through constant values explains them).
func rSquared(x, y []float64, base, slope float64) float64 {
	if _, v := stat.MeanVariance(y, nil); !(v > 0) {
		return 1
	}
	return stat.RSquared(x, y, nil, base, slope)
}

// MeasureCache compares the measured successful rows of a cache
// comparison: fresh prompts (no prefix) against prompts that repeat the
// run's shared prefix (PrefixTokens > 0). The saving is the difference of
// the kinds' mean TTFTs, with Welch's 95 % interval (Welch, Biometrika
// 1947), and per 1,000 cached tokens, the difference of the kinds' mean
// cached tokens: the interval scaled alike. It fails with fewer than two
// rows of either kind.
func MeasureCache(recs []measure.Record) (*measure.CacheEffect, error) {
	var fresh, repeated []measure.Record
	for _, r := range measuredOK(recs) {
		if r.PrefixTokens > 0 {
			repeated = append(repeated, r)
		} else {
			fresh = append(fresh, r)
		}
	}
	if len(fresh) < 2 || len(repeated) < 2 {
		return nil, fmt.Errorf("%d fresh and %d repeated measured successful requests: a comparison needs 2 of each", len(fresh), len(repeated))
	}
	ttft := func(rs []measure.Record) []float64 {
		out := make([]float64, len(rs))
		for i, r := range rs {
			out[i] = r.TTFTMs
		}
		return out
	}
	mean := func(rs []measure.Record, f func(measure.Record) int) float64 {
		var s float64
		for _, r := range rs {
			s += float64(f(r))
		}
		return s / float64(len(rs))
	}
	cached := func(r measure.Record) int { return r.CachedTokens }
	mf, vf := stat.MeanVariance(ttft(fresh), nil)
	mr, vr := stat.MeanVariance(ttft(repeated), nil)
	saving, half := mf-mr, welchHalfWidth(vf, len(fresh), vr, len(repeated))
	var hits, prefix float64
	for _, r := range repeated {
		hits += float64(r.CachedTokens)
		prefix += float64(r.PrefixTokens)
	}
	ce := &measure.CacheEffect{
		Fresh: len(fresh), Repeated: len(repeated),
		InputTokens:  signed.Round(mean(repeated, func(r measure.Record) int { return r.InputTokens }), 1),
		PrefixTokens: signed.Round(prefix/float64(len(repeated)), 1),
		CachedFresh:  signed.Round(mean(fresh, cached), 1), CachedRepeated: signed.Round(mean(repeated, cached), 1),
		HitRate:     signed.Round(math.Min(1, hits/prefix), 4),
		TTFTFreshMs: signed.Round(mf, 2), TTFTRepeatedMs: signed.Round(mr, 2),
		SavingMs: signed.Round(saving, 2), SavingMsCI: &measure.Interval{Lo: signed.Round(saving-half, 2), Hi: signed.Round(saving+half, 2)},
	}
	if extra := (mean(repeated, cached) - mean(fresh, cached)) / 1000; extra > 0 {
		per := signed.Round(saving/extra, 3)
		ce.SavingMsPer1K = &per
		ce.SavingMsPer1KCI = &measure.Interval{Lo: signed.Round((saving-half)/extra, 3), Hi: signed.Round((saving+half)/extra, 3)}
	}
	return ce, nil
}

// welchHalfWidth is the half-width of Welch's 95 % interval of the
// difference of two means, from the samples' variances and sizes: t·se
// with se² = v₁/n₁ + v₂/n₂ and the Welch–Satterthwaite degrees of
// freedom; 0 when neither sample varies.
func welchHalfWidth(v1 float64, n1 int, v2 float64, n2 int) float64 {
	a, b := v1/float64(n1), v2/float64(n2)
	if !(a+b > 0) {
		return 0
	}
	df := (a + b) * (a + b) / (a*a/float64(n1-1) + b*b/float64(n2-1))
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1-(1-confidence)/2) * math.Sqrt(a+b)
}

// MeasureConversation summarises the rows of a conversation run: per call
// position, the requests of the measured tasks (warm-up excluded), and
// per task that succeeded at every call, its time from its first send to
// its last call's end, tool time included. The calls a task has are the
// most that any row names; a task whose last row failed is a failed task,
// and one cut short by a cancel neither. It fails without a measured
// task.
func MeasureConversation(recs []measure.Record) (*measure.ConversationStats, error) {
	tasks := map[int][]measure.Record{}
	calls := 0
	for _, r := range recs {
		if r.Task > 0 && r.Call > 0 && !r.Warmup {
			tasks[r.Task] = append(tasks[r.Task], r)
			calls = max(calls, r.Call)
		}
	}
	if len(tasks) == 0 {
		return nil, errors.New("no measured task: the rows name no conversation call after the warm-up")
	}
	cs := &measure.ConversationStats{}
	byCall := make([][]measure.Record, calls)
	var times []float64
	var llm, total, hits, prefix float64
	for _, id := range slices.Sorted(maps.Keys(tasks)) {
		rs := tasks[id]
		slices.SortFunc(rs, func(a, b measure.Record) int { return cmp.Compare(a.Call, b.Call) })
		complete := len(rs) == calls
		for i, r := range rs {
			if r.ErrorClass != measure.ErrCancelled {
				byCall[r.Call-1] = append(byCall[r.Call-1], r)
			}
			complete = complete && r.OK && r.Call == i+1
			if r.OK && r.PrefixTokens > 0 {
				hits += float64(r.CachedTokens)
				prefix += float64(r.PrefixTokens)
			}
		}
		last := rs[len(rs)-1]
		switch {
		case complete:
			cs.Tasks++
			t := (last.EndS() - rs[0].StartS) * 1000
			times = append(times, t)
			total += t
			for _, r := range rs {
				llm += r.SlotMs()
			}
		case !last.OK && last.ErrorClass != measure.ErrCancelled:
			cs.FailedTasks++
		}
	}
	for i, rs := range byCall {
		st := measure.CallStat{Call: i + 1, Requests: len(rs)}
		var ttft, e2e []float64
		var in, cached, out float64
		for _, r := range rs {
			if !r.OK {
				continue
			}
			st.OK++
			ttft, e2e = append(ttft, r.TTFTMs), append(e2e, r.E2EMs)
			in, cached, out = in+float64(r.InputTokens), cached+float64(r.CachedTokens), out+float64(r.OutputTokens)
		}
		if st.OK > 0 {
			k := float64(st.OK)
			st.InputTokens, st.CachedTokens, st.OutputTokens = signed.Round(in/k, 1), signed.Round(cached/k, 1), signed.Round(out/k, 1)
			st.TTFTP50Ms, _, st.TTFTP95Ms, _, _ = percentiles(ttft)
			st.E2EP50Ms, _, st.E2EP95Ms, _, _ = percentiles(e2e)
		}
		cs.Calls = append(cs.Calls, st)
	}
	if len(times) > 0 {
		cs.TaskP50Ms, _, cs.TaskP95Ms, _, cs.TaskP95CI = percentiles(times)
		cs.TaskMeanMs = signed.Round(total/float64(len(times)), 2)
		cs.LLMShare = signed.Round(math.Min(1, llm/total), 4)
	}
	if prefix > 0 {
		h := signed.Round(math.Min(1, hits/prefix), 4)
		cs.HitRate = &h
	}
	return cs, nil
}

// PromptLatency is the latency keys a prompt's cost gives a scenario
// (docs/probe.md, "Feeding a plan"): prefill_ms_per_1k_tokens from a
// prefill ladder, and cache (hit_rate and ttft_saving_ms_per_1k) from a
// cache comparison, or the hit rate alone from a conversation; a cache
// that served nothing (a hit rate and a saving of 0) gives no cache key.
// ok is false when r has none of them.
func PromptLatency(r measure.Result) (l scenario.Latency, ok bool) {
	if p := r.Prefill; p != nil && p.MsPer1K > 0 {
		l.PrefillMsPer1K = p.MsPer1K
	}
	var c scenario.CacheProfile
	switch {
	case r.Cache != nil:
		if h := r.Cache.HitRate; h > 0 {
			c.HitRate = &h
		}
		if s := r.Cache.SavingMsPer1K; s != nil && *s > 0 {
			c.TTFTSavingMsPer1K = *s
		}
	case r.Conversation != nil && r.Conversation.HitRate != nil && *r.Conversation.HitRate > 0:
		h := *r.Conversation.HitRate
		c.HitRate = &h
	}
	if c != (scenario.CacheProfile{}) {
		l.Cache = &c
	}
	return l, l.PrefillMsPer1K > 0 || l.Cache != nil
}
