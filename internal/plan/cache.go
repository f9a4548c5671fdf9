package plan

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/scenario"
)

// Engine plans scenarios. It owns the caches of the work that plans share:
// the Monte Carlo draws, the samples and tails of service times, bounded
// by their estimated size in bytes (they grow with the draws); percentiles
// and min_pool searches, bounded in entries of a fixed size (they depend
// on latency and demand, never on quotas, so what-if sweeps over limits
// reuse them); and whole plans by scenario, bounded in bytes too. Planning
// is deterministic, so a cache changes how fast an answer comes, never the
// answer. It also holds the limits of its computations (Options). An
// Engine is safe for concurrent use; the zero value is not usable, call
// New.
type Engine struct {
	draws       *sizedCache[drawKey, *model.Draws]
	tails       *sizedCache[tailKey, *model.Tail]
	percentiles *lru.Cache[percentileKey, float64]
	minPools    *lru.Cache[minPoolKey, int]
	plans       *sizedCache[[sha256.Size]byte, cachedPlan]
	// leanPlans are plans without remedies of the scenarios that the cost
	// of a remedy is planned on (a catalogue tier's limits, or the
	// remedies applied): the classes of a key often ask for the same tier.
	// Checking a remedy or a sustainable rate works out the class's own
	// plan alone, which is not kept.
	leanPlans *sizedCache[[sha256.Size]byte, cachedPlan]
	// checked are plans with their checks (PlanChecked).
	checked *sizedCache[[sha256.Size]byte, cachedPlan]
	samples *sizedCache[sampleKey, []float64]
	curves  *lru.Cache[string, *model.Curve]
	waits   *lru.Cache[model.Queue, model.Wait]
	moments *lru.Cache[serviceKey, moments]
	// inflight lets one caller compute a sample or a tail that several
	// need at once (classes prepared in parallel, concurrent plans).
	inflight singleflight.Group
	// scratch holds buffers of one value per draw for quantile
	// selections (*[]float64), which plans take and hand back.
	scratch sync.Pool
	limits  *limits
	// tiers is the catalogue that remedies name tiers from (Options.Tiers).
	tiers []scenario.Quota
}

// Cache bounds. With the default 20,000 draws, the draws take about
// 1.7 MB, a sample 160 kB, a tail about 200 kB and a plan of three classes
// some 10 kB; with 200,000 draws ten times as much but for plans, so that
// the bytes, not the counts, bound the memory (tails of runs of more than
// 50,000 draws are not kept at all).
const (
	drawCacheBytes         = 32 << 20
	tailCacheBytes         = 16 << 20
	tailCacheMaxDraws      = 50000
	sampleCacheBytes       = 16 << 20
	planCacheBytes         = 4 << 20
	percentileCacheEntries = 16384
	minPoolCacheEntries    = 2048
	curveCacheEntries      = 64
	waitCacheEntries       = 16384
	momentCacheEntries     = 4096
)

// New returns an engine with empty caches and the limits of opts.
func New(opts Options) *Engine {
	return &Engine{
		limits:      newLimits(opts),
		tiers:       slices.Clone(opts.Tiers),
		draws:       newSizedCache[drawKey](drawCacheBytes, drawsBytes),
		tails:       newSizedCache[tailKey](tailCacheBytes, tailBytes),
		percentiles: must(lru.New[percentileKey, float64](percentileCacheEntries)),
		minPools:    must(lru.New[minPoolKey, int](minPoolCacheEntries)),
		plans:       newSizedCache[[sha256.Size]byte](planCacheBytes, cachedPlanBytes),
		leanPlans:   newSizedCache[[sha256.Size]byte](planCacheBytes, cachedPlanBytes),
		checked:     newSizedCache[[sha256.Size]byte](planCacheBytes, cachedPlanBytes),
		samples:     newSizedCache[sampleKey](sampleCacheBytes, func(v []float64) int { return 8*len(v) + 64 }),
		curves:      must(lru.New[string, *model.Curve](curveCacheEntries)),
		waits:       must(lru.New[model.Queue, model.Wait](waitCacheEntries)),
		moments:     must(lru.New[serviceKey, moments](momentCacheEntries)),
	}
}

// CacheBytes is the estimated size of what the engine's byte-bounded
// caches hold: draws, samples, tails and plans.
func (e *Engine) CacheBytes() int {
	return e.draws.Bytes() + e.tails.Bytes() + e.samples.Bytes() + e.plans.Bytes() + e.leanPlans.Bytes() + e.checked.Bytes()
}

// drawsBytes estimates the memory of a Monte Carlo run: ten columns of
// float64 and three of int32 per draw.
func drawsBytes(d *model.Draws) int { return d.N*(10*8+3*4) + 256 }

// tailBytes estimates the memory of a tail over its draws: X in the order
// of U, and its high draws (5 %) with their U and E and a scratch buffer;
// a paced tail also each draw's pacing wait in both orders. A sparse one
// keeps its base's columns (counted as its own: it holds them when the
// base is evicted) and adds its high draws' values and its challengers.
func tailBytes(t *model.Tail) int {
	switch {
	case t.Paced():
		return 19*t.N() + 512
	case t.Sparse():
		return 10*t.N() + 44*t.Extra() + 512
	}
	return 10*t.N() + 512
}

// sampleKey identifies one part's Monte Carlo sample: its distribution,
// which of the draws' streams it maps, and the draws.
type sampleKey [sha256.Size]byte

// wait is the wait law of a queue (model.Queue.Wait), cached: a plan asks
// it of every candidate pool, and plans that differ only in their quotas
// ask the same again.
func (e *Engine) wait(q model.Queue) model.Wait {
	if w, ok := e.waits.Get(q); ok {
		return w
	}
	w := q.Wait()
	e.waits.Add(q, w)
	return w
}

// part is one random part of a service time: its distribution and the
// stream of draws that it maps.
type part struct {
	dist   model.Dist
	z      []float64
	stream byte
	key    sampleKey
}

// partsOf lists the random parts of a service time: TTFT, TPOT, the
// answer's length, and the prompt's when a prefill term uses it.
func partsOf(svc model.Service, draws *model.Draws) []part {
	ps := []part{{svc.TTFT, draws.ZTTFT, 0, sampleKey{}}, {svc.TPOT, draws.ZTPOT, 1, sampleKey{}}, {svc.Out, draws.ZOut, 3, sampleKey{}}}
	if svc.Prefill != 0 {
		ps = append(ps, part{svc.In, draws.ZIn, 2, sampleKey{}})
	}
	for i := range ps {
		ps[i].key = partKey(ps[i], draws)
	}
	return ps
}

// partKey identifies a part's sample: its distribution, its stream and
// the draws.
func partKey(p part, draws *model.Draws) sampleKey {
	b := binary.LittleEndian.AppendUint64([]byte{p.stream}, draws.Seed)
	b = binary.LittleEndian.AppendUint64(b, uint64(draws.N))
	return sha256.Sum256(p.dist.AppendKey(b))
}

// sampled returns the part's sample, from the cache when a class or a load
// has drawn it already: the TTFT and TPOT of an endpoint at a load are the
// same for all its classes. The result is shared and must not be modified.
func (e *Engine) sampled(p part) []float64 {
	v, err := cachedOnce(context.Background(), e, e.samples, p.key, func() ([]float64, error) { return p.dist.SampleAll(p.z), nil })
	if err != nil {
		panic(err) // only a panic of the sampling fails it: raised again in this computation
	}
	return v
}

// cache is what cachedOnce needs of a cache.
type cache[K comparable, V any] interface {
	Get(K) (V, bool)
	Add(K, V) bool
}

// cachedOnce returns the value of k from the cache c, or computes it and
// keeps it; concurrent callers that miss wait for one computation. A
// waiter whose computation ended with an error (the computing caller's
// context ended, say) while its own context lives computes it itself. A
// panic in compute is a *PanicError for every caller: singleflight would
// raise it again in a goroutine of its own, out of reach of any recovery.
func cachedOnce[K comparable, V any](ctx context.Context, e *Engine, c cache[K, V], k K, compute func() (V, error)) (V, error) {
	if v, ok := c.Get(k); ok {
		return v, nil
	}
	v, err, shared := e.inflight.Do(fmt.Sprintf("%T %v", k, k), func() (any, error) {
		var v V
		err := recovered(func() error {
			var err error
			v, err = compute()
			return err
		})
		if err == nil {
			c.Add(k, v)
		}
		return v, err
	})
	var pe *PanicError
	if err != nil && shared && ctx.Err() == nil && !errors.As(err, &pe) {
		return compute()
	}
	if err != nil {
		var zero V
		return zero, err
	}
	return v.(V), nil
}

// inputPart is the input tokens' part: the prompt's length, drawn from the
// same stream as a prefill term draws it.
func inputPart(in model.Dist, draws *model.Draws) part {
	p := part{in, draws.ZIn, 2, sampleKey{}}
	p.key = partKey(p, draws)
	return p
}

// parts is the Monte Carlo sample of every part of a service time.
func (e *Engine) parts(svc model.Service, draws *model.Draws) model.Parts {
	ps := partsOf(svc, draws)
	p := model.Parts{TTFT: e.sampled(ps[0]), TPOT: e.sampled(ps[1]), Out: e.sampled(ps[2])}
	if len(ps) > 3 {
		p.In = e.sampled(ps[3])
	}
	return p
}

type drawKey struct {
	seed uint64
	n    int
}

// drawsFor returns the draws of a seeded Monte Carlo run of n draws.
func (e *Engine) drawsFor(seed uint64, n int) *model.Draws {
	k := drawKey{seed, n}
	if d, ok := e.draws.Get(k); ok {
		return d
	}
	d := model.NewDraws(seed, n)
	e.draws.Add(k, d)
	return d
}

// tailKey names the tail of one metric of a service time.
type tailKey struct {
	service serviceKey
	metric  int
	p       float64 // the tail's percentile, a probability
}

// serviceKey identifies a service time and the draws it is sampled with.
type serviceKey [sha256.Size]byte

func newServiceKey(svc model.Service, draws *model.Draws) serviceKey {
	return sha256.Sum256(svc.AppendKey(drawsKey(draws)))
}

// newTTFTKey identifies the TTFT of a service time and its draws: classes
// with the same TTFT share its tail and percentiles.
func newTTFTKey(svc model.Service, draws *model.Draws) serviceKey {
	return sha256.Sum256(append(svc.AppendTTFTKey(drawsKey(draws)), 't'))
}

// drawsKey encodes the seed and size of a Monte Carlo run.
func drawsKey(draws *model.Draws) []byte {
	b := binary.LittleEndian.AppendUint64(nil, draws.Seed)
	return binary.LittleEndian.AppendUint64(b, uint64(draws.N))
}

type percentileKey struct {
	service serviceKey
	full    serviceKey // the service time of the draws that wait, when not service's
	wait    model.Wait
	which   percentile
	p       float64 // the percentile, a probability
	// served is set for the percentile over the requests a client that
	// sheds at tau serves.
	served bool
	tau    float64
}

type minPoolKey struct {
	service     serviceKey
	lambda, ca2 float64
	slo         [2]float64
	p           float64 // the percentile the targets bind
	rhoMax      float64
}

// planKey identifies a scenario by the SHA-256 of a binary encoding of
// every field (appendValue): a scenario holds no maps, so the encoding is
// deterministic, and it is several times cheaper than JSON.
func planKey(s scenario.Scenario) ([sha256.Size]byte, bool) {
	buf := keyBuffers.Get().(*[]byte)
	defer keyBuffers.Put(buf)
	b, ok := appendValue((*buf)[:0], reflect.ValueOf(s))
	*buf = b
	if !ok {
		return [sha256.Size]byte{}, false
	}
	return sha256.Sum256(b), true
}

var keyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// appendValue appends an unambiguous encoding of v to b: fields in order,
// a presence byte before what a pointer holds, a length before strings and
// slices, numbers as their bits. It reports false for a kind a scenario
// does not hold (maps, interfaces, funcs), which then goes uncached.
func appendValue(b []byte, v reflect.Value) ([]byte, bool) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			var ok bool
			if b, ok = appendValue(b, v.Field(i)); !ok {
				return b, false
			}
		}
		return b, true
	case reflect.Pointer:
		if v.IsNil() {
			return append(b, 0), true
		}
		return appendValue(append(b, 1), v.Elem())
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return append(b, 0), true // a nil list is not an empty one to the scenario's checks
		}
		b = append(b, 1)
		b = binary.LittleEndian.AppendUint64(b, uint64(v.Len()))
		for i := range v.Len() {
			var ok bool
			if b, ok = appendValue(b, v.Index(i)); !ok {
				return b, false
			}
		}
		return b, true
	case reflect.String:
		b = binary.LittleEndian.AppendUint64(b, uint64(v.Len()))
		return append(b, v.String()...), true
	case reflect.Float32, reflect.Float64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Float())), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return binary.LittleEndian.AppendUint64(b, uint64(v.Int())), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return binary.LittleEndian.AppendUint64(b, v.Uint()), true
	case reflect.Bool:
		if v.Bool() {
			return append(b, 1), true
		}
		return append(b, 0), true
	default:
		return b, false
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
