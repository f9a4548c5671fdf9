package plan

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plannerdev/planner/internal/scenario"
)

// TestRunRecoversAPanicAndFreesItsSlot: a computation that panics fails
// with a *PanicError that carries the stack, its slot is free, and the
// engine goes on planning.
func TestRunRecoversAPanicAndFreesItsSlot(t *testing.T) {
	e := New(Options{MaxConcurrent: 1})
	err := e.Run(context.Background(), func(context.Context) error { panic("boom") })
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "boom" || !strings.Contains(string(pe.Stack), "limits_test.go") {
		t.Fatalf("error %v, want a *PanicError of boom with its stack", err)
	}
	if n := e.Running(); n != 0 {
		t.Fatalf("%d slots held after the panic", n)
	}
	if _, err := e.Plan(context.Background(), handScenario(scenario.Quota{RPM: 600})); err != nil {
		t.Fatalf("a plan after the panic: %v", err)
	}
}

// TestSweepRecoversAPanicInACell: a cell that panics in any worker fails
// the sweep with a *PanicError, and every slot the sweep took or borrowed
// is free again.
func TestSweepRecoversAPanicInACell(t *testing.T) {
	e := New(Options{MaxConcurrent: 4})
	vars := []Variation{{Path: "/quotas/0/rpm", Values: []any{1, 2, 3, 4, 5, 6, 7, 8}}}
	var planned sync.Map
	err := e.Run(context.Background(), func(ctx context.Context) error {
		_, err := e.sweep(ctx, vars, 8, func(_ context.Context, values []any) Cell {
			planned.Store(values[0], true)
			if values[0] == 6 {
				var cells []Cell
				_ = cells[len(values)] // index out of range
			}
			runtime.Gosched()
			return Cell{Values: values}
		})
		return err
	})
	var pe *PanicError
	if !errors.As(err, &pe) || !strings.Contains(pe.Error(), "index out of range") {
		t.Fatalf("error %v, want a *PanicError of the cell's index out of range", err)
	}
	if _, ok := planned.Load(6); !ok {
		t.Fatal("the panicking cell never ran")
	}
	if n := e.Running(); n != 0 {
		t.Fatalf("%d slots held after the sweep", n)
	}
}

// TestSharedComputationPanicReachesEveryWaiter: when a sample or tail that
// several computations wait for panics, each of them gets the *PanicError
// in its own goroutine; none is raised where no recovery reaches it.
func TestSharedComputationPanicReachesEveryWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := New(Options{})
		release := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range errs {
			wg.Go(func() {
				errs[i] = recovered(func() error {
					_, err := cachedOnce(context.Background(), e, e.samples, sampleKey{1}, func() ([]float64, error) {
						<-release
						panic("sampling failed")
					})
					return err
				})
			})
		}
		synctest.Wait() // one computes, the others wait for it
		close(release)
		wg.Wait()
		for i, err := range errs {
			var pe *PanicError
			if !errors.As(err, &pe) || pe.Value != "sampling failed" {
				t.Errorf("caller %d: %v, want the *PanicError", i, err)
			}
		}
	})
}

// TestRunRefusesBeyondTheQueue: with the only slot taken and one
// computation waiting, the next is refused with ErrBusy; the waiting one
// runs once the slot frees, and a nested computation runs in its caller's
// slot.
func TestRunRefusesBeyondTheQueue(t *testing.T) {
	e := New(Options{MaxConcurrent: 1, MaxQueued: 1})
	hold, held := make(chan struct{}), make(chan struct{})
	go func() {
		_ = e.Run(context.Background(), func(context.Context) error { close(held); <-hold; return nil })
	}()
	<-held
	waited := make(chan error)
	go func() {
		waited <- e.Run(context.Background(), func(ctx context.Context) error {
			// Nested: it would wait for ever on the slot it holds.
			return e.Run(ctx, func(context.Context) error { return nil })
		})
	}()
	for e.limits.waiting.Load() < 1 {
		runtime.Gosched()
	}
	if err := e.Run(context.Background(), func(context.Context) error { return nil }); !errors.Is(err, ErrBusy) {
		t.Fatalf("beyond the queue: %v, want ErrBusy", err)
	}
	close(hold)
	if err := <-waited; err != nil {
		t.Fatalf("the waiting computation: %v", err)
	}
	if n := e.Running(); n != 0 {
		t.Fatalf("%d slots held", n)
	}
}

// TestRunStopsAtTheDeadline: a computation ends at the engine's timeout
// with context.DeadlineExceeded.
func TestRunStopsAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := New(Options{Timeout: 2 * time.Second})
		start := time.Now()
		err := e.Run(context.Background(), func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 2*time.Second {
			t.Fatalf("error %v after %s, want the deadline after 2s", err, time.Since(start))
		}
	})
}

// TestCloseEndsRunningComputations: Close ends a running computation and a
// waiting one with ErrClosed, refuses new ones, and leaves the plan cache
// answering.
func TestCloseEndsRunningComputations(t *testing.T) {
	e := New(Options{MaxConcurrent: 1})
	s := handScenario(scenario.Quota{RPM: 600})
	if _, err := e.Plan(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	running, waiting := make(chan error), make(chan error)
	started := make(chan struct{})
	go func() {
		running <- e.Run(context.Background(), func(ctx context.Context) error { close(started); <-ctx.Done(); return ctx.Err() })
	}()
	<-started
	go func() { waiting <- e.Run(context.Background(), func(context.Context) error { return nil }) }()
	for e.limits.waiting.Load() < 1 {
		runtime.Gosched()
	}
	e.Close()
	for name, ch := range map[string]chan error{"running": running, "waiting": waiting} {
		if err := <-ch; !errors.Is(err, ErrClosed) {
			t.Errorf("%s computation: %v, want ErrClosed", name, err)
		}
	}
	if _, err := e.Sweep(context.Background(), s, []Variation{{Path: "/quotas/0/rpm", Values: []any{700}}}); !errors.Is(err, ErrClosed) {
		t.Errorf("a sweep after Close: %v, want ErrClosed", err)
	}
	if _, err := e.Plan(context.Background(), s); err != nil {
		t.Errorf("a cached plan after Close: %v", err)
	}
}
