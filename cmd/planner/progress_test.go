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
