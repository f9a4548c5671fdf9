// Package quota turns an API key's rate limits into usable capacity per
// second, measures what one request uses of each limit, and divides a
// shared key among the task classes that use it (docs/concepts.md,
// "Ceilings on the pool" and "Sharing: keys and endpoints").
package quota

import (
	"math"

	"github.com/plannerdev/planner/internal/scenario"
)

// Vector holds one value per dimension (scenario.Dimension).
type Vector [scenario.NumDimensions]float64

// Key is one quota with its defaults applied.
type Key struct {
	scenario.Quota
}

// Seconds is the period a limit on d is spread over: 60 for per-minute
// limits, active_hours·3600 for daily ones.
func (k Key) Seconds(d scenario.Dimension) float64 {
	if d.Daily() {
		return k.ActiveHours * 3600
	}
	return 60
}

// Capacity is the usable rate on d in units per second: h·L/60 for a
// per-minute limit and h·L/(active_hours·3600) for a daily one, with h the
// headroom. It is +Inf when the key has no limit on d.
func (k Key) Capacity(d scenario.Dimension) float64 {
	l := k.Limit(d)
	if l <= 0 {
		return math.Inf(1)
	}
	return k.Headroom * l / k.Seconds(d)
}

// LimitFor is the inverse of Capacity: the limit (per minute or per day,
// before headroom) that gives a usable rate of capacity units per second.
func (k Key) LimitFor(d scenario.Dimension, capacity float64) float64 {
	return capacity * k.Seconds(d) / k.Headroom
}

// Request describes the mean size of one request of a class.
type Request struct {
	MeanIn         float64 // E[input tokens]
	MeanOut        float64 // E[output tokens], after the max_tokens clip
	MaxTokens      float64 // the max_tokens cap, 0 when none
	CachedFraction float64 // fraction of input tokens read from the prompt cache
}

// Use is what one request counts against each limit of k, by the
// dimension's charge (docs/concepts.md, "Ceilings on the pool"): 1 per
// request (rpm, rpd); E[in] + E[out] tokens (tpm, tpd), with max_tokens in
// place of E[out] when the key counts max_tokens at admission; E[in] input
// tokens (itpm), less cached input when the key does not count it; E[out]
// (or max_tokens) output tokens (otpm). Cached input is left out of tpm
// and tpd too where the key does not count it there.
func (k Key) Use(r Request) Vector {
	out := r.MeanOut
	if k.countsMaxTokens(r.MaxTokens) {
		out = r.MaxTokens
	}
	in := r.MeanIn
	if k.CachedInputFree {
		in *= 1 - r.CachedFraction
	}
	tokensIn := k.tokensIn(r.MeanIn, r.CachedFraction)
	var v Vector
	for d := range scenario.NumDimensions {
		switch d.Charge() {
		case scenario.ChargeRequest:
			v[d] = 1
		case scenario.ChargeTokens:
			v[d] = tokensIn + out
		case scenario.ChargeInput:
			v[d] = in
		case scenario.ChargeOutput:
			v[d] = out
		}
	}
	return v
}

// Admission is what one request of in input tokens counts against each
// limit of k when it is sent (docs/simulate.md, "Token accounting"): 1 on
// rpm and rpd; its input (less the cached share where the key does not
// count cache reads there), and max_tokens when the key counts max_tokens
// at admission, on tpm and tpd; its input less the cached share when the key
// does not count cache reads, on itpm; max_tokens or nothing on otpm. The
// output of a key with actual accounting is counted at completion
// (Completion).
func (k Key) Admission(in, maxTokens, cachedFraction float64) Vector {
	out := 0.0
	if k.countsMaxTokens(maxTokens) {
		out = maxTokens
	}
	counted := in
	if k.CachedInputFree {
		counted *= 1 - cachedFraction
	}
	tokensIn := k.tokensIn(in, cachedFraction)
	var v Vector
	for d := range scenario.NumDimensions {
		switch d.Charge() {
		case scenario.ChargeRequest:
			v[d] = 1
		case scenario.ChargeTokens:
			v[d] = tokensIn + out
		case scenario.ChargeInput:
			v[d] = counted
		case scenario.ChargeOutput:
			v[d] = out
		}
	}
	return v
}

// Completion is what a request that produced out output tokens counts
// against each limit of k when it completes: its output under actual
// accounting, or, negative, the refund of max_tokens − out under
// max_tokens accounting, on the dimensions that count output (tpm, otpm
// and tpd).
func (k Key) Completion(out, maxTokens float64) Vector {
	n := out
	if k.countsMaxTokens(maxTokens) {
		n = -(maxTokens - out)
	}
	var v Vector
	for d := range scenario.NumDimensions {
		if c := d.Charge(); c == scenario.ChargeTokens || c == scenario.ChargeOutput {
			v[d] = n
		}
	}
	return v
}

// tokensIn is the input that tpm and tpd count of in tokens with the
// cached share cachedFraction: all of it, or the uncached part where the
// key does not count cache reads there (cached_input_tpm_free).
func (k Key) tokensIn(in, cachedFraction float64) float64 {
	if k.CachedInputTPMFree {
		return in * (1 - cachedFraction)
	}
	return in
}

// countsMaxTokens reports whether k counts a request's max_tokens at
// admission.
func (k Key) countsMaxTokens(maxTokens float64) bool {
	return k.TokenAccounting == scenario.AccountingMaxTokens && maxTokens > 0
}
