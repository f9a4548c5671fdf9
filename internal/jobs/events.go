package jobs

import (
	"sync"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/store"
)

// EventKind names an event of a job.
type EventKind string

// The events of a job, in the order a subscriber sees them: status
// (running), then for each step progress events and the step's summary,
// then status (the final one) and done, after which the channel closes.
const (
	EventStatus   EventKind = "status"
	EventProgress EventKind = "progress"
	EventStep     EventKind = "step"
	EventDone     EventKind = "done"
)

// Event is one thing that happened to a job.
type Event struct {
	Kind EventKind
	// Status is set for EventStatus and EventDone (the final status).
	Status store.Status
	// Progress is set for EventProgress.
	Progress Progress
	// Step is set for EventStep: the summary of the step just finished.
	Step measure.Step
}

// Progress counts the requests of the running step so far, warm-up
// included.
type Progress struct {
	Step        int `json:"step" doc:"Concurrency of the running step."`
	Requests    int `json:"requests" doc:"Requests of the step that have finished."`
	OK          int `json:"ok"`
	RateLimited int `json:"rate_limited" doc:"429 answers the step's finished requests met, retried ones included."`
	Errors      int `json:"errors" doc:"Finished requests that failed otherwise than by 429."`
}

func (p *Progress) add(r measure.Record) {
	p.Requests++
	p.RateLimited += r.RateLimitedAnswers()
	switch {
	case r.OK:
		p.OK++
	case r.Status == 429 || r.ErrorClass == measure.ErrRateLimited:
	default:
		p.Errors++
	}
}

// Subscription receives a job's events on C. A subscriber that falls
// subscriberBuffer events behind is dropped: C closes without a done
// event, and Dropped reports true; it may subscribe again.
type Subscription struct {
	// C delivers the events; it closes after done, or when dropped.
	C <-chan Event
	c chan Event
	j *job

	once    sync.Once
	dropped bool
}

// Dropped reports whether the subscription was dropped for falling behind;
// read it after C has closed.
func (s *Subscription) Dropped() bool { return s.dropped }

// Close ends the subscription; C closes.
func (s *Subscription) Close() {
	s.j.mu.Lock()
	defer s.j.mu.Unlock()
	if s.j.subs != nil {
		delete(s.j.subs, s)
	}
	s.close(false)
}

// close closes C once; the job's mu is held.
func (s *Subscription) close(dropped bool) {
	s.once.Do(func() {
		s.dropped = dropped
		close(s.c)
	})
}

// Subscribe follows a queued or running job. The subscription starts with
// the job's current status and the summaries of the steps it finished, so
// that a late subscriber misses nothing it needs. ok is false when no such
// job runs here (it ended, or never existed); the store has its state.
func (m *Manager) Subscribe(id string) (sub *Subscription, ok bool) {
	m.mu.Lock()
	j, ok := m.jobs[id]
	m.mu.Unlock()
	if !ok {
		return nil, false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.subs == nil { // ended between the two locks
		return nil, false
	}
	c := make(chan Event, subscriberBuffer+len(j.steps)+1)
	sub = &Subscription{C: c, c: c, j: j}
	c <- Event{Kind: EventStatus, Status: j.status}
	for _, s := range j.steps {
		c <- Event{Kind: EventStep, Step: s}
	}
	j.subs[sub] = struct{}{}
	return sub, true
}

// publish hands an event to every subscriber without waiting: one whose
// buffer is full is dropped.
func (j *job) publish(ev Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for s := range j.subs {
		select {
		case s.c <- ev:
		default:
			delete(j.subs, s)
			s.close(true)
		}
	}
}
