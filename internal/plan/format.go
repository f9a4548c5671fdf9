package plan

import (
	"math"
	"strconv"

	"github.com/dustin/go-humanize"
)

// num formats a number for people: thousands separated, with fewer decimals
// the larger it is (3 significant digits below 100).
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1000:
		return humanize.CommafWithDigits(math.Round(v), 0)
	case a >= 100:
		return humanize.CommafWithDigits(math.Round(v*10)/10, 1)
	case a == 0:
		return "0"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// roundTo keeps d decimals, so that plans read cleanly and stay stable.
func roundTo(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

// ms converts seconds to milliseconds, rounded to 0.1 ms.
func ms(seconds float64) float64 { return roundTo(seconds*1000, 1) }

// msPtr is ms for a value that may be infinite (an unstable queue): nil then.
func msPtr(seconds float64) *float64 {
	if math.IsInf(seconds, 0) || math.IsNaN(seconds) {
		return nil
	}
	v := ms(seconds)
	return &v
}
