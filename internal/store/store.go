// Package store keeps what the service must remember across restarts and
// kills (docs/service-probes.md, "A probe's life"; docs/security.md, "The
// store"): stored plans with their scenarios, probe runs with
// their configuration, status and result, and every request row a probe
// measured, written as it arrives. It is a single SQLite file in WAL mode
// (modernc.org/sqlite, pure Go); the schema is applied by embedded,
// numbered migrations when the store opens. A plan and a probe's analysis
// are kept as JSON documents of the engine's types in an envelope that
// carries a schema_version (documents.go), so that every field the engine
// adds is kept, and documents that earlier releases stored still read.
//
// One service process owns a database file: Open takes an exclusive lock
// on it and fails at once with a *LockedError while another process holds
// it; then it marks every probe run that a previous process left queued or
// running as interrupted, since nothing is executing it any more.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/gofrs/flock"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// DefaultPath is the database file used when the configuration names none:
// planner.db in the working directory.
const DefaultPath = "planner.db"

// Errors callers map to responses.
var (
	// ErrNotFound is returned when no plan or probe run has the given id.
	ErrNotFound = errors.New("not found")
	// ErrSecret is returned when a document to be stored carries a
	// credential (an api_key or authorization field with a value, a bearer
	// token, a password in a URL). Credentials are never stored.
	ErrSecret = errors.New("refusing to store a credential")
	// ErrFinished is returned when a probe run that already ended
	// (succeeded, failed, cancelled or interrupted) is asked to change status.
	ErrFinished = errors.New("the probe run has already ended")
	// ErrBadCursor is returned when a paging cursor was not issued by the store.
	ErrBadCursor = errors.New("invalid paging cursor")
)

// Store is an open database. Its methods are safe for concurrent use.
type Store struct {
	db   *sql.DB
	lock *flock.Flock
	now  func() time.Time
}

// busyTimeout is how long a statement waits for another connection's write
// lock before failing with SQLITE_BUSY.
const busyTimeout = 5 * time.Second

// interruptedMessage is the error recorded on a run that a previous process
// left unfinished.
const interruptedMessage = "the service stopped before the run finished; the rows written until then are kept"

// Open opens the database file at path, creating it when it does not exist,
// takes its exclusive lock (a *LockedError when another process holds it),
// applies the pending migrations and marks the probe runs that a previous
// process left queued or running as interrupted.
//
// Every connection runs with:
//   - journal_mode=WAL: readers (a report, a CSV download) never block the
//     probe writer, and a commit is one append to the log;
//   - synchronous=NORMAL: in WAL mode a committed transaction survives a
//     crash or kill of the process (it is in the log, in the OS's hands);
//     only a power loss or OS crash can lose the last commits, and never
//     corrupts the file. FULL would add an fsync to every commit, which the
//     probe's several appends a second do not need;
//   - foreign_keys=ON, so rows cannot outlive or precede their probe run;
//   - busy_timeout, so concurrent writers wait for the lock instead of failing;
//   - BEGIN IMMEDIATE for transactions, so a transaction takes the write lock
//     when it starts and two writers cannot deadlock upgrading read locks.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" || strings.ContainsRune(path, '?') || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("open store: %q is not a plain file path", path)
	}
	fl, err := lock(path)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open store %s: %w", path, err), unlock(fl))
	}
	s := &Store{db: db, lock: fl, now: func() time.Time { return time.Now().UTC() }}
	if err := s.init(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("open store %s: %w", path, err), db.Close(), unlock(fl))
	}
	return s, nil
}

func (s *Store) init(ctx context.Context) error {
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read journal mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q, not WAL (is the file on a file system that supports shared memory?)", mode)
	}
	if err := migrate(ctx, s.db, migrationFS); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx,
		`UPDATE probes SET status = ?, error = ?, finished_ns = ? WHERE status IN (?, ?)`,
		StatusInterrupted, interruptedMessage, s.now().UnixNano(), StatusQueued, StatusRunning)
	if err != nil {
		return fmt.Errorf("mark unfinished probe runs interrupted: %w", err)
	}
	return nil
}

// Ping reports whether the database answers a query, for readiness checks.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("store ping: %w", err)
	}
	return nil
}

// Close closes the database and releases its lock; the store must not be
// used afterwards.
func (s *Store) Close() error {
	var errs []error
	if err := s.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close store: %w", err))
	}
	if err := unlock(s.lock); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// newID returns a random, URL-safe, unguessable id: 128 bits in lower-case
// base32 (26 characters).
func newID() string { return strings.ToLower(rand.Text()) }

// Paging limits.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// ListOptions selects one page of a list, newest first.
type ListOptions struct {
	// Limit is the page size: DefaultLimit when zero or negative, at most
	// MaxLimit.
	Limit int
	// Cursor is the next-page cursor of the previous page; empty for the
	// first page.
	Cursor string
}

func (o ListOptions) limit() int {
	switch {
	case o.Limit <= 0:
		return DefaultLimit
	case o.Limit > MaxLimit:
		return MaxLimit
	}
	return o.Limit
}

// cursor is a position in a list ordered by (created_ns DESC, seq DESC):
// the page after it starts with the rows strictly before that key. It is
// encoded as 16 bytes in unpadded URL-safe base64.
type cursor struct {
	createdNs int64
	seq       int64
}

// first is the position of the first page: before every row.
var first = cursor{createdNs: 1<<63 - 1, seq: 1<<63 - 1}

func (c cursor) String() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(c.createdNs))
	binary.BigEndian.PutUint64(b[8:], uint64(c.seq))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func parseCursor(s string) (cursor, error) {
	if s == "" {
		return first, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return cursor{}, fmt.Errorf("%w: %q", ErrBadCursor, s)
	}
	return cursor{createdNs: int64(binary.BigEndian.Uint64(b[:8])), seq: int64(binary.BigEndian.Uint64(b[8:]))}, nil
}

// nsTime converts stored nanoseconds to a UTC time; a NULL gives the zero time.
func nsTime(ns sql.NullInt64) time.Time {
	if !ns.Valid {
		return time.Time{}
	}
	return time.Unix(0, ns.Int64).UTC()
}

// timeNs converts a time to stored nanoseconds; the zero time gives NULL.
func timeNs(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}
