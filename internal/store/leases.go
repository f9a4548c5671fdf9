package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The probes and plan validations that run at once are bounded across
// every service on the database (probe.max_running): each takes one of
// the numbered rows of job_slots, its place, before any request of its
// work leaves. A place is taken in one statement that skips the places
// other services are taking at that moment (SELECT ... FOR UPDATE SKIP
// LOCKED on PostgreSQL; SQLite has one writer at a time), under a lease:
// a random id, the service (replica) holding it, and an expiry that the
// holder pushes forward while the work runs (RenewLeases). A probe run is
// created in its place (StartProbe). When the work ends the place is
// freed (ReleaseSlot). A service that stops without freeing its places (a
// kill, a lost machine) leaves them to expire: another service then frees
// them and marks their runs interrupted, their rows kept (ReapLeases).

// Errors of the places.
var (
	// ErrBusy is returned by AcquireSlot when every place is taken.
	ErrBusy = errors.New("every running place is taken")
	// ErrLeaseLost is returned when the lease of a place is no longer
	// held: it expired and another service freed the place.
	ErrLeaseLost = errors.New("the lease of the running place was lost")
	// ErrNotRunning is returned by RequestCancel when no place holds the
	// run: it has ended, or nothing runs it any more.
	ErrNotRunning = errors.New("the probe is not running")
)

// Lease is a place held by this service.
type Lease struct {
	// Slot is the place's number, from 1.
	Slot int
	// ID is the lease's random id: the place is this holder's while the
	// row carries it.
	ID string
}

// HeldLease is a lease as RenewLeases found it.
type HeldLease struct {
	Lease
	// Probe is the run in the place, empty when none.
	Probe string
	// Cancel says a client asked for the run to stop.
	Cancel bool
}

// interruptedByLease is the error recorded on a run whose service stopped
// renewing its lease.
const interruptedByLease = "the service running the probe stopped (its lease expired) before the run finished; the rows written until then are kept"

// AcquireSlot takes a free place among the first slots, for replica, under
// a lease of ttl: ErrBusy when they are all taken.
func (s *Store) AcquireSlot(ctx context.Context, replica string, slots int, ttl time.Duration) (_ Lease, err error) {
	defer s.classifyErr(&err)
	if slots < 1 {
		return Lease{}, fmt.Errorf("acquire a running place: %d places", slots)
	}
	l := Lease{ID: newID()}
	err = s.write(ctx, func(t *tx) error {
		if err := s.ensureSlots(ctx, t, slots); err != nil {
			return err
		}
		now, err := t.nowNs(ctx, s.now)
		if err != nil {
			return err
		}
		err = t.QueryRowContext(ctx, `UPDATE job_slots SET lease = ?, replica = ?, probe = NULL, cancel = FALSE, taken_ns = ?, expires_ns = ?
			WHERE slot = (SELECT slot FROM job_slots WHERE slot <= ? AND lease IS NULL ORDER BY slot LIMIT 1`+t.db.d.skipLocked+`)
			RETURNING slot`, l.ID, replica, now, now+ttl.Nanoseconds(), slots).Scan(&l.Slot)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrBusy
		}
		return err
	})
	if err != nil {
		return Lease{}, fmt.Errorf("acquire a running place: %w", err)
	}
	return l, nil
}

// ensureSlots adds the places up to n that the table does not have yet.
func (s *Store) ensureSlots(ctx context.Context, t *tx, n int) error {
	if int(s.slots.Load()) >= n {
		return nil
	}
	for i := 1; i <= n; i++ {
		if _, err := t.ExecContext(ctx, `INSERT INTO job_slots (slot) VALUES (?) ON CONFLICT (slot) DO NOTHING`, i); err != nil {
			return fmt.Errorf("add running place %d: %w", i, err)
		}
	}
	// Known only once the transaction commits; a rollback makes the next
	// call add them again, which is harmless.
	t.after = append(t.after, func() { s.slots.Store(int64(n)) })
	return nil
}

// StartProbe stores a new probe run (as CreateProbe does) in the place of
// l, in one transaction, so that no run is stored without a place holding
// it. ErrLeaseLost means the place is no longer l's.
func (s *Store) StartProbe(ctx context.Context, l Lease, p ProbeRun) (_ string, err error) {
	defer s.classifyErr(&err)
	id, ins, err := s.newProbe(p)
	if err != nil {
		return "", fmt.Errorf("start probe: %w", err)
	}
	err = s.write(ctx, func(t *tx) error {
		if _, err := ins(ctx, t); err != nil {
			return err
		}
		res, err := t.ExecContext(ctx, `UPDATE job_slots SET probe = ? WHERE slot = ? AND lease = ?`, id, l.Slot, l.ID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrLeaseLost
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("start probe: %w", err)
	}
	return id, nil
}

// ReleaseSlot frees the place of l. A place that is no longer l's is left
// as it is.
func (s *Store) ReleaseSlot(ctx context.Context, l Lease) (err error) {
	defer s.classifyErr(&err)
	err = s.write(ctx, func(t *tx) error {
		_, err := t.ExecContext(ctx, `UPDATE job_slots SET lease = NULL, replica = '', probe = NULL, cancel = FALSE
			WHERE slot = ? AND lease = ?`, l.Slot, l.ID)
		return err
	})
	if err != nil {
		return fmt.Errorf("release running place %d: %w", l.Slot, err)
	}
	return nil
}

// RenewLeases pushes the expiry of every lease of replica to ttl from now
// and returns them, each with its run and whether a client asked for the
// run to stop. A lease of the replica's that is not among them was lost.
func (s *Store) RenewLeases(ctx context.Context, replica string, ttl time.Duration) (_ []HeldLease, err error) {
	defer s.classifyErr(&err)
	var held []HeldLease
	err = s.write(ctx, func(t *tx) error {
		held = held[:0]
		now, err := t.nowNs(ctx, s.now)
		if err != nil {
			return err
		}
		rows, err := t.QueryContext(ctx, `UPDATE job_slots SET expires_ns = ? WHERE replica = ? AND lease IS NOT NULL
			RETURNING slot, lease, coalesce(probe, ''), cancel`, now+ttl.Nanoseconds(), replica)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var h HeldLease
			if err := rows.Scan(&h.Slot, &h.ID, &h.Probe, &h.Cancel); err != nil {
				return err
			}
			held = append(held, h)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("renew the leases of %s: %w", replica, err)
	}
	return held, nil
}

// ReapLeases frees the places whose lease expired, except replica's own,
// and marks interrupted every run that has not ended and that no place
// holds any more (one whose lease expired, or whose service freed its
// place without recording its end), each with its status event. It
// returns the ids of those runs and how long until the next lease of
// another service expires (at most ttl: none is known to expire sooner).
func (s *Store) ReapLeases(ctx context.Context, replica string, ttl time.Duration) (_ []string, _ time.Duration, err error) {
	defer s.classifyErr(&err)
	var reaped []string
	next := ttl
	err = s.write(ctx, func(t *tx) error {
		reaped, next = reaped[:0], ttl
		now, err := t.nowNs(ctx, s.now)
		if err != nil {
			return err
		}
		rows, err := t.QueryContext(ctx, `SELECT slot FROM job_slots WHERE lease IS NOT NULL AND replica <> ? AND expires_ns < ?`+
			t.db.d.skipLocked, replica, now)
		if err != nil {
			return err
		}
		var expired []int
		for rows.Next() {
			var slot int
			if err := rows.Scan(&slot); err != nil {
				rows.Close()
				return err
			}
			expired = append(expired, slot)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, slot := range expired {
			if _, err := t.ExecContext(ctx, `UPDATE job_slots SET lease = NULL, replica = '', probe = NULL, cancel = FALSE WHERE slot = ?`, slot); err != nil {
				return err
			}
		}
		orphans, err := t.QueryContext(ctx, `SELECT seq, id FROM probes WHERE status IN (?, ?)
			AND NOT EXISTS (SELECT 1 FROM job_slots WHERE job_slots.probe = probes.id)`+t.db.d.skipLocked,
			StatusQueued, StatusRunning)
		if err != nil {
			return err
		}
		type run struct {
			seq int64
			id  string
		}
		var runs []run
		for orphans.Next() {
			var r run
			if err := orphans.Scan(&r.seq, &r.id); err != nil {
				orphans.Close()
				return err
			}
			runs = append(runs, r)
		}
		orphans.Close()
		if err := orphans.Err(); err != nil {
			return err
		}
		for _, r := range runs {
			if err := endRun(ctx, t, r.seq, r.id, StatusInterrupted, interruptedByLease, s.now().UnixNano()); err != nil {
				return err
			}
			reaped = append(reaped, r.id)
		}
		var soonest sql.NullInt64
		if err := t.QueryRowContext(ctx, `SELECT min(expires_ns) FROM job_slots WHERE lease IS NOT NULL AND replica <> ?`,
			replica).Scan(&soonest); err != nil {
			return err
		}
		if soonest.Valid {
			next = min(ttl, max(time.Duration(soonest.Int64-now), 0))
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("reap expired leases: %w", err)
	}
	return reaped, next, nil
}

// RequestCancel asks for a run to be cancelled by the service running it,
// here or elsewhere: it marks the run's place and wakes that service
// (WatchCancel). ErrNotFound means no such run, ErrNotRunning that no
// place holds it (it has ended, or nothing runs it any more).
func (s *Store) RequestCancel(ctx context.Context, probeID string) (err error) {
	defer s.classifyErr(&err)
	err = s.write(ctx, func(t *tx) error {
		if _, status, err := lockProbe(ctx, t, probeID); err != nil {
			return err
		} else if status.Ended() {
			return fmt.Errorf("%w (%s)", ErrNotRunning, status)
		}
		res, err := t.ExecContext(ctx, `UPDATE job_slots SET cancel = TRUE WHERE probe = ? AND lease IS NOT NULL`, probeID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNotRunning
		}
		return t.notify(ctx, cancelKey(probeID))
	})
	if err != nil {
		return fmt.Errorf("cancel probe %s: %w", probeID, err)
	}
	return nil
}
