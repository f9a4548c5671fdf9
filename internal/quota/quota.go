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
	c := k.Charges(maxTokens, cachedFraction)
	return c.Admission(in)
}

// Completion is what a request that produced out output tokens counts
// against each limit of k when it completes: its output under actual
// accounting, or, negative, the refund of max_tokens − out under
// max_tokens accounting, on the dimensions that count output (tpm, otpm
// and tpd).
func (k Key) Completion(out, maxTokens float64) Vector {
	c := k.Charges(maxTokens, 0)
	return c.Completion(out)
}

// Charges are Admission and Completion for the requests of one class,
// whose max_tokens and cached share of the input are the same for every
// request: what does not depend on the request is worked out once, so
// that a simulation charging every request pays a multiply and an add a
// dimension. On every dimension a request's admission is
// in·perIn + fixed: perIn is 1 where its input counts, 1 − the cached
// share where cache reads are free there, 0 where input does not count;
// fixed is 1 on rpm and rpd, and max_tokens, where the key counts it at
// admission, on the dimensions that count output.
type Charges struct {
	perIn, fixed Vector
	// output marks the dimensions that count output (tpm, otpm, tpd).
	output [scenario.NumDimensions]bool
	// reserved is max_tokens where the key counts it at admission, else 0.
	reserved float64
}

// Charges works out Admission and Completion for requests of max_tokens
// maxTokens (0: none) whose input has the cached share cachedFraction.
func (k Key) Charges(maxTokens, cachedFraction float64) Charges {
	var c Charges
	if k.countsMaxTokens(maxTokens) {
		c.reserved = maxTokens
	}
	uncached := 1 - cachedFraction
	for d := range scenario.NumDimensions {
		switch d.Charge() {
		case scenario.ChargeRequest:
			c.fixed[d] = 1
		case scenario.ChargeTokens:
			c.perIn[d], c.fixed[d], c.output[d] = 1, c.reserved, true
			if k.CachedInputTPMFree {
				c.perIn[d] = uncached
			}
		case scenario.ChargeInput:
			c.perIn[d] = 1
			if k.CachedInputFree {
				c.perIn[d] = uncached
			}
		case scenario.ChargeOutput:
			c.fixed[d], c.output[d] = c.reserved, true
		}
	}
	return c
}

// Admission is what a request of in input tokens counts when it is sent
// (Key.Admission).
func (c *Charges) Admission(in float64) Vector {
	var v Vector
	for d := range v {
		// The conversion rounds the product, so that no build fuses the
		// multiply and the add into one rounding.
		v[d] = float64(in*c.perIn[d]) + c.fixed[d]
	}
	return v
}

// Completion is what a request that produced out output tokens counts
// when it completes (Key.Completion): out, or, negative, the refund of
// the unused max_tokens, on the dimensions that count output.
func (c *Charges) Completion(out float64) Vector {
	n := out
	if c.reserved > 0 {
		n = -(c.reserved - out)
	}
	var v Vector
	for d, counts := range c.output {
		if counts {
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
