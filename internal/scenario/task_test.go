package scenario

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const agent = `
quotas:
  - name: prod
    rpm: 5000
latency:
  ttft_ms: {fixed: 400}
  tpot_ms: {fixed: 20}
classes:
  - name: agent
    quota: prod
    mode: interactive
    demand: {rps: 1}
    input_tokens: {fixed: 2000}
    output_tokens: {fixed: 200}
    task:
      calls: {fixed: 4}
      tool_ms: {p50: 300, p95: 900}
      tool_result_tokens: {fixed: 500}
    slo: {ttft_p95_ms: 2000, task_e2e_ms: 30000}
`

func TestTaskParsesWithItsDefault(t *testing.T) {
	s, err := Parse([]byte(agent))
	if err != nil {
		t.Fatal(err)
	}
	task := s.WithDefaults().Classes[0].Task
	if task == nil || *task.Calls.Fixed != 4 || task.Context != ContextAccumulate || !task.Accumulates() {
		t.Fatalf("task %+v", task)
	}
	if s.Classes[0].Task.Context != "" {
		t.Fatal("WithDefaults wrote into the scenario it was given")
	}
	if s.Classes[0].SLO.TaskE2EMs != 30000 {
		t.Fatalf("slo %+v", s.Classes[0].SLO)
	}
}

// A task's target goes with either form of SLO: at the 95th percentile
// with the older one, at percentile with the newer.
func TestTaskTargetAtAPercentile(t *testing.T) {
	s, err := Parse([]byte(strings.Replace(agent, "slo: {ttft_p95_ms: 2000, task_e2e_ms: 30000}", "slo: {ttft_ms: 2000, task_e2e_ms: 30000, percentile: 99}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if slo := s.Classes[0].SLO; slo.TaskE2E() != 30000 || slo.TTFT() != 2000 || slo.At() != 99 {
		t.Fatalf("slo %+v", slo)
	}
	s, err = Parse([]byte(agent))
	if err != nil {
		t.Fatal(err)
	}
	if slo := s.Classes[0].SLO; slo.TaskE2E() != 30000 || slo.TTFT() != 2000 || slo.At() != DefaultPercentile {
		t.Fatalf("slo %+v", slo)
	}
}

func TestTaskRules(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		paths          []string
	}{
		{"no calls", "calls: {fixed: 4}", "calls: {fixed: 0}", []string{"classes[0].task.calls.fixed"}},
		{"too many calls", "calls: {fixed: 4}", "calls: {fixed: 5000}", []string{"classes[0].task.calls.fixed"}},
		{"calls clipped below one", "calls: {fixed: 4}", "calls: {p50: 3, p95: 9, max: 0.5}", []string{"classes[0].task.calls.max"}},
		{"two forms of tool time", "tool_ms: {p50: 300, p95: 900}", "tool_ms: {fixed: 3, mean: 4, stddev: 1}", []string{"classes[0].task.tool_ms"}},
		{"tool result p95 under p50", "tool_result_tokens: {fixed: 500}", "tool_result_tokens: {p50: 500, p95: 100}", []string{"classes[0].task.tool_result_tokens.p95"}},
		{"unknown context", "tool_result_tokens: {fixed: 500}", "tool_result_tokens: {fixed: 500}\n      context: sometimes", []string{"classes[0].task.context"}},
		{"per-call e2e on a task", "task_e2e_ms: 30000", "e2e_p95_ms: 30000", []string{"classes[0].slo.e2e_p95_ms"}},
		{"per-call e2e at a percentile on a task", "slo: {ttft_p95_ms: 2000, task_e2e_ms: 30000}", "slo: {ttft_ms: 2000, e2e_ms: 30000, percentile: 99}", []string{"classes[0].slo.e2e_ms"}},
		{"percentile with the older form", "task_e2e_ms: 30000", "task_e2e_ms: 30000, percentile: 99", []string{"classes[0].slo.percentile"}},
		{"task target without a task", "    task:\n      calls: {fixed: 4}\n      tool_ms: {p50: 300, p95: 900}\n      tool_result_tokens: {fixed: 500}\n", "", []string{"classes[0].slo.task_e2e_ms"}},
		{"curve", "  ttft_ms: {fixed: 400}\n  tpot_ms: {fixed: 20}\n",
			"  curve:\n    - {concurrency: 1, ttft_p50_ms: 300, ttft_p95_ms: 400, tpot_p50_ms: 20, tpot_p95_ms: 25}\n", []string{"classes[0].task"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(agent, tc.from, tc.to, 1)
			if doc == agent {
				t.Fatal("the replacement changed nothing")
			}
			_, err := Parse([]byte(doc))
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("want Errors, got %v", err)
			}
			var paths []string
			for _, e := range errs {
				paths = append(paths, e.Path)
			}
			for _, p := range tc.paths {
				if !slices.Contains(paths, p) {
					t.Errorf("no problem at %s in %v", p, errs)
				}
			}
		})
	}
}
