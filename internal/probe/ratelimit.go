package probe

import (
	"math"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RateLimits is the quota an endpoint announced in its rate-limit headers
// over a run: OpenAI's and Azure OpenAI's x-ratelimit-* and Anthropic's
// anthropic-ratelimit-*. It tells what quota the key has without asking the
// provider's console. Dimensions that were never announced are absent.
type RateLimits struct {
	Requests     *Limit `json:"requests,omitempty"`
	Tokens       *Limit `json:"tokens,omitempty"`
	InputTokens  *Limit `json:"input_tokens,omitempty"`
	OutputTokens *Limit `json:"output_tokens,omitempty"`
	// Source is the header family seen: "x-ratelimit" or "anthropic-ratelimit".
	Source string `json:"source,omitempty"`
}

// Limit is one announced dimension of a quota. Limit and the reset come from
// the latest response that carried them; MinRemaining is the lowest
// remaining value seen, which shows how close the run came to the limit.
type Limit struct {
	Limit        *int64   `json:"limit,omitempty"`
	Remaining    *int64   `json:"remaining,omitempty"`
	MinRemaining *int64   `json:"min_remaining,omitempty"`
	ResetS       *float64 `json:"reset_s,omitempty"` // seconds until the window resets, as announced
}

// dims are the quota dimensions as both header families spell them, in the
// order of RateLimits' fields.
var dims = [...]string{"requests", "tokens", "input-tokens", "output-tokens"}

// headerKeys are the canonical header names of each dimension: limit,
// remaining and reset, OpenAI's family then Anthropic's. They are built
// once so that reading them costs no allocation per response.
var headerKeys = func() (k [len(dims)][2][3]string) {
	for i, d := range dims {
		k[i][0] = [3]string{"x-ratelimit-limit-" + d, "x-ratelimit-remaining-" + d, "x-ratelimit-reset-" + d}
		k[i][1] = [3]string{"anthropic-ratelimit-" + d + "-limit", "anthropic-ratelimit-" + d + "-remaining", "anthropic-ratelimit-" + d + "-reset"}
		for f := range k[i] {
			for j := range k[i][f] {
				k[i][f][j] = textproto.CanonicalMIMEHeaderKey(k[i][f][j])
			}
		}
	}
	return k
}()

// get returns the first value of a header by its canonical name.
func get(h http.Header, canonical string) string {
	if v := h[canonical]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// limitReading is what one response said about one dimension.
type limitReading struct {
	limit, remaining int64
	reset            time.Duration
	hasLimit, hasRem bool
	hasReset         bool
}

// headerReading is what one response's headers said.
type headerReading struct {
	dims   [len(dims)]limitReading
	source string
}

// parseRateLimitHeaders reads the rate-limit headers of one response
// received at now. x-ratelimit-reset-* is OpenAI's duration ("6m0s",
// "120ms", "1h2m3.5s"), Azure's plain seconds ("30"), or a Unix time in
// seconds when it is that large; anthropic-ratelimit-*-reset is an RFC 3339
// time. Values that do not parse are ignored.
func parseRateLimitHeaders(h http.Header, now time.Time) (headerReading, bool) {
	var r headerReading
	found := false
	for i := range dims {
		x := &r.dims[i]
		o, a := headerKeys[i][0], headerKeys[i][1]
		if read(x, get(h, o[0]), get(h, o[1]), get(h, o[2]), now, parseOpenAIReset) {
			found, r.source = true, "x-ratelimit"
			continue
		}
		if read(x, get(h, a[0]), get(h, a[1]), get(h, a[2]), now, parseRFC3339Reset) {
			found, r.source = true, "anthropic-ratelimit"
		}
	}
	return r, found
}

// read fills x from the three header values; it reports whether any parsed.
func read(x *limitReading, limit, remaining, reset string, now time.Time,
	parseReset func(string, time.Time) (time.Duration, bool)) bool {
	x.limit, x.hasLimit = parseCount(limit)
	x.remaining, x.hasRem = parseCount(remaining)
	if reset != "" {
		x.reset, x.hasReset = parseReset(strings.TrimSpace(reset), now)
	}
	return x.hasLimit || x.hasRem || x.hasReset
}

// parseCount reads a non-negative count (a decimal point is tolerated and
// the fraction dropped).
func parseCount(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v > 1e15 {
		return 0, false
	}
	return int64(v), true
}

// unixTimeThreshold separates a reset given as seconds to wait from one
// given as a Unix time (2001-09-09 in seconds).
const unixTimeThreshold = 1e9

// parseOpenAIReset reads x-ratelimit-reset-*: a Go-style duration as OpenAI
// sends, plain seconds as Azure sends, or a Unix time in seconds.
func parseOpenAIReset(s string, now time.Time) (time.Duration, bool) {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		switch {
		case v < 0 || math.IsNaN(v) || math.IsInf(v, 0):
			return 0, false
		case v >= unixTimeThreshold:
			return max(0, time.Unix(0, int64(v*1e9)).Sub(now)), true
		}
		return time.Duration(v * float64(time.Second)), true
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, false
	}
	return d, true
}

// parseRFC3339Reset reads anthropic-ratelimit-*-reset, an RFC 3339 time,
// as the time left until it.
func parseRFC3339Reset(s string, now time.Time) (time.Duration, bool) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, false
	}
	return max(0, t.Sub(now)), true
}

// rateLimitLog accumulates the readings of a run; it is safe for
// concurrent use.
type rateLimitLog struct {
	mu     sync.Mutex
	latest time.Time
	limits RateLimits
}

// observe folds in one response's headers, received at now.
func (l *rateLimitLog) observe(h http.Header, now time.Time) {
	r, ok := parseRateLimitHeaders(h, now)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	newest := !now.Before(l.latest)
	if newest {
		l.latest = now
		l.limits.Source = r.source
	}
	for i, x := range r.dims {
		if !x.hasLimit && !x.hasRem && !x.hasReset {
			continue
		}
		lim := l.dim(i)
		if x.hasRem && (lim.MinRemaining == nil || x.remaining < *lim.MinRemaining) {
			lim.MinRemaining = ptr(x.remaining)
		}
		if !newest {
			continue
		}
		if x.hasLimit {
			lim.Limit = ptr(x.limit)
		}
		if x.hasRem {
			lim.Remaining = ptr(x.remaining)
		}
		if x.hasReset {
			lim.ResetS = ptr(x.reset.Seconds())
		}
	}
}

// dim returns the Limit of dimension i, creating it.
func (l *rateLimitLog) dim(i int) *Limit {
	p := [...]**Limit{&l.limits.Requests, &l.limits.Tokens, &l.limits.InputTokens, &l.limits.OutputTokens}[i]
	if *p == nil {
		*p = &Limit{}
	}
	return *p
}

// snapshot returns a copy of what was announced so far.
func (l *rateLimitLog) snapshot() RateLimits {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.limits
	for _, p := range []**Limit{&out.Requests, &out.Tokens, &out.InputTokens, &out.OutputTokens} {
		if *p != nil {
			*p = (*p).clone()
		}
	}
	return out
}

// clone copies l deeply.
func (l *Limit) clone() *Limit {
	return &Limit{Limit: clonePtr(l.Limit), Remaining: clonePtr(l.Remaining),
		MinRemaining: clonePtr(l.MinRemaining), ResetS: clonePtr(l.ResetS)}
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return ptr(*p)
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// exhausted names the first dimension whose remaining count reached 0
// during the run, or "".
func (r RateLimits) exhausted() string {
	for _, d := range []struct {
		name string
		l    *Limit
	}{{"requests", r.Requests}, {"tokens", r.Tokens}, {"input tokens", r.InputTokens}, {"output tokens", r.OutputTokens}} {
		if d.l != nil && d.l.MinRemaining != nil && *d.l.MinRemaining <= 0 {
			return d.name
		}
	}
	return ""
}
