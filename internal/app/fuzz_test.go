package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/simulate"
)

// Feature bits of featIn.Feat: each turns on one part of the scenario.
const (
	fTask        = 1 << iota // class a is an agent task
	fFresh                   // its context is fresh (else accumulate)
	fCache                   // latency.cache on the default latency
	fCachedFrac              // cached_input_fraction and cache_write_fraction
	fCachedFree              // quota cached_input_free and cached_input_tpm_free
	fPrice                   // per-token prices
	fPerHour                 // a price per hour (without fPrice)
	fInOut                   // itpm and otpm
	fDaily                   // rpd, tpd and active_hours
	fBurst                   // burst_window_s and headroom
	fMaxTok                  // token_accounting: max_tokens
	fTwo                     // a second class b
	fWeighted                // policy.allocation weighted, with weights
	fPctForm                 // the SLO's ttft_ms/e2e_ms with percentile (else the older p95 form)
	fTPOT                    // slo.tpot_ms
	fSchedule                // class a runs on a schedule
	fBatch                   // a batch demand (class b's, or a's alone)
	fProfile                 // class a's demand profile
	fSCV                     // arrival_scv
	fCurve                   // a measured curve (default latency, or b's with a task)
	fEndpoint                // class b sends to endpoint ep
	fKnee                    // latency.knee
	fKneeRefined             // latency.knee_refined
	fKneeLower               // latency.knee_lower_bound
	fMaxPool                 // policy.max_pool
	fMaxUtil                 // policy.max_utilization
	fSafety                  // policy.knee_safety
	fSimulate                // also simulate the plan
	fNoDemand                // class a has no demand
	fPrefill                 // prefill_ms_per_1k_tokens
	fOwnLatency              // class b has a latency of its own
	fSecondKey               // class b has a key of its own
)

// Bits of featIn.Modes.
const (
	mCurveE2E  = 1 << (4 + iota) // the curve's points carry e2e percentiles
	mCurveRate                   // and rate-limited and error rates
	mMeanForm                    // token distributions by mean and stddev
	mRPM                         // demand in rpm, not rps
)

// featIn is one input of FuzzPlanFeatures, its fields in the order of the
// fuzz function's arguments.
type featIn struct {
	Feat  uint32
	Modes uint8 // bits 0-1: a's mode, 2-3: b's; the rest m*

	TTFT50, TTFT95, TPOT50, TPOT95 float64
	In50, In95, Out50, Out95       float64
	Rate, RateB                    float64
	RPM, TPM, ITPM, OTPM, RPD, TPD float64
	Headroom, Burst, ActiveHours   float64
	SLOTTFT, SLOE2E, SLOTPOT, Pct  float64
	SCV                            float64
	Calls50, Calls95, CallsMax     float64
	Tool50, Tool95                 float64
	Result50, Result95             float64
	HitRate, MinPrefix, Saving     float64
	CachedFrac, WriteFrac, Prefill float64
	PriceIn, PriceOut              float64
	Start, Hours                   float64
	BatchReq, Within               float64
	ProfStart, ProfDur, ProfFactor float64
	MaxUtil, Safety, Weight        float64
	Growth                         float64

	MaxTokens, Knee, KneeRefined, MaxPool, Priority, Curve int
}

// base is a plain valid input that seeds vary.
func featBase(feat uint32) featIn {
	return featIn{Feat: feat, Modes: 0,
		TTFT50: 450, TTFT95: 1100, TPOT50: 18, TPOT95: 30,
		In50: 3000, In95: 6000, Out50: 250, Out95: 700,
		Rate: 0.8, RateB: 2,
		RPM: 3000, TPM: 8e6, ITPM: 6e6, OTPM: 1e6, RPD: 2e6, TPD: 5e9,
		Headroom: 0.9, Burst: 10, ActiveHours: 12,
		SLOTTFT: 3000, SLOE2E: 180000, SLOTPOT: 40, Pct: 99,
		SCV:     4,
		Calls50: 6, Calls95: 14, CallsMax: 40,
		Tool50: 1500, Tool95: 6000,
		Result50: 600, Result95: 2500,
		HitRate: 0.9, MinPrefix: 1024, Saving: 15,
		CachedFrac: 0.6, WriteFrac: 0.1, Prefill: 20,
		PriceIn: 2.5, PriceOut: 10,
		Start: 22, Hours: 6,
		BatchReq: 20000, Within: 5,
		ProfStart: 600, ProfDur: 300, ProfFactor: 3,
		MaxUtil: 0.9, Safety: 0.6, Weight: 3,
		Growth:    0.3,
		MaxTokens: 1500, Knee: 96, KneeRefined: 80, MaxPool: 200, Priority: 2, Curve: 3,
	}
}

// scenario is the document of the input: a map, so that every field the
// input turns on is written as the docs name it.
func (in featIn) scenario() map[string]any {
	has := func(bit uint32) bool { return in.Feat&bit != 0 }
	modes := []string{"interactive", "semi", "batch"}
	dist := func(p50, p95 float64) map[string]any { return map[string]any{"p50": p50, "p95": p95} }
	tokens := func(p50, p95 float64) map[string]any {
		if in.Modes&mMeanForm != 0 {
			return map[string]any{"mean": p50, "stddev": p95 - p50}
		}
		return dist(p50, p95)
	}
	task := has(fTask)
	two := has(fTwo) || has(fSecondKey) || has(fEndpoint) || has(fOwnLatency)

	quota := map[string]any{"name": "k"}
	if in.RPM != 0 {
		quota["rpm"] = in.RPM
	}
	if in.TPM != 0 {
		quota["tpm"] = in.TPM
	}
	if has(fInOut) {
		quota["itpm"], quota["otpm"] = in.ITPM, in.OTPM
	}
	if has(fDaily) {
		quota["rpd"], quota["tpd"], quota["active_hours"] = in.RPD, in.TPD, in.ActiveHours
	}
	if has(fBurst) {
		quota["burst_window_s"], quota["headroom"] = in.Burst, in.Headroom
	}
	if has(fMaxTok) {
		quota["token_accounting"] = "max_tokens"
	}
	if has(fCachedFree) {
		quota["cached_input_free"], quota["cached_input_tpm_free"] = true, in.Feat&fPrice == 0
	}
	switch {
	case has(fPrice):
		quota["price"] = map[string]any{"input_per_mtok": in.PriceIn, "output_per_mtok": in.PriceOut,
			"cached_input_per_mtok": in.PriceIn / 10, "cache_write_per_mtok": in.PriceIn * 1.25, "currency": "EUR"}
	case has(fPerHour):
		quota["price"] = map[string]any{"per_hour": in.PriceIn * in.PriceOut, "currency": "EUR"}
	}
	quotas := []any{quota}
	if has(fSecondKey) {
		k2 := map[string]any{"name": "k2", "rpm": in.RPM / 2, "tpm": in.TPM / 3}
		if has(fPrice) || has(fPerHour) {
			k2["price"] = map[string]any{"per_hour": in.PriceOut, "currency": "EUR"}
		}
		if has(fMaxTok) {
			k2["token_accounting"] = "max_tokens"
		}
		quotas = append(quotas, k2)
	}

	// A curve of 2 to 6 points, concurrency and latency increasing.
	curve := func(scale float64) []any {
		n := 2 + fzAbs(in.Curve)%5
		step := 1 + (fzAbs(in.Curve)/5)%32
		var pts []any
		for i := range n {
			g := scale * (1 + in.Growth*float64(i*i))
			c := 1 + i*step
			pt := map[string]any{"concurrency": c,
				"ttft_p50_ms": in.TTFT50 * g, "ttft_p95_ms": in.TTFT95 * g,
				"tpot_p50_ms": in.TPOT50 * g, "tpot_p95_ms": in.TPOT95 * g}
			e2e50 := in.TTFT50*g + in.TPOT50*g*in.Out50
			pt["throughput_rps"] = float64(c) * 1000 / e2e50
			if in.Modes&mCurveE2E != 0 {
				pt["e2e_p50_ms"], pt["e2e_p95_ms"] = e2e50, in.TTFT95*g+in.TPOT95*g*in.Out95
			}
			if in.Modes&mCurveRate != 0 {
				pt["rate_limited_rate"], pt["error_rate"], pt["requests"] = math.Min(1, 0.02*float64(i)), 0.01, 40
			}
			pts = append(pts, pt)
		}
		return pts
	}
	latency := func(scale float64, withCurve bool) map[string]any {
		l := map[string]any{}
		if withCurve {
			l["curve"] = curve(scale)
		} else {
			l["ttft_ms"] = dist(in.TTFT50*scale, in.TTFT95*scale)
			l["tpot_ms"] = dist(in.TPOT50*scale, in.TPOT95*scale)
		}
		if has(fPrefill) && !withCurve {
			l["prefill_ms_per_1k_tokens"] = in.Prefill
		}
		if has(fKnee) {
			l["knee"] = max(1, int(float64(in.Knee)*scale))
			if has(fKneeRefined) {
				l["knee_refined"] = max(1, int(float64(in.KneeRefined)*scale))
			}
			if has(fKneeLower) {
				l["knee_lower_bound"] = true
			}
		}
		return l
	}
	def := latency(1, has(fCurve) && !task)
	if has(fCache) {
		def["cache"] = map[string]any{"hit_rate": in.HitRate, "min_prefix_tokens": in.MinPrefix, "ttft_saving_ms_per_1k": in.Saving}
	}

	slo := func(taskClass bool) map[string]any {
		m := map[string]any{}
		if has(fPctForm) {
			m["ttft_ms"], m["percentile"] = in.SLOTTFT, in.Pct
			if has(fTPOT) {
				m["tpot_ms"] = in.SLOTPOT
			}
			if !taskClass {
				m["e2e_ms"] = in.SLOE2E
			}
		} else {
			m["ttft_p95_ms"] = in.SLOTTFT
			if !taskClass {
				m["e2e_p95_ms"] = in.SLOE2E
			}
		}
		if taskClass {
			m["task_e2e_ms"] = in.SLOE2E
		}
		return m
	}
	demand := func(rate float64) map[string]any {
		if in.Modes&mRPM != 0 {
			return map[string]any{"rpm": rate * 60}
		}
		return map[string]any{"rps": rate}
	}

	a := map[string]any{"name": "a", "quota": "k", "mode": modes[in.Modes&3%3],
		"input_tokens": tokens(in.In50, in.In95), "output_tokens": tokens(in.Out50, in.Out95),
		"slo": slo(task)}
	if in.MaxTokens != 0 {
		a["max_tokens"] = in.MaxTokens
	}
	if !has(fNoDemand) {
		a["demand"] = demand(in.Rate)
	}
	if task {
		t := map[string]any{"calls": map[string]any{"p50": in.Calls50, "p95": in.Calls95, "max": in.CallsMax},
			"tool_ms": dist(in.Tool50, in.Tool95), "tool_result_tokens": dist(in.Result50, in.Result95), "context": "accumulate"}
		if has(fFresh) {
			t["context"] = "fresh"
		}
		a["task"] = t
	}
	if has(fCachedFrac) {
		a["cached_input_fraction"], a["cache_write_fraction"] = in.CachedFrac, in.WriteFrac
	}
	if has(fSCV) {
		a["arrival_scv"] = in.SCV
	}
	if has(fSchedule) {
		a["schedule"] = map[string]any{"start_hour": in.Start, "hours": in.Hours}
	}
	if has(fWeighted) {
		a["weight"] = in.Weight
	}
	if in.Priority != 0 {
		a["priority"] = in.Priority
	}
	if has(fProfile) {
		if d, ok := a["demand"].(map[string]any); ok {
			d["profile"] = []any{
				map[string]any{"start_s": in.ProfStart, "duration_s": in.ProfDur, "factor": in.ProfFactor},
				map[string]any{"start_s": in.ProfStart + in.ProfDur + 60, "duration_s": 120, "factor": 0},
			}
		}
	}
	classes := []any{a}
	var endpoints []any
	if two {
		b := map[string]any{"name": "b", "quota": "k", "mode": modes[in.Modes>>2&3%3],
			"input_tokens": tokens(in.In50/2, in.In95/2), "output_tokens": tokens(in.Out50*2, in.Out95*2),
			"slo": slo(false), "demand": demand(in.RateB)}
		if in.MaxTokens != 0 {
			b["max_tokens"] = 2 * in.MaxTokens
		}
		if has(fSecondKey) {
			b["quota"] = "k2"
		}
		if has(fWeighted) {
			b["weight"] = 1
		}
		if in.Priority != 0 {
			b["priority"] = -in.Priority
		}
		if has(fCachedFrac) {
			b["cached_input_fraction"] = in.CachedFrac / 2
		}
		if has(fSCV) {
			b["arrival_scv"] = in.SCV / 2
		}
		if has(fBatch) {
			b["demand"] = map[string]any{"requests": in.BatchReq, "within_hours": in.Within}
		}
		curveB := has(fCurve) && task
		switch {
		case has(fEndpoint):
			b["endpoint"] = "ep"
			endpoints = append(endpoints, map[string]any{"name": "ep", "latency": latency(0.5, curveB || has(fCurve))})
		case has(fOwnLatency) || curveB:
			b["latency"] = latency(2, curveB)
		}
		classes = append(classes, b)
	} else if has(fBatch) {
		a["demand"] = map[string]any{"requests": in.BatchReq, "within_hours": in.Within}
	}

	policy := map[string]any{"monte_carlo_draws": 1000}
	if has(fWeighted) {
		policy["allocation"] = "weighted"
	}
	if has(fMaxPool) {
		policy["max_pool"] = in.MaxPool
	}
	if has(fMaxUtil) {
		policy["max_utilization"] = in.MaxUtil
	}
	if has(fSafety) {
		policy["knee_safety"] = map[string]any{"interactive": in.Safety, "semi": math.Min(1, in.Safety*1.2), "batch": 1}
	}
	doc := map[string]any{"quotas": quotas, "latency": def, "classes": classes, "policy": policy}
	if len(endpoints) > 0 {
		doc["endpoints"] = endpoints
	}
	return doc
}

func fzAbs(n int) int {
	if n < 0 {
		if n == math.MinInt {
			return 0
		}
		return -n
	}
	return n
}

// featSeeds reach every feature from the start.
func featSeeds() []featIn {
	var out []featIn
	add := func(feat uint32, edit func(*featIn)) {
		in := featBase(feat)
		if edit != nil {
			edit(&in)
		}
		out = append(out, in)
	}
	add(0, nil)
	add(fTask|fCache|fCachedFrac, nil)                                       // the agent example
	add(fTask|fFresh|fCachedFrac|fCachedFree|fInOut|fPctForm|fSimulate, nil) // fresh context, percentile SLO
	add(fTask|fCache|fPrice|fKnee|fTwo|fCurve|fEndpoint, func(in *featIn) { in.Modes = 2 << 2 })
	add(fCachedFrac|fPrice|fInOut|fDaily|fBurst|fMaxTok|fTwo|fWeighted, nil)
	add(fPerHour|fDaily|fTwo|fSecondKey|fBatch|fSchedule, func(in *featIn) { in.Modes = 2 << 2; in.Within = 5 })
	add(fPctForm|fTPOT|fSCV|fProfile|fSimulate, func(in *featIn) { in.SLOE2E = 20000; in.Pct = 99.9 })
	add(fCurve|fKnee|fKneeRefined|fMaxPool|fMaxUtil|fSafety|fPctForm, func(in *featIn) {
		in.Modes = mCurveE2E | mCurveRate
		in.SLOE2E, in.SLOTTFT, in.Curve, in.Knee, in.KneeRefined = 20000, 2000, 4+5*3, 12, 9
	})
	add(fCurve|fKnee|fKneeLower|fTwo|fEndpoint|fWeighted|fSimulate, func(in *featIn) {
		in.SLOE2E, in.Curve, in.Knee = 20000, 3+5*7, 20
	})
	add(fTwo|fOwnLatency|fPrefill|fBatch|fSchedule|fNoDemand, func(in *featIn) {
		in.Modes, in.SLOE2E, in.Start, in.Hours, in.Within = 1|2<<2|mMeanForm|mRPM, 20000, 8, 10, 8
	})
	add(fBatch|fSchedule|fDaily|fMaxTok|fSimulate, func(in *featIn) {
		in.Modes, in.SLOE2E, in.Start, in.Hours, in.Within = 2, 60000, 23, 3, 2.5
	})
	add(fTask|fCache|fSchedule|fProfile|fSCV|fMaxPool|fKnee|fSimulate, func(in *featIn) {
		in.SCV, in.MaxPool, in.Rate = 30, 40, 0.2
	})
	add(fPctForm|fTPOT|fNoDemand|fTwo|fWeighted|fInOut|fCachedFree|fCachedFrac, func(in *featIn) {
		in.Pct, in.SLOTPOT, in.SLOE2E = 50, 25, 30000
	})
	add(fPctForm|fTPOT|fKnee|fBurst|fSCV, func(in *featIn) { // tight: SLO close to the latency
		in.Pct, in.SLOTTFT, in.SLOE2E, in.SLOTPOT, in.Rate, in.Knee, in.Burst, in.SCV = 99, 1200, 25000, 31, 3, 30, 0.5, 0
	})
	// Edges: shares at 0 and 1, the smallest and largest numbers.
	add(fCachedFrac|fCachedFree|fInOut|fTask|fCache|fPctForm, func(in *featIn) { // every input token cached, itpm only
		in.RPM, in.TPM, in.OTPM, in.CachedFrac, in.WriteFrac, in.HitRate, in.MinPrefix, in.Pct = 0, 0, 1e13, 1, 0, 1, 0, 99.9
	})
	add(fTask|fFresh|fSCV|fPctForm|fProfile|fSimulate, func(in *featIn) { // one call, no tool time, clumped arrivals
		in.Calls50, in.Calls95, in.CallsMax, in.Tool50, in.Tool95, in.Result50, in.Result95 = 1, 1, 1, 1e-9, 1e-9, 1e-9, 1e-9
		in.SCV, in.Pct, in.ProfFactor, in.ProfStart, in.ProfDur = 100, 50, 1000, 0, 1
	})
	add(fTwo|fWeighted|fInOut|fDaily|fBurst, func(in *featIn) { // the largest rates and limits
		in.Rate, in.RateB, in.RPM, in.TPM, in.ITPM, in.OTPM, in.RPD, in.TPD, in.Burst, in.Headroom = 1e7, 1e7, 1e12, 1e13, 1e13, 1e13, 1e13, 1e15, 3600, 1
		in.Weight, in.SLOTTFT, in.SLOE2E = 1e6, 1e8, 1e9
	})
	add(fPrefill|fMaxUtil|fKnee|fMaxPool|fSafety, func(in *featIn) { // the smallest latencies and tokens
		in.TTFT50, in.TTFT95, in.TPOT50, in.TPOT95, in.In50, in.In95, in.Out50, in.Out95 = 1e-9, 1e-9, 1e-9, 1e-9, 1e-9, 1e-9, 1e-9, 1e-9
		in.Rate, in.MaxUtil, in.Knee, in.MaxPool, in.Safety, in.MaxTokens, in.Prefill = 1e-9, 1e-9, 1, 1, 1e-9, 1, 1e6
	})
	add(fBatch|fSchedule|fDaily|fPerHour|fSimulate, func(in *featIn) { // a batch in the smallest window
		in.Start, in.Hours, in.Within, in.BatchReq, in.ActiveHours, in.PriceIn, in.PriceOut = 23.999, 1e-6, 1e-6, 1, 0.01, 1e9, 1
	})
	add(fCurve|fKnee|fKneeRefined|fMaxUtil|fPctForm|fTPOT|fSCV, func(in *featIn) { // a flat curve, utilization close to 1
		in.Modes, in.Growth, in.MaxUtil, in.SCV, in.Pct, in.Curve, in.Knee, in.KneeRefined = mCurveE2E|mCurveRate, 0, 0.999999, 0, 99.9, 4+5*31, 1e5, 1
	})
	return out
}

// FuzzPlanFeatures plans scenarios that combine the newer features (agent
// tasks, the prompt cache, prices, every quota dimension, SLOs at a
// percentile, schedules and batches, measured curves and knees) with
// numbers the fuzzer chooses, as the service plans them: every valid
// scenario plans within its deadline into a plan that encodes as JSON
// (no NaN or Inf), keeps its pools within [0, max_pool], its min_pool
// within what feasible means, its endpoints within their budgets, and
// says a class fits only when its predictions meet its targets; one with
// fSimulate simulates as well.
func FuzzPlanFeatures(f *testing.F) {
	for _, in := range featSeeds() {
		f.Add(in.Feat, in.Modes, in.TTFT50, in.TTFT95, in.TPOT50, in.TPOT95, in.In50, in.In95, in.Out50, in.Out95, in.Rate, in.RateB, in.RPM, in.TPM, in.ITPM, in.OTPM, in.RPD, in.TPD, in.Headroom, in.Burst, in.ActiveHours, in.SLOTTFT, in.SLOE2E, in.SLOTPOT, in.Pct, in.SCV, in.Calls50, in.Calls95, in.CallsMax, in.Tool50, in.Tool95, in.Result50, in.Result95, in.HitRate, in.MinPrefix, in.Saving, in.CachedFrac, in.WriteFrac, in.Prefill, in.PriceIn, in.PriceOut, in.Start, in.Hours, in.BatchReq, in.Within, in.ProfStart, in.ProfDur, in.ProfFactor, in.MaxUtil, in.Safety, in.Weight, in.Growth, in.MaxTokens, in.Knee, in.KneeRefined, in.MaxPool, in.Priority, in.Curve)
	}
	tiers, err := config.DefaultTiers()
	if err != nil {
		f.Fatal(err)
	}
	a := New(plan.New(plan.Options{Tiers: config.Quotas(tiers)}))
	f.Fuzz(func(t *testing.T, feat uint32, modes uint8,
		ttft50, ttft95, tpot50, tpot95, in50, in95, out50, out95, rate, rateB,
		rpm, tpm, itpm, otpm, rpd, tpd, headroom, burst, activeHours,
		sloTTFT, sloE2E, sloTPOT, pct, scv, calls50, calls95, callsMax, tool50, tool95, result50, result95,
		hitRate, minPrefix, saving, cachedFrac, writeFrac, prefill, priceIn, priceOut,
		start, hours, batchReq, within, profStart, profDur, profFactor, maxUtil, safety, weight, growth float64,
		maxTokens, knee, kneeRefined, maxPool, priority, curve int) {
		in := featIn{feat, modes,
			ttft50, ttft95, tpot50, tpot95, in50, in95, out50, out95, rate, rateB,
			rpm, tpm, itpm, otpm, rpd, tpd, headroom, burst, activeHours,
			sloTTFT, sloE2E, sloTPOT, pct, scv, calls50, calls95, callsMax, tool50, tool95, result50, result95,
			hitRate, minPrefix, saving, cachedFrac, writeFrac, prefill, priceIn, priceOut,
			start, hours, batchReq, within, profStart, profDur, profFactor, maxUtil, safety, weight, growth,
			maxTokens, knee, kneeRefined, maxPool, priority, curve}
		doc, err := json.Marshal(in.scenario())
		if err != nil {
			return // NaN or Inf: not a document
		}
		s, err := scenario.Parse(doc)
		if err != nil {
			var errs scenario.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("parse: %v\n%s", err, doc)
			}
			return
		}
		checkFeatures(t, a, s, doc, in.Feat&fSimulate != 0)
	})
}

// fzExpected reports whether err is one a valid scenario may be answered
// with: a cross-field problem, or a deadline passed.
func fzExpected(err error) bool {
	var errs scenario.Errors
	var oe simulate.OptionErrors
	return errors.As(err, &errs) || errors.As(err, &oe) || errors.Is(err, context.DeadlineExceeded)
}

func checkFeatures(t *testing.T, a *App, s scenario.Scenario, doc []byte, sim bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	p, err := a.Plan(ctx, s)
	if err != nil {
		if !fzExpected(err) {
			t.Fatalf("plan of a valid scenario failed: %v\n%s", err, doc)
		}
		return
	}
	if _, err := json.Marshal(p); err != nil {
		t.Fatalf("plan does not encode (NaN or Inf?): %v\n%s", err, doc)
	}
	maxPool := s.Policy.MaxPool
	if maxPool == 0 {
		maxPool = 1000
	}
	for i, c := range p.Classes {
		if c.Pool < 0 || c.Pool > maxPool {
			t.Fatalf("class %s: pool %d outside [0, max_pool %d]\n%s", c.Name, c.Pool, maxPool, doc)
		}
		if c.Feasible && (c.MinPool == nil || *c.MinPool < 1 || *c.MinPool > c.Pool) {
			t.Fatalf("class %s is feasible, but min_pool %s and pool %d (feasible is 1 ≤ min_pool ≤ pool)\n%s", c.Name, fzInt(c.MinPool), c.Pool, doc)
		}
		if c.MinPool != nil && (*c.MinPool < 0 || *c.MinPool > 100000) {
			t.Fatalf("class %s: min_pool %d outside [0, 100000]\n%s", c.Name, *c.MinPool, doc)
		}
		if c.Fits == nil {
			t.Fatalf("class %s: a checked plan without fits\n%s", c.Name, doc)
		}
		if *c.Fits && !c.Feasible {
			t.Fatalf("class %s fits but is not feasible\n%s", c.Name, doc)
		}
		if bad := predictedOdd(s.Classes[i], c); bad != "" {
			t.Fatalf("class %s: %s\n%s", c.Name, bad, doc)
		}
		if *c.Fits {
			if c.Predicted.ShedShare > 0.01 {
				t.Fatalf("class %s fits, but sheds %g of its requests (over 0.01 a class does not fit)\n%s", c.Name, c.Predicted.ShedShare, doc)
			}
			if miss := predictionOver(s.Classes[i].SLO, c.Predicted); miss != "" {
				t.Fatalf("class %s fits, but %s\n%s", c.Name, miss, doc)
			}
		}
	}
	// What a class's pool counts against its endpoint's budget: the pool,
	// or for an agent task the p95 of its calls in flight.
	use, pools := map[string]int{}, map[string]int{}
	tasks := map[string]bool{}
	for _, c := range p.Classes {
		use[c.Name], pools[c.Name] = c.Pool, c.Pool
		if c.Task != nil {
			use[c.Name], tasks[c.Name] = c.Task.CallsInFlightP95, true
		}
	}
	for _, ep := range p.Endpoints {
		total := 0
		for _, al := range ep.Allocations {
			total += use[al.Class]
			if pool, ok := pools[al.Class]; ok && len(p.Windows) == 0 && al.Pool != pool {
				t.Fatalf("class %s: pool %d, but its endpoint %s allocates it %d\n%s", al.Class, pool, ep.Name, al.Pool, doc)
			}
		}
		if ep.Budget != nil && total > *ep.Budget {
			t.Fatalf("endpoint %s: pools count %d in flight, over the budget %d\n%s", ep.Name, total, *ep.Budget, doc)
		}
	}
	for _, w := range p.Windows {
		for _, wc := range w.Classes {
			if wc.Pool < 0 || wc.Pool > maxPool {
				t.Fatalf("window %g: class %s pool %d outside [0, max_pool %d]\n%s", w.StartHour, wc.Name, wc.Pool, maxPool, doc)
			}
			for _, c := range p.Classes {
				if c.Name == wc.Name && c.Pool > wc.Pool {
					t.Fatalf("class %s: pool %d above its window %g's %d (a class's pool is the smallest of its windows')\n%s", c.Name, c.Pool, w.StartHour, wc.Pool, doc)
				}
			}
		}
		for _, ep := range w.Endpoints {
			anyTask := false
			for _, al := range ep.Allocations {
				anyTask = anyTask || tasks[al.Class]
			}
			if ep.Budget != nil && !anyTask && ep.TotalPool > *ep.Budget {
				t.Fatalf("window %g: endpoint %s: pools %d over the budget %d\n%s", w.StartHour, ep.Name, ep.TotalPool, *ep.Budget, doc)
			}
		}
	}
	if !sim {
		return
	}
	r, err := a.Simulate(ctx, s, simulate.Options{DurationS: 300, IntervalS: 15, MaxEvents: 200_000})
	if err != nil {
		if !fzExpected(err) {
			t.Fatalf("simulation of a valid scenario failed: %v\n%s", err, doc)
		}
		return
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatalf("simulation does not encode (NaN or Inf?): %v\n%s", err, doc)
	}
}

// predictedOdd says what is out of its own range in a class's plan: a
// share outside [0, 1], a percentile below a lower one, TTFT over E2E.
func predictedOdd(spec scenario.Class, c plan.ClassPlan) string {
	pr := c.Predicted
	if pr.ShedShare < 0 || pr.ShedShare > 1 {
		return fmt.Sprintf("shed_share %g outside [0, 1]", pr.ShedShare)
	}
	if c.TruncationRisk < 0 || c.TruncationRisk > 1 {
		return fmt.Sprintf("truncation_risk %g outside [0, 1]", c.TruncationRisk)
	}
	for k, v := range pr.Utilization {
		if v < 0 {
			return fmt.Sprintf("utilization %s %g below 0", k, v)
		}
	}
	if c.Task != nil {
		if c.Task.InCallShare < 0 || c.Task.InCallShare > 1 {
			return fmt.Sprintf("task in_call_share %g outside [0, 1]", c.Task.InCallShare)
		}
		if c.Task.CallsInFlightP95 > c.Pool {
			return fmt.Sprintf("task calls_in_flight_p95 %d over its pool of %d tasks", c.Task.CallsInFlightP95, c.Pool)
		}
	}
	const tol = 1e-6
	over := func(a, b *float64) bool { return a != nil && b != nil && *a > *b*(1+tol)+tol }
	if spec.Task == nil {
		if over(pr.TTFTP95Ms, pr.E2EP95Ms) {
			return fmt.Sprintf("predicted TTFT p95 %g ms over its E2E p95 %g ms", *pr.TTFTP95Ms, *pr.E2EP95Ms)
		}
		if over(pr.TTFTMsAtPercentile, pr.E2EMsAtPercentile) {
			return fmt.Sprintf("predicted TTFT %g ms over its E2E %g ms at the percentile", *pr.TTFTMsAtPercentile, *pr.E2EMsAtPercentile)
		}
	}
	if pr.Percentile != nil && c.Pool >= 1 {
		at, p95 := [2]*float64{pr.TTFTMsAtPercentile, pr.E2EMsAtPercentile}, [2]*float64{pr.TTFTP95Ms, pr.E2EP95Ms}
		for k, name := range []string{"TTFT", "E2E"} {
			lo, hi := at[k], p95[k]
			if *pr.Percentile > 95 {
				lo, hi = hi, lo
			}
			if over(lo, hi) {
				return fmt.Sprintf("predicted %s at p%g and at p95 are %s and %s ms: the higher percentile is the lower", name, *pr.Percentile, fzFloat(at[k]), fzFloat(p95[k]))
			}
		}
	}
	return ""
}

// predictionOver says which of the SLO's targets the predictions do not
// meet, at the SLO's percentile; "" when they all do.
func predictionOver(slo *scenario.SLO, pr plan.Predicted) string {
	if slo == nil {
		return ""
	}
	type target struct {
		name  string
		bound float64
		got   *float64
	}
	var ts []target
	if slo.Percentile > 0 {
		if pr.Percentile == nil || math.Abs(*pr.Percentile-slo.Percentile) > 1e-4 { // the plan states it to 4 decimals
			return fmt.Sprintf("its SLO names percentile %g and its predictions are at %s", slo.Percentile, fzFloat(pr.Percentile))
		}
		ts = []target{{"TTFT", slo.TTFT(), pr.TTFTMsAtPercentile}, {"E2E", slo.E2E(), pr.E2EMsAtPercentile},
			{"task E2E", slo.TaskE2E(), pr.E2EMsAtPercentile}, {"TPOT", slo.TPOT(), pr.TPOTMsAtPercentile}}
	} else {
		ts = []target{{"TTFT", slo.TTFT(), pr.TTFTP95Ms}, {"E2E", slo.E2E(), pr.E2EP95Ms}, {"task E2E", slo.TaskE2E(), pr.E2EP95Ms}}
	}
	for _, tg := range ts {
		if tg.bound <= 0 {
			continue
		}
		if tg.got == nil {
			return fmt.Sprintf("its %s target of %g ms has no prediction (an unbounded queue?)", tg.name, tg.bound)
		}
		if *tg.got > tg.bound*(1+1e-9) {
			return fmt.Sprintf("its predicted %s %g ms is over its target of %g ms", tg.name, *tg.got, tg.bound)
		}
	}
	return ""
}

func fzInt(v *int) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}

func fzFloat(v *float64) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}
