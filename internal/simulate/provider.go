package simulate

import (
	"math"

	"github.com/plannerdev/planner/internal/quota"
	"github.com/plannerdev/planner/internal/scenario"
)

// day is the period of a daily limit, seconds.
const day = 24 * 3600.0

// roundingSlack absorbs rounding in what a bucket holds when a request
// comes back at the time its Retry-After named.
const roundingSlack = 1e-9

// limit is the provider's enforcement of one limit of one key
// (docs/simulate.md, "Provider"). A per-minute limit L allows A = L·w/60
// per window of w = burst_window_s seconds: either a token bucket
// (quota.Bucket) that holds A and refills continuously at L/60 per
// second, or a counter of A reset at every multiple of w. A daily limit is
// a counter of L reset every 24 hours of simulated time. The provider
// enforces L itself, not the plan's headroom.
type limit struct {
	dim       scenario.Dimension
	limit     float64 // as configured, per minute or per day
	allowance float64 // A, what one window allows
	window    float64 // seconds; 0 for a continuous bucket
	// A continuous bucket, and the time of its last refill. A full one
	// takes a request larger than the whole allowance (Oversize).
	bucket  quota.Bucket
	last    float64
	used    float64 // window: what the current window has counted
	epoch   int     // window: index of the current window
	limited int

	// Per interval: the use; 1 where a request did not fit, else 0; and
	// the fullest the limit was left by an admission: the lowest level of
	// a bucket (+Inf when none), the most a window had counted (-Inf). Its
	// peak fill is the fill at that extreme, since fill is monotone in
	// either (peak), worked out once rather than at every admission.
	use, refused, fullest []float64
}

func newLimit(d scenario.Dimension, k quota.Key, refill string, intervals int) *limit {
	l := &limit{dim: d, limit: k.Limit(d), use: make([]float64, intervals), refused: make([]float64, intervals), fullest: make([]float64, intervals)}
	empty := math.Inf(1)
	if d.Daily() || refill == RefillWindow {
		empty = math.Inf(-1)
	}
	for i := range l.fullest {
		l.fullest[i] = empty
	}
	switch {
	case d.Daily():
		l.allowance, l.window = l.limit, day
	case refill == RefillWindow:
		l.allowance, l.window = l.limit*k.BurstWindowS/60, k.BurstWindowS
	default:
		l.allowance = l.limit * k.BurstWindowS / 60
		l.bucket = quota.NewBucket(l.allowance, l.limit/60, roundingSlack, true)
	}
	return l
}

// sync brings the bucket or window to time now.
func (l *limit) sync(now float64) {
	if l.window > 0 {
		if e := int(math.Floor(now / l.window)); e != l.epoch {
			l.epoch, l.used = e, 0
		}
		return
	}
	l.bucket.Refill(now - l.last)
	l.last = now
}

// fits reports whether need units may be counted now and, when not, how
// long until they may (the Retry-After). An empty window or a full bucket
// takes one request larger than the whole allowance, leaving the bucket in
// debt, so that no request is refused for ever.
func (l *limit) fits(now, need float64) (bool, float64) {
	if l.holds(need) {
		return true, 0
	}
	return false, l.wait(now, need)
}

// holds reports whether need units may be counted now (fits), small
// enough to be inlined at every admission.
func (l *limit) holds(need float64) bool {
	if l.window > 0 {
		return l.used+need <= l.allowance+roundingSlack || l.used == 0
	}
	return l.bucket.Fits(need)
}

// wait is how long until need units, which do not fit now, may be
// counted (fits).
func (l *limit) wait(now, need float64) float64 {
	if l.window > 0 {
		return float64(l.epoch+1)*l.window - now
	}
	return l.bucket.Wait(need)
}

// count counts n units now (negative: a refund), without a check.
func (l *limit) count(n float64) {
	if l.window > 0 {
		l.used = max(0, l.used+n)
		return
	}
	l.bucket.Take(n)
}

// state is how full the limit is, on the scale fullest keeps: the level
// of a bucket, what a window has counted.
func (l *limit) state() float64 {
	if l.window > 0 {
		return l.used
	}
	return l.bucket.Level
}

// fillAt is the fill of the limit in state x, 1 when it allows nothing
// more.
func (l *limit) fillAt(x float64) float64 {
	if l.window > 0 {
		return x / l.allowance
	}
	b := l.bucket
	b.Level = x
	return b.Fill()
}

// peak is interval i's highest fill: 1 where a request did not fit, else
// the fill at the fullest an admission left it, 0 without either. The
// fill falls as a bucket's level rises and rises with what a window
// counted (in floating point too, each step being monotone), so that the
// fill at the extreme is the largest of the fills at every admission.
func (l *limit) peak(i int) float64 {
	return max(l.refused[i], l.fillAt(l.fullest[i]))
}

// key is the provider's side of one API key.
type key struct {
	q       quota.Key
	limits  []*limit
	limited int
	pacer   *pacer // the clients' pacing buckets; nil without pacing
}

// charge is what one send counts against each dimension at admission.
type charge = quota.Vector

// admit counts c against every limit of the key when all of them allow it;
// otherwise it counts nothing and returns the time until every refused
// limit allows it again. Per-interval use and fill are recorded at iv.
func (k *key) admit(now float64, c charge, iv int) (bool, float64) {
	ok := true
	for _, l := range k.limits {
		l.sync(now)
		ok = ok && l.holds(c[l.dim])
	}
	if !ok {
		return false, k.refuse(now, &c, iv)
	}
	for _, l := range k.limits {
		l.count(c[l.dim])
		l.use[iv] += c[l.dim]
		if x := l.state(); l.window > 0 {
			l.fullest[iv] = max(l.fullest[iv], x)
		} else {
			l.fullest[iv] = min(l.fullest[iv], x)
		}
	}
	return true, 0
}

// refuse counts a refusal of c, which some limit of the key does not
// allow now (the limits brought to now), and returns the time until every
// refused limit allows it again.
func (k *key) refuse(now float64, c *charge, iv int) float64 {
	wait := 0.0
	for _, l := range k.limits {
		if fit, w := l.fits(now, c[l.dim]); !fit {
			wait = max(wait, w)
			l.limited++
			l.refused[iv] = 1
		}
	}
	k.limited++
	return wait
}

// settle counts what a request counts when it completes
// (quota.Key.Completion): the output produced under actual accounting (at
// the completion's interval), or, negative, the refund of the unused part
// of max_tokens under max_tokens accounting (at the admission's interval,
// so that an interval's use is what its requests used). A window refunds
// only what it counted itself: a request admitted in an earlier window
// was counted in a window that has since been reset.
func (k *key) settle(now, admittedAt float64, completion *quota.Vector, admitted, completed int) {
	for _, l := range k.limits {
		l.sync(now)
		v := completion[l.dim]
		if n := v; n > 0 {
			l.count(n)
			l.use[completed] += n
		}
		if n := -v; n > 0 {
			if l.window == 0 || int(math.Floor(admittedAt/l.window)) == l.epoch {
				l.count(-n)
			}
			l.use[admitted] -= n
		}
	}
}
