// Package testutil holds the few helpers that tests of several packages
// share: the shipped example scenarios, a buffer that a test can read while
// a server writes to it, a JSON request to a real HTTP server, and an HTTP
// server on in-memory pipes for tests on testing/synctest's fake clock.
package testutil

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
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
