package probe

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRateLimitHeaders(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	type want struct {
		dim              int // index in dims
		limit, remaining int64
		reset            time.Duration
		hasLimit         bool
		hasReset         bool
	}
	tests := []struct {
		name    string
		headers map[string]string
		source  string
		want    []want
	}{
		{
			name: "OpenAI durations",
			headers: map[string]string{
				"x-ratelimit-limit-requests": "5000", "x-ratelimit-remaining-requests": "4999", "x-ratelimit-reset-requests": "12ms",
				"x-ratelimit-limit-tokens": "2000000", "x-ratelimit-remaining-tokens": "1999000", "x-ratelimit-reset-tokens": "6m0s",
			},
			source: "x-ratelimit",
			want: []want{
				{dim: 0, limit: 5000, remaining: 4999, reset: 12 * time.Millisecond, hasLimit: true, hasReset: true},
				{dim: 1, limit: 2000000, remaining: 1999000, reset: 6 * time.Minute, hasLimit: true, hasReset: true},
			},
		},
		{
			name:    "OpenAI long and fractional durations",
			headers: map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1h2m3.5s"},
			source:  "x-ratelimit",
			want:    []want{{dim: 0, remaining: 0, reset: time.Hour + 2*time.Minute + 3500*time.Millisecond, hasReset: true}},
		},
		{
			name:    "Azure plain numbers are seconds",
			headers: map[string]string{"x-ratelimit-remaining-requests": "119", "x-ratelimit-remaining-tokens": "119000", "x-ratelimit-reset-tokens": "30"},
			source:  "x-ratelimit",
			want: []want{
				{dim: 0, remaining: 119},
				{dim: 1, remaining: 119000, reset: 30 * time.Second, hasReset: true},
			},
		},
		{
			name:    "Unix time reset",
			headers: map[string]string{"x-ratelimit-limit-requests": "60", "x-ratelimit-reset-requests": "1772366415"},
			source:  "x-ratelimit",
			want:    []want{{dim: 0, limit: 60, reset: 15 * time.Second, hasLimit: true, hasReset: true}},
		},
		{
			name: "Anthropic RFC 3339",
			headers: map[string]string{
				"anthropic-ratelimit-requests-limit": "4000", "anthropic-ratelimit-requests-remaining": "3999",
				"anthropic-ratelimit-requests-reset":      "2026-03-01T12:00:01Z",
				"anthropic-ratelimit-input-tokens-limit":  "400000",
				"anthropic-ratelimit-output-tokens-limit": "80000", "anthropic-ratelimit-output-tokens-reset": "2026-03-01T12:00:00.5Z",
			},
			source: "anthropic-ratelimit",
			want: []want{
				{dim: 0, limit: 4000, remaining: 3999, reset: time.Second, hasLimit: true, hasReset: true},
				{dim: 2, limit: 400000, hasLimit: true},
				{dim: 3, limit: 80000, reset: 500 * time.Millisecond, hasLimit: true, hasReset: true},
			},
		},
		{
			name:    "a reset in the past is zero",
			headers: map[string]string{"anthropic-ratelimit-tokens-reset": "2026-03-01T11:59:00Z"},
			source:  "anthropic-ratelimit",
			want:    []want{{dim: 1, reset: 0, hasReset: true}},
		},
		{
			name:    "garbage is ignored",
			headers: map[string]string{"x-ratelimit-limit-requests": "lots", "x-ratelimit-reset-requests": "soon", "x-ratelimit-remaining-tokens": "-1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.headers {
				h.Set(k, v)
			}
			got, ok := parseRateLimitHeaders(h, now)
			if ok != (len(tc.want) > 0) || got.source != tc.source {
				t.Fatalf("found %v source %q, want %v %q", ok, got.source, len(tc.want) > 0, tc.source)
			}
			seen := map[int]bool{}
			for _, w := range tc.want {
				seen[w.dim] = true
				g := got.dims[w.dim]
				if g.hasLimit != w.hasLimit || g.limit != w.limit || g.remaining != w.remaining ||
					g.hasReset != w.hasReset || g.reset != w.reset {
					t.Errorf("%s: got %+v, want %+v", dims[w.dim], g, w)
				}
			}
			for i, g := range got.dims {
				if !seen[i] && (g.hasLimit || g.hasRem || g.hasReset) {
					t.Errorf("%s: unexpected reading %+v", dims[i], g)
				}
			}
		})
	}
}

func TestRateLimitLog(t *testing.T) {
	var l rateLimitLog
	t0 := time.Now()
	h := func(limit, remaining, reset string) http.Header {
		return http.Header{"X-Ratelimit-Limit-Requests": {limit}, "X-Ratelimit-Remaining-Requests": {remaining}, "X-Ratelimit-Reset-Requests": {reset}}
	}
	l.observe(h("100", "90", "1s"), t0.Add(2*time.Second))
	l.observe(h("100", "40", "5s"), t0.Add(time.Second)) // older response, arrived later: only its minimum counts
	l.observe(http.Header{}, t0.Add(3*time.Second))      // no headers: ignored
	got := l.snapshot()
	r := got.Requests
	if r == nil || *r.Limit != 100 || *r.Remaining != 90 || *r.MinRemaining != 40 || *r.ResetS != 1 || got.Source != "x-ratelimit" {
		t.Fatalf("snapshot = %+v", r)
	}
	if got.Tokens != nil {
		t.Errorf("tokens announced: %+v", got.Tokens)
	}
	*got.Requests.Limit = 1
	if *l.snapshot().Requests.Limit != 100 {
		t.Error("snapshot shares memory with the log")
	}
}
