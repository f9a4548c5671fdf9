package simulate

import (
	"context"
	"testing"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/testutil"
)

// TestSteadyStateAllocatesNothing: once a run is under way its events
// allocate nothing: four simulated hours of docs/examples/three-classes.yaml
// allocate no more than one hour does (what they allocate is the run's
// set-up, its samples and its result, sized by the options, not by the
// events), so that a run's memory is bounded by its event cap.
func TestSteadyStateAllocatesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("four simulated hours")
	}
	ctx := context.Background()
	sc := testutil.Example(t, "three-classes")
	eng := plan.New(plan.Options{})
	p, err := eng.Plan(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	run := func(hours float64) (allocs float64, events int) {
		allocs = testing.AllocsPerRun(2, func() {
			r, err := RunPlan(ctx, eng, sc, p, Options{DurationS: hours * 3600, Samples: 1000})
			if err != nil {
				t.Fatal(err)
			}
			events = r.Settings.Events
		})
		return allocs, events
	}
	a1, e1 := run(1)
	a4, e4 := run(4)
	t.Logf("an hour: %.0f allocations, %d events; four hours: %.0f allocations, %d events", a1, e1, a4, e4)
	if extra := (a4 - a1) / float64(e4-e1); extra > 0.001 {
		t.Errorf("%.4f allocations an event once under way (%.0f more for %d more events), want none", extra, a4-a1, e4-e1)
	}
}

// TestDroppedRequestsAreForgotten: the table of requests holds only those
// something still refers to (a queue, an event, a retry waiting to go, a
// closed loop's next request, the spares), not the shed and given up, so
// that a run that loses most of its requests holds no more than one that
// does not.
func TestDroppedRequestsAreForgotten(t *testing.T) {
	ctx := context.Background()
	sc := testutil.Example(t, "daily-limit-batch")
	eng := plan.New(plan.Options{})
	p, err := eng.Plan(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := eng.Workloads(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	s := newSim(ctx, sc.WithDefaults(), p, ws, Options{DurationS: 24 * 3600}.withDefaults(sc))
	if err := s.run(); err != nil {
		t.Fatal(err)
	}
	held := map[*request]bool{}
	for _, r := range s.spare {
		held[r] = true
	}
	var lost int
	for _, c := range s.clients {
		lost += c.st.gaveUp + c.st.shed
		for _, r := range c.queue[c.head:] {
			held[r] = true
		}
		for _, r := range c.resend {
			held[r] = true
		}
		if c.pending != nil {
			held[c.pending] = true
		}
	}
	for _, h := range []heap{s.queue.arrivals, s.queue.rest} {
		for _, e := range h {
			if e.kind() >= evRetry {
				held[s.requests[e.ref]] = true
			}
		}
	}
	var tabled int
	for _, r := range s.requests {
		if r != nil {
			tabled++
			if !held[r] {
				t.Fatalf("request %d is in the table but nothing refers to it", r.id)
			}
		}
	}
	if lost == 0 {
		t.Fatal("no request was shed or given up: the run tests nothing")
	}
	t.Logf("%d requests lost, %d in the table, all referred to", lost, tabled)
}
