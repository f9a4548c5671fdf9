package probe

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		headers map[string]string
		want    time.Duration
		ok      bool
	}{
		{"retry-after-ms", map[string]string{"retry-after-ms": "1500"}, 1500 * time.Millisecond, true},
		{"retry-after-ms fractional", map[string]string{"retry-after-ms": "20.5"}, 20500 * time.Microsecond, true},
		{"retry-after-ms wins over retry-after", map[string]string{"retry-after-ms": "250", "retry-after": "2"}, 250 * time.Millisecond, true},
		{"seconds", map[string]string{"retry-after": "2"}, 2 * time.Second, true},
		{"zero seconds", map[string]string{"retry-after": "0"}, 0, true},
		{"HTTP date", map[string]string{"retry-after": "Sun, 01 Mar 2026 12:00:07 GMT"}, 7 * time.Second, true},
		{"HTTP date in the past", map[string]string{"retry-after": "Sun, 01 Mar 2026 11:00:00 GMT"}, 0, true},
		{"bad ms falls back to seconds", map[string]string{"retry-after-ms": "soon", "retry-after": "3"}, 3 * time.Second, true},
		{"negative", map[string]string{"retry-after": "-1"}, 0, false},
		{"garbage", map[string]string{"retry-after": "later"}, 0, false},
		{"absent", nil, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.headers {
				h.Set(k, v)
			}
			got, ok := retryAfter(h, now)
			if got != tc.want || ok != tc.ok {
				t.Errorf("retryAfter = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestBackoffCeiling(t *testing.T) {
	b := backoff{base: 500 * time.Millisecond, cap: 8 * time.Second}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}
	for n, w := range want {
		if got := b.ceiling(n); got != w {
			t.Errorf("ceiling(%d) = %v, want %v", n, got, w)
		}
	}
	if got := b.ceiling(1000); got != b.cap {
		t.Errorf("ceiling(1000) = %v, want the cap (no overflow)", got)
	}
	if got := (backoff{base: 10 * time.Second, cap: time.Second}).ceiling(0); got != time.Second {
		t.Errorf("a base above the cap: ceiling = %v, want the cap", got)
	}
}

// TestBackoffFullJitter checks that every draw lies in (0, min(cap,
// base·2ⁿ)] and that the draws spread over the range (full jitter, not a
// fixed delay), and that a seed replays the same draws.
func TestBackoffFullJitter(t *testing.T) {
	b := backoff{base: 100 * time.Millisecond, cap: time.Second}
	for n := range 8 {
		rnd := newLockedRand(7)
		ceil := b.ceiling(n)
		lo, hi := ceil, time.Duration(0)
		for range 2000 {
			d := b.delay(n, rnd)
			if d <= 0 || d > ceil {
				t.Fatalf("delay(%d) = %v, outside (0, %v]", n, d, ceil)
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		if lo > ceil/10 || hi < ceil*9/10 {
			t.Errorf("delay(%d) spans [%v, %v] of (0, %v]: not full jitter", n, lo, hi, ceil)
		}
	}
	a, c := newLockedRand(42), newLockedRand(42)
	for range 10 {
		if x, y := b.delay(3, a), b.delay(3, c); x != y {
			t.Fatalf("same seed, different draws: %v and %v", x, y)
		}
	}
}

// TestNewSeed: a drawn seed is below 2⁵³ (so that the echoed configuration
// reads exactly in any JSON reader), and two draws differ.
func TestNewSeed(t *testing.T) {
	seen := map[uint64]bool{}
	for range 10000 {
		s := NewSeed()
		if s >= SeedLimit || s >= 1<<53 {
			t.Fatalf("seed %d is not below 2^53", s)
		}
		seen[s] = true
	}
	if len(seen) < 9990 {
		t.Errorf("%d distinct seeds in 10,000 draws", len(seen))
	}
}
