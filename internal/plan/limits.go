package plan

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/plannerdev/planner/internal/scenario"
)

// Options are an engine's limits on the computations it runs (plans,
// what-if grids, and what a caller runs with Engine.Run, such as a
// simulation), in the manner of Prometheus's promql.EngineOpts: a deadline
// for each, a number of compute slots, and a bounded queue of computations
// waiting for one. The zero value has no deadline, one slot per CPU and a
// queue of twice that.
type Options struct {
	// Timeout bounds one computation, the time it waits for a slot
	// included; 0 means no deadline.
	Timeout time.Duration
	// MaxConcurrent is the number of computations that run at once (a
	// what-if grid runs its cells in the slots that are free); 0 means
	// one per CPU.
	MaxConcurrent int
	// MaxQueued is the number of computations that may wait for a slot
	// when every one is taken; more are refused with ErrBusy. 0 means
	// twice MaxConcurrent.
	MaxQueued int
	// Tiers is the quota-tier catalogue that remedies name a tier from
	// (the limits and price of each, named by the tier): a remedy that
	// raises a key's limit names the cheapest tier in which the class
	// fits and what the change costs (docs/concepts.md, "Cost").
	Tiers []scenario.Quota
}

// Errors of a computation that did not run to its end.
var (
	// ErrBusy refuses a computation when every slot is taken and the
	// queue is full: the caller may retry shortly.
	ErrBusy = errors.New("every computation slot is busy and the queue of waiting computations is full")
	// ErrClosed refuses a computation once Close was called, and ends the
	// computations that were running then.
	ErrClosed = errors.New("the planning engine is shutting down")
)

// PanicError is a panic inside a computation or one of its goroutines,
// recovered: the computation failed, its slot is free and the process goes
// on. Stack is where it happened, for the caller's log; it says nothing a
// client should see.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("the computation panicked: %v", e.Value) }

// limits are an engine's compute slots and what waits for them.
type limits struct {
	timeout time.Duration
	slots   chan struct{}
	waiting atomic.Int64
	maxWait int64
	running atomic.Int64
	// closing ends when Close is called: it cancels every computation.
	closing context.Context
	close   context.CancelFunc
}

func newLimits(o Options) *limits {
	n := o.MaxConcurrent
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	q := o.MaxQueued
	if q <= 0 {
		q = 2 * n
	}
	l := &limits{timeout: o.Timeout, slots: make(chan struct{}, n), maxWait: int64(q)}
	l.closing, l.close = context.WithCancel(context.Background())
	return l
}

// heldKey marks the context of a computation that holds a slot of an
// engine: what it asks of the same engine runs in that slot.
type heldKey struct{}

// Run runs compute as one computation under the engine's limits: it waits
// for a slot (ErrBusy when the queue is full, ErrClosed after Close, the
// context's error when it ends first), gives compute a context that ends at
// the engine's deadline or at Close, frees the slot when compute returns or
// panics, and turns a panic into a *PanicError. Plans and sweeps that
// compute asks of the same engine run in its slot. An error of a
// computation that Close ended is ErrClosed.
func (e *Engine) Run(ctx context.Context, compute func(ctx context.Context) error) error {
	if ctx.Value(heldKey{}) == e {
		return compute(ctx) // nested: the outer computation holds the slot and recovers
	}
	l := e.limits
	if l.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.timeout)
		defer cancel()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(l.closing, func() { cancel(ErrClosed) })
	defer stop()
	if err := l.acquire(ctx); err != nil {
		return closedOr(ctx, err)
	}
	defer l.release()
	err := recovered(func() error { return compute(context.WithValue(ctx, heldKey{}, e)) })
	if err != nil {
		return closedOr(ctx, err)
	}
	return nil
}

// closedOr is ErrClosed when Close ended the computation of ctx, else err.
func closedOr(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), ErrClosed) {
		return ErrClosed
	}
	return err
}

// Running is the number of computations holding a slot, the workers that
// a what-if grid borrowed included.
func (e *Engine) Running() int { return int(e.limits.running.Load()) }

// Waiting is the number of computations waiting for a slot.
func (e *Engine) Waiting() int { return int(e.limits.waiting.Load()) }

// Close ends every running computation, which returns ErrClosed, and
// refuses new ones with ErrClosed. A service calls it when it shuts down.
// The caches stay usable: Plan still answers what it has cached.
func (e *Engine) Close() { e.limits.close() }

// acquire takes a slot, waiting for one while at most maxWait others wait.
func (l *limits) acquire(ctx context.Context) error {
	if l.closing.Err() != nil {
		return ErrClosed
	}
	select {
	case l.slots <- struct{}{}:
		l.running.Add(1)
		return nil
	default:
	}
	if l.waiting.Add(1) > l.maxWait {
		l.waiting.Add(-1)
		return ErrBusy
	}
	defer l.waiting.Add(-1)
	select {
	case l.slots <- struct{}{}:
		if l.closing.Err() != nil { // Close came first: its cancel may not have reached ctx yet
			<-l.slots
			return ErrClosed
		}
		if err := ctx.Err(); err != nil { // both were ready: the end wins
			<-l.slots
			return err
		}
		l.running.Add(1)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tryAcquire takes a slot when one is free, without waiting: a what-if
// grid, which holds one slot, borrows the free ones for more workers.
func (l *limits) tryAcquire() bool {
	if l.closing.Err() != nil {
		return false
	}
	select {
	case l.slots <- struct{}{}:
		l.running.Add(1)
		return true
	default:
		return false
	}
}

// release frees a slot taken by acquire or tryAcquire.
func (l *limits) release() {
	l.running.Add(-1)
	<-l.slots
}

// recovered runs f and turns a panic in it into a *PanicError, so that a
// goroutine of a computation never takes the process down with it.
func recovered(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			var pe *PanicError
			if e, ok := v.(error); ok && errors.As(e, &pe) {
				err = pe // re-raised from another goroutine's recovery
				return
			}
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return f()
}
