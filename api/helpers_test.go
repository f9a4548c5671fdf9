package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/store"
	"github.com/plannerdev/planner/internal/testutil"
)

// fakeStore answers readiness checks with err; it stores nothing (its other methods
// are those of the nil Store it embeds).
type fakeStore struct {
	Store
	err error
}

func (f fakeStore) Ready(context.Context) error { return f.err }

// openStore opens a store in a temporary directory, closed at the end of
// the test.
func openStore(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "planner.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// testTiers is a small catalogue with known numbers.
var testTiers = []config.Tier{
	{Quota: scenario.Quota{Name: "small", RPM: 100, TPM: 50000, TokenAccounting: "max_tokens"}, Description: "test tier"},
	{Quota: scenario.Quota{Name: "large", RPM: 6000, TPM: 4000000, ITPM: 3000000, TokenAccounting: "actual"}, Description: "test tier"},
}

// pricedTiers is a catalogue of five priced tiers for the priced example's
// provisioned key (/quotas/1: a nightly batch of 20,000 requests of 2,000
// input and 400 output tokens, which needs some 160,000 tpm and 65 rpm):
// cheap-tight is the cheapest but too small in tpm, hourly-small too
// small in rpm; of the three in which the plan holds, hourly is the
// cheapest, 5 an hour for 24 hours, 120 a day, against payg's
// 20,000 × (2,000 × 2.5 + 400 × 10)/10⁶ = 180 and premium's 240.
var pricedTiers = []config.Tier{
	{Quota: scenario.Quota{Name: "cheap-tight", RPM: 600, TPM: 100000, Price: &scenario.Price{InputPerMtok: ptr(1.0), OutputPerMtok: ptr(4.0)}}, Description: "test tier"},
	{Quota: scenario.Quota{Name: "payg", RPM: 600, TPM: 1e6, Price: &scenario.Price{InputPerMtok: ptr(2.5), OutputPerMtok: ptr(10.0)}}, Description: "test tier"},
	{Quota: scenario.Quota{Name: "premium", RPM: 1000, TPM: 2e6, Price: &scenario.Price{InputPerMtok: ptr(3.0), OutputPerMtok: ptr(15.0)}}, Description: "test tier"},
	{Quota: scenario.Quota{Name: "hourly", RPM: 600, TPM: 2e6, Price: &scenario.Price{PerHour: ptr(5.0)}}, Description: "test tier"},
	{Quota: scenario.Quota{Name: "hourly-small", RPM: 30, Price: &scenario.Price{PerHour: ptr(1.0)}}, Description: "test tier"},
}

func newServer(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Tiers == nil {
		opts.Tiers = testTiers
	}
	if opts.Store == nil {
		opts.Store = openStore(t)
	}
	return newChecked(t, opts)
}

// newChecked is New(opts) checking every exchange against the OpenAPI
// document (checkContract).
func newChecked(t testing.TB, opts Options) *Server {
	t.Helper()
	s := New(opts)
	checkContract(t, s)
	return s
}

// testHost is the Host of the requests that send makes: the default
// listen address, as a client of `planner serve` would name it.
const testHost = "127.0.0.1:8080"

// send answers one request in process. A "Host" pair among the headers
// sets the request's Host.
func send(h http.Handler, method, path string, body []byte, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Host = testHost
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if http.CanonicalHeaderKey(header[i]) == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// exampleDoc is a shipped example scenario as generic JSON, for building
// request bodies.
func exampleDoc(t testing.TB, name string) map[string]any {
	t.Helper()
	text, ok := planner.Example(name)
	if !ok {
		t.Fatalf("no example %q", name)
	}
	js, err := yaml.YAMLToJSON(text)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// exampleScenario is a shipped example scenario, parsed as planner plan does.
var exampleScenario = testutil.Example

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameJSON reports whether two values encode to the same JSON document.
func sameJSON(t testing.TB, a, b any) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(mustJSON(t, a), &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(mustJSON(t, b), &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

// problem is an RFC 9457 problem document as clients read it.
type problem struct {
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Errors []struct {
		Message  string `json:"message"`
		Location string `json:"location"`
		Value    any    `json:"value"`
	} `json:"errors"`
}

func (p problem) locations() []string {
	out := make([]string, len(p.Errors))
	for i, e := range p.Errors {
		out[i] = e.Location
	}
	return out
}

// readProblem decodes a problem response and checks its media type.
func readProblem(t testing.TB, rec *httptest.ResponseRecorder) problem {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != problemContentType {
		t.Fatalf("content type %q, want %s; body %s", ct, problemContentType, rec.Body)
	}
	var p problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("problem body is not JSON: %v\n%s", err, rec.Body)
	}
	if p.Status != rec.Code {
		t.Errorf("problem status %d, response status %d", p.Status, rec.Code)
	}
	return p
}

var errPing = errors.New("database is locked")
