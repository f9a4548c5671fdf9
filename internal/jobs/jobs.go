// Package jobs runs the service's probes in the background
// (docs/service-probes.md, "A probe's life"): each probe is a job with its
// own context; at most a configured number of slots are taken at once, by
// jobs and by plan validations, each slot before any request of its work
// leaves; the rows a probe measures are written to the store in small
// batches as they arrive, so that a kill loses at most the last batch, and
// what the store refuses for want of room (rows, a run's end) waits in
// memory until it takes it; the analysis of the steps finished so far is
// saved after each step and the whole result at the end; and progress is
// fanned out to any number of subscribers without a slow one ever holding
// the probe back.
//
// A job's status goes queued → running → succeeded | failed | cancelled,
// or interrupted when the service stops it: on a graceful shutdown here,
// and on the next start (by the store) after a crash or a kill. cancelled
// always means that a client asked for it.
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/redact"
	"github.com/plannerdev/planner/internal/store"
)

// Store is what the jobs need of the store.
type Store interface {
	CreateProbe(ctx context.Context, p store.ProbeRun) (string, error)
	GetProbe(ctx context.Context, id string) (store.ProbeRun, error)
	SetProbeStatus(ctx context.Context, id string, status store.Status, errMsg string) error
	AppendRecords(ctx context.Context, probeID string, recs []measure.Record) error
	SaveProbeResult(ctx context.Context, id string, r store.ProbeResult) error
}

// Defaults of Options.
const (
	DefaultMaxRunning       = 2
	DefaultFlushInterval    = 100 * time.Millisecond
	DefaultFlushRows        = 100
	DefaultProgressInterval = 250 * time.Millisecond
	// subscriberBuffer is the events a subscriber may fall behind by
	// before it is dropped.
	subscriberBuffer = 256
	// storeTimeout bounds each store write, which must happen even after
	// the job's own context ended.
	storeTimeout = 10 * time.Second
)

// Errors of Acquire, Slot.Start and Cancel.
var (
	// ErrClosed means the manager is shutting down and starts nothing.
	ErrClosed = errors.New("the service is shutting down")
	// ErrNotRunning means that no job with that id is queued or running
	// in this process.
	ErrNotRunning = errors.New("the probe is not running")
)

// BusyError is returned when max_running probes already run.
type BusyError struct {
	// Limit is the configured max_running.
	Limit int
}

// Error names the limit.
func (e *BusyError) Error() string {
	return fmt.Sprintf("%d probes (the limit max_running) are already running; try again when one has finished", e.Limit)
}

// Options configure a Manager; zero values select the defaults.
type Options struct {
	// MaxRunning bounds the slots taken at once: running jobs, and slots
	// held with Acquire.
	MaxRunning int
	// FlushInterval and FlushRows bound how long and how many rows a
	// measured request waits before it is written: whichever comes first.
	FlushInterval time.Duration
	FlushRows     int
	// ProgressInterval is the least time between two progress events.
	ProgressInterval time.Duration
	// Logger receives the failures of store writes; nil discards them.
	Logger *slog.Logger
}

// Manager starts, tracks and stops jobs. It is safe for concurrent use.
type Manager struct {
	st   Store
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	jobs    map[string]*job
	slots   map[*Slot]struct{} // held, not handed to a job
	running int                // jobs plus held slots
	closed  bool
	closing chan struct{}  // closed by Shutdown
	wg      sync.WaitGroup // jobs plus held slots
}

// New returns a manager that records its jobs in st.
func New(st Store, opts Options) *Manager {
	if opts.MaxRunning <= 0 {
		opts.MaxRunning = DefaultMaxRunning
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.FlushRows <= 0 {
		opts.FlushRows = DefaultFlushRows
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = DefaultProgressInterval
	}
	m := &Manager{st: st, opts: opts, log: opts.Logger, jobs: map[string]*job{}, slots: map[*Slot]struct{}{}, closing: make(chan struct{})}
	if m.log == nil {
		m.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return m
}

// MaxRunning is the configured limit of jobs at once.
func (m *Manager) MaxRunning() int { return m.opts.MaxRunning }

// Spec is one probe to run.
type Spec struct {
	// Config is the probe, complete: key, network hooks and caps applied.
	Config probe.Config
	// Run is what the store keeps of it: label, base URL and model, and
	// the configuration as JSON without the key. Its status is set here.
	Run store.ProbeRun
}

// slotState is where a slot is in its life; it changes under Manager.mu.
type slotState int

const (
	slotHeld     slotState = iota // reserved, nothing started in it
	slotReleased                  // given back
	slotStarted                   // handed to a job, which gives it back when it ends
)

// Slot is one of the max_running places. The API reserves it before any
// request of the work leaves (a probe's target check and preflight, a
// validation's probes), so that a refusal for want of a slot sends
// nothing. Its context ends when the manager shuts down, which stops the
// work done in it.
type Slot struct {
	m      *Manager
	ctx    context.Context
	cancel context.CancelCauseFunc
	state  slotState
}

// Acquire reserves a running slot, with a context that ends with ctx or
// at shutdown (cause ErrClosed). It fails with a *BusyError when
// max_running slots are taken, or ErrClosed during shutdown. The caller
// must Release the slot, or Start a probe in it.
func (m *Manager) Acquire(ctx context.Context) (*Slot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.closed:
		return nil, ErrClosed
	case m.running >= m.opts.MaxRunning:
		return nil, &BusyError{Limit: m.opts.MaxRunning}
	}
	sctx, cancel := context.WithCancelCause(ctx)
	s := &Slot{m: m, ctx: sctx, cancel: cancel}
	m.running++
	m.slots[s] = struct{}{}
	m.wg.Add(1)
	return s, nil
}

// Context ends with the context given to Acquire, at shutdown, or once
// the slot is released.
func (s *Slot) Context() context.Context { return s.ctx }

// ShutDown reports whether the slot's context ended because the service
// is shutting down.
func (s *Slot) ShutDown() bool { return errors.Is(context.Cause(s.ctx), ErrClosed) }

// Release gives the slot back. It does nothing when the slot was already
// released or handed to a probe, so that it can be deferred.
func (s *Slot) Release() {
	m := s.m
	m.mu.Lock()
	if s.state != slotHeld {
		m.mu.Unlock()
		return
	}
	s.state = slotReleased
	delete(m.slots, s)
	m.running--
	m.mu.Unlock()
	s.cancel(context.Canceled)
	m.wg.Done()
}

// errSlotUsed is a programming error: a slot started twice, or after its
// release.
var errSlotUsed = errors.New("the running slot was released or already used")

// Start stores the probe as queued and runs it in the background in the
// slot, which the job then keeps until it ends. It returns the probe as
// stored when it was accepted (queued, whatever has happened since), or
// ErrClosed during shutdown; on an error the slot is still the caller's.
func (s *Slot) Start(spec Spec) (store.ProbeRun, error) {
	m := s.m
	m.mu.Lock()
	state, closed := s.state, m.closed
	m.mu.Unlock()
	switch {
	case state != slotHeld:
		return store.ProbeRun{}, errSlotUsed
	case closed:
		return store.ProbeRun{}, ErrClosed
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	run := spec.Run
	run.Status = store.StatusQueued
	id, err := m.st.CreateProbe(ctx, run)
	if err == nil {
		run, err = m.st.GetProbe(ctx, id)
	}
	if err != nil {
		return store.ProbeRun{}, fmt.Errorf("store the probe: %w", err)
	}
	jctx, jcancel := context.WithCancelCause(context.Background())
	j := &job{
		m: m, id: id, cfg: spec.Config, ctx: jctx, cancel: jcancel,
		done: make(chan struct{}), flush: make(chan struct{}, 1),
		status: store.StatusQueued, subs: map[*Subscription]struct{}{},
		redact: redact.New(spec.Config.APIKey),
	}
	m.mu.Lock()
	if s.state != slotHeld {
		m.mu.Unlock()
		return store.ProbeRun{}, errSlotUsed
	}
	// The slot's place and its count in wg pass to the job.
	s.state = slotStarted
	delete(m.slots, s)
	m.jobs[id] = j
	if m.closed {
		// Shutdown began while the probe was being stored: it ends at
		// once, as interrupted, and Shutdown waits for that.
		j.cancel(errShutdown)
	}
	m.mu.Unlock()
	s.cancel(context.Canceled)
	go j.run()
	return run, nil
}

// Causes of a job's cancellation.
var (
	errCancelled = errors.New("cancelled by a client")
	errShutdown  = errors.New("the service is shutting down")
)

// Cancel stops a queued or running job and returns a channel closed once
// the job has saved what it measured and ended as cancelled. ErrNotRunning
// means no such job runs in this process (it ended, or never existed).
func (m *Manager) Cancel(id string) (<-chan struct{}, error) {
	m.mu.Lock()
	j, ok := m.jobs[id]
	m.mu.Unlock()
	if !ok {
		return nil, ErrNotRunning
	}
	j.cancel(errCancelled)
	return j.done, nil
}

// Running reports whether a job with that id is queued or running here.
func (m *Manager) Running(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.jobs[id]
	return ok
}

// Shutdown refuses new jobs and slots, cancels the running jobs, which end
// as interrupted after saving what they measured, ends the context of
// every held slot (a validation, a probe's preflight), and waits until the
// jobs have ended and the slots are released, or ctx ends.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	if !m.closed {
		close(m.closing)
	}
	m.closed = true
	for _, j := range m.jobs {
		j.cancel(errShutdown)
	}
	for s := range m.slots {
		s.cancel(ErrClosed)
	}
	m.mu.Unlock()
	waited := make(chan struct{})
	go func() {
		m.wg.Wait()
		close(waited)
	}()
	select {
	case <-waited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("probes or validations still running at shutdown: %w", ctx.Err())
	}
}

// marshalLimits encodes the announced rate limits, nil when none.
func marshalLimits(r probe.RateLimits) (json.RawMessage, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	if string(b) == "{}" || string(b) == "null" {
		return nil, nil
	}
	return b, nil
}
