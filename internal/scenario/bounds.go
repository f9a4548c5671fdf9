package scenario

import (
	"maps"
	"reflect"
	"sync"
)

// QuotaBounds are the bounds of a quota's name and limits, read from the
// struct tags of Quota, where they are declared once. The configuration's
// tier catalogue, whose tiers put their name's rules and their limits on a
// scenario's quotas, checks its tiers against this table.
type QuotaBounds struct {
	// NamePattern is the pattern a quota's name matches; NameMaxLength is
	// its longest length, in characters.
	NamePattern   string
	NameMaxLength int
	// LimitMax is the largest value of each limit, by its JSON name (rpm,
	// tpm, itpm, otpm, rpd, tpd); a limit is more than zero when given.
	LimitMax map[string]float64
}

// limitNames are the JSON names of a quota's limits.
var limitNames = DimensionNames()

var quotaBounds = sync.OnceValue(func() QuotaBounds {
	fields := structFields(reflect.TypeFor[Quota]()).byName
	name := fields["name"].Tag
	b := QuotaBounds{NamePattern: name.Get("pattern"), LimitMax: map[string]float64{}}
	b.NameMaxLength, _ = intTag(name, "maxLength")
	for _, l := range limitNames {
		b.LimitMax[l], _ = floatTag(fields[l].Tag, "maximum")
	}
	return b
})

// Bounds returns the bounds of a quota's name and limits.
func Bounds() QuotaBounds {
	b := quotaBounds()
	b.LimitMax = maps.Clone(b.LimitMax)
	return b
}

// maxRate is the largest arrival rate, requests per second, that a demand
// may come to: the most that rps or rpm may state (their schema maxima,
// read from the tags of Demand). A rate derived from other fields
// (requests within_hours) must stay within it, so that every rate the
// planner works with is finite and searched over a bounded range.
var maxRate = sync.OnceValue(func() float64 {
	fields := structFields(reflect.TypeFor[Demand]()).byName
	rps, _ := floatTag(fields["rps"].Tag, "maximum")
	rpm, _ := floatTag(fields["rpm"].Tag, "maximum")
	return max(rps, rpm/60)
})
