package simulate

import (
	"context"
	"runtime"
	"testing"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/testutil"
)

// benchmarkRun simulates an example repeatedly and reports the events of a
// run and the bytes allocated per event, which bound the memory a run
// holds: everything a run keeps was allocated during it.
func benchmarkRun(b *testing.B, example string, o Options) {
	sc := testutil.Example(b, example)
	eng := plan.New(plan.Options{})
	var events int
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	runs := 0
	for b.Loop() {
		r, err := Run(context.Background(), eng, sc, o)
		if err != nil {
			b.Fatal(err)
		}
		events = r.Settings.Events
		runs++
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(events), "events/run")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(runs*events), "B/event")
}

// BenchmarkSimulateThreeClassesHour simulates one hour of
// docs/examples/three-classes.yaml with the plan's settings
// (docs/benchmarks.md). Its plan comes from one engine's cache after the
// first run, so the figure is the simulation's own cost.
func BenchmarkSimulateThreeClassesHour(b *testing.B) {
	benchmarkRun(b, "three-classes", Options{DurationS: 3600})
}

// BenchmarkSimulateBacklogFourHours simulates four hours of
// docs/examples/daily-limit-batch.yaml, whose queue grows all along: the
// worst case for memory, every arrival still held at the end.
func BenchmarkSimulateBacklogFourHours(b *testing.B) {
	benchmarkRun(b, "daily-limit-batch", Options{DurationS: 4 * 3600})
}

// BenchmarkSimulateThreeClassesDay simulates 24 hours of
// docs/examples/three-classes.yaml, the run docs/benchmarks.md times
// against the release before.
func BenchmarkSimulateThreeClassesDay(b *testing.B) {
	benchmarkRun(b, "three-classes", Options{DurationS: 24 * 3600})
}
