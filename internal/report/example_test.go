package report

import (
	"context"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/app"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/testutil"
)

// exampleDeadlineMs is the deadline of the synthetic probe.
const exampleDeadlineMs = 10000

// syntheticResult is a probe ramp made up to match the curve of
// docs/examples/measured-curve.yaml (same latencies and throughput by
// concurrency), judged by the analysis rules: the knee falls at 24 and
// goodput collapses at 48, where a share of the answers miss the deadline.
func syntheticResult() measure.Result {
	rows := []struct {
		c                                            int
		ttft50, ttft95, tpot50, tpot95, e2e50, e2e95 float64
		thr, good                                    float64
		errs                                         int
	}{
		{1, 120, 160, 14.0, 15.0, 2900, 3300, 0.34, 0.34, 0},
		{4, 130, 190, 15.0, 16.5, 3100, 3600, 1.28, 1.28, 0},
		{8, 150, 240, 16.5, 18.0, 3450, 4000, 2.31, 2.31, 0},
		{16, 190, 330, 19.5, 22.0, 4100, 4900, 3.90, 3.90, 0},
		{24, 240, 450, 23.0, 26.5, 4850, 5800, 4.95, 4.95, 0},
		{32, 900, 2100, 27.0, 32.0, 6300, 8400, 5.08, 5.08, 0},
		{48, 3100, 5200, 28.0, 34.0, 8700, 11800, 5.10, 4.62, 3},
	}
	steps := make([]measure.Step, len(rows))
	for i, r := range rows {
		n := max(40, 4*r.c)
		ok := n - r.errs
		steps[i] = measure.Step{
			Concurrency: r.c, Requests: n, OK: ok, Errors: r.errs, WallS: float64(ok) / r.thr,
			GoodputRPS: r.good, ThroughputRPS: r.thr, OutputTPS: r.thr * 196,
			TTFTP50Ms: r.ttft50, TTFTP95Ms: r.ttft95, E2EP50Ms: r.e2e50, E2EP95Ms: r.e2e95, TPOTP50Ms: r.tpot50, TPOTP95Ms: r.tpot95,
			// Intervals as a probe measures them: goodput ± 2 %, the p95s
			// from just under to a tenth over.
			GoodputCI: &measure.Interval{Lo: r.good * 0.98, Hi: r.good * 1.02},
			TTFTP95CI: &measure.Interval{Lo: r.ttft95 * 0.97, Hi: r.ttft95 * 1.1},
			E2EP95CI:  &measure.Interval{Lo: r.e2e95 * 0.97, Hi: r.e2e95 * 1.1},
		}
	}
	return analysis.Analyze(steps, analysis.Options{DeadlineMs: exampleDeadlineMs})
}

// newApp plans and checks as the command line and the service do, with
// caches of its own: tests may change what it returns.
func newApp() *app.App { return app.New(plan.New(plan.Options{})) }

// examplePlan plans a shipped example scenario, with its check.
func examplePlan(t testing.TB, name string) (scenario.Scenario, *plan.Plan) {
	t.Helper()
	sc := testutil.Example(t, name)
	p, err := newApp().Plan(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	return sc, p
}

var exampleDate = time.Date(2025, 6, 2, 9, 30, 0, 0, time.UTC)
