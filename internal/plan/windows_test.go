package plan

import (
	"math"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

// supportKey is the support chat of docs/concepts.md's time windows: a
// chat of 2 req/s by day on a key that counts max_tokens.
const supportKey = `
quotas:
  - name: support
    rpm: 5000
    tpm: 450000
    token_accounting: max_tokens
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
`

func TestWindowsOfTheDay(t *testing.T) {
	s := parse(t, supportKey)
	wins := windowsOf(s)
	if len(wins) != 2 {
		t.Fatalf("windows %+v, want 08:00 for 14 h (chat) and 22:00 for 6 h (nightly)", wins)
	}
	for k, want := range []struct {
		start, hours float64
		active       []bool
	}{{8, 14, []bool{true, false}}, {22, 6, []bool{false, true}}} {
		if w := wins[k]; w.start != want.start || w.hours != want.hours || w.active[0] != want.active[0] || w.active[1] != want.active[1] {
			t.Errorf("window %d: %+v, want %+v", k, w, want)
		}
	}
	// Overlapping hours cut the day where either starts or ends, and a
	// window past midnight is one.
	s.Classes[1].Schedule = &scenario.Schedule{StartHour: 20, Hours: 10}
	wins = windowsOf(s)
	if len(wins) != 3 || wins[1].start != 20 || wins[1].hours != 2 || !wins[1].active[0] || !wins[1].active[1] || wins[2].start != 22 || wins[2].hours != 8 {
		t.Errorf("chat 08–22 and nightly 20–06: %+v", wins)
	}
	s.Classes[0].Schedule, s.Classes[1].Schedule = nil, nil
	if windowsOf(s) != nil {
		t.Error("without schedules the day is one plan")
	}
}

// TestNightlyBatchBesideDaytimeChat: on the chat's key, the batch of 8,000
// documents in 6 h gets a pool and finishes in its window at night, and
// the chat keeps the plan it has alone.
func TestNightlyBatchBesideDaytimeChat(t *testing.T) {
	s := parse(t, supportKey)
	p := mustPlan(t, s)
	chat, batch := p.Classes[0], p.Classes[1]
	if batch.Pool < 1 || !batch.Feasible || batch.Batch == nil || !batch.Batch.MeetsWindow {
		t.Fatalf("nightly: pool %d, feasible %v, batch %+v: want a pool that finishes in the window", batch.Pool, batch.Feasible, batch.Batch)
	}
	if chat.MinPool == nil || chat.Pool < *chat.MinPool || !chat.Feasible {
		t.Fatalf("chat: pool %d below min_pool %v", chat.Pool, chat.MinPool)
	}
	alone := s
	alone.Classes = s.Classes[:1]
	alone.Classes[0].Schedule = nil
	a := mustPlan(t, alone).Classes[0]
	if chat.Pool != a.Pool || *chat.MinPool != *a.MinPool {
		t.Errorf("chat by day: pool %d, min_pool %d; alone on the key: %d, %d", chat.Pool, *chat.MinPool, a.Pool, *a.MinPool)
	}
	if len(p.Windows) != 2 || p.Windows[1].StartHour != 22 || len(p.Windows[1].Classes) != 1 || p.Windows[1].Classes[0].Name != "nightly" || !p.Windows[1].Classes[0].SetsPool {
		t.Errorf("windows: %+v", p.Windows)
	}
	// All day on the same key, the chat's reservation leaves the batch
	// next to nothing: the windows are what make room for it.
	both := parse(t, supportKey)
	both.Classes[0].Schedule, both.Classes[1].Schedule = nil, nil
	if b := mustPlan(t, both).Classes[1]; b.Pool >= batch.Pool {
		t.Errorf("all day the batch gets %d, by night %d: the window should give it more", b.Pool, batch.Pool)
	}
}

// TestDailyLimitOverTheClassHours: a class that runs 6 h a day may use its
// key's daily limit at four times the rate of one that runs all day, and
// two classes by day and by night share one daily limit.
func TestDailyLimitOverTheClassHours(t *testing.T) {
	const sc = `
quotas:
  - name: k
    rpd: 10000
latency:
  ttft_ms: {fixed: 500}
  tpot_ms: {fixed: 20}
classes:
  - name: job
    quota: k
    mode: batch
    input_tokens: {fixed: 100}
    output_tokens: {fixed: 101}
    schedule: {start_hour: 0, hours: 6}
`
	// E[S] = 0.5 + 0.02 × 100 = 2.5 s. All day: 0.9 × 10,000 / 86,400 s
	// = 0.104 req/s → 0.26 in flight, pool 0. Over 6 h: 0.417 req/s →
	// 1.04, pool 1.
	s := parse(t, sc)
	if got := rpdCeiling(t, mustPlan(t, s).Classes[0]); got != 1 {
		t.Errorf("rpd ceiling over 6 h a day: %d, want ⌊0.9 × 10,000 / 21,600 × 2.5⌋ = 1", got)
	}
	s.Classes[0].Schedule = nil
	if got := rpdCeiling(t, mustPlan(t, s).Classes[0]); got != 0 {
		t.Errorf("rpd ceiling all day: %d, want 0", got)
	}
	// Two classes that never meet still share the day's 9,000 requests:
	// each gets half, counted over its own hours.
	s = parse(t, sc)
	s.Quotas[0].RPD = 1e6
	day := s.Classes[0]
	day.Name, day.Schedule = "day", &scenario.Schedule{StartHour: 8, Hours: 12}
	s.Classes = append(s.Classes, day)
	p := mustPlan(t, s)
	night, dayCeil := rpdCeiling(t, p.Classes[0]), rpdCeiling(t, p.Classes[1])
	// Half of 900,000 a day: 450,000 over 6 h is 20.8 req/s (52 in
	// flight), over 12 h 10.4 req/s (26).
	if night != int(math.Floor(450000/(6*3600.0)*2.5)) || dayCeil != int(math.Floor(450000/(12*3600.0)*2.5)) {
		t.Errorf("rpd ceilings night %d, day %d; want 52 and 26", night, dayCeil)
	}
	if u := p.Quotas[0].Utilization["rpd"]; u < 0.89 || u > 0.9 {
		t.Errorf("the day's rpd use is %g, want about 0.9 (both pools run flat out within the headroom)", u)
	}
}

func rpdCeiling(t *testing.T, c ClassPlan) int {
	t.Helper()
	for _, ce := range c.Ceilings {
		if ce.Constraint == "rpd" && ce.MaxPool != nil {
			return *ce.MaxPool
		}
	}
	t.Fatalf("%s has no finite rpd ceiling: %+v", c.Name, c.Ceilings)
	return 0
}

func parse(t *testing.T, yaml string) scenario.Scenario {
	t.Helper()
	s, err := scenario.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestProfileSizesAtItsPeak: a demand profile that doubles the rate for a
// while sizes the plan at twice the rate, and says so.
func TestProfileSizesAtItsPeak(t *testing.T) {
	s := parse(t, supportKey)
	s.Classes = s.Classes[:1]
	s.Classes[0].Schedule = nil
	steady := mustPlan(t, s).Classes[0]
	s.Classes[0].Demand = &scenario.Demand{RPS: 1, Profile: []scenario.DemandWindow{{StartS: 600, DurationS: 300, Factor: 2}, {StartS: 1200, DurationS: 60, Factor: 0.5}}}
	peak := mustPlan(t, s).Classes[0]
	if *peak.MinPool != *steady.MinPool || peak.Predicted.OfferedRPS != 2 {
		t.Errorf("1 req/s peaking at 2: min_pool %d, offered %g; 2 req/s steady: min_pool %d", *peak.MinPool, peak.Predicted.OfferedRPS, *steady.MinPool)
	}
	found := false
	for _, w := range peak.Warnings {
		found = found || w == "sized at the peak of its demand profile: 2 × its steady 1 req/s, 2 req/s"
	}
	if !found {
		t.Errorf("no warning of the peak: %q", peak.Warnings)
	}
}

// TestDailyLimitCountsTheDemandsVolume: a daily limit holds the day's
// volume, which an open class's demand sets whatever its pool, so that a
// chat whose 100,800 requests over its 14 hours fit its share of 135,000
// a day is not held to the pool that would use the share up running flat
// out (15, below the 16 its SLO needs): its rpd ceiling is unbounded, and
// the key's tokens per minute bind it; a larger rpd changes nothing.
func TestDailyLimitCountsTheDemandsVolume(t *testing.T) {
	doc := `
quotas:
  - {name: key, rpm: 5000, tpm: 450000, rpd: RPD, token_accounting: max_tokens}
latency: {ttft_ms: {p50: 600, p95: 1400}, tpot_ms: {p50: 20, p95: 30}}
classes:
  - {name: chat, quota: key, mode: interactive, demand: {rps: 2}, schedule: {start_hour: 8, hours: 14}, input_tokens: {p50: 1200, p95: 3500}, output_tokens: {p50: 200, p95: 600}, max_tokens: 800, slo: {ttft_p95_ms: 2500}}
  - {name: nightly, quota: key, mode: batch, demand: {requests: 8000, within_hours: 6}, schedule: {start_hour: 0, hours: 6}, input_tokens: {p50: 2000, p95: 4000}, output_tokens: {p50: 300, p95: 600}, max_tokens: 800}
`
	p := mustPlan(t, parse(t, strings.Replace(doc, "RPD", "150000", 1)))
	chat := p.Classes[0]
	if !chat.Feasible || chat.BindingConstraint == "rpd" || chat.MinPool == nil || chat.Pool < *chat.MinPool {
		t.Fatalf("chat: pool %d, min_pool %v, bound by %s, feasible %v", chat.Pool, chat.MinPool, chat.BindingConstraint, chat.Feasible)
	}
	for _, c := range chat.Ceilings {
		if c.Constraint == "rpd" && c.MaxPool != nil {
			t.Errorf("chat's rpd ceiling is %d: %s", *c.MaxPool, c.Detail)
		}
	}
	more := mustPlan(t, parse(t, strings.Replace(doc, "RPD", "300000", 1)))
	for i, c := range p.Classes {
		if more.Classes[i].Pool != c.Pool {
			t.Errorf("%s: pool %d at rpd 150,000 and %d at 300,000", c.Name, c.Pool, more.Classes[i].Pool)
		}
	}
}
