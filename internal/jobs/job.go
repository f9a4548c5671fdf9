package jobs

import (
	"context"
	"errors"
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
	cfg    probe.Config
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the job has ended and saved everything
	flush  chan struct{} // asks the writer to write now
	// redact removes the probe's key from the messages the job stores,
	// a second line behind the probe's own redaction.
	redact *redact.Redactor

	mu       sync.Mutex
	status   store.Status
	pending  []measure.Record // measured, not yet written
	steps    []measure.Step   // finished steps
	saveStep bool             // steps changed since the last partial save
	progress Progress         // the current step's counts
	inStep   bool
	changed  bool // progress changed since the last progress event
	subs     map[*Subscription]struct{}
}

// run runs the probe and records its life in the store.
func (j *job) run() {
	defer j.m.finish(j)
	if err := j.write(func(ctx context.Context) error {
		return j.m.st.SetProbeStatus(ctx, j.id, store.StatusRunning, "")
	}); err != nil {
		j.end(nil, err)
		return
	}
	j.setStatus(store.StatusRunning)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() { j.writer(stop) })
	wg.Go(func() { j.ticker(stop) })
	res, err := probe.Run(j.ctx, j.cfg, j)
	close(stop)
	wg.Wait()
	j.writeRecords() // what arrived after the writer's last pass
	j.end(res, err)
}

// end saves the result and the final status, then tells the subscribers.
func (j *job) end(res *probe.Result, runErr error) {
	status, msg := store.StatusSucceeded, ""
	switch cause := context.Cause(j.ctx); {
	case runErr != nil:
		status, msg = store.StatusFailed, runErr.Error()
	case errors.Is(cause, errShutdown):
		status, msg = store.StatusInterrupted, "the service shut down before the run finished; the rows written until then are kept"
	case errors.Is(cause, errCancelled):
		status, msg = store.StatusCancelled, "cancelled by a client"
	case res != nil && res.Failure() != nil:
		status, msg = store.StatusFailed, res.Failure().Error()
	}
	msg = j.redact.String(msg)
	if res != nil {
		limits, err := marshalLimits(res.RateLimits)
		if err != nil {
			j.m.log.Error("encode rate limits", "probe", j.id, "error", err)
		}
		result := store.ProbeResult{Analysis: res.Analysis, RateLimits: limits, StopReason: res.StopReason, StopDetail: j.redact.String(res.StopDetail)}
		if err := j.write(func(ctx context.Context) error { return j.m.st.SaveProbeResult(ctx, j.id, result) }); err != nil {
			status, msg = store.StatusFailed, "the result could not be stored: "+err.Error()
		}
	}
	if err := j.write(func(ctx context.Context) error { return j.m.st.SetProbeStatus(ctx, j.id, status, msg) }); err != nil {
		j.m.log.Error("store the final status", "probe", j.id, "status", status, "error", err)
	}
	j.setStatus(status)
	j.publish(Event{Kind: EventDone, Status: status})
	j.mu.Lock()
	for s := range j.subs {
		s.close(false)
	}
	j.subs = nil
	j.mu.Unlock()
}

// write runs a store write with its own deadline: it must happen even
// when the job's context has ended. Failures are logged and returned.
func (j *job) write(fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := fn(ctx); err != nil {
		j.m.log.Error("probe store write failed", "probe", j.id, "error", err)
		return err
	}
	return nil
}

// finish removes the job from the manager and frees its slot.
func (m *Manager) finish(j *job) {
	m.mu.Lock()
	delete(m.jobs, j.id)
	m.running--
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
		j.writeRecords()
	}
}

// writeRecords writes the pending rows and, when a step ended since the
// last write, the analysis of the steps so far.
func (j *job) writeRecords() {
	j.mu.Lock()
	recs := j.pending
	j.pending = nil
	var steps []measure.Step
	if j.saveStep {
		steps = append(steps, j.steps...)
		j.saveStep = false
	}
	j.mu.Unlock()
	if len(recs) > 0 {
		_ = j.write(func(ctx context.Context) error { return j.m.st.AppendRecords(ctx, j.id, recs) })
	}
	if steps != nil {
		partial := store.ProbeResult{Analysis: analysis.Analyze(steps, j.cfg.AnalysisOptions())}
		_ = j.write(func(ctx context.Context) error { return j.m.st.SaveProbeResult(ctx, j.id, partial) })
	}
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
			j.publish(Event{Kind: EventProgress, Progress: p})
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
	j.wake()
	j.publish(Event{Kind: EventStep, Step: s})
}

func (j *job) wake() {
	select {
	case j.flush <- struct{}{}:
	default:
	}
}

func (j *job) setStatus(st store.Status) {
	j.mu.Lock()
	j.status = st
	j.mu.Unlock()
	j.publish(Event{Kind: EventStatus, Status: st})
}
