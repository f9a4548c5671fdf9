package plan

import (
	"math"

	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
)

// pacingDims are the dimensions a key paces: its per-minute limits.
// Daily limits are kept by the pools' ceilings (a pool cannot send faster
// than its share of them) and are not enforced per window.
func pacingDims(k quota.Key) []scenario.Dimension {
	var out []scenario.Dimension
	for d := range scenario.NumDimensions {
		if !d.Daily() && k.Limit(d) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// bucketSize is what the pacing bucket of a per-minute limit holds:
// one enforcement window's allowance, h·L·w/60, with h the headroom and w
// burst_window_s; it refills at h·L/60 per second (quota.Key.Capacity).
func bucketSize(k quota.Key, d scenario.Dimension) float64 {
	return k.Capacity(d) * k.BurstWindowS
}

// keyPacing lists key ki's pacing buckets, with its classes in priority
// order.
func (r *run) keyPacing(ki int) []KeyPacing {
	k := r.keys[ki]
	var classes []string
	for _, i := range r.order {
		if r.s.Classes[i].Quota == k.Name {
			classes = append(classes, r.models[i].spec.Name)
		}
	}
	out := []KeyPacing{}
	if len(classes) == 0 {
		return out
	}
	for _, d := range pacingDims(k) {
		out = append(out, KeyPacing{Dimension: d.String(), RatePerS: roundTo(k.Capacity(d), 4), Capacity: roundTo(bucketSize(k, d), 4), Classes: classes})
	}
	return out
}

// pacing is what the key's buckets come to in class i's own requests: the
// request rate its allotment sustains on the tightest per-minute limit,
// allotment ÷ mean charge, and how many of its requests of mean charge a
// full set of buckets passes at once (at least 1, at most the pool)
// (docs/concepts.md, "Pacing"). Without a per-minute limit the rate is
// its pool's throughput.
func (r *run) pacing(i, pool int, allot quota.Vector) Pacing {
	m := r.models[i]
	rate, burst := math.Inf(1), math.Inf(1)
	for _, d := range pacingDims(m.key) {
		if u := m.use[d]; u > 0 {
			rate = math.Min(rate, allot[d]/u)
			burst = math.Min(burst, bucketSize(m.key, d)/u)
		}
	}
	if math.IsInf(rate, 1) {
		rate = float64(max(pool, 1)) / m.at(r.load(i)).mean
	}
	b := searchLimit
	if v := burst + tolerance; v < float64(searchLimit) {
		b = max(1, int(math.Floor(v)))
	}
	if pool >= 1 {
		b = min(b, pool)
	}
	return Pacing{RateRPS: roundTo(rate, 4), Burst: b}
}
