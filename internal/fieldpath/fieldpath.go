// Package fieldpath orders the paths that locate problems in a document
// ("classes[1].output_tokens.p95", "tiers[10].rpm") the way a reader
// expects, so that every list of problems reads in document order.
package fieldpath

import (
	"strconv"
	"strings"
)

// Compare orders two paths field by field, comparing list indexes as
// numbers (classes[2] before classes[10]) and names as text; a path sorts
// before the paths below it. It returns a negative number, zero or a
// positive number, as cmp.Compare does.
func Compare(a, b string) int {
	split := func(p string) []string {
		return strings.FieldsFunc(p, func(r rune) bool { return r == '.' || r == '[' || r == ']' })
	}
	pa, pb := split(a), split(b)
	for i := range min(len(pa), len(pb)) {
		na, errA := strconv.Atoi(pa[i])
		nb, errB := strconv.Atoi(pb[i])
		switch {
		case errA == nil && errB == nil && na != nb:
			return na - nb
		case (errA != nil || errB != nil) && pa[i] != pb[i]:
			return strings.Compare(pa[i], pb[i])
		}
	}
	return len(pa) - len(pb)
}
