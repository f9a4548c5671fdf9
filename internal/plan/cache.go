package plan

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/scenario"
)

// The Monte Carlo tails of a service time depend only on the distributions
// and the draws, not on quotas, demand or the pool. Repeated plans and
// what-if sweeps reuse them from this bounded cache; tails of very large
// Monte Carlo runs are not kept, so the cache stays under about 20 MB.
const (
	tailCacheEntries  = 16
	tailCacheMaxDraws = 50000
)

type tailPair struct{ ttft, e2e *model.Tail }

// Percentiles and min_pool of load-independent classes depend on the
// service time, the demand, the arrival variability (and for min_pool the
// SLOs), never on quotas; plans that vary only limits, as what-if sweeps
// of quotas do, share them through these caches.
const (
	percentileCacheEntries = 8192
	minPoolCacheEntries    = 1024
)

type percentileKey struct {
	service     [sha256.Size]byte
	lambda, ca2 float64
	pool        int
	which       percentile
}

type minPoolKey struct {
	service     [sha256.Size]byte
	lambda, ca2 float64
	ttft, e2e   float64 // the SLO targets, seconds
}

var (
	percentileCache = must(lru.New[percentileKey, float64](percentileCacheEntries))
	minPoolCache    = must(lru.New[minPoolKey, int](minPoolCacheEntries))
)

// planCacheEntries bounds the plans kept by scenario: a plan is a few
// kilobytes, so the cache stays under a few megabytes.
const planCacheEntries = 256

var planCache = must(lru.New[[sha256.Size]byte, *Plan](planCacheEntries))

// planKey identifies a scenario by the SHA-256 of its JSON encoding, which
// is deterministic (struct fields in order, map keys sorted).
func planKey(s scenario.Scenario) ([sha256.Size]byte, bool) {
	b, err := json.Marshal(s)
	if err != nil {
		return [sha256.Size]byte{}, false
	}
	return sha256.Sum256(b), true
}

var tailCache = must(lru.New[[sha256.Size]byte, tailPair](tailCacheEntries))

func tailKey(svc model.Service, draws *model.Draws) [sha256.Size]byte {
	b := binary.LittleEndian.AppendUint64(nil, draws.Seed)
	b = binary.LittleEndian.AppendUint64(b, uint64(draws.N))
	return sha256.Sum256(svc.AppendKey(b))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
