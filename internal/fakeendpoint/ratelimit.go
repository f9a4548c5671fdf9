package fakeendpoint

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/plannerdev/planner/internal/quota"
)

// slack absorbs floating-point error when comparing a bucket's level with
// what a request needs, so that a retry at the advertised time fits.
const slack = 1e-6

// bucket is a limit of L per minute: a token bucket (quota.Bucket) that
// holds one minute's worth, L, and refills continuously at L/60 per
// second. A request larger than L never fits. Its level may go negative
// when tokens are charged after admission.
type bucket struct {
	perMinute int
	quota.Bucket
	last time.Time
}

func newBucket(perMinute int, now time.Time) *bucket {
	return &bucket{perMinute: perMinute, Bucket: quota.NewBucket(float64(perMinute), float64(perMinute)/60, slack, false), last: now}
}

// advance refills the bucket up to now.
func (b *bucket) advance(now time.Time) {
	if !now.After(b.last) {
		return
	}
	b.Refill(now.Sub(b.last).Seconds())
	b.last = now
}

// wait is how long until need fits, assuming nothing else draws on the
// bucket, rounded up to the nanosecond.
func (b *bucket) wait(need float64) time.Duration {
	return time.Duration(math.Ceil(b.Wait(need) * float64(time.Second)))
}

// setHeaders writes the OpenAI-style limit, remaining and reset headers.
func (b *bucket) setHeaders(h http.Header, unit string) {
	remaining := max(0, int(math.Floor(b.Level+slack)))
	h.Set("x-ratelimit-limit-"+unit, strconv.Itoa(b.perMinute))
	h.Set("x-ratelimit-remaining-"+unit, strconv.Itoa(remaining))
	h.Set("x-ratelimit-reset-"+unit, formatReset(b.wait(b.Size)))
}

// formatReset renders a duration as OpenAI does in x-ratelimit-reset-*
// ("6m0s", "1s", "120ms"), rounded up to the millisecond.
func formatReset(d time.Duration) string {
	return ceilMillis(d).String()
}

// ceilMillis rounds d up to a whole number of milliseconds.
func ceilMillis(d time.Duration) time.Duration {
	if r := d % time.Millisecond; r != 0 {
		d += time.Millisecond - r
	}
	return d
}

// limiter holds the optional RPM and TPM buckets.
type limiter struct {
	mu       sync.Mutex
	requests *bucket // nil when RPM is unlimited
	tokens   *bucket // nil when TPM is unlimited
}

func newLimiter(rpm, tpm int, now time.Time) *limiter {
	l := &limiter{}
	if rpm > 0 {
		l.requests = newBucket(rpm, now)
	}
	if tpm > 0 {
		l.tokens = newBucket(tpm, now)
	}
	return l
}

// verdict is the limiter's answer to one request.
type verdict struct {
	ok bool
	// retry is how long until the same request would fit; zero with ok
	// false means it never fits (it needs more than a minute's worth).
	retry time.Duration
	// unit names the bucket that refused: "requests" or "tokens".
	unit  string
	limit int
}

// admit takes one request and cost tokens if both fit, otherwise nothing,
// and writes the rate-limit headers describing the buckets afterwards.
func (l *limiter) admit(now time.Time, cost int, h http.Header) verdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := verdict{ok: true}
	if l.requests != nil {
		l.requests.advance(now)
		if w := l.requests.wait(1); w > 0 {
			v = verdict{retry: w, unit: "requests", limit: l.requests.perMinute}
		}
	}
	if l.tokens != nil {
		l.tokens.advance(now)
		switch w := l.tokens.wait(float64(cost)); {
		case cost > l.tokens.perMinute:
			v = verdict{unit: "tokens", limit: l.tokens.perMinute}
		case w > 0 && (v.ok || w > v.retry):
			v = verdict{retry: w, unit: "tokens", limit: l.tokens.perMinute}
		}
	}
	if v.ok {
		if l.requests != nil {
			l.requests.Take(1)
		}
		if l.tokens != nil {
			l.tokens.Take(float64(cost))
		}
	}
	if l.requests != nil {
		l.requests.setHeaders(h, "requests")
	}
	if l.tokens != nil {
		l.tokens.setHeaders(h, "tokens")
	}
	return v
}

// charge draws tokens known only after admission (completion tokens under
// actual accounting); the bucket may go into debt.
func (l *limiter) charge(now time.Time, tokens int) {
	if l.tokens == nil || tokens == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tokens.advance(now)
	l.tokens.Take(float64(tokens))
}
