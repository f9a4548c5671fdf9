package probe

import (
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// retryAfter reads how long a 429 asked the client to wait: retry-after-ms
// (milliseconds, as OpenAI and Azure OpenAI send) first, then retry-after,
// either seconds or an HTTP date (RFC 9110 §10.2.3), counted from now. A
// date in the past means no wait. ok is false when neither header parses.
func retryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("retry-after"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || s >= 1e9 || math.IsNaN(s) {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}

// backoff is exponential backoff with full jitter: before retry n (n = 0
// for the first retry) the client sleeps a uniform draw from
// (0, min(cap, base·2ⁿ)], so that clients refused together do not come
// back together.
type backoff struct {
	base, cap time.Duration
}

// ceiling is min(cap, base·2ⁿ), computed without overflow.
func (b backoff) ceiling(n int) time.Duration {
	if b.base <= 0 {
		return 0
	}
	d := b.base
	for range n {
		if d >= b.cap/2 {
			return b.cap
		}
		d *= 2
	}
	return min(d, b.cap)
}

// delay draws the sleep before retry n from rnd.
func (b backoff) delay(n int, rnd *lockedRand) time.Duration {
	c := b.ceiling(n)
	if c <= 0 {
		return 0
	}
	return c - time.Duration(rnd.int64N(int64(c)))
}

// SeedLimit bounds a seed: every seed is below 2⁵³, so that every JSON
// reader reads it exactly where a run's configuration is echoed (the rule
// of a scenario's policy.seed).
const SeedLimit = 1 << 53

// NewSeed is the seed of a run that was given none, the one place such a
// seed is drawn: random, below SeedLimit.
func NewSeed() uint64 { return rand.Uint64N(SeedLimit) }

// lockedRand is a seeded generator safe for concurrent use, so that a run's
// jitter and arrivals are reproducible from Config.Seed.
type lockedRand struct {
	mu  sync.Mutex
	rnd *rand.Rand
}

func newLockedRand(seed uint64) *lockedRand {
	return &lockedRand{rnd: rand.New(rand.NewPCG(seed, 0x70726f6265))}
}

// int64N returns a uniform draw from [0, n).
func (r *lockedRand) int64N(n int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rnd.Int64N(n)
}

// expFloat64 returns an exponential draw with mean 1.
func (r *lockedRand) expFloat64() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rnd.ExpFloat64()
}
