package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/store"
)

// EventKind names an event of a job.
type EventKind string

// The events of a job, in the order a follower sees them: status
// (running), then for each step progress events and the step's summary,
// then status (the final one) and done, the last.
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
// included. A request that the run's end cut short is no answer of the
// endpoint: it is counted apart, as Cancelled, as the step's summary
// leaves it out.
type Progress struct {
	Step        int `json:"step" doc:"Concurrency of the running step."`
	Requests    int `json:"requests" doc:"Requests of the step that have finished, cancelled ones not included."`
	OK          int `json:"ok"`
	RateLimited int `json:"rate_limited" doc:"429 answers the step's finished requests met, retried ones included."`
	Errors      int `json:"errors" doc:"Finished requests that failed otherwise than by 429."`
	Cancelled   int `json:"cancelled,omitempty" doc:"Requests in flight that the run's end (a cancel or its time budget) cut short: no failure of the endpoint, so neither in requests nor in errors."`
}

func (p *Progress) add(r measure.Record) {
	if r.ErrorClass == measure.ErrCancelled {
		p.Cancelled++
		return
	}
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

// Follow calls fn with the events of a probe run as they are stored, by
// this service or any other on the store's database: first the run's
// current status and the summaries of the steps it finished, so that a
// late follower misses nothing it needs, then each event as it comes, up
// to the final status and done. A run that has already ended gives only
// done. It returns when done was given (nil), when fn fails (its error),
// or when ctx ends. A follower that reads slowly only falls behind: the
// probe never waits for it. Without a wake-up for followRecheck it reads
// the run again, so that a lost notification cannot leave it waiting.
func (m *Manager) Follow(ctx context.Context, id string, fn func(Event) error) error {
	wake, stop := m.st.WatchEvents(id)
	defer stop()
	run, err := m.st.GetProbe(ctx, id)
	if err != nil {
		return err
	}
	if run.Status.Ended() {
		return fn(Event{Kind: EventDone, Status: run.Status})
	}
	var pos int64
	first := true
	for {
		evs, last, err := m.readAll(ctx, id, pos)
		if err != nil {
			return err
		}
		pos = last
		if first {
			first = false
			evs = catchUp(run.Status, evs)
		}
		for _, ev := range evs {
			if err := fn(ev); err != nil {
				return err
			}
			if ev.Kind == EventStatus && ev.Status.Ended() {
				return fn(Event{Kind: EventDone, Status: ev.Status})
			}
		}
		select {
		case <-wake:
		case <-time.After(followRecheck):
			// A wake-up may be lost (another service's notification
			// that never came): the run itself says whether it ended.
			// Its final status event, stored with the end, is read on
			// the next pass; a run ended without one ends the stream
			// with the status it has.
			run, err := m.st.GetProbe(ctx, id)
			if err != nil {
				return err
			}
			if run.Status.Ended() {
				return m.followEnd(ctx, id, pos, run.Status, fn)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// followRecheck is how long a follower waits for a wake-up before it
// reads the run again.
const followRecheck = 2 * time.Second

// followEnd gives a follower the events of an ended run stored after pos, up
// to its final status, then done with the run's status.
func (m *Manager) followEnd(ctx context.Context, id string, pos int64, status store.Status, fn func(Event) error) error {
	evs, _, err := m.readAll(ctx, id, pos)
	if err != nil {
		return err
	}
	for _, ev := range evs {
		if err := fn(ev); err != nil {
			return err
		}
		if ev.Kind == EventStatus && ev.Status.Ended() {
			return fn(Event{Kind: EventDone, Status: ev.Status})
		}
	}
	if err := fn(Event{Kind: EventStatus, Status: status}); err != nil {
		return err
	}
	return fn(Event{Kind: EventDone, Status: status})
}

// readAll reads the events stored after pos, page after page, and
// returns them with the number of the last one (pos when none).
func (m *Manager) readAll(ctx context.Context, id string, pos int64) ([]Event, int64, error) {
	var out []Event
	for {
		evs, err := m.st.Events(ctx, id, pos)
		if err != nil {
			return nil, pos, err
		}
		if len(evs) == 0 {
			return out, pos, nil
		}
		for _, se := range evs {
			ev, err := decode(se)
			if err != nil {
				m.log.Error("decode a stored event", "probe", id, "n", se.N, "error", err)
				continue
			}
			out = append(out, ev)
		}
		pos = evs[len(evs)-1].N
	}
}

// catchUp turns the events stored before a follower came into what it
// needs: the latest status (status, the run's as read, when none is
// stored), then every step's summary; the progress of earlier moments is
// dropped. A final status stays last.
func catchUp(status store.Status, evs []Event) []Event {
	var steps []Event
	for _, ev := range evs {
		switch ev.Kind {
		case EventStatus:
			status = ev.Status
		case EventStep:
			steps = append(steps, ev)
		}
	}
	out := []Event{{Kind: EventStatus, Status: status}}
	if status.Ended() {
		return append(append(out[:0], steps...), out[0])
	}
	return append(out, steps...)
}

// decode reads a stored event.
func decode(se store.ProbeEvent) (Event, error) {
	ev := Event{Kind: EventKind(se.Kind)}
	var err error
	switch ev.Kind {
	case EventStatus:
		var st store.StatusEvent
		err = json.Unmarshal(se.Data, &st)
		ev.Status = st.Status
	case EventProgress:
		err = json.Unmarshal(se.Data, &ev.Progress)
	case EventStep:
		err = json.Unmarshal(se.Data, &ev.Step)
	default:
		err = fmt.Errorf("unknown kind %q", se.Kind)
	}
	return ev, err
}
