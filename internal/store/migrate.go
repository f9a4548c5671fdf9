package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// migrationFS holds the schema changes of each backend, in
// migrations/sqlite and migrations/postgres: one file per version, named
// NNNN_what.sql and numbered from 0001 without gaps, the same versions
// with the same names in both folders (TestMigrationsMatch), each written
// in its database's SQL. A released migration is never edited; a change to
// the schema is a new file in each folder.
//
//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrationFS embed.FS

// migration is one numbered schema change.
type migration struct {
	version int
	name    string
	sql     string
}

var migrationName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

// loadMigrations reads migrations/DIALECT/*.sql from fsys, in version
// order, and checks that the versions run 1, 2, 3, ... without gaps or
// repeats.
func loadMigrations(fsys fs.FS, dialect string) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/"+dialect+"/*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	var ms []migration
	for _, n := range names {
		base := path.Base(n)
		m := migrationName.FindStringSubmatch(base)
		if m == nil {
			return nil, fmt.Errorf("migration %s: the name must be NNNN_name.sql", base)
		}
		v, _ := strconv.Atoi(m[1])
		body, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", base, err)
		}
		ms = append(ms, migration{version: v, name: m[2], sql: string(body)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %04d_%s: expected version %04d (versions start at 1 and have no gaps)", m.version, m.name, i+1)
		}
	}
	return ms, nil
}

// migrate applies the migrations of fsys for the database's dialect that
// the database has not seen, each in its own transaction together with
// its row in schema_migrations, so that a failed migration leaves the
// schema as it was. Running it again applies nothing. A database that has
// versions this binary does not know (written by a newer release) is
// refused rather than used. Two services migrating one database at once
// are kept apart by the backend (lockMigrations).
func migrate(ctx context.Context, db *db, fsys fs.FS) error {
	ms, err := loadMigrations(fsys, db.d.name)
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, db.d.migrationsTable); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var newest sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT max(version) FROM schema_migrations").Scan(&newest); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if newest.Valid && int(newest.Int64) > len(ms) {
		return fmt.Errorf("the database has schema version %d, newer than this binary knows (%d): use a newer planner", newest.Int64, len(ms))
	}
	for _, m := range ms {
		if err := apply(ctx, db, m); err != nil {
			return err
		}
	}
	return nil
}

// apply runs one migration unless it is recorded already. The check is
// inside the write transaction, so two processes opening the same new file
// at once apply each migration once.
func apply(ctx context.Context, db *db, m migration) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migration %04d_%s: begin: %w", m.version, m.name, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, ignoreDone(tx.Rollback()))
		}
	}()
	var one int
	switch err := tx.QueryRowContext(ctx, "SELECT 1 FROM schema_migrations WHERE version = ?", m.version).Scan(&one); {
	case err == nil:
		return tx.Commit()
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("migration %04d_%s: %w", m.version, m.name, err)
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("migration %04d_%s: %w", m.version, m.name, err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_ns) VALUES (?, ?, ?)",
		m.version, m.name, time.Now().UnixNano()); err != nil {
		return fmt.Errorf("migration %04d_%s: record: %w", m.version, m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %04d_%s: commit: %w", m.version, m.name, err)
	}
	return nil
}

// ignoreDone drops the error a rollback returns after a commit already ended
// the transaction.
func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}
