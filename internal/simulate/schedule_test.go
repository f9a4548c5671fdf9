package simulate

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

// daytimeChatNightlyBatch is a chat from 08:00 to 22:00 and a batch from
// 22:00 to 04:00 UTC on one key, and a closed loop from 12:00 for 2 h.
const daytimeChatNightlyBatch = `
quotas:
  - {name: support, rpm: 5000, tpm: 450000, token_accounting: max_tokens}
latency:
  ttft_ms: {p50: 500, p95: 1200}
  tpot_ms: {p50: 25, p95: 40}
classes:
  - name: chat
    quota: support
    mode: interactive
    demand: {rps: 2}
    input_tokens: {p50: 1200, p95: 3500}
    output_tokens: {p50: 200, p95: 600}
    max_tokens: 800
    slo: {ttft_p95_ms: 2500}
    schedule: {start_hour: 8, hours: 14}
  - name: nightly
    quota: support
    mode: batch
    demand: {requests: 8000, within_hours: 6}
    input_tokens: {p50: 1500, p95: 3000}
    output_tokens: {p50: 300, p95: 600}
    max_tokens: 800
    schedule: {start_hour: 22, hours: 6}
  - name: backfill
    quota: support
    mode: batch
    input_tokens: {fixed: 100}
    output_tokens: {fixed: 20}
    max_tokens: 50
    schedule: {start_hour: 12, hours: 2}
`

// TestSchedulesRunEachClassInItsHours: over a simulated day from midnight
// every class sends only in its hours, the nightly batch finishes at
// night, and a run inside one class's hours leaves the others idle.
func TestSchedulesRunEachClassInItsHours(t *testing.T) {
	sc := parse(t, daytimeChatNightlyBatch)
	r := run(t, sc, Options{DurationS: 24 * 3600, IntervalS: 3600})
	in := func(name string, hour int) int {
		for _, c := range r.Classes {
			if c.Name == name {
				return c.Series.Completed[hour]
			}
		}
		t.Fatalf("no class %s", name)
		return 0
	}
	for h := range 24 {
		s := &scenario.Schedule{}
		for _, c := range []struct {
			name        string
			start, span float64
		}{{"chat", 8, 14}, {"nightly", 22, 6}, {"backfill", 12, 2}} {
			*s = scenario.Schedule{StartHour: c.start, Hours: c.span}
			// An hour just after the class's last may still see its last
			// requests complete.
			after := s.Covers(float64((h + 23) % 24))
			switch n := in(c.name, h); {
			case s.Covers(float64(h)) && n == 0:
				t.Errorf("%s completed nothing in hour %d, in its hours", c.name, h)
			case !s.Covers(float64(h)) && !after && n > 0:
				t.Errorf("%s completed %d in hour %d, outside its hours", c.name, n, h)
			}
		}
	}
	chat, nightly := r.Classes[0], r.Classes[1]
	if got, want := float64(chat.Simulated.Requests), 2*14*3600.0; got < 0.97*want || got > 1.03*want {
		t.Errorf("chat: %g requests in a day, want about 2 req/s × 14 h = %g", got, want)
	}
	if got := float64(nightly.Simulated.Requests); got < 0.95*8000 || got > 1.05*8000 {
		t.Errorf("nightly: %g requests, want about 8,000", got)
	}
	if !nightly.Verdict.Holds {
		t.Errorf("nightly: %s", nightly.Verdict.Summary)
	}
	// Ten to eleven: only the chat runs.
	r = run(t, sc, Options{DurationS: 3600, StartHour: 10})
	if r.Classes[0].Idle || !r.Classes[1].Idle || !r.Classes[2].Idle || r.Classes[1].Simulated.Requests != 0 || r.Classes[2].Simulated.Requests != 0 {
		t.Errorf("10:00–11:00: idle %v %v %v, requests %d %d", r.Classes[0].Idle, r.Classes[1].Idle, r.Classes[2].Idle, r.Classes[1].Simulated.Requests, r.Classes[2].Simulated.Requests)
	}
	if !r.Classes[1].Verdict.Holds || r.Classes[1].Verdict.Reasons[0] != "it runs 6 h a day from 22:00 UTC, outside this run" {
		t.Errorf("an idle class: %+v", r.Classes[1].Verdict)
	}
}

func TestOnSpans(t *testing.T) {
	night := &scenario.Schedule{StartHour: 22, Hours: 6}
	got := onSpans(night, 0, 2*day)
	want := []span{{0, 4 * 3600}, {22 * 3600, 28 * 3600}, {46 * 3600, 2 * day}}
	if len(got) != len(want) {
		t.Fatalf("22:00 for 6 h over two days from midnight: %v, want %v", got, want)
	}
	for k := range want {
		if got[k] != want[k] {
			t.Errorf("span %d: %v, want %v", k, got[k], want[k])
		}
	}
	if got := onSpans(night, 23, 3600); len(got) != 1 || got[0] != (span{0, 3600}) {
		t.Errorf("an hour from 23:00: %v", got)
	}
	if got := onSpans(night, 10, 3600); len(got) != 0 {
		t.Errorf("an hour from 10:00: %v, want none", got)
	}
}

// TestGridIndexIsTheDivision: the grid's shortcut gives the interval the
// division gives, for times near every edge and anywhere, in any order.
func TestGridIndexIsTheDivision(t *testing.T) {
	g := newGrid(86400, 360)
	r := rand.New(rand.NewPCG(5, 6))
	for k := range 20000 {
		var x float64
		switch k % 3 {
		case 0:
			x = r.Float64() * 90000
		case 1:
			x = float64(r.IntN(241)) * 360
			for range r.IntN(4) {
				x = math.Nextafter(x, math.Inf(2*r.IntN(2)-1))
			}
		default:
			x = float64(k) * 4.3 // rising, as the clock does
		}
		if got, want := g.index(x), g.slowIndex(x); got != want {
			t.Fatalf("index(%v) = %d, the division gives %d", x, got, want)
		}
	}
}
