package simulate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// fiveSeconds is one interactive class whose every request takes exactly
// 5 s, on a key of rpm 120: 2 requests a second, 2 in any second. The plan
// gives it a pool of ⌊0.9 × 2/s × 5 s⌋ = 9, the key a pacing bucket that
// refills at 0.9 × 120/60 = 1.8 requests a second and holds one second's
// 1.8, and 6 attempts (no SLO: a deadline of ten service times).
const fiveSeconds = `
quotas: [{name: k, rpm: 120}]
latency: {ttft_ms: {fixed: 5000}, tpot_ms: {fixed: 1}}
classes:
  - {name: c, quota: k, mode: interactive, input_tokens: {fixed: 1}, output_tokens: {fixed: 1}}
`

// tenAtOnce replays ten requests that all arrive at time 0.
var tenAtOnce = []Replay{{Class: "c", StartS: []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}}

// TestRetryStormByHand: without pacing the pool of 9 sends at once into a
// bucket of 2. Each refused request is told to come back in 0.5 s, when
// the bucket holds one more request, and they all do: at 0 s 7 are
// refused, at 0.5 s 6, … at 2.5 s 2, whose sixth attempt was their last;
// the tenth request takes a freed slot at 2.5 s, is refused once and
// goes at 3 s. 28 429s, 26 retries, 2 given up, 8 completed.
func TestRetryStormByHand(t *testing.T) {
	sc := parse(t, fiveSeconds)
	r := run(t, sc, Options{DurationS: 60, NoPacing: true, Replay: tenAtOnce})
	c := r.Classes[0]
	if c.Pool != 9 {
		t.Fatalf("pool %d, want 9", c.Pool)
	}
	s := c.Simulated
	if s.RateLimited != 28 || s.Retries != 26 || s.GaveUp != 2 || s.Completed != 8 {
		t.Errorf("429s %d, retries %d, gave up %d, completed %d; want 28, 26, 2, 8", s.RateLimited, s.Retries, s.GaveUp, s.Completed)
	}
	// Waits: nine sent at once, the tenth at 2.5 s: mean 0.25 s. E2E:
	// 5, 5, 5.5, 6, 6.5, 7, 7.5 and 8 s; type-7 median 6.25 s.
	if s.QueueWaitMeanMs != 250 || *s.E2EP50Ms != 6250 {
		t.Errorf("mean wait %g ms, E2E p50 %v ms; want 250 and 6,250", s.QueueWaitMeanMs, *s.E2EP50Ms)
	}
	// By 1 s interval: 7 + 6 refused at 0 and 0.5 s, 5 + 4 at 1 and 1.5 s,
	// 3 + 2 + 1 at 2 and 2.5 s.
	if iv := c.Series.RateLimited; iv[0] != 13 || iv[1] != 9 || iv[2] != 6 || iv[3] != 0 || r.Quotas[0].Dimensions[0].RateLimited != 28 {
		t.Errorf("429s by interval %v, by the key %d", c.Series.RateLimited, r.Quotas[0].Dimensions[0].RateLimited)
	}
}

// TestPacingByHand: with the key's pacing bucket (1.8 requests a second,
// full at 1.8) the same ten requests never go faster than the key allows:
// the first at 0 s leaves 0.8, the second goes when the bucket holds one
// again, at 0.2/1.8 = 0.111 s, and the next seven 1/1.8 s apart, the
// ninth at 0.111 + 7/1.8 = 4 s; the tenth waits for the first slot to
// free, at 5 s, when the bucket is full again. No 429, and a mean wait of
// (8 × 0.111 + 28/1.8 + 5)/10 = 2.1444 s.
func TestPacingByHand(t *testing.T) {
	r := run(t, parse(t, fiveSeconds), Options{DurationS: 60, Replay: tenAtOnce})
	s := r.Classes[0].Simulated
	if s.RateLimited != 0 || s.Completed != 10 || math.Abs(s.QueueWaitMeanMs-2144.4) > 0.1 {
		t.Errorf("429s %d, completed %d, mean wait %g ms; want 0, 10, 2,144.4", s.RateLimited, s.Completed, s.QueueWaitMeanMs)
	}
}

// TestAdmissionShedsByHand: a pool of 2, one-second requests and an E2E
// SLO of 1.5 s give a max queue wait of 0.5 s: of four requests arriving
// together two are served and two shed at 0.5 s.
func TestAdmissionShedsByHand(t *testing.T) {
	sc := parse(t, `
quotas: [{name: k, rpm: 1e9}]
latency: {ttft_ms: {fixed: 1000}, tpot_ms: {fixed: 1}}
classes:
  - {name: c, quota: k, mode: interactive, input_tokens: {fixed: 1}, output_tokens: {fixed: 1}, slo: {e2e_p95_ms: 1500}}
policy: {max_pool: 2}
`)
	r := run(t, sc, Options{DurationS: 10, IntervalS: 0.25, Replay: []Replay{{Class: "c", StartS: []float64{0, 0, 0, 0}}}})
	c := r.Classes[0]
	if *c.Predicted.E2EP95Ms != 1000 {
		t.Fatalf("the plan's E2E p95 %v, want 1,000 ms", *c.Predicted.E2EP95Ms)
	}
	s := c.Simulated
	if s.Shed != 2 || s.Completed != 2 || c.Series.Shed[2] != 2 || s.GoodputRPS != 0.2 {
		t.Errorf("shed %d (by interval %v), completed %d, goodput %g; want 2 at 0.5 s, 2, 0.2 req/s", s.Shed, c.Series.Shed, s.Completed, s.GoodputRPS)
	}
	// Two wait from 0 to 0.5 s (the first two 0.25 s intervals); two are
	// in flight until 1 s.
	if q := c.Series.Queued; q[0] != 2 || q[1] != 2 || q[2] != 0 {
		t.Errorf("queued by interval %v, want 2, 2, 0, …", q)
	}
	if f := c.Series.InFlight; f[0] != 2 || f[3] != 2 || f[4] != 0 {
		t.Errorf("in flight by interval %v, want 2 until 1 s, then 0", f)
	}
}

// TestBackoffIsFullJitter: without Retry-After a retry sleeps a uniform
// time in [0, min(cap, base·2ⁿ)), and the storm of TestRetryStormByHand
// spreads out.
func TestBackoffIsFullJitter(t *testing.T) {
	c := &client{backoffBase: 0.25, backoffLimit: 2, jitterRNG: rand.New(rand.NewPCG(1, 2))}
	for n, bound := range []float64{0.25, 0.5, 1, 2, 2} {
		var sum float64
		const draws = 20000
		for range draws {
			v := c.backoff(n)
			if v < 0 || v >= bound {
				t.Fatalf("retry %d slept %g s, outside [0, %g)", n, v, bound)
			}
			sum += v
		}
		if mean := sum / draws; math.Abs(mean-bound/2) > 0.02*bound {
			t.Errorf("retry %d: mean sleep %.4f s, want %g", n, mean, bound/2)
		}
	}
	r := run(t, parse(t, fiveSeconds), Options{DurationS: 60, NoPacing: true, NoRetryAfter: true, Replay: tenAtOnce})
	s := r.Classes[0].Simulated
	if s.Retries == 0 || s.Completed+s.GaveUp != 10 || r.Settings.RetryAfter {
		t.Errorf("retries %d, completed %d, gave up %d: every request should end, after backoff", s.Retries, s.Completed, s.GaveUp)
	}
}
