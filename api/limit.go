package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/danielgtaylor/huma/v2"
)

// computeLimit bounds the plan and what-if computations that run at once
// across the service, so that a burst of heavy requests cannot take every
// core and all memory: a computation takes a slot, a few more may wait for
// one, and the rest are turned away with 503 and a Retry-After.
type computeLimit struct {
	slots   chan struct{}
	waiting atomic.Int64
	maxWait int64
	running atomic.Int64
}

func newComputeLimit(slots int) *computeLimit {
	return &computeLimit{slots: make(chan struct{}, slots), maxWait: 2 * int64(slots)}
}

// errBusy reports that every slot is taken and the queue is full.
var errBusy = errors.New("every computation slot is busy")

// Acquire takes a slot, waiting for one while at most 2 × slots others
// wait; it fails with errBusy when the queue is full and with ctx's error
// when the request ends first.
func (l *computeLimit) Acquire(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		l.running.Add(1)
		return nil
	default:
	}
	if l.waiting.Add(1) > l.maxWait {
		l.waiting.Add(-1)
		return errBusy
	}
	defer l.waiting.Add(-1)
	select {
	case l.slots <- struct{}{}:
		l.running.Add(1)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TryAcquire takes a slot when one is free, without waiting: a what-if
// grid, which holds one slot, borrows the free ones for more workers.
func (l *computeLimit) TryAcquire() bool {
	select {
	case l.slots <- struct{}{}:
		l.running.Add(1)
		return true
	default:
		return false
	}
}

// Release frees a slot taken by Acquire or TryAcquire.
func (l *computeLimit) Release() {
	l.running.Add(-1)
	<-l.slots
}

// Running is the number of computations holding a slot.
func (l *computeLimit) Running() int { return int(l.running.Load()) }

// computeBusyProblem is the 503 for a computation that found no slot.
func computeBusyProblem() error {
	return huma.ErrorWithHeaders(
		huma.Error503ServiceUnavailable("the service is at its limit of concurrent plan computations; retry shortly"),
		http.Header{"Retry-After": {strconv.Itoa(1)}},
	)
}
