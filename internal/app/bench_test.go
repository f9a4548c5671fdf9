package app

import (
	"context"
	"os"
	"testing"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/testutil"
)

// demandVariants are docs/examples/three-classes.yaml with the chat's
// demand from 2 to 2.9998 req/s: each plans and checks afresh, while the
// Monte Carlo draws and the service times' tails come from the engine's
// caches, as for a new demand sent to the service.
func demandVariants(b *testing.B) []scenario.Scenario {
	out := make([]scenario.Scenario, 5000)
	for i := range out {
		s := testutil.Example(b, "three-classes")
		s.Classes[0].Demand = &scenario.Demand{RPS: 2 + 0.0002*float64(i)}
		out[i] = s
	}
	return out
}

// BenchmarkPlanThreeClassesUnchecked is the engine's plan alone of each
// variant: the yardstick of BenchmarkPlanThreeClassesChecked.
func BenchmarkPlanThreeClassesUnchecked(b *testing.B) {
	vs := demandVariants(b)
	eng := plan.New(plan.Options{})
	i := 0
	for b.Loop() {
		if _, err := eng.Plan(context.Background(), vs[i%len(vs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkPlanThreeClassesChecked is a plan with its check, as every
// plan of the command line and the service is (docs/benchmarks.md).
func BenchmarkPlanThreeClassesChecked(b *testing.B) {
	vs := demandVariants(b)
	a := New(plan.New(plan.Options{}))
	i := 0
	var events int
	for b.Loop() {
		p, err := a.Plan(context.Background(), vs[i%len(vs)])
		if err != nil {
			b.Fatal(err)
		}
		events = p.Check.Runs[0].Events
		i++
	}
	b.ReportMetric(float64(events), "events/check")
}

// benchmarkWhatIf sweeps the chat's demand over 50 values of
// docs/examples/three-classes.yaml, on a new engine each time.
func benchmarkWhatIf(b *testing.B, check bool) {
	s := testutil.Example(b, "three-classes")
	values := make([]any, 50)
	for i := range values {
		values[i] = map[string]any{"rps": 1 + 0.05*float64(i)}
	}
	vars := []plan.Variation{{Path: "/classes/0/demand", Values: values}}
	for b.Loop() {
		if _, err := New(plan.New(plan.Options{})).WhatIf(context.Background(), s, vars, check); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWhatIfThreeClasses50 is a 50-cell what-if without checks.
func BenchmarkWhatIfThreeClasses50(b *testing.B) { benchmarkWhatIf(b, false) }

// BenchmarkWhatIfThreeClasses50Checked is the same grid with every cell
// checked.
func BenchmarkWhatIfThreeClasses50Checked(b *testing.B) { benchmarkWhatIf(b, true) }

// BenchmarkPlanBig32Tight plans and checks testdata/big32-tight.yaml on a
// new engine each time: 32 classes on one key whose tokens-per-minute
// limit binds, arrivals from smooth to bursty (arrival_scv 0, 1, 4, 9)
// and a schedule on every fifth class, so that the day splits into
// windows planned apart.
func BenchmarkPlanBig32Tight(b *testing.B) { benchmarkPlanFile(b, "testdata/big32-tight.yaml") }

// BenchmarkPlanBig32TightNoSchedules is BenchmarkPlanBig32Tight without
// the schedules (testdata/big32-tight-nosched.yaml): one plan of the whole
// day, whose classes that do not fit have their remedies refined from
// plans of the changed scenario.
func BenchmarkPlanBig32TightNoSchedules(b *testing.B) {
	benchmarkPlanFile(b, "testdata/big32-tight-nosched.yaml")
}

// benchmarkPlanFile plans and checks the scenario of a file on a new
// engine each time.
func benchmarkPlanFile(b *testing.B, path string) {
	text, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	s, err := scenario.Parse(text)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(plan.New(plan.Options{})).Plan(context.Background(), s); err != nil {
			b.Fatal(err)
		}
	}
}
