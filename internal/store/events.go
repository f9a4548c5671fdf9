package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/plannerdev/planner/internal/redact"
)

// ProbeEvent is one event of a probe run as the store keeps it, so that
// any service on the database can stream it: the run's status changes,
// which the store writes itself with each change (SetProbeStatus, and the
// runs it marks interrupted), and what the running service appends
// (AppendEvents): its progress, each step's summary.
type ProbeEvent struct {
	// N numbers the run's events from 1 in the order they were stored.
	N int64
	// Kind names the event: EventStatus, or the appender's own kinds.
	Kind string
	// Data is the event's JSON document; for EventStatus a StatusEvent.
	Data json.RawMessage
}

// EventStatus is the kind of the events that the store writes when a run's
// status changes.
const EventStatus = "status"

// eventKindProgress is the kind of events that are worth nothing once the
// run has ended: they are removed then.
const eventKindProgress = "progress"

// StatusEvent is the data of an EventStatus event.
type StatusEvent struct {
	Status Status `json:"status"`
}

// maxEventsRead bounds the events one Events call returns.
const maxEventsRead = 1000

// AppendEvents stores events of a run (their Kind and Data; N is
// assigned) in one transaction, after those stored before, and wakes the
// streams of the run. ErrNotFound means no such run, ErrFinished that it
// has ended: its events are complete.
func (s *Store) AppendEvents(ctx context.Context, probeID string, evs []ProbeEvent) (err error) {
	defer s.classifyErr(&err)
	if len(evs) == 0 {
		return nil
	}
	for _, ev := range evs {
		if ev.Kind == "" || ev.Kind == EventStatus {
			return fmt.Errorf("append events to probe %s: %q is not a kind a caller writes", probeID, ev.Kind)
		}
		if err := checkDocument(ev.Kind+" event", ev.Data); err != nil {
			return fmt.Errorf("append events to probe %s: %w", probeID, err)
		}
		if err := s.checkSize(ev.Kind+" event", len(ev.Data)); err != nil {
			return fmt.Errorf("append events to probe %s: %w", probeID, err)
		}
	}
	err = s.write(ctx, func(t *tx) error {
		seq, status, err := lockProbe(ctx, t, probeID)
		if err != nil {
			return err
		}
		if status.Ended() {
			return fmt.Errorf("%w (%s)", ErrFinished, status)
		}
		now := s.now().UnixNano()
		for _, ev := range evs {
			if err := addEvent(ctx, t, seq, probeID, ev.Kind, ev.Data, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("append %d events to probe %s: %w", len(evs), probeID, err)
	}
	return nil
}

// Events returns the events of a run stored after the one numbered after
// (0 for all), in order, at most maxEventsRead of them: read again from the
// last one's N for more. ErrNotFound means no such run.
func (s *Store) Events(ctx context.Context, probeID string, after int64) (_ []ProbeEvent, err error) {
	defer s.classifyErr(&err)
	if err := s.usable(ctx); err != nil {
		return nil, fmt.Errorf("events of probe %s: %w", probeID, err)
	}
	seq, err := probeSeq(ctx, s.db, probeID)
	if err != nil {
		return nil, fmt.Errorf("events of probe %s: %w", probeID, err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT n, kind, data FROM probe_events WHERE probe = ? AND n > ? ORDER BY n LIMIT ?`,
		seq, after, maxEventsRead)
	if err != nil {
		return nil, fmt.Errorf("events of probe %s: %w", probeID, err)
	}
	defer rows.Close()
	var out []ProbeEvent
	for rows.Next() {
		var ev ProbeEvent
		var data string
		if err := rows.Scan(&ev.N, &ev.Kind, &data); err != nil {
			return nil, fmt.Errorf("events of probe %s: %w", probeID, err)
		}
		ev.Data = json.RawMessage(data)
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("events of probe %s: %w", probeID, err)
	}
	return out, nil
}

// lockProbe reads a run's key and status, locking its row until the
// transaction ends, so that the changes of two services to one run come
// one after the other. ErrNotFound means no such run.
func lockProbe(ctx context.Context, t *tx, id string) (int64, Status, error) {
	var seq int64
	var status Status
	err := t.QueryRowContext(ctx, `SELECT seq, status FROM probes WHERE id = ?`+t.db.d.forUpdate, id).Scan(&seq, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", ErrNotFound
	}
	return seq, status, err
}

// addEvent stores one event of the run seq (id), numbered after the run's
// last, and announces it at the commit.
func addEvent(ctx context.Context, t *tx, seq int64, id, kind string, data []byte, now int64) error {
	if _, err := t.ExecContext(ctx, `INSERT INTO probe_events (probe, n, kind, data, created_ns)
		SELECT ?, coalesce(max(n), 0) + 1, ?, ?, ? FROM probe_events WHERE probe = ?`,
		seq, kind, string(data), now, seq); err != nil {
		return fmt.Errorf("store a %s event: %w", kind, err)
	}
	return t.notify(ctx, eventsKey(id))
}

// addStatus stores the status event of a run that moved to status.
func addStatus(ctx context.Context, t *tx, seq int64, id string, status Status, now int64) error {
	data, err := json.Marshal(StatusEvent{Status: status})
	if err != nil {
		return err
	}
	return addEvent(ctx, t, seq, id, EventStatus, data, now)
}

// endRun ends the run seq (id) with status and message, stores its status
// event, the run's last, and then removes its progress events, which
// nobody needs once it has ended (after: the last event keeps a number
// above every number handed out). The run's place is freed with it: an
// ended run sends nothing more, so the next probe on any service may
// start as soon as this end is read. The caller has checked that the run
// has not ended.
func endRun(ctx context.Context, t *tx, seq int64, id string, status Status, msg string, now int64) error {
	if _, err := t.ExecContext(ctx, `UPDATE probes SET status = ?, error = ?, finished_ns = coalesce(finished_ns, ?) WHERE seq = ?`,
		status, redact.Tokens(msg), now, seq); err != nil {
		return err
	}
	if err := addStatus(ctx, t, seq, id, status, now); err != nil {
		return err
	}
	if _, err := t.ExecContext(ctx, `DELETE FROM probe_events WHERE probe = ? AND kind = ?`, seq, eventKindProgress); err != nil {
		return err
	}
	_, err := t.ExecContext(ctx, `UPDATE job_slots SET lease = NULL, replica = '', probe = NULL, cancel = FALSE WHERE probe = ?`, id)
	return err
}
