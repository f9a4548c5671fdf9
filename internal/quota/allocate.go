package quota

import (
	"cmp"
	"math"
	"slices"

	"github.com/plannerdev/planner/internal/scenario"
)

// Claim is one class's call on a shared resource: one limit of a key, or
// the slots of an endpoint (docs/concepts.md, "Shared quotas" and
// "Endpoints shared by classes").
type Claim struct {
	Class    string
	Mode     string  // interactive, semi or batch: the order of priority allocation
	Priority int     // order within a mode; lower goes first
	Weight   float64 // share of what is split by weight
	// Need is what the class's min_pool uses running flat out, in the
	// resource's unit per second (slots for an endpoint); it counts only
	// when HasNeed, that is when the class states a demand.
	Need    float64
	HasNeed bool
	// Cap is the most the class can use of the resource, its other
	// ceilings considered (+Inf when nothing else holds it): share beyond
	// it would lie idle, so it goes to the classes that can still grow.
	Cap float64
}

func modeRank(m string) int {
	switch m {
	case scenario.ModeInteractive:
		return 0
	case scenario.ModeSemi:
		return 1
	}
	return 2
}

// Order sorts claims for priority allocation: interactive, semi, batch,
// then by priority number, then by name. It returns indices into claims.
func Order(claims []Claim) []int {
	idx := make([]int, len(claims))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		ca, cb := claims[a], claims[b]
		return cmp.Or(cmp.Compare(modeRank(ca.Mode), modeRank(cb.Mode)), cmp.Compare(ca.Priority, cb.Priority), cmp.Compare(ca.Class, cb.Class))
	})
	return idx
}

// Divide splits capacity among the claims and returns each one's share and
// the part of it that was reserved for its need.
//
// Priority: in priority order, each claim with a need reserves it (or what
// is left, and never more than its cap); the remainder is water-filled by
// weight among the claims without a need (among all claims when every one
// has a need), and what those cannot use flows on to the others the same
// way.
//
// Weighted: max-min fair by weight (water-filling), where a claim with a
// need takes no more than it; what is left when every claim is held by its
// need or its cap is water-filled again among all claims up to their caps.
//
// Under both, a claim gets more than its cap only when no other claim can
// use it: share one class cannot use goes first to the classes that can
// (progressive filling), and what none can use is split by weight among
// all, so that the whole capacity is always allotted.
func Divide(capacity float64, claims []Claim, policy string) (shares, reserved []float64) {
	shares = make([]float64, len(claims))
	reserved = make([]float64, len(claims))
	if capacity <= 0 || len(claims) == 0 {
		return shares, reserved
	}
	all := make([]int, len(claims))
	for i := range all {
		all[i] = i
	}
	if policy == scenario.AllocationWeighted {
		first := func(i int) float64 {
			if claims[i].HasNeed {
				return math.Min(claims[i].Cap, claims[i].Need)
			}
			return claims[i].Cap
		}
		left := waterFill(capacity, claims, all, shares, first)
		for i, c := range claims {
			if c.HasNeed {
				reserved[i] = math.Min(shares[i], c.Need)
			}
		}
		left = waterFill(left, claims, all, shares, func(i int) float64 { return claims[i].Cap })
		waterFill(left, claims, all, shares, func(int) float64 { return math.Inf(1) })
		return shares, reserved
	}
	left := capacity
	var open, rest []int
	for _, i := range Order(claims) {
		c := claims[i]
		if !c.HasNeed {
			open = append(open, i)
			continue
		}
		rest = append(rest, i)
		got := math.Max(0, math.Min(math.Min(c.Need, c.Cap), left))
		shares[i], reserved[i] = got, got
		left -= got
	}
	if len(open) == 0 {
		open, rest = rest, nil
	}
	capOf := func(i int) float64 { return claims[i].Cap }
	left = waterFill(left, claims, open, shares, capOf)
	left = waterFill(left, claims, rest, shares, capOf)
	waterFill(left, claims, all, shares, func(int) float64 { return math.Inf(1) })
	return shares, reserved
}

// waterFill adds amount to the shares of the claims in among, in proportion
// to their weights, without lifting any share above limit(i): a claim that
// reaches its limit keeps it and the rest is shared again among the others.
// It returns what no claim could take.
func waterFill(amount float64, claims []Claim, among []int, shares []float64, limit func(int) float64) float64 {
	active := slices.Clone(among)
	for amount > 0 && len(active) > 0 {
		var w float64
		for _, i := range active {
			w += claims[i].Weight
		}
		var still []int
		given := 0.0
		for _, i := range active {
			room := limit(i) - shares[i]
			if room <= amount*claims[i].Weight/w {
				room = math.Max(0, room)
				shares[i] += room
				given += room
			} else {
				still = append(still, i)
			}
		}
		if len(still) == len(active) {
			for _, i := range active {
				shares[i] += amount * claims[i].Weight / w
			}
			return 0
		}
		amount -= given
		active = still
	}
	return math.Max(0, amount)
}

// CapacityFor is the smallest capacity at which Divide gives claim c at
// least need, the others' claims unchanged: the inverse of Divide that
// remedies use. Divide's share of a claim never falls as capacity grows, so
// the answer is found by doubling and bisection, to a relative 1e-9. It is
// +Inf when no capacity gives c its need (its own cap is below it).
func CapacityFor(claims []Claim, c int, need float64, policy string) float64 {
	if need <= 0 {
		return 0
	}
	if claims[c].Cap < need {
		return math.Inf(1)
	}
	got := func(capacity float64) bool {
		shares, _ := Divide(capacity, claims, policy)
		return shares[c] >= need*(1-1e-12)
	}
	// A share never exceeds the capacity, so need is a lower bound. Both
	// loops are bounded whatever the numbers: doubling reaches 1e300 from
	// any positive float64 within about 2,100 steps (a NaN fails the test
	// at once), and 64 halvings reach the relative precision from any
	// bracket.
	lo, hi := need/2, need
	for !got(hi) {
		if !(hi <= 1e300) {
			return math.Inf(1)
		}
		lo, hi = hi, 2*hi
	}
	for range 64 {
		if !(hi-lo > hi*1e-9) {
			break
		}
		mid := (lo + hi) / 2
		if got(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}
