// Package signed formats signed differences for people: a relative error
// or a drift, always with its sign, and never "-0.0", which a difference
// that rounds to nothing would otherwise print (fmt's %+.1f keeps the sign
// of −0.04); and rounds figures for answers without a negative zero.
package signed

import (
	"math"
	"strconv"
	"strings"
)

// Fixed is v with digits decimals and its sign, "+" for zero and for a
// negative v that rounds to zero: Fixed(-0.04, 1) is "+0.0", Fixed(-3.25,
// 1) "-3.2" (rounding as strconv does, to even on the printed digits).
func Fixed(v float64, digits int) string {
	s := strconv.FormatFloat(v, 'f', digits, 64)
	if strings.HasPrefix(s, "-") {
		if strings.Trim(s[1:], "0.") == "" {
			return "+" + s[1:]
		}
		return s
	}
	if strings.HasPrefix(s, "+") || s == "NaN" {
		return s
	}
	return "+" + s
}

// Pct is Fixed with one decimal and a percent sign: "+1.2 %".
func Pct(v float64) string { return Fixed(v, 1) + " %" }

// Round is v kept to d decimals (half away from zero, math.Round), and 0
// for a value that rounds to zero from below: JSON writes a negative
// zero as "-0", which no reader takes for the nothing it is.
func Round(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	if r := math.Round(v*p) / p; r != 0 {
		return r
	}
	return 0
}
