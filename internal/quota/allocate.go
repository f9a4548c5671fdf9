package quota

import (
	"cmp"
	"math"
	"slices"

	"github.com/plannerdev/planner/internal/scenario"
)

// Claim is one class's call on a shared key.
type Claim struct {
	Class    string
	Mode     string  // interactive, semi or batch: the order of priority allocation
	Priority int     // order within a mode; lower goes first
	Weight   float64 // share of what is split by weight
	// Need is the rate, in units per second of each dimension, that the
	// class's minimum pool uses running flat out; nil when the class states
	// no demand and takes whatever its share allows.
	Need *Vector
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

// order sorts claims for priority allocation: interactive, semi, batch, then
// by priority number, then by name.
func order(claims []Claim) []int {
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

// Allocate divides each dimension's usable capacity of k among the claims
// and returns each claim's allotment in units per second (+Inf where the key
// has no limit).
//
// Priority (DESIGN §3.5): in priority order, each claim with a need reserves
// it, or what is left; the remainder is shared by weight among the claims
// without a need, or among all claims when every claim has one.
//
// Weighted: max-min fair by weight (water-filling): each claim gets its
// weighted share, a claim that needs less keeps only its need and the rest
// is shared again; whatever is left when every need is met is shared by
// weight among all claims.
func Allocate(k Key, claims []Claim, policy string) []Vector {
	out := make([]Vector, len(claims))
	for d := range NumDimensions {
		capacity := k.Capacity(d)
		if math.IsInf(capacity, 1) {
			for i := range out {
				out[i][d] = capacity
			}
			continue
		}
		var shares []float64
		if policy == scenario.AllocationWeighted {
			shares = waterFill(capacity, claims, d)
		} else {
			shares = byPriority(capacity, claims, d)
		}
		for i := range out {
			out[i][d] = shares[i]
		}
	}
	return out
}

func byPriority(capacity float64, claims []Claim, d Dimension) []float64 {
	shares := make([]float64, len(claims))
	left := capacity
	var open []int // claims that share the remainder
	for _, i := range order(claims) {
		if n := claims[i].Need; n != nil {
			shares[i] = math.Min(n[d], left)
			left -= shares[i]
		} else {
			open = append(open, i)
		}
	}
	if len(open) == 0 {
		for i := range claims {
			open = append(open, i)
		}
	}
	splitByWeight(shares, left, claims, open)
	return shares
}

func waterFill(capacity float64, claims []Claim, d Dimension) []float64 {
	shares := make([]float64, len(claims))
	active := make([]int, 0, len(claims))
	for i := range claims {
		active = append(active, i)
	}
	left := capacity
	for len(active) > 0 {
		var w float64
		for _, i := range active {
			w += claims[i].Weight
		}
		var still []int
		for _, i := range active {
			if n := claims[i].Need; n != nil && n[d] <= left*claims[i].Weight/w {
				shares[i] = n[d]
				left -= n[d]
			} else {
				still = append(still, i)
			}
		}
		if len(still) == len(active) {
			splitByWeight(shares, left, claims, active)
			return shares
		}
		active = still
	}
	all := make([]int, len(claims))
	for i := range all {
		all[i] = i
	}
	splitByWeight(shares, left, claims, all)
	return shares
}

func splitByWeight(shares []float64, amount float64, claims []Claim, among []int) {
	if amount <= 0 || len(among) == 0 {
		return
	}
	var w float64
	for _, i := range among {
		w += claims[i].Weight
	}
	for _, i := range among {
		shares[i] += amount * claims[i].Weight / w
	}
}

// CapacityFor is the usable capacity of dimension d (units per second) at
// which claim c is allotted at least need, given the others' claims: the
// inverse of Allocate that remedies use. Under priority it is the needs of
// the claims reserved before c plus c's need (for a claim without a need:
// all reservations plus need scaled up by the weight it shares with);
// weighted, it is Σⱼ min(needⱼ, need·wⱼ/w_c).
func CapacityFor(claims []Claim, c int, d Dimension, need float64, policy string) float64 {
	self := claims[c]
	if policy == scenario.AllocationWeighted {
		total := need
		for j, o := range claims {
			if j == c {
				continue
			}
			fair := need * o.Weight / self.Weight
			if o.Need != nil {
				fair = math.Min(o.Need[d], fair)
			}
			total += fair
		}
		return total
	}
	var reserved, openWeight float64
	for _, o := range claims {
		if o.Need == nil {
			openWeight += o.Weight
		}
	}
	if self.Need == nil {
		for _, o := range claims {
			if o.Need != nil {
				reserved += o.Need[d]
			}
		}
		return reserved + need*openWeight/self.Weight
	}
	for _, i := range order(claims) {
		if i == c {
			break
		}
		if n := claims[i].Need; n != nil {
			reserved += n[d]
		}
	}
	return reserved + need
}
