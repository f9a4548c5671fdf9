package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/gofrs/flock"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// backend is what the store needs of its database beyond SQL: how it is
// set up and checked before its first use, whether a write would still
// land where the next start reads, how much room is left, which of its
// errors mean full, unavailable or damaged, and whether other services
// share it. sqliteFile is the embedded one, pgServer (postgres.go) the
// shared one.
type backend interface {
	// prepare readies the database for the migrations: it is run again,
	// after a failure, until it succeeds. An error wrapping ErrCorrupt
	// means the data cannot be trusted.
	prepare(ctx context.Context) error
	// check reports, with an error wrapping ErrGone, that what the store
	// writes would not reach what the next start reads.
	check() error
	// room is how many bytes the database can still grow by.
	room(ctx context.Context) (int64, error)
	// classify wraps err with ErrFull, ErrUnavailable or ErrCorrupt when the
	// database says so, and returns other errors as they are.
	classify(err error) error
	// shared reports whether other services may use the database at the
	// same time.
	shared() bool
	// lockMigrations keeps other services from migrating the database
	// until release is called.
	lockMigrations(ctx context.Context) (release func(), err error)
	// close releases the database; the store is not used afterwards.
	close() error
}

// sqliteFile is a store kept in one SQLite file in WAL mode, locked to
// this process (lock.go).
type sqliteFile struct {
	path string
	db   *sql.DB
	lock *flock.Flock
	// pin is a connection held open for the store's life. While one
	// connection is open SQLite keeps the -wal file, so the -wal that
	// check compares is the one commits are appended to; without it the
	// last connection's close would remove the file and the next one make
	// another.
	pin *sql.Conn
	// checked is set once quick_check has passed: it reads the whole file,
	// so it runs once.
	checked bool
	// files are the database file and its -wal as prepare found them.
	files []openFile
}

// openFile is a file of the database as it was when the store opened it.
type openFile struct {
	path string
	info os.FileInfo
}

// sqliteDialect is SQLite's SQL, for a store that one process owns.
var sqliteDialect = dialect{
	name: "sqlite",
	migrationsTable: `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_ns INTEGER NOT NULL
	)`,
}

// pageBytes is the page size of the files the store creates (SQLite's
// default); store.max_bytes is counted in these pages.
const pageBytes = 4096

// openSQLite takes the lock of the file at path and opens a connection
// pool on it, without touching the file yet. maxBytes > 0 caps the file at
// that many bytes, in whole pages.
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
//   - max_page_count when the file is capped: a write past the cap fails
//     as SQLite's own "database or disk is full";
//   - BEGIN IMMEDIATE for transactions, so a transaction takes the write lock
//     when it starts and two writers cannot deadlock upgrading read locks.
func openSQLite(path string, maxBytes int64) (*sqliteFile, error) {
	if path == "" || strings.ContainsRune(path, '?') || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("open store: %q is not a plain file path", path)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		// Before the lock, which would be a file beside the directory.
		return nil, fmt.Errorf("open store %s: it is a directory, not a SQLite file: name the file, such as %s", path, filepath.Join(path, "planner.db"))
	}
	fl, err := lock(path)
	var locked *LockedError
	if errors.As(err, &locked) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	if maxBytes > 0 {
		q.Add("_pragma", fmt.Sprintf("max_page_count(%d)", maxBytes/pageBytes))
	}
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open store %s: %w", path, err), unlock(fl))
	}
	return &sqliteFile{path: path, db: db, lock: fl}, nil
}

// prepare opens the pinned connection, checks that the file is in WAL mode
// and passes PRAGMA quick_check (once), and notes the files it has open.
// Nothing here writes but a new file's header.
func (f *sqliteFile) prepare(ctx context.Context) error {
	if f.pin == nil {
		pin, err := f.db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("connect: %w", f.classify(err))
		}
		f.pin = pin
	}
	var mode string
	if err := f.pin.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read journal mode: %w", f.classify(err))
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q, not WAL (is the file on a file system that supports shared memory?)", mode)
	}
	if !f.checked {
		if err := f.quickCheck(ctx); err != nil {
			return err
		}
		f.checked = true
	}
	files, err := statFiles(f.path)
	if err != nil {
		return err
	}
	f.files = files
	return nil
}

// quickCheck runs PRAGMA quick_check, which reads every page of the file
// and checks its structure (not the contents of indexes against their
// tables, which integrity_check does at many times the cost): a file
// damaged anywhere is refused before anything reads or writes it.
func (f *sqliteFile) quickCheck(ctx context.Context) error {
	rows, err := f.pin.QueryContext(ctx, "PRAGMA quick_check(10)")
	if err != nil {
		return fmt.Errorf("PRAGMA quick_check: %w", f.classify(err))
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("PRAGMA quick_check: %w", f.classify(err))
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("PRAGMA quick_check: %w", f.classify(err))
	}
	if len(problems) > 0 {
		return kindError{kind: ErrCorrupt, err: fmt.Errorf("PRAGMA quick_check found: %s", strings.Join(problems, "; "))}
	}
	return nil
}

// statFiles notes the database file and, when there is one, its -wal.
func statFiles(path string) ([]openFile, error) {
	var files []openFile
	for i, p := range []string{path, path + "-wal"} {
		info, err := os.Stat(p)
		switch {
		case err == nil:
			files = append(files, openFile{path: p, info: info})
		case i > 0 && errors.Is(err, fs.ErrNotExist):
		default:
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	return files, nil
}

// check compares each file the store has open with the file its path
// names now (device and inode): a file removed, or replaced by another,
// since prepare means that commits go to a file that the next start will
// not read. SQLite itself keeps writing to the open file and says nothing.
// The open file cannot be freed and its inode reused while SQLite holds it,
// so equal numbers mean the same file.
func (f *sqliteFile) check() error {
	for _, of := range f.files {
		now, err := os.Stat(of.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%w: %s is no longer there", ErrGone, of.path)
		case err != nil:
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		case !os.SameFile(now, of.info):
			return fmt.Errorf("%w: %s is now another file", ErrGone, of.path)
		}
	}
	return nil
}

// room is the least of the free space of the file system that holds the
// file and the room left under max_page_count (pages never used, plus
// free pages inside the file).
func (f *sqliteFile) room(ctx context.Context) (int64, error) {
	conn, err := f.db.Conn(ctx)
	if err != nil {
		return 0, f.classify(err)
	}
	defer conn.Close()
	var pageSize, pages, maxPages, freePages int64
	for _, p := range []struct {
		pragma string
		v      *int64
	}{{"page_size", &pageSize}, {"page_count", &pages}, {"max_page_count", &maxPages}, {"freelist_count", &freePages}} {
		if err := conn.QueryRowContext(ctx, "PRAGMA "+p.pragma).Scan(p.v); err != nil {
			return 0, fmt.Errorf("read %s: %w", p.pragma, f.classify(err))
		}
	}
	room := (maxPages - pages + freePages) * pageSize
	if free, ok, err := freeBytes(filepath.Dir(f.path)); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	} else if ok {
		room = min(room, free)
	}
	return room, nil
}

// classify sorts SQLite's result codes: SQLITE_FULL (the disk or
// max_page_count) and SQLITE_IOERR_SHMSIZE, the codes of a file that
// cannot be read, written or locked, and those of a damaged file.
func (f *sqliteFile) classify(err error) error {
	var se *sqlite.Error
	if err == nil || !errors.As(err, &se) || errors.Is(err, ErrFull) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrCorrupt) {
		return err
	}
	if se.Code() == sqlite3.SQLITE_IOERR_SHMSIZE {
		// The -shm file could not grow: on a full disk, SQLite's way of
		// saying so when it opens a file whose -shm is not there yet.
		return kindError{kind: ErrFull, err: err}
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_FULL:
		return kindError{kind: ErrFull, err: err}
	case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_BUSY,
		sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_PROTOCOL, sqlite3.SQLITE_NOLFS:
		return kindError{kind: ErrUnavailable, err: err}
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return kindError{kind: ErrCorrupt, err: err}
	}
	return err
}

// shared: the file is this process's alone (lock.go).
func (f *sqliteFile) shared() bool { return false }

// lockMigrations has nothing to do: the file's lock keeps every other
// process out.
func (f *sqliteFile) lockMigrations(context.Context) (func(), error) { return func() {}, nil }

// close closes the pinned connection, then the pool, and releases the lock.
func (f *sqliteFile) close() error {
	var errs []error
	if f.pin != nil {
		if err := f.pin.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close store: %w", err))
		}
	}
	if err := f.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close store: %w", err))
	}
	if err := unlock(f.lock); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// kindError is an error of the database sorted into one of the store's
// kinds: errors.Is finds the kind, errors.As the database's error, and
// the message is the database's.
type kindError struct {
	kind error
	err  error
}

func (e kindError) Error() string   { return e.err.Error() }
func (e kindError) Unwrap() []error { return []error{e.kind, e.err} }
