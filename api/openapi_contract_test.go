package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// The contract: every answer that the API's tests see is checked against
// the OpenAPI document with kin-openapi's validator (openapi3filter), as
// a client generated from the document or a validating proxy would check
// it. newServer and newTestServer install checkContract, so that every
// test of the package also tests the document: an answer whose status,
// media type, body or header the document does not declare fails the test
// that caused it, and so does a request that the service accepted (2xx)
// but the document does not allow.

// maxCheckedRequestBody is the largest request body whose copy the check
// keeps: a larger one (a result file of tens of megabytes) is not checked
// against the document, so that tests of the service's own memory bounds
// measure the service.
const maxCheckedRequestBody = 1 << 20

// declaredHeaders are the response headers that the service sets on
// purpose: where an answer carries one, its response in the document
// must declare it.
var declaredHeaders = []string{"Retry-After", "Location", "Content-Disposition", "WWW-Authenticate"}

// contract is the API's OpenAPI document as kin-openapi reads it, and its
// router from requests to operations.
type contract struct {
	doc    *openapi3.T
	router routers.Router
}

// loadContract reads the document that planner openapi prints (openapi.yaml
// is its output, which a test of cmd/planner keeps equal) with kin-openapi,
// validates it as an OpenAPI document, and registers the decoders of the
// media types the document declares beyond kin-openapi's own.
var loadContract = sync.OnceValues(func() (*contract, error) {
	text, err := New(Options{}).OpenAPI().YAML()
	if err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(text)
	if err != nil {
		return nil, fmt.Errorf("kin-openapi cannot read the document: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("the document is not a valid OpenAPI document: %w", err)
	}
	// Requests reach the handler with a path only; the document's one
	// server is relative ("/").
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	for _, mt := range []string{"text/markdown", "text/html", "image/svg+xml", "text/event-stream"} {
		openapi3filter.RegisterBodyDecoder(mt, openapi3filter.PlainBodyDecoder)
	}
	return &contract{doc: doc, router: router}, nil
})

// checkContract makes s check every request and answer it handles against
// the document, failing t on a mismatch. Benchmarks measure the service
// alone and are not checked.
func checkContract(t testing.TB, s *Server) {
	t.Helper()
	if _, bench := t.(*testing.B); bench {
		return
	}
	s.handler = contractChecked(t, s.handler)
}

// contractChecked is next checking every exchange against the document,
// failing t on a mismatch: a fuzz target checks each input's exchange
// with its own t.
func contractChecked(t testing.TB, next http.Handler) http.Handler {
	t.Helper()
	c, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	ended := false
	t.Cleanup(func() {
		mu.Lock()
		ended = true
		mu.Unlock()
	})
	fail := func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		if !ended {
			t.Errorf("the OpenAPI document does not describe this exchange: %s", msg)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := &cappedCopy{max: maxCheckedRequestBody}
		if r.Body != nil {
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.TeeReader(r.Body, body), r.Body}
		}
		rec := &answerCopy{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if msg := c.check(r, body, rec); msg != "" {
			fail(msg)
		}
	})
}

// check returns what the document does not declare of one exchange, ""
// when it declares all of it. A request to no operation of the document
// (the page, /docs, /openapi.yaml, unknown routes) is not checked.
func (c *contract) check(r *http.Request, body *cappedCopy, rec *answerCopy) string {
	route, params, err := c.router.FindRoute(r)
	if err != nil {
		return ""
	}
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	what := fmt.Sprintf("%s %s answered %d", r.Method, r.URL.RequestURI(), status)
	ctx := context.Background()
	in := &openapi3filter.RequestValidationInput{
		Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
	}
	if status/100 == 2 {
		// The service accepted the request: the document must allow it.
		req := r.Clone(ctx)
		req.Body = io.NopCloser(bytes.NewReader(body.buf.Bytes()))
		opts := *in.Options
		opts.ExcludeRequestBody = body.over
		opts.SkipSettingDefaults = true
		if err := openapi3filter.ValidateRequest(ctx, &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route, Options: &opts,
		}); err != nil {
			return fmt.Sprintf("%s, but the document refuses the request: %v", what, err)
		}
	}
	resp := route.Operation.Responses.Status(status)
	if resp == nil {
		return fmt.Sprintf("%s, a status the operation does not declare (%s)", what, rec.Body())
	}
	for _, h := range declaredHeaders {
		if rec.Header().Get(h) != "" && resp.Value.Headers[h] == nil {
			return fmt.Sprintf("%s with a %s header that the response does not declare", what, h)
		}
	}
	err = openapi3filter.ValidateResponse(ctx, &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: status, Header: rec.Header(), Body: io.NopCloser(bytes.NewReader(rec.buf.Bytes())),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	})
	if err != nil {
		return fmt.Sprintf("%s: %v\n%.600s", what, err, rec.Body())
	}
	if mt, _, _ := strings.Cut(rec.Header().Get("Content-Type"), ";"); mt == "text/event-stream" {
		if msg := c.checkEvents(resp.Value.Content.Get(mt), rec.buf.Bytes()); msg != "" {
			return what + ": " + msg
		}
	}
	return ""
}

// checkEvents checks a stream of server-sent events against the event
// schemas that its media type declares (declareEvents): each event must
// be a declared one, its data a JSON document of the event's schema.
func (c *contract) checkEvents(mt *openapi3.MediaType, stream []byte) string {
	if mt == nil || mt.Schema == nil || len(mt.Schema.Value.Defs) == 0 {
		return "the response declares no text/event-stream with its events under $defs"
	}
	events, err := parseEvents(stream)
	if err != nil {
		return err.Error()
	}
	for i, ev := range events {
		schema, ok := mt.Schema.Value.Defs[ev.name]
		if !ok {
			return fmt.Sprintf("event %d is %q, which the document does not declare", i, ev.name)
		}
		var data any
		if err := json.Unmarshal([]byte(ev.data), &data); err != nil {
			return fmt.Sprintf("event %d (%s): data is not JSON: %v", i, ev.name, err)
		}
		if err := schema.Value.VisitJSON(data, openapi3.VisitAsResponse(), openapi3.MultiErrors(), openapi3.EnableJSONSchema2020()); err != nil {
			return fmt.Sprintf("event %d (%s) does not match its schema: %v", i, ev.name, err)
		}
	}
	return ""
}

// parseEvents reads a text/event-stream body as the HTML standard's
// event-stream interpretation does, keeping each event's name ("message"
// when it names none) and its data lines joined.
func parseEvents(stream []byte) ([]sseEvent, error) {
	var out []sseEvent
	var name string
	var data []string
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if data != nil {
				if name == "" {
					name = "message"
				}
				out = append(out, sseEvent{name: name, data: strings.Join(data, "\n")})
			}
			name, data = "", nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			data = append(data, value)
		case "", "id", "retry":
		default:
			return nil, fmt.Errorf("the stream has a line of an unknown field: %q", line)
		}
	}
	return out, sc.Err()
}

// cappedCopy keeps the first max bytes written to it and whether more
// came.
type cappedCopy struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *cappedCopy) Write(p []byte) (int, error) {
	if c.over || c.buf.Len()+len(p) > c.max {
		c.over = true
		c.buf.Reset()
		return len(p), nil
	}
	return c.buf.Write(p)
}

// answerCopy passes an answer through and keeps its status and body.
type answerCopy struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (a *answerCopy) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
	a.ResponseWriter.WriteHeader(status)
}

func (a *answerCopy) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	a.buf.Write(b)
	return a.ResponseWriter.Write(b)
}

// Body is the start of the answer, for messages.
func (a *answerCopy) Body() string {
	const most = 300
	if a.buf.Len() > most {
		return a.buf.String()[:most] + "…"
	}
	return a.buf.String()
}

// Unwrap gives http.ResponseController the writer underneath.
func (a *answerCopy) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// Flush sends buffered data, for streamed answers.
func (a *answerCopy) Flush() {
	if f, ok := a.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// TestContractCheckFindsMismatches: the check that every test of the
// package runs finds each kind of mismatch, and passes exchanges the
// document declares.
func TestContractCheckFindsMismatches(t *testing.T) {
	c, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	tiers := `{"tiers":[]}`
	stream := func(events ...string) string { return strings.Join(events, "\n\n") + "\n\n" }
	for _, tc := range []struct {
		name, method, path, reqType, reqBody string
		status                               int
		header                               http.Header
		body                                 string
		want                                 string // in the message; "" for none
	}{
		{name: "declared", method: "GET", path: "/v1/tiers", status: 200, header: jsonHeader(), body: tiers},
		{name: "undeclared status", method: "GET", path: "/v1/tiers", status: 418, header: problemHeader(), body: `{"status":418}`, want: "does not declare"},
		{name: "body off its schema", method: "GET", path: "/v1/tiers", status: 200, header: jsonHeader(), body: `{"tiers":5}`, want: "doesn't match schema"},
		{name: "undeclared media type", method: "GET", path: "/v1/tiers", status: 200, header: http.Header{"Content-Type": {"application/yaml"}}, body: "tiers: []\n", want: "application/yaml"},
		{name: "undeclared header", method: "GET", path: "/v1/plans", status: 503, header: withHeader(problemHeader(), "Retry-After", "1"), body: `{"status":503}`, want: "Retry-After"},
		{name: "accepted but refused by the document", method: "POST", path: "/v1/plans", reqType: "text/plain", reqBody: "{}", status: 200, header: jsonHeader(), body: `{}`, want: "refuses the request"},
		{name: "not an operation", method: "GET", path: "/nowhere", status: 404, header: problemHeader(), body: `{}`},
		{name: "events", method: "GET", path: "/v1/probes/p1/events", status: 200, header: sseHeader(),
			body: stream(`event: status`+"\n"+`data: {"status":"running"}`, `event: progress`+"\n"+`data: {"step":1,"requests":0,"ok":0,"rate_limited":0,"errors":0}`)},
		{name: "undeclared event", method: "GET", path: "/v1/probes/p1/events", status: 200, header: sseHeader(), body: stream(`event: bogus` + "\n" + `data: {}`), want: `"bogus"`},
		{name: "event off its schema", method: "GET", path: "/v1/probes/p1/events", status: 200, header: sseHeader(), body: stream(`event: status` + "\n" + `data: {"status":"flying"}`), want: "does not match its schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.reqBody))
			if tc.reqType != "" {
				req.Header.Set("Content-Type", tc.reqType)
			}
			body := &cappedCopy{max: maxCheckedRequestBody}
			body.buf.WriteString(tc.reqBody)
			rec := &answerCopy{ResponseWriter: httptest.NewRecorder()}
			maps.Copy(rec.Header(), tc.header)
			rec.WriteHeader(tc.status)
			_, _ = rec.Write([]byte(tc.body))
			got := c.check(req, body, rec)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("check says %q, want a message with %q", got, tc.want)
			}
		})
	}
}

func jsonHeader() http.Header    { return http.Header{"Content-Type": {"application/json"}} }
func problemHeader() http.Header { return http.Header{"Content-Type": {problemContentType}} }
func sseHeader() http.Header     { return http.Header{"Content-Type": {"text/event-stream"}} }

func withHeader(h http.Header, k, v string) http.Header {
	h.Set(k, v)
	return h
}
