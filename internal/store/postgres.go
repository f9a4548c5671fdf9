package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/plannerdev/planner/internal/redact"
)

// postgresDialect is PostgreSQL's SQL, for a store that several services
// share.
var postgresDialect = dialect{
	name:       "postgres",
	numbered:   true,
	forUpdate:  " FOR UPDATE",
	skipLocked: " FOR UPDATE SKIP LOCKED",
	text:       pgText,
	migrationsTable: `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_ns BIGINT  NOT NULL
	)`,
	clock:  `SELECT (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint`,
	notify: `SELECT pg_notify('` + notifyChannel + `', ?)`,
}

// notifyChannel is the channel of the store's notifications: the key of
// each change (hub) as the payload.
const notifyChannel = "planner"

// Settings of the connection to the server.
const (
	// pgMaxConns bounds the pool's connections; with the listener's, each
	// service takes at most pgMaxConns+1 of the server's max_connections.
	pgMaxConns = 10
	// pgConnectTimeout bounds a connection attempt unless the URL sets
	// connect_timeout.
	pgConnectTimeout = 10 * time.Second
	// pgListenRetry is how often the listener tries to connect again, and
	// the streams are woken to read the store, while it is disconnected.
	pgListenRetry = time.Second
	// migrationLock is the advisory lock that keeps the services starting
	// on one database from migrating it at the same time ("planner").
	migrationLock = 0x706c616e6e6572
)

// pgText makes a string storable in PostgreSQL's text, which holds neither
// a NUL nor invalid UTF-8 (SQLite takes both): each becomes U+FFFD. JSON
// documents are untouched, since encoding/json writes neither.
func pgText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// pgServer is a store kept in a PostgreSQL database, shared by every
// service configured with it.
type pgServer struct {
	// name is the database's URL without its password and parameters.
	name   string
	pool   *sql.DB
	config *pgx.ConnConfig
	hub    *hub
	log    *slog.Logger
	// redact removes the URL's password from every error the store
	// returns or logs.
	redact *redact.Redactor

	listenOnce sync.Once
	stopListen context.CancelFunc
	listening  chan struct{} // closed when the listener has stopped
}

// openPostgres parses the URL and opens a connection pool on it, without
// connecting yet; the listener of the other services' notifications is
// started by prepare.
func openPostgres(dsn string, h *hub, log *slog.Logger) (*pgServer, error) {
	p := &pgServer{name: dsnName(dsn), hub: h, log: log, redact: redact.New(dsnSecrets(dsn)...)}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", p.name, p.classify(err))
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = pgConnectTimeout
	}
	p.config = cfg
	p.pool = stdlib.OpenDB(*cfg)
	p.pool.SetMaxOpenConns(pgMaxConns)
	p.pool.SetMaxIdleConns(pgMaxConns)
	p.pool.SetConnMaxIdleTime(5 * time.Minute)
	return p, nil
}

// dsnName is the URL without its password and parameters, as the log and
// the errors name the database: scheme://user@host:port/database.
func dsnName(dsn string) string {
	scheme, rest, _ := strings.Cut(dsn, "://")
	rest, _, _ = strings.Cut(rest, "?")
	authority, path := rest, ""
	if i := strings.Index(rest, "/"); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		user, _, _ := strings.Cut(authority[:i], ":")
		authority = user + "@" + authority[i+1:]
	}
	return scheme + "://" + authority + path
}

// dsnSecrets are the passwords a URL carries: in its user information,
// and as the password and sslpassword parameters.
func dsnSecrets(dsn string) []string {
	var out []string
	_, rest, _ := strings.Cut(dsn, "://")
	rest, query, _ := strings.Cut(rest, "?")
	authority, _, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		if _, pw, ok := strings.Cut(authority[:i], ":"); ok {
			out = append(out, pw)
			if unescaped, err := url.PathUnescape(pw); err == nil {
				out = append(out, unescaped)
			}
		}
	}
	if q, err := url.ParseQuery(query); err == nil {
		out = append(out, q["password"]...)
		out = append(out, q["sslpassword"]...)
	}
	return out
}

// prepare checks that the server answers, then starts listening for the
// notifications of the other services.
func (p *pgServer) prepare(ctx context.Context) error {
	if err := p.pool.PingContext(ctx); err != nil {
		return fmt.Errorf("cannot reach the database: %w", p.classify(err))
	}
	p.listenOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		p.stopListen, p.listening = cancel, make(chan struct{})
		go p.listen(ctx)
	})
	return nil
}

// listen keeps a connection that listens to the store's channel and wakes
// this process's watchers with each change another service (or this one)
// announces. While it is disconnected it tries again every pgListenRetry
// and wakes every watcher each time, so that the streams read the store
// meanwhile; once it is back it wakes them once more, for what it missed.
func (p *pgServer) listen(ctx context.Context) {
	defer close(p.listening)
	failing := false
	for {
		err := p.listenConn(ctx, func() {
			if failing {
				failing = false
				p.log.Info("the store's notifications resumed", "database", p.name)
			}
		})
		if ctx.Err() != nil {
			return
		}
		if !failing {
			failing = true
			p.log.Warn("the store's notifications stopped: streams read the store every second until they resume",
				"database", p.name, "error", p.classify(err))
		}
		p.hub.notifyAll()
		select {
		case <-ctx.Done():
			return
		case <-time.After(pgListenRetry):
		}
	}
}

// listenConn connects, listens, calls up once it listens, and passes the
// notifications to the hub until the connection fails or ctx ends.
func (p *pgServer) listenConn(ctx context.Context, up func()) error {
	conn, err := pgx.ConnectConfig(ctx, p.config.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	up()
	p.hub.notifyAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		p.hub.notify(n.Payload)
	}
}

// check has nothing to check: the server keeps the data where the next
// start finds it.
func (p *pgServer) check() error { return nil }

// room is unknown: the server's disk and quotas bound the database, and
// its own monitoring watches them. A write the server refuses for want of
// room fails with ErrFull.
func (p *pgServer) room(context.Context) (int64, error) { return math.MaxInt64, nil }

// shared: every service configured with the database uses it.
func (p *pgServer) shared() bool { return true }

// lockMigrations takes the advisory lock of the migrations on a
// connection of its own, held until release.
func (p *pgServer) lockMigrations(ctx context.Context) (func(), error) {
	conn, err := p.pool.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLock)); err != nil {
		return nil, errors.Join(fmt.Errorf("lock the migrations: %w", err), conn.Close())
	}
	return func() {
		// Closing the connection would release it too; unlock to keep
		// the connection for the pool.
		_, _ = conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1)", int64(migrationLock))
		_ = conn.Close()
	}, nil
}

// classify sorts the server's SQLSTATE codes and the connection's
// failures: disk_full is ErrFull; the other insufficient-resources codes,
// a lost or refused connection, a server shutting down or starting, a
// read-only standby, a serialization failure or deadlock (the write may
// be tried again) are ErrUnavailable; data_corrupted and index_corrupted
// are ErrCorrupt. Every message has the URL's password removed.
func (p *pgServer) classify(err error) error {
	if err == nil {
		return nil
	}
	if !errors.Is(err, ErrFull) && !errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrCorrupt) {
		if kind := pgKind(err); kind != nil {
			err = kindError{kind: kind, err: err}
		}
	}
	var r redactedError
	if errors.As(err, &r) {
		return err
	}
	return redactedError{err: err, r: p.redact}
}

// pgKind is the store's kind of a PostgreSQL error, nil for the others.
func pgKind(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "53100":
			return ErrFull
		case pe.Code == "XX001" || pe.Code == "XX002":
			return ErrCorrupt
		case strings.HasPrefix(pe.Code, "53"), strings.HasPrefix(pe.Code, "08"), strings.HasPrefix(pe.Code, "57P"),
			pe.Code == "25006", pe.Code == "40001", pe.Code == "40P01":
			return ErrUnavailable
		}
		return nil
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || pgconn.Timeout(err) {
		return ErrUnavailable
	}
	return nil
}

// redactedError is an error whose message has the database password
// removed; errors.Is and errors.As see the error itself.
type redactedError struct {
	err error
	r   *redact.Redactor
}

func (e redactedError) Error() string { return e.r.String(e.err.Error()) }
func (e redactedError) Unwrap() error { return e.err }

// close stops the listener and closes the pool.
func (p *pgServer) close() error {
	if p.stopListen != nil {
		p.stopListen()
		<-p.listening
	}
	if err := p.pool.Close(); err != nil {
		return fmt.Errorf("close store: %w", p.classify(err))
	}
	return nil
}
