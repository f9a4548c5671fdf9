package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// dialect is what the SQL of the two databases writes differently. The
// store's statements are written once, in SQLite's form with ? for each
// argument; db rewrites them for PostgreSQL ($1, $2, ...), and each
// backend has its own migrations (migrate.go).
type dialect struct {
	// name is the folder of the backend's migrations.
	name string
	// numbered: arguments are written $1, $2, ... rather than ?.
	numbered bool
	// forUpdate ends a SELECT whose rows the transaction will change, so
	// that another transaction wanting them waits: empty where a write
	// transaction already holds the whole database (SQLite's BEGIN
	// IMMEDIATE).
	forUpdate string
	// skipLocked ends a SELECT that takes rows another transaction may be
	// taking at the same moment: those are passed over rather than waited
	// for.
	skipLocked string
	// text makes a string argument storable.
	text func(string) string
	// migrationsTable creates the table of applied migrations.
	migrationsTable string
	// clock reads the database's clock in Unix nanoseconds; empty: the
	// process's clock is the only one.
	clock string
	// notify announces a change to every connection listening (one
	// argument, the change); empty: there are no others.
	notify string
}

// db is the store's connection pool, speaking the dialect of its backend.
// Statements take ? for their arguments whatever the database.
type db struct {
	pool *sql.DB
	d    *dialect
	// rebound caches the statements rewritten for a numbered dialect.
	rebound sync.Map
}

func newDB(pool *sql.DB, d *dialect) *db { return &db{pool: pool, d: d} }

// q is the statement as the database takes it.
func (c *db) q(query string) string {
	if !c.d.numbered || !strings.Contains(query, "?") {
		return query
	}
	if q, ok := c.rebound.Load(query); ok {
		return q.(string)
	}
	var b strings.Builder
	n, quoted := 0, false
	for _, r := range query {
		switch {
		case r == '\'':
			quoted = !quoted
		case r == '?' && !quoted:
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	c.rebound.Store(query, b.String())
	return b.String()
}

// args are the arguments as the database takes them.
func (c *db) args(args []any) []any {
	if c.d.text == nil {
		return args
	}
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = c.d.text(v)
		case sql.NullString:
			v.String = c.d.text(v.String)
			out[i] = v
		default:
			out[i] = a
		}
	}
	return out
}

func (c *db) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return c.pool.ExecContext(ctx, c.q(query), c.args(args)...)
}

// Exec is ExecContext without a context, for test fixtures.
func (c *db) Exec(query string, args ...any) (sql.Result, error) {
	return c.ExecContext(context.Background(), query, args...)
}

func (c *db) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return c.pool.QueryContext(ctx, c.q(query), c.args(args)...)
}

func (c *db) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return c.pool.QueryRowContext(ctx, c.q(query), c.args(args)...)
}

func (c *db) BeginTx(ctx context.Context, opts *sql.TxOptions) (*tx, error) {
	t, err := c.pool.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &tx{tx: t, db: c}, nil
}

// tx is a transaction of db.
type tx struct {
	tx *sql.Tx
	db *db
	// keys are the changes to announce once the transaction commits.
	keys []string
	// after runs once the transaction has committed.
	after []func()
}

// notify announces a change (a hub key) once the transaction commits: to
// this process's watchers by the store, and on PostgreSQL to every other
// service's through NOTIFY, which the database delivers at the commit.
func (t *tx) notify(ctx context.Context, key string) error {
	if slices.Contains(t.keys, key) {
		return nil
	}
	if t.db.d.notify != "" {
		if _, err := t.ExecContext(ctx, t.db.d.notify, key); err != nil {
			return fmt.Errorf("notify %s: %w", key, err)
		}
	}
	t.keys = append(t.keys, key)
	return nil
}

// nowNs is the time of the database's clock in Unix nanoseconds, for
// leases that services on several machines compare; now where the
// database has no clock of its own (SQLite, one process).
func (t *tx) nowNs(ctx context.Context, now func() time.Time) (int64, error) {
	if t.db.d.clock == "" {
		return now().UnixNano(), nil
	}
	var ns int64
	if err := t.QueryRowContext(ctx, t.db.d.clock).Scan(&ns); err != nil {
		return 0, fmt.Errorf("read the database's clock: %w", err)
	}
	return ns, nil
}

func (t *tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(ctx, t.db.q(query), t.db.args(args)...)
}

func (t *tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return t.tx.QueryContext(ctx, t.db.q(query), t.db.args(args)...)
}

func (t *tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return t.tx.QueryRowContext(ctx, t.db.q(query), t.db.args(args)...)
}

// PrepareContext prepares a statement to run several times in the
// transaction.
func (t *tx) PrepareContext(ctx context.Context, query string) (*stmt, error) {
	s, err := t.tx.PrepareContext(ctx, t.db.q(query))
	if err != nil {
		return nil, err
	}
	return &stmt{stmt: s, db: t.db}, nil
}

func (t *tx) Commit() error   { return t.tx.Commit() }
func (t *tx) Rollback() error { return t.tx.Rollback() }

// stmt is a prepared statement of a transaction.
type stmt struct {
	stmt *sql.Stmt
	db   *db
}

func (s *stmt) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	return s.stmt.ExecContext(ctx, s.db.args(args)...)
}

func (s *stmt) Close() error { return s.stmt.Close() }
