package simulate

import (
	"strings"
	"testing"
)

// TestNoArrivalHoldsWithNothingToJudge: at one request in 10⁹ seconds an
// hour sees no arrival; the class holds, as the plan's check says it
// does, with nothing to judge.
func TestNoArrivalHoldsWithNothingToJudge(t *testing.T) {
	sc := parse(t, `
quotas: [{name: k, rpm: 5000}]
latency: {ttft_ms: {p50: 600, p95: 1600}, tpot_ms: {p50: 18, p95: 30}}
classes:
  - {name: chat, quota: k, mode: interactive, demand: {rps: 1e-9}, input_tokens: {p50: 1200, p95: 3500}, output_tokens: {p50: 200, p95: 600}, slo: {ttft_p95_ms: 2500}}
`)
	c := run(t, sc, Options{DurationS: 3600}).Classes[0]
	if c.Simulated.Requests != 0 || !c.Verdict.Holds || !strings.Contains(c.Verdict.Summary, "no request arrived") {
		t.Fatalf("%d requests, verdict %+v", c.Simulated.Requests, c.Verdict)
	}
}

// TestTooShortARunHasNothingToJudge: in a second of simulated time no
// request of a class whose E2E p95 is seconds can complete; the class
// holds with nothing to judge rather than failing for "no request
// completed", and the run's verdict says it judged nothing. The same
// class in an hour is judged.
func TestTooShortARunHasNothingToJudge(t *testing.T) {
	sc := parse(t, `
quotas: [{name: k, rpm: 5000}]
latency: {ttft_ms: {p50: 600, p95: 1600}, tpot_ms: {p50: 18, p95: 30}}
classes:
  - {name: chat, quota: k, mode: interactive, demand: {rps: 5}, input_tokens: {p50: 1200, p95: 3500}, output_tokens: {p50: 200, p95: 600}, slo: {ttft_p95_ms: 2500}}
`)
	r := run(t, sc, Options{DurationS: 1})
	c := r.Classes[0]
	if c.Simulated.Requests == 0 || c.Simulated.Completed != 0 {
		t.Fatalf("%d requests, %d completed: want some, none completed", c.Simulated.Requests, c.Simulated.Completed)
	}
	if !c.Verdict.Holds || !strings.Contains(c.Verdict.Summary, "no request could complete") || !strings.Contains(c.Verdict.Reasons[0], "run it longer") {
		t.Fatalf("verdict %+v", c.Verdict)
	}
	if !r.Verdict.Holds || !strings.HasPrefix(r.Verdict.Summary, "nothing to judge") {
		t.Fatalf("run's verdict %+v", r.Verdict)
	}
	long := run(t, sc, Options{DurationS: 3600})
	if v := long.Classes[0].Verdict; strings.Contains(v.Summary, "could complete") || !v.Holds {
		t.Fatalf("an hour's verdict %+v", v)
	}
}
