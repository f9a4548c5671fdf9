// Package testutil holds the few helpers that tests of several packages
// share: the shipped example scenarios, a buffer that a test can read while
// a server writes to it, a JSON request to a real HTTP server, rows of an
// earlier release inserted into a store's database, an HTTP server on
// in-memory pipes for tests on testing/synctest's fake clock, and the
// checks that a result type's every field reaches the other end of a
// JSON document, the store or an HTTP answer (Fill, Diff, Carried).
package testutil

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/scenario"
)

// Example is the shipped example scenario name (docs/examples/NAME.yaml),
// parsed as planner plan parses it; a missing or invalid example fails the
// test.
func Example(t testing.TB, name string) scenario.Scenario {
	t.Helper()
	text, ok := planner.Example(name)
	if !ok {
		t.Fatalf("no example %q", name)
	}
	sc, err := scenario.Parse(text)
	if err != nil {
		t.Fatalf("example %s: %v", name, err)
	}
	return sc
}

// SyncBuffer is an output stream (a log, a command's standard output) that
// a test reads while another goroutine writes to it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// CallJSON sends body (if not nil) as JSON to url with the header pairs
// given (name, value, ...) and returns the status, headers and body of the
// answer; any transport error fails the test.
func CallJSON(t testing.TB, method, url string, body any, header ...string) (int, http.Header, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// InsertRows inserts into db the rows of a fixture file, a JSON object of
// table names to lists of rows (column → value), table by table in the
// order given: rows as an earlier release stored them, for the tests that
// read them back. Numbers keep their exact digits (nanosecond times). db
// is a *sql.DB, or anything that runs a statement with ? for its
// arguments as one does.
func InsertRows(t testing.TB, db interface {
	Exec(query string, args ...any) (sql.Result, error)
}, path string, tables ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var fixture map[string][]map[string]any
	if err := dec.Decode(&fixture); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, table := range tables {
		for _, row := range fixture[table] {
			cols := slices.Sorted(maps.Keys(row))
			args := make([]any, len(cols))
			for i, c := range cols {
				args[i] = row[c]
				if n, ok := row[c].(json.Number); ok {
					if args[i], err = n.Int64(); err != nil {
						t.Fatalf("%s: %s.%s: %v", path, table, c, err)
					}
				}
			}
			q := "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (?" + strings.Repeat(", ?", len(cols)-1) + ")"
			if _, err := db.Exec(q, args...); err != nil {
				t.Fatalf("%s: insert into %s: %v", path, table, err)
			}
		}
	}
}
