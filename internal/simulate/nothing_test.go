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
