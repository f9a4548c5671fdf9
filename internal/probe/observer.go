package probe

import (
	"sync"

	"github.com/plannerdev/planner/internal/measure"
)

// Observer watches a run as it goes, so that a progress bar, an event
// stream and a database writer can follow it. The run calls it from one
// goroutine at a time, in order: StepStarted, then Record for each request
// of the step as it finishes, then StepDone (left out for a step that
// measured nothing beyond its warm-up, as when a budget ran out at its
// start). Calls should return quickly; the run waits for them.
type Observer interface {
	// StepStarted announces a step: its concurrency (the in-flight cap of an
	// open-loop run) and the requests it will send.
	StepStarted(concurrency, requests int)
	// Record delivers one finished request, failures included.
	Record(measure.Record)
	// StepDone delivers a step's summary (warm-up excluded).
	StepDone(measure.Step)
}

// serialObserver serializes calls to an Observer; a nil Observer is
// ignored.
type serialObserver struct {
	mu  sync.Mutex
	obs Observer
}

func (s *serialObserver) stepStarted(concurrency, requests int) {
	if s.obs == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.obs.StepStarted(concurrency, requests)
}

func (s *serialObserver) record(r measure.Record) {
	if s.obs == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.obs.Record(r)
}

func (s *serialObserver) stepDone(st measure.Step) {
	if s.obs == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.obs.StepDone(st)
}
