package simulate

import (
	"context"
	"testing"

	"github.com/plannerdev/planner/internal/testutil"
)

// BenchmarkSimulateThreeClassesHour simulates one hour of
// docs/examples/three-classes.yaml with the plan's settings
// (docs/benchmarks.md). Its plan comes from the engine's cache after the
// first run, so the figure is the simulation's own cost.
func BenchmarkSimulateThreeClassesHour(b *testing.B) {
	sc := testutil.Example(b, "three-classes")
	var events int
	for b.Loop() {
		r, err := Run(context.Background(), sc, Options{DurationS: 3600})
		if err != nil {
			b.Fatal(err)
		}
		events = r.Settings.Events
	}
	b.ReportMetric(float64(events), "events/run")
}
