package plan

import (
	"math"
	"strconv"
	"strings"

	"github.com/plannerdev/planner/internal/signed"
)

// num formats a number for people: thousands separated, with fewer decimals
// the larger it is (3 significant digits below 100, one decimal below
// 1,000 unless it is 0), rounded, not cut.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return "not a number"
	case math.IsInf(v, 0):
		return "infinite"
	case a >= 1000:
		return commas(strconv.FormatFloat(math.Round(v), 'f', 0, 64))
	case a >= 100:
		if r := math.Round(v*10) / 10; r != math.Trunc(r) {
			return strconv.FormatFloat(r, 'f', 1, 64)
		}
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64) // 600, not 600.0
	case a == 0:
		return "0"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// numBeside is num(v), with as many more significant digits as it takes
// (up to six) to tell it from other, a different number it is read
// beside: a sustainable rate of 0.2716 beside a demand of 0.272.
func numBeside(v, other float64) string {
	if v == other || num(v) != num(other) || math.Abs(v) >= 1000 {
		return num(v)
	}
	for digits := 4; digits <= 6; digits++ {
		if s := strconv.FormatFloat(v, 'g', digits, 64); s != strconv.FormatFloat(other, 'g', digits, 64) {
			return s
		}
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// commas puts a comma between each group of three digits of an integer.
func commas(digits string) string {
	sign := ""
	if strings.HasPrefix(digits, "-") {
		sign, digits = "-", digits[1:]
	}
	if len(digits) > 21 { // beyond 1e21 FormatFloat writes an exponent
		return sign + digits
	}
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return sign + b.String()
}

// floorNum formats v, a quantity whose floor is c, as num does, with more
// decimals where num's rounding would carry it past c: 31.99 → 31 reads
// "31.99", not "32", and 1,234.6 → 1234 "1,234.6". It stops at six
// decimals, where a value within the planner's tolerance of c+1 still
// reads as c+1.
func floorNum(v float64, c int) string {
	s := num(v)
	if math.Floor(v) != float64(c) || !finite(v) {
		return s
	}
	for d := 1; d <= 6; d++ {
		if shown, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64); err == nil && math.Floor(shown) == float64(c) {
			return s
		}
		t := strconv.FormatFloat(v, 'f', d, 64)
		whole, frac, _ := strings.Cut(t, ".")
		s = commas(whole) + "." + frac
	}
	return s
}

// ms converts seconds to milliseconds, rounded to 0.1 ms.
func ms(seconds float64) float64 { return signed.Round(seconds*1000, 1) }

// msPtr is ms for a value that may be infinite (an unstable queue): nil then.
func msPtr(seconds float64) *float64 {
	if math.IsInf(seconds, 0) || math.IsNaN(seconds) {
		return nil
	}
	v := ms(seconds)
	return &v
}
