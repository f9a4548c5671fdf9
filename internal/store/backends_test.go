package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/plannerdev/planner/internal/testutil/pgtest"
)

// The store's tests run on both backends where what they check is not a
// SQLite file's own (its pragmas, lock, room, damage): each such test runs
// its body as the subtests sqlite (a file in a temporary directory) and
// postgres (a database of its own on the package's PostgreSQL server,
// package pgtest).

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// testBackends name a new database of each backend for a test.
var testBackends = []struct {
	name string
	db   func(t testing.TB) string
}{
	{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "planner.db") }},
	{"postgres", pgtest.DSN},
}

// eachBackend runs test on a new database of each backend; db is what
// Open takes.
func eachBackend(t *testing.T, test func(t *testing.T, db string)) {
	t.Helper()
	for _, b := range testBackends {
		t.Run(b.name, func(t *testing.T) { test(t, b.db(t)) })
	}
}

// openDB opens the store of db and closes it after the test.
func openDB(t testing.TB, db string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), db, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
