package api

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/danielgtaylor/huma/v2"
)

// operation is one operation of the OpenAPI document, with a path to
// request it at (its parameters filled in).
type operation struct {
	method, path string
	op           *huma.Operation
}

// operations lists every operation of s's document.
func operations(s *Server) []operation {
	var out []operation
	for path, item := range s.OpenAPI().Paths {
		concrete := strings.NewReplacer("{id}", "p1", "{probe_id}", "p1").Replace(path)
		for method, op := range map[string]*huma.Operation{http.MethodGet: item.Get, http.MethodPost: item.Post, http.MethodDelete: item.Delete} {
			if op != nil {
				out = append(out, operation{method: method, path: concrete, op: op})
			}
		}
	}
	return out
}

// TestEveryOperationAnswersAsDeclared sends every operation of the
// document what the layers around the operations refuse, through a
// server whose every exchange is checked against the document
// (checkContract): a foreign Origin and a foreign Host (403), no token on
// a server with tokens (401 with WWW-Authenticate, all but /healthz),
// and to every operation with a body, a body declared text/plain (415), a
// body over the limit (413), a body that is no document (400) and a YAML
// body (read as JSON is). An answer the document does not declare fails.
func TestEveryOperationAnswersAsDeclared(t *testing.T) {
	s := newServer(t, Options{MaxBodyBytes: 4096, MaxAnalysisBodyBytes: 8192})
	withTokens := newServer(t, Options{Tokens: []string{"s3cret-token-for-tests"}})
	for _, o := range operations(s) {
		want := func(rec interface{ Result() *http.Response }, status int, what string) {
			t.Helper()
			if got := rec.Result().StatusCode; got != status {
				t.Errorf("%s %s, %s: status %d, want %d", o.method, o.path, what, got, status)
			}
		}
		var body []byte
		if o.op.RequestBody != nil {
			body = []byte(`{}`)
		}
		want(send(s, o.method, o.path, body, "Origin", "https://evil.example"), http.StatusForbidden, "a foreign Origin")
		want(send(s, o.method, o.path, body, "Host", "evil.example"), http.StatusForbidden, "a foreign Host")
		if o.path != openPath {
			rec := send(withTokens, o.method, o.path, body)
			want(rec, http.StatusUnauthorized, "no token")
			if rec.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s: a 401 without WWW-Authenticate", o.method, o.path)
			}
		}
		if o.op.RequestBody == nil {
			continue
		}
		want(send(s, o.method, o.path, []byte(`{}`), "Content-Type", "text/plain"), http.StatusUnsupportedMediaType, "a text/plain body")
		want(send(s, o.method, o.path, bytes.Repeat([]byte(" "), 8193)), http.StatusRequestEntityTooLarge, "a body over the limit")
		want(send(s, o.method, o.path, []byte(`{"scenario":`)), http.StatusBadRequest, "a body that is no document")
		// A YAML body is read as its JSON equivalent: the same problems
		// (this one is empty, and misses what the operation requires). A
		// validation requires nothing (its target defaults to the stored
		// plan's probe): this server, without a store, cannot run it.
		status := http.StatusUnprocessableEntity
		if strings.HasSuffix(o.path, "/validate") {
			status = http.StatusServiceUnavailable
		}
		want(send(s, o.method, o.path, []byte("{}\n"), "Content-Type", "application/yaml"), status, "an empty YAML body")
	}
}

// TestShedAnswersDeclareRetryAfter: with every computation slot busy and
// as many waiting as may wait, each operation that computes sheds its
// request with a 503 and a Retry-After that its response declares
// (checkContract checks the header against the document).
func TestShedAnswersDeclareRetryAfter(t *testing.T) {
	s := newServer(t, Options{MaxComputations: 1})
	saved := send(s, http.MethodPost, "/v1/plans", []byte(`{"save":true,"scenario":`+runawayFree+`}`))
	if saved.Code != http.StatusOK {
		t.Fatalf("save a plan: %d %s", saved.Code, saved.Body)
	}
	id := strings.TrimPrefix(saved.Header().Get("Location"), "/v1/plans/")
	ctx, release := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 3 { // one slot and two waiters
		wg.Go(func() {
			_ = s.engine.Run(ctx, func(ctx context.Context) error { <-ctx.Done(); return nil })
		})
	}
	for s.engine.Running() < 1 || s.engine.Waiting() < 2 {
		runtime.Gosched()
	}
	// Not the saved plan's scenario, whose plan the engine has cached.
	scenario := `{"scenario":` + strings.Replace(runawayFree, `"rpm":600`, `"rpm":700`, 1) + `}`
	for _, r := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/plans", scenario},
		{http.MethodPost, "/v1/what-if", `{"scenario":` + runawayFree + `,"variations":[{"path":"/quotas/0/rpm","values":[600,1200]}]}`},
		{http.MethodPost, "/v1/simulations", `{"scenario":` + runawayFree + `,"duration_s":60}`},
		{http.MethodGet, "/v1/plans/" + id + "/report?simulate_s=60", ""},
	} {
		var body []byte
		if r.body != "" {
			body = []byte(r.body)
		}
		rec := send(s, r.method, r.path, body)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s %s: status %d, Retry-After %q; want 503 with Retry-After", r.method, r.path, rec.Code, rec.Header().Get("Retry-After"))
		}
	}
	release()
	wg.Wait()
}

// TestAnswersAreJSONWhateverAccept: a client that asks for YAML still
// gets JSON, as the document declares, for a result and for a problem.
func TestAnswersAreJSONWhateverAccept(t *testing.T) {
	s := newServer(t, Options{})
	rec := send(s, http.MethodGet, "/v1/tiers", nil, "Accept", "application/yaml")
	if ct := rec.Header().Get("Content-Type"); rec.Code != http.StatusOK || !strings.HasPrefix(ct, "application/json") {
		t.Errorf("tiers: %d %q", rec.Code, ct)
	}
	rec = send(s, http.MethodPost, "/v1/plans", []byte(`{}`), "Accept", "application/yaml")
	if rec.Code != http.StatusUnprocessableEntity {
		t.Fatalf("status %d", rec.Code)
	}
	readProblem(t, rec) // application/problem+json
}

// TestNullListsAreRefusedAsDeclared: a list that a request requires is
// declared non-nullable, and null there is a 422 at the field; the
// document refuses the same request (so a client validating against it
// learns what the service answers).
func TestNullListsAreRefusedAsDeclared(t *testing.T) {
	c, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, Options{})
	for _, r := range []struct{ path, body, location string }{
		{"/v1/plans", `{"scenario":{"quotas":null,"classes":[]}}`, "body.scenario.quotas"},
		{"/v1/plans", `{"scenario":{"quotas":[{"name":"k","rpm":1}],"classes":null}}`, "body.scenario.classes"},
		{"/v1/what-if", `{"scenario":` + runawayFree + `,"variations":null}`, "body.variations"},
		{"/v1/simulations", `{"scenario":` + runawayFree + `,"replay":[{"class":"c","start_s":null}]}`, "body.replay[0].start_s"},
	} {
		rec := send(s, http.MethodPost, r.path, []byte(r.body))
		if p := readProblem(t, rec); rec.Code != http.StatusUnprocessableEntity || !slices.Contains(p.locations(), r.location) {
			t.Errorf("%s %s: %d %s, want a 422 at %s", r.path, r.body, rec.Code, rec.Body, r.location)
		}
		req := httptest.NewRequest(http.MethodPost, r.path, strings.NewReader(r.body))
		req.Header.Set("Content-Type", "application/json")
		route, params, err := c.router.FindRoute(req)
		if err != nil {
			t.Fatal(err)
		}
		if err := openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		}); err == nil {
			t.Errorf("%s %s: the document allows it", r.path, r.body)
		}
	}
}

// TestRequestFieldsWithDefaultsAreOptional: no property of a schema that
// a request body uses has a `default` keyword, which generators such as
// openapi-typescript read as "always present" and so as a field every
// request must send; the default is stated as x-default, and the field
// is not required.
func TestRequestFieldsWithDefaultsAreOptional(t *testing.T) {
	c, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[*openapi3.Schema]bool{}
	var walk func(at string, ref *openapi3.SchemaRef)
	walk = func(at string, ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		sc := ref.Value
		seen[sc] = true
		for name, p := range sc.Properties {
			if p.Value.Default != nil {
				t.Errorf("%s.%s has default %v", at, name, p.Value.Default)
			}
			walk(at+"."+name, p)
		}
		walk(at+"[]", sc.Items)
		walk(at+"{}", sc.AdditionalProperties.Schema)
		for _, sub := range slices.Concat(sc.OneOf, sc.AnyOf, sc.AllOf) {
			walk(at, sub)
		}
	}
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody != nil {
				walk(method+" "+path, op.RequestBody.Value.Content.Get("application/json").Schema)
			}
		}
	}
	quota := c.doc.Components.Schemas["Quota"].Value
	if h := quota.Properties["headroom"].Value; h.Extensions["x-default"] != 0.9 || slices.Contains(quota.Required, "headroom") {
		t.Errorf("headroom: x-default %v, required %v", h.Extensions["x-default"], quota.Required)
	}
}
