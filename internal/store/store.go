// Package store keeps what the service must remember across restarts and
// kills (docs/service-probes.md, "A probe's life"; docs/security.md, "The
// store"; docs/deploy.md): stored plans with their scenarios, probe runs
// with their configuration, status and result, every request row and
// event a probe produced, written as they arrive, and the places of the
// probes and validations running at once (leases.go). It is a single
// SQLite file in WAL mode by default (modernc.org/sqlite, pure Go;
// sqlite.go holds what is SQLite's own), or a PostgreSQL database that
// several services share (pgx; postgres.go). The schema is applied by
// embedded, numbered migrations, one set per database with the same
// versions, when the store opens. A plan and a probe's analysis are kept
// as JSON documents of the engine's types in an envelope that carries a
// schema_version (documents.go), so that every field the engine adds is
// kept, and documents that earlier releases stored still read.
//
// One service process owns a SQLite file: Open takes an exclusive lock on
// it and fails at once with a *LockedError while another process holds
// it; it refuses a damaged file (ErrCorrupt); then it marks every probe
// run that a previous process left queued or running as interrupted,
// since nothing is executing it any more. A PostgreSQL database is shared:
// there, a run whose service stopped is marked interrupted by another
// service once the lease of its place has expired (ReapLeases).
//
// A write is acknowledged only once it is committed to the database that
// the next start will open: a full disk or file cap fails it with ErrFull,
// a file removed or replaced under the store with ErrGone, and either
// leaves nothing of it behind. A start-up that finds no room to write
// starts degraded instead of failing, and completes at a later readiness
// check or write (ErrStarting until then).
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// DefaultPath is the database file used when the configuration names none:
// planner.db in the working directory.
const DefaultPath = "planner.db"

// DefaultMaxDocumentBytes caps one stored document unless
// WithMaxDocumentBytes says otherwise (store.max_document_bytes of the
// configuration): twice the default request body (256 KiB), so that a plan
// computed from the largest body fits with its scenario.
const DefaultMaxDocumentBytes = 512 << 10

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
	// ErrFull is returned when the store has no room for a write (its
	// disk is full, or the file reached its cap) or, from Ready, less room
	// than it keeps free. Nothing of the refused write is kept.
	ErrFull = errors.New("the store is full")
	// ErrGone is returned when the store's file was removed or replaced
	// while the store had it open: a write would go to a file that the next
	// start does not read, so none is made or acknowledged.
	ErrGone = errors.New("the store's file was removed or replaced")
	// ErrStarting is returned while the store's start-up has not
	// completed (it wraps the cause): by every call while the file is not
	// set up and migrated, and by Ready until the runs of an earlier
	// process are marked interrupted too.
	ErrStarting = errors.New("the store's start-up has not completed")
	// ErrUnavailable is returned when the database cannot read, write or
	// lock its file (an I/O error, a read-only file system) or, on
	// PostgreSQL, when the server cannot be reached or does not take the
	// write now (a lost connection, a server shutting down, a read-only
	// standby).
	ErrUnavailable = errors.New("the store cannot use its database")
	// ErrCorrupt is returned when the store's file is damaged: Open
	// refuses such a file.
	ErrCorrupt = errors.New("the store's file is damaged")
)

// TooLargeError is returned when a document to be stored is larger than
// the store's cap on one document (WithMaxDocumentBytes).
type TooLargeError struct {
	// What names the document: "plan", "probe configuration", "probe result".
	What string
	// Bytes is the document's size, Limit the cap.
	Bytes, Limit int64
}

// Error names the document, its size and the cap.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the %s is %d bytes, more than the %d bytes a stored document may take", e.What, e.Bytes, e.Limit)
}

// Store is an open database. Its methods are safe for concurrent use.
type Store struct {
	db *db
	be backend
	// name is the file's path, or the database's address without
	// credentials: what the log names.
	name   string
	hub    *hub
	now    func() time.Time
	log    *slog.Logger
	maxDoc int64

	// mu serialises the start-up steps; started and repaired say which
	// are done, so that calls after them take no lock.
	mu       sync.Mutex
	started  atomic.Bool // file prepared and migrated
	repaired atomic.Bool // runs of earlier processes marked interrupted
	// degraded is set while a start-up step has failed, for the log.
	degraded bool
	// repairBefore bounds the repair to the runs that existed when the
	// schema was ready: runs created since are this process's own.
	repairBefore int64
	// goneLogged is set once the removal of the file has been logged.
	goneLogged atomic.Bool
	// slots is the number of running places known to be in the table.
	slots atomic.Int64
}

// busyTimeout is how long a statement waits for another connection's write
// lock before failing with SQLITE_BUSY.
const busyTimeout = 5 * time.Second

// interruptedMessage is the error recorded on a run that a previous process
// left unfinished.
const interruptedMessage = "the service stopped before the run finished; the rows written until then are kept"

// Option changes how Open opens a store.
type Option func(*options)

type options struct {
	maxDocument int64
	maxBytes    int64
	log         *slog.Logger
}

// WithMaxDocumentBytes caps one stored document: a plan with its
// scenario, name and labels, a probe's configuration, a probe's result.
// A larger one is refused with a *TooLargeError. Zero or less means
// DefaultMaxDocumentBytes.
func WithMaxDocumentBytes(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.maxDocument = n
		}
	}
}

// WithMaxBytes caps the database file at n bytes (in whole 4 KiB pages):
// a write past it fails with ErrFull as on a full disk. Zero means no cap
// but the disk's.
func WithMaxBytes(n int64) Option {
	return func(o *options) { o.maxBytes = max(n, 0) }
}

// WithLogger sends the store's own events (a degraded start, its
// completion, a removed file) to l.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.log = l }
}

// IsPostgres reports whether db names a PostgreSQL database (a
// postgres:// or postgresql:// URL) rather than a SQLite file.
func IsPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// Open opens the store that db names: a PostgreSQL database for a
// postgres:// or postgresql:// URL (IsPostgres), else the SQLite file at
// that path.
//
// A SQLite file is created when it does not exist; Open takes its
// exclusive lock (a *LockedError when another process holds it), checks
// the file (ErrCorrupt when PRAGMA quick_check finds it damaged), applies
// the pending migrations and marks the probe runs that a previous process
// left queued or running as interrupted. When the file has no room for
// those writes (ErrFull), the store opens degraded rather than failing,
// logs so, and retries the start-up at every Ready and write: reads
// answer once the schema is in place, and Ready fails with ErrStarting
// until everything is done.
//
// A PostgreSQL database must answer at once: Open fails, naming the
// cause, when it cannot be reached or refuses the connection; then it
// applies the pending migrations. The error and the log name the database
// by its address without its password.
func Open(ctx context.Context, db string, opts ...Option) (*Store, error) {
	o := options{maxDocument: DefaultMaxDocumentBytes}
	for _, opt := range opts {
		opt(&o)
	}
	if o.log == nil {
		o.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h := newHub()
	var s *Store
	if IsPostgres(db) {
		if o.maxBytes > 0 {
			return nil, errors.New("open store: a cap on the store's size (store.max_bytes) applies to a SQLite file; " +
				"a PostgreSQL database is bounded by its server")
		}
		pg, err := openPostgres(db, h, o.log)
		if err != nil {
			return nil, err
		}
		s = &Store{db: newDB(pg.pool, &postgresDialect), be: pg, name: pg.name, hub: h}
	} else {
		f, err := openSQLite(db, o.maxBytes)
		if err != nil {
			return nil, err
		}
		s = &Store{db: newDB(f.db, &sqliteDialect), be: f, name: db, hub: h}
	}
	s.log, s.maxDoc, s.now = o.log, o.maxDocument, func() time.Time { return time.Now().UTC() }
	if err := s.start(ctx); err != nil {
		if errors.Is(err, ErrCorrupt) {
			return nil, errors.Join(fmt.Errorf("open store %s: the file is damaged (%w); restore it from a backup, "+
				"or move it aside to start with an empty store", s.name, err), s.be.close())
		}
		if !errors.Is(err, ErrFull) || s.be.shared() {
			return nil, errors.Join(fmt.Errorf("open store %s: %w", s.name, err), s.be.close())
		}
		s.log.Warn("the store started degraded: it has no room to complete its start-up; "+
			"readiness fails until it does, and it is tried again at each readiness check and write",
			"path", s.name, "error", err)
	}
	return s, nil
}

// Shared reports whether other services may use the store's database at
// the same time (PostgreSQL), so that their leases must be watched
// (RenewLeases, ReapLeases); a SQLite file is this process's alone.
func (s *Store) Shared() bool { return s.be.shared() }

// start runs the start-up steps that have not succeeded yet: prepare the
// file, migrate, and mark the runs of earlier processes interrupted.
func (s *Store) start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.startLocked(ctx); err != nil {
		s.degraded = true
		return err
	}
	if s.degraded {
		s.degraded = false
		s.log.Info("the store completed its start-up", "path", s.name)
	}
	return nil
}

func (s *Store) startLocked(ctx context.Context) error {
	if !s.started.Load() {
		if err := s.be.prepare(ctx); err != nil {
			return err
		}
		if err := s.migrate(ctx); err != nil {
			return s.be.classify(err)
		}
		if err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM probes`).Scan(&s.repairBefore); err != nil {
			return fmt.Errorf("read the last probe run: %w", s.be.classify(err))
		}
		s.started.Store(true)
	}
	if !s.repaired.Load() {
		// A shared database's unfinished runs may be running on other
		// services: those are left to the leases.
		if !s.be.shared() {
			if err := s.inTx(ctx, s.repair); err != nil {
				return fmt.Errorf("mark unfinished probe runs interrupted: %w", err)
			}
		}
		s.repaired.Store(true)
	}
	return nil
}

// migrate applies the pending migrations, one service at a time.
func (s *Store) migrate(ctx context.Context) error {
	release, err := s.be.lockMigrations(ctx)
	if err != nil {
		return err
	}
	defer release()
	return migrate(ctx, s.db, migrationFS)
}

// repair marks the runs that an earlier process left queued or running
// as interrupted, each with its status event, and frees every place that
// process held: nothing runs them any more.
func (s *Store) repair(t *tx) error {
	ctx := context.Background()
	runs, err := t.runs(ctx, `SELECT seq, id FROM probes WHERE status IN (?, ?) AND seq <= ?`,
		StatusQueued, StatusRunning, s.repairBefore)
	if err != nil {
		return err
	}
	now := s.now().UnixNano()
	for _, r := range runs {
		if err := endRun(ctx, t, r.seq, r.id, StatusInterrupted, interruptedMessage, now); err != nil {
			return err
		}
	}
	_, err = t.ExecContext(ctx, `UPDATE job_slots SET lease = NULL, replica = '', probe = NULL, cancel = FALSE WHERE lease IS NOT NULL`)
	return err
}

// usable returns nil once the schema is in place, trying the start-up
// again when it is not.
func (s *Store) usable(ctx context.Context) error {
	if s.started.Load() {
		return nil
	}
	err := s.start(ctx)
	if s.started.Load() {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrStarting, err)
}

// Ready reports whether the store can take a write now, for readiness
// checks: its start-up has completed (ErrStarting), its files are the
// ones it opened (ErrGone), it has room for the largest document it
// accepts twice over, once in the log and once in the file (ErrFull), and
// a small write commits.
func (s *Store) Ready(ctx context.Context) error {
	if !s.started.Load() || !s.repaired.Load() {
		if err := s.start(ctx); err != nil {
			return fmt.Errorf("store: %w: %w", ErrStarting, err)
		}
	}
	if err := s.check(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	room, err := s.be.room(ctx)
	if err != nil {
		return fmt.Errorf("store room: %w", err)
	}
	if reserve := 2 * s.maxDoc; room < reserve {
		return fmt.Errorf("store: %w: %d bytes of room, less than the %d it keeps free (twice the largest document)", ErrFull, room, reserve)
	}
	err = s.write(ctx, func(tx *tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE readiness SET checked_ns = ? WHERE id = 1`, s.now().UnixNano())
		return err
	})
	if err != nil {
		return fmt.Errorf("store readiness write: %w", err)
	}
	return nil
}

// check is the backend's check, logged the first time it finds the file
// gone: from then on no write succeeds until the service restarts.
func (s *Store) check() error {
	err := s.be.check()
	if err != nil && errors.Is(err, ErrGone) && !s.goneLogged.Swap(true) {
		s.log.Error("the store's file was removed or replaced while the service ran: writes are refused and readiness fails "+
			"until the service is restarted", "path", s.name, "error", err)
	}
	return err
}

// write runs fn in a write transaction, committed when fn succeeds, once
// the schema is in place and the store's files are the ones it opened. It
// checks the files again after the commit, so that a commit that went to
// a removed file is not acknowledged either. A start-up repair still
// pending is tried first.
func (s *Store) write(ctx context.Context, fn func(*tx) error) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	if !s.repaired.Load() {
		// Its failure leaves the store degraded, which Ready reports;
		// this write may still fit.
		_ = s.start(ctx)
	}
	if err := s.check(); err != nil {
		return err
	}
	if err := s.inTx(ctx, fn); err != nil {
		return err
	}
	if err := s.check(); err != nil {
		return fmt.Errorf("the commit may be lost: %w", err)
	}
	return nil
}

// inTx runs fn in a write transaction and commits it when fn succeeds,
// then wakes the watchers of what fn changed (tx.notify). Errors are
// classified (ErrFull, ErrUnavailable) first: on those the database may
// have rolled the transaction back itself, so that the rollback's own
// error says nothing more.
func (s *Store) inTx(ctx context.Context, fn func(*tx) error) (err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", s.be.classify(err))
	}
	defer func() {
		switch {
		case err == nil:
		case errors.Is(err, ErrFull) || errors.Is(err, ErrUnavailable):
			_ = tx.Rollback()
		default:
			err = errors.Join(err, ignoreDone(tx.Rollback()))
		}
	}()
	if err := fn(tx); err != nil {
		return s.be.classify(err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", s.be.classify(err))
	}
	for _, k := range tx.keys {
		s.hub.notify(k)
	}
	for _, fn := range tx.after {
		fn()
	}
	return nil
}

// classifyErr sorts *err into the store's kinds (ErrFull, ErrUnavailable,
// ErrCorrupt): deferred by each exported method, it covers every return.
func (s *Store) classifyErr(err *error) {
	if *err != nil {
		*err = s.be.classify(*err)
	}
}

// checkSize refuses a document larger than the store's cap.
func (s *Store) checkSize(what string, n int) error {
	if int64(n) > s.maxDoc {
		return &TooLargeError{What: what, Bytes: int64(n), Limit: s.maxDoc}
	}
	return nil
}

// Close closes the database and releases its lock; the store must not be
// used afterwards.
func (s *Store) Close() error {
	return s.be.close()
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
// encoded as the list's kind (cursorPlans, cursorProbes) and the key's 16
// bytes, 17 bytes in unpadded URL-safe base64, so that the cursor of one
// list is refused by the other rather than read as a position in it.
type cursor struct {
	createdNs int64
	seq       int64
}

// The kinds of list a cursor belongs to.
const (
	cursorPlans  byte = 'p'
	cursorProbes byte = 'r'
)

// first is the position of the first page: before every row.
var first = cursor{createdNs: 1<<63 - 1, seq: 1<<63 - 1}

// encode is the cursor as the list of kind issues it.
func (c cursor) encode(kind byte) string {
	var b [17]byte
	b[0] = kind
	binary.BigEndian.PutUint64(b[1:9], uint64(c.createdNs))
	binary.BigEndian.PutUint64(b[9:], uint64(c.seq))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// parseCursor reads a cursor that the list of kind issued; "" is the
// first page.
func parseCursor(s string, kind byte) (cursor, error) {
	if s == "" {
		return first, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 17 || b[0] != kind {
		return cursor{}, fmt.Errorf("%w: %q", ErrBadCursor, s)
	}
	return cursor{createdNs: int64(binary.BigEndian.Uint64(b[1:9])), seq: int64(binary.BigEndian.Uint64(b[9:]))}, nil
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
