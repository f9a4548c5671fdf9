package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/redact"
	"github.com/plannerdev/planner/internal/store"
)

// job is one probe running in the background. It is the probe's Observer:
// the probe calls it from one goroutine at a time; the writer and the
// progress ticker read what it gathered under mu.
type job struct {
	m      *Manager
	id     string
	lease  store.Lease // the job's place
	cfg    probe.Config
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the job has ended and saved everything
	flush  chan struct{} // asks the writer to write now
	// redact removes the probe's key from the messages the job stores,
	// a second line behind the probe's own redaction.
	redact *redact.Redactor
	// failing is set while the job's store writes fail; only write, which
	// is never called twice at once, touches it.
	failing bool

	mu       sync.Mutex
	pending  []measure.Record   // measured, not yet written
	events   []store.ProbeEvent // happened, not yet written
	steps    []measure.Step     // finished steps
	saveStep bool               // steps changed since the last partial save
	progress Progress           // the current step's counts
	inStep   bool
	changed  bool // progress changed since the last progress event
}

// run runs the probe and records its life in the store. A cancel asked on
// any service (store.RequestCancel) stops it.
func (j *job) run() {
	defer j.m.finish(j)
	cancelled, stopWatch := j.m.st.WatchCancel(j.id)
	defer stopWatch()
	go func() {
		select {
		case <-cancelled:
			j.cancel(errCancelled)
		case <-j.ctx.Done():
		}
	}()
	if err := j.write(func(ctx context.Context) error {
		return j.m.st.SetProbeStatus(ctx, j.id, store.StatusRunning, "")
	}); err != nil {
		j.end(nil, err)
		return
	}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() { j.writer(stop) })
	wg.Go(func() { j.ticker(stop) })
	res, err := probe.Run(j.ctx, j.cfg, j)
	close(stop)
	wg.Wait()
	j.end(res, err) // it writes what arrived after the writer's last pass
}

// end records the end of the run (record), whose status event ends the
// run's stream.
func (j *job) end(res *probe.Result, runErr error) {
	status, msg := store.StatusSucceeded, ""
	switch cause := context.Cause(j.ctx); {
	case runErr != nil:
		status, msg = store.StatusFailed, runErr.Error()
	case errors.Is(cause, errShutdown):
		status, msg = store.StatusInterrupted, "the service shut down before the run finished; the rows written until then are kept"
	case errors.Is(cause, errLeaseLost):
		status, msg = store.StatusInterrupted, "the service running the probe lost its lease (it could not reach the store for longer "+
			"than a lease) before the run finished; the rows written until then are kept"
	case errors.Is(cause, errCancelled):
		status, msg = store.StatusCancelled, "cancelled by a client"
	case res != nil && res.Failure() != nil:
		status, msg = store.StatusFailed, res.Failure().Error()
	}
	var result *store.ProbeResult
	if res != nil {
		limits, err := marshalLimits(res.RateLimits)
		if err != nil {
			j.m.log.Error("encode rate limits", "probe", j.id, "error", err)
		}
		result = &store.ProbeResult{Analysis: res.Analysis, RateLimits: limits, StopReason: res.StopReason, StopDetail: j.redact.String(res.StopDetail)}
	}
	j.record(result, status, j.redact.String(msg))
	// Whatever never reached the store stays out of it: the run's stream
	// ends with its status.
	j.mu.Lock()
	j.events = nil
	j.mu.Unlock()
}

// Retry delays of record: the first, doubled after each refusal up to the
// last.
const (
	retryFirst = 250 * time.Millisecond
	retryLast  = 5 * time.Second
)

// record writes the end of the run: the rows still pending, the result,
// then the final status, and returns the status stored. A write that the
// store refuses for a while (it is full, or starting) is tried again, at
// growing intervals up to retryLast, until the store takes it or the
// service shuts down. Once that has happened, the end is recorded as
// failed, saying so: the store did not hold the run's end when it ended.
// A result the store never takes (larger than its cap) fails the run too.
// The status, once stored, is the run's last event.
func (j *job) record(result *store.ProbeResult, status store.Status, msg string) {
	delay := retryFirst
	refused := false
	for {
		err := j.recordOnce(&result, &status, &msg)
		if err == nil || !transient(err) {
			return
		}
		if !refused {
			refused = true
			was := string(status)
			if msg != "" {
				was += ": " + msg
			}
			status, msg = store.StatusFailed, j.redact.String(fmt.Sprintf(
				"the store could not record the end of the run (%s) when it ended: %s; it was recorded once the store could write again",
				was, storeCause(err)))
		}
		select {
		case <-time.After(delay):
		case <-j.m.closing:
			// One last try; without it, the next start marks the run
			// interrupted.
			if err := j.recordOnce(&result, &status, &msg); err != nil {
				j.m.log.Error("the end of the run could not be recorded before the shutdown", "probe", j.id, "error", err)
			}
			return
		}
		delay = min(2*delay, retryLast)
	}
}

// recordOnce makes the writes of record that are still to do: the rows,
// the result (cleared once stored), the status. A result refused for good
// turns the status to failed.
func (j *job) recordOnce(result **store.ProbeResult, status *store.Status, msg *string) error {
	if err := j.writeRecords(); err != nil && transient(err) {
		return err
	}
	if r := *result; r != nil {
		err := j.write(func(ctx context.Context) error { return j.m.st.SaveProbeResult(ctx, j.id, *r) })
		if err != nil && transient(err) {
			return err
		}
		if err != nil {
			*status, *msg = store.StatusFailed, j.redact.String("the result could not be stored: "+err.Error())
		}
		*result = nil
	}
	return j.write(func(ctx context.Context) error { return j.m.st.SetProbeStatus(ctx, j.id, *status, *msg) })
}

// transient reports whether a store error may pass: the store is full,
// starting, or cannot use its file for now, or the write timed out. A
// removed file, a document over the cap or a finished run are for good.
func transient(err error) bool {
	return errors.Is(err, store.ErrFull) || errors.Is(err, store.ErrStarting) ||
		errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

// storeCause says in a few words why the store refused a write.
func storeCause(err error) string {
	switch {
	case errors.Is(err, store.ErrFull):
		return "the store was full"
	case errors.Is(err, store.ErrStarting):
		return "the store had not completed its start-up"
	case errors.Is(err, store.ErrUnavailable):
		return "the store could not use its file"
	}
	return err.Error()
}

// write runs a store write with its own deadline: it must happen even
// when the job's context has ended. A failure is logged when it follows
// a success, and the first success after failures too, so that a store
// that refuses every flush for a while logs twice, not at every flush.
// The job's writes come one at a time (the writer runs between the first
// and the last), so failing needs no lock.
func (j *job) write(fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := fn(ctx); err != nil {
		if !j.failing {
			j.failing = true
			j.m.log.Error("probe store write failed", "probe", j.id, "error", err)
		}
		return err
	}
	if j.failing {
		j.failing = false
		j.m.log.Info("probe store writes succeed again", "probe", j.id)
	}
	return nil
}

// finish frees the job's place and removes the job from the manager.
func (m *Manager) finish(j *job) {
	j.cancel(context.Canceled)
	m.release(j.lease)
	m.mu.Lock()
	delete(m.jobs, j.id)
	m.mu.Unlock()
	close(j.done)
	m.wg.Done()
}

// writer writes the pending rows every FlushInterval, or as soon as
// FlushRows are pending or a step ends, and the analysis of the finished
// steps after each step.
func (j *job) writer(stop <-chan struct{}) {
	t := time.NewTicker(j.m.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		case <-j.flush:
		}
		_ = j.writeRecords() // what fails waits for the next pass
	}
}

// writeRecords writes the pending rows, then the pending events and, when
// a step ended since the last write, the analysis of the steps so far.
// What the store refuses for a while stays pending for the next write.
func (j *job) writeRecords() error {
	j.mu.Lock()
	recs, evs := j.pending, j.events
	j.pending, j.events = nil, nil
	var steps []measure.Step
	if j.saveStep {
		steps = append(steps, j.steps...)
		j.saveStep = false
	}
	j.mu.Unlock()
	if len(recs) > 0 {
		if err := j.write(func(ctx context.Context) error { return j.m.st.AppendRecords(ctx, j.id, recs) }); err != nil {
			if transient(err) {
				// Kept for the next write: a probe measures at most
				// max_requests rows, which bounds what waits here.
				j.mu.Lock()
				j.pending = append(recs, j.pending...)
				j.events = append(evs, j.events...)
				j.saveStep = j.saveStep || steps != nil
				j.mu.Unlock()
			}
			return err
		}
	}
	if len(evs) > 0 {
		if err := j.write(func(ctx context.Context) error { return j.m.st.AppendEvents(ctx, j.id, evs) }); err != nil {
			if transient(err) {
				j.mu.Lock()
				j.events = append(evs, j.events...)
				j.saveStep = j.saveStep || steps != nil
				j.mu.Unlock()
			}
			return err
		}
	}
	if steps != nil {
		partial := store.ProbeResult{Analysis: analysis.Analyze(steps, j.cfg.AnalysisOptions())}
		if err := j.write(func(ctx context.Context) error { return j.m.st.SaveProbeResult(ctx, j.id, partial) }); err != nil {
			if transient(err) {
				j.mu.Lock()
				j.saveStep = true
				j.mu.Unlock()
			}
			return err
		}
	}
	return nil
}

// ticker sends a progress event every ProgressInterval while a step runs
// and its counts changed.
func (j *job) ticker(stop <-chan struct{}) {
	t := time.NewTicker(j.m.opts.ProgressInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		j.mu.Lock()
		send, p := j.inStep && j.changed, j.progress
		j.changed = false
		j.mu.Unlock()
		if send {
			j.publish(EventProgress, p)
		}
	}
}

// StepStarted starts counting a step.
func (j *job) StepStarted(concurrency, _ int) {
	j.mu.Lock()
	j.progress = Progress{Step: concurrency}
	j.inStep, j.changed = true, true
	j.mu.Unlock()
}

// Record queues a measured request for the writer and counts it.
func (j *job) Record(r measure.Record) {
	j.mu.Lock()
	j.pending = append(j.pending, r)
	full := len(j.pending) >= j.m.opts.FlushRows
	j.progress.add(r)
	j.changed = true
	j.mu.Unlock()
	if full {
		j.wake()
	}
}

// StepDone sends the step's summary, which carries its final counts, and
// asks the writer to save the steps so far.
func (j *job) StepDone(s measure.Step) {
	j.mu.Lock()
	j.steps = append(j.steps, s)
	j.saveStep = true
	j.inStep, j.changed = false, false
	j.mu.Unlock()
	j.publish(EventStep, s)
	j.wake()
}

func (j *job) wake() {
	select {
	case j.flush <- struct{}{}:
	default:
	}
}

// publish queues an event for the writer. A progress event replaces one
// still waiting: only the latest counts matter.
func (j *job) publish(kind EventKind, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		j.m.log.Error("encode an event", "probe", j.id, "kind", kind, "error", err)
		return
	}
	ev := store.ProbeEvent{Kind: string(kind), Data: data}
	j.mu.Lock()
	defer j.mu.Unlock()
	if n := len(j.events); kind == EventProgress && n > 0 && j.events[n-1].Kind == string(EventProgress) {
		j.events[n-1] = ev
		return
	}
	j.events = append(j.events, ev)
}
