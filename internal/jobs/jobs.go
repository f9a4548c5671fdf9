// Package jobs runs the service's probes in the background
// (docs/service-probes.md, "A probe's life"; docs/deploy.md for several
// services on one database): each probe is a job with its own context;
// at most a configured number of places are taken at once, by jobs and by
// plan validations, each before any request of its work leaves. The
// places are rows of the store held under a lease (package store,
// leases.go), so that the limit holds across every service on a shared
// database; on such a database each service renews its leases and marks
// interrupted the runs of a service whose leases expired. The rows a
// probe measures and its events (progress, each step's summary, and the
// status changes the store writes) are written to the store in small
// batches as they arrive, so that a kill loses at most the last batch and
// any service can stream any probe (Follow); what the store refuses for
// want of room (rows, events, a run's end) waits in memory until it takes
// it; the analysis of the steps finished so far is saved after each step
// and the whole result at the end. A reader of the events never holds a
// probe back: it reads the store at its own pace.
//
// A job's status goes queued → running → succeeded | failed | cancelled,
// or interrupted when the service stops it: on a graceful shutdown here,
// on the next start (by the store) after a crash or a kill of a service
// on its own SQLite file, and by another service once the lease expired on
// a shared database. cancelled always means that a client asked for it,
// on any service.
package jobs

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/redact"
	"github.com/plannerdev/planner/internal/store"
)

// Store is what the jobs need of the store: the probe runs, their rows and
// events, and the places with their leases.
type Store interface {
	GetProbe(ctx context.Context, id string) (store.ProbeRun, error)
	SetProbeStatus(ctx context.Context, id string, status store.Status, errMsg string) error
	AppendRecords(ctx context.Context, probeID string, recs []measure.Record) error
	AppendEvents(ctx context.Context, probeID string, evs []store.ProbeEvent) error
	SaveProbeResult(ctx context.Context, id string, r store.ProbeResult) error
	Events(ctx context.Context, probeID string, after int64) ([]store.ProbeEvent, error)
	WatchEvents(probeID string) (<-chan struct{}, func())

	AcquireSlot(ctx context.Context, replica string, slots int, ttl time.Duration) (store.Lease, error)
	StartProbe(ctx context.Context, l store.Lease, p store.ProbeRun) (string, error)
	ReleaseSlot(ctx context.Context, l store.Lease) error
	RenewLeases(ctx context.Context, replica string, ttl time.Duration) ([]store.HeldLease, error)
	ReapLeases(ctx context.Context, replica string, ttl time.Duration) ([]string, time.Duration, error)
	RequestCancel(ctx context.Context, probeID string) error
	WatchCancel(probeID string) (<-chan struct{}, func())
	Shared() bool
}

// Defaults of Options.
const (
	DefaultMaxRunning       = 2
	DefaultFlushInterval    = 100 * time.Millisecond
	DefaultFlushRows        = 100
	DefaultProgressInterval = 250 * time.Millisecond
	// DefaultLease is how long a place stays this service's without a
	// renewal; it is renewed every third of it.
	DefaultLease = 30 * time.Second
	// storeTimeout bounds each store write, which must happen even after
	// the job's own context ended.
	storeTimeout = 10 * time.Second
)

// Errors of Acquire, Slot.Start and Cancel.
var (
	// ErrClosed means the manager is shutting down and starts nothing.
	ErrClosed = errors.New("the service is shutting down")
	// ErrNotRunning means that no service runs the probe: it has ended,
	// or nothing runs it any more.
	ErrNotRunning = errors.New("the probe is not running")
	// ErrLeaseLost ends the context of a slot whose place is no longer
	// this service's: its lease expired, and another service freed it.
	ErrLeaseLost = errors.New("the lease of the running place was lost")
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
	// MaxRunning bounds the places taken at once, across every service
	// on the store's database: running jobs, and slots held with Acquire.
	MaxRunning int
	// FlushInterval and FlushRows bound how long and how many rows a
	// measured request waits before it is written: whichever comes first.
	FlushInterval time.Duration
	FlushRows     int
	// ProgressInterval is the least time between two progress events.
	ProgressInterval time.Duration
	// Lease is how long a place stays this service's without a renewal;
	// on a shared store, another service marks the runs of an expired
	// lease interrupted.
	Lease time.Duration
	// Replica names this service in the leases it holds; empty: the host
	// name, the process id and a random part.
	Replica string
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
	closed  bool
	closing chan struct{}  // closed by Shutdown
	wg      sync.WaitGroup // jobs plus held slots
	// unreleased are places whose release the store refused: tried
	// again before the next Acquire and by the keeper.
	unreleased []store.Lease

	stopKeep chan struct{} // closed to stop the keeper
	kept     chan struct{} // closed when the keeper has stopped
}

// New returns a manager that records its jobs in st. On a shared store it
// keeps the service's leases from then on, until Shutdown.
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
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.Replica == "" {
		opts.Replica = replicaName()
	}
	m := &Manager{st: st, opts: opts, log: opts.Logger, jobs: map[string]*job{}, slots: map[*Slot]struct{}{},
		closing: make(chan struct{}), stopKeep: make(chan struct{}), kept: make(chan struct{})}
	if m.log == nil {
		m.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if st.Shared() {
		go m.keep()
	} else {
		close(m.kept)
	}
	return m
}

// replicaName is host-pid-random: which machine and process holds a
// place, and unique across restarts.
func replicaName() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r <= ' ' || r > '~' {
			return -1
		}
		return r
	}, host)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%x", cmp.Or(host, "host"), os.Getpid(), b)
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
// nothing. Its context ends when the manager shuts down, or when the
// place's lease is lost, which stops the work done in it.
type Slot struct {
	m      *Manager
	lease  store.Lease
	ctx    context.Context
	cancel context.CancelCauseFunc
	state  slotState
}

// Acquire reserves a running place in the store, with a context that
// ends with ctx, at shutdown (cause ErrClosed) or when its lease is lost
// (ErrLeaseLost). It fails with a *BusyError when max_running places are
// taken across the services on the store, ErrClosed during shutdown, or
// the store's error. The caller must Release the slot, or Start a probe
// in it.
func (m *Manager) Acquire(ctx context.Context) (*Slot, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	m.wg.Add(1)
	m.mu.Unlock()
	m.releaseUnreleased(ctx)
	lease, err := m.st.AcquireSlot(ctx, m.opts.Replica, m.opts.MaxRunning, m.opts.Lease)
	if errors.Is(err, store.ErrBusy) && m.st.Shared() {
		// A place may be held under a lease that expired since the
		// keeper last looked.
		if _, _, rerr := m.st.ReapLeases(ctx, m.opts.Replica, m.opts.Lease); rerr == nil {
			lease, err = m.st.AcquireSlot(ctx, m.opts.Replica, m.opts.MaxRunning, m.opts.Lease)
		}
	}
	switch {
	case errors.Is(err, store.ErrBusy):
		m.wg.Done()
		return nil, &BusyError{Limit: m.opts.MaxRunning}
	case err != nil:
		m.wg.Done()
		return nil, fmt.Errorf("take a running place: %w", err)
	}
	sctx, cancel := context.WithCancelCause(ctx)
	s := &Slot{m: m, lease: lease, ctx: sctx, cancel: cancel}
	m.mu.Lock()
	closed := m.closed
	if !closed {
		m.slots[s] = struct{}{}
	}
	m.mu.Unlock()
	if closed {
		cancel(ErrClosed)
		m.release(lease)
		m.wg.Done()
		return nil, ErrClosed
	}
	return s, nil
}

// release frees a place in the store; a refusal keeps it for later.
func (m *Manager) release(l store.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := m.st.ReleaseSlot(ctx, l); err != nil {
		m.log.Error("free a running place", "slot", l.Slot, "error", err)
		m.mu.Lock()
		m.unreleased = append(m.unreleased, l)
		m.mu.Unlock()
	}
}

// releaseUnreleased tries again the releases the store refused.
func (m *Manager) releaseUnreleased(ctx context.Context) {
	m.mu.Lock()
	ls := m.unreleased
	m.unreleased = nil
	m.mu.Unlock()
	var failed []store.Lease
	for _, l := range ls {
		if err := m.st.ReleaseSlot(ctx, l); err != nil {
			failed = append(failed, l)
		}
	}
	if len(failed) > 0 {
		m.mu.Lock()
		m.unreleased = append(m.unreleased, failed...)
		m.mu.Unlock()
	}
}

// Context ends with the context given to Acquire, at shutdown, when the
// lease is lost, or once the slot is released.
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
	m.mu.Unlock()
	s.cancel(context.Canceled)
	m.release(s.lease)
	m.wg.Done()
}

// errSlotUsed is a programming error: a slot started twice, or after its
// release.
var errSlotUsed = errors.New("the running slot was released or already used")

// Start stores the probe as queued in the slot's place and runs it in the
// background, the place then the job's until it ends. It returns the
// probe as stored when it was accepted (queued, whatever has happened
// since), or ErrClosed during shutdown; on an error the slot is still the
// caller's.
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
	id, err := m.st.StartProbe(ctx, s.lease, run)
	if err == nil {
		run, err = m.st.GetProbe(ctx, id)
	}
	if err != nil {
		return store.ProbeRun{}, fmt.Errorf("store the probe: %w", err)
	}
	jctx, jcancel := context.WithCancelCause(context.Background())
	j := &job{
		m: m, id: id, lease: s.lease, cfg: spec.Config, ctx: jctx, cancel: jcancel,
		done: make(chan struct{}), flush: make(chan struct{}, 1),
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
	errLeaseLost = errors.New("the lease of the probe's place was lost")
)

// Cancel stops a queued or running job, on this service or on another one
// on the store's database, and waits until it has saved what it measured
// and ended as cancelled, or ctx ends (then it returns ctx's error).
// ErrNotRunning means no service runs the probe (it ended, or nothing runs
// it any more); store.ErrNotFound that there is no such probe.
func (m *Manager) Cancel(ctx context.Context, id string) error {
	m.mu.Lock()
	j, ok := m.jobs[id]
	m.mu.Unlock()
	if ok {
		j.cancel(errCancelled)
		select {
		case <-j.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	wake, stop := m.st.WatchEvents(id)
	defer stop()
	if err := m.st.RequestCancel(ctx, id); errors.Is(err, store.ErrNotRunning) {
		return ErrNotRunning
	} else if err != nil {
		return err
	}
	for {
		run, err := m.st.GetProbe(ctx, id)
		if err != nil {
			return err
		}
		if run.Status.Ended() {
			return nil
		}
		select {
		case <-wake:
		case <-time.After(followRecheck): // a wake-up may be lost
		case <-ctx.Done():
			return ctx.Err()
		}
	}
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
// jobs have ended and the slots are released, or ctx ends; then it stops
// keeping the leases.
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
	var err error
	select {
	case <-waited:
	case <-ctx.Done():
		err = fmt.Errorf("probes or validations still running at shutdown: %w", ctx.Err())
	}
	m.stopKeeping()
	return err
}

// stopKeeping stops the keeper and waits for it.
func (m *Manager) stopKeeping() {
	m.mu.Lock()
	select {
	case <-m.stopKeep:
	default:
		close(m.stopKeep)
	}
	m.mu.Unlock()
	<-m.kept
}

// keep renews this service's leases every third of the lease and frees the
// places of the services whose leases expired, as soon as the first of
// them expires, marking their runs interrupted. A job whose place was
// freed so, or that a client asked on another service to cancel, is
// stopped; so is every job when no renewal succeeded for a whole lease:
// another service may have taken their places by then.
func (m *Manager) keep() {
	defer close(m.kept)
	every := m.opts.Lease / 3
	renewed := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-m.stopKeep:
			return
		case <-timer.C:
		}
		wait := every
		if time.Since(renewed) >= every {
			if m.renew() {
				renewed = time.Now()
			} else if time.Since(renewed) > m.opts.Lease {
				m.loseAll()
			}
		} else {
			wait = every - time.Since(renewed)
		}
		if next, ok := m.reap(); ok {
			wait = min(wait, next+time.Millisecond)
		}
		timer.Reset(wait)
	}
}

// renew renews the leases and stops the work whose place was lost or
// whose cancel was asked; false when the store refused.
func (m *Manager) renew() bool {
	m.mu.Lock()
	jobs := make(map[string]*job, len(m.jobs))
	for _, j := range m.jobs {
		jobs[j.lease.ID] = j
	}
	slots := make(map[string]*Slot, len(m.slots))
	for s := range m.slots {
		slots[s.lease.ID] = s
	}
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	m.releaseUnreleased(ctx)
	held, err := m.st.RenewLeases(ctx, m.opts.Replica, m.opts.Lease)
	if err != nil {
		m.log.Warn("renew the leases of the running probes and validations", "error", err)
		return false
	}
	kept := map[string]store.HeldLease{}
	for _, h := range held {
		kept[h.ID] = h
	}
	for id, j := range jobs {
		h, ok := kept[id]
		switch {
		case !ok:
			m.log.Error("a running probe's place was taken over: its lease expired", "probe", j.id)
			j.cancel(errLeaseLost)
		case h.Cancel:
			j.cancel(errCancelled)
		}
	}
	for id, s := range slots {
		if _, ok := kept[id]; !ok {
			s.cancel(ErrLeaseLost)
		}
	}
	return true
}

// loseAll stops the running work: no lease could be renewed for longer
// than a lease.
func (m *Manager) loseAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.jobs)+len(m.slots) > 0 {
		m.log.Error("the leases could not be renewed for longer than a lease: the running probes and validations are stopped",
			"lease", m.opts.Lease)
	}
	for _, j := range m.jobs {
		j.cancel(errLeaseLost)
	}
	for s := range m.slots {
		s.cancel(ErrLeaseLost)
	}
}

// reap frees the expired places of other services and says how long
// until the next of theirs expires.
func (m *Manager) reap() (time.Duration, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	reaped, next, err := m.st.ReapLeases(ctx, m.opts.Replica, m.opts.Lease)
	if err != nil {
		m.log.Warn("free the places of expired leases", "error", err)
		return 0, false
	}
	for _, id := range reaped {
		m.log.Info("a probe was marked interrupted: the service running it stopped renewing its lease", "probe", id)
	}
	return next, true
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
