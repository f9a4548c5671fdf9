package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/measure"
)

// TestStepLineWithoutSuccesses: a step in which no request succeeded has
// no latency to show, and its line says so rather than "TTFT p95 0 ms".
func TestStepLineWithoutSuccesses(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b}
	p.StepDone(measure.Step{Concurrency: 4, Requests: 12, RateLimited: 12})
	p.StepDone(measure.Step{Concurrency: 8, Requests: 20, OK: 20, TTFTP95Ms: 210, E2EP95Ms: 900})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || strings.Contains(lines[0], "TTFT") || !strings.Contains(lines[0], "no request succeeded") {
		t.Errorf("a step without successes: %q", lines[0])
	}
	if len(lines) != 2 || !strings.Contains(lines[1], "TTFT p95 210 ms, E2E p95 900 ms") {
		t.Errorf("a step with successes: %q", b.String())
	}
}

// TestStepLineOfAnOpenLoop: every step of an open loop runs at the same
// in-flight cap, so its line names the step by its rate.
func TestStepLineOfAnOpenLoop(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b}
	p.StepDone(measure.Step{Concurrency: 8, RateRPS: 20, Requests: 40, OK: 40, GoodputRPS: 19.5, TTFTP95Ms: 21, E2EP95Ms: 55})
	p.StepDone(measure.Step{Concurrency: 8, RateRPS: 200, Requests: 16, OK: 16, GoodputRPS: 97.3, TTFTP95Ms: 24, E2EP95Ms: 58})
	want := "20 req/s (at most 8 in flight): 40 requests, 40 ok, 0 429, 0 errors, goodput 19.50/s, TTFT p95 21 ms, E2E p95 55 ms\n" +
		"200 req/s (at most 8 in flight): 16 requests, 16 ok, 0 429, 0 errors, goodput 97.30/s, TTFT p95 24 ms, E2E p95 58 ms\n"
	if b.String() != want {
		t.Errorf("lines\n%s\nwant\n%s", b.String(), want)
	}
}
