package api

import (
	"bytes"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/plannerdev/planner"
)

// planBody is a valid POST /v1/plans body.
func planBody(t *testing.T) []byte {
	t.Helper()
	return mustJSON(t, map[string]any{"scenario": exampleDoc(t, "chat")})
}

// TestHostMustNameTheService refuses a Host header that does not name the
// service, which is what a page that rebinds its own DNS name to the
// service's address sends. The service's own names pass: the loopback
// forms on any port (the page it serves on an ephemeral port), its bound
// address, and the configured names.
func TestHostMustNameTheService(t *testing.T) {
	hosts := []string{"planner.example.com", "proxy.example:8443", "10.9.8.7", "dotted.example."}
	for _, tc := range []struct {
		name    string
		bound   string
		allowed []string
		refused []string
	}{
		{
			name:  "bound to loopback",
			bound: "127.0.0.1:8080",
			allowed: []string{"127.0.0.1:8080", "127.0.0.1:43117", "127.0.0.2", "localhost:8080", "LocalHost:8080", "localhost.:8080",
				"[::1]:8080", "planner.example.com", "Planner.Example.COM:443", "proxy.example:8443", "10.9.8.7:8080", "dotted.example:8080", ""},
			refused: []string{"evil.example:8080", "evil.example", "localhost.evil.example:8080", "proxy.example:8080",
				"10.0.0.5:8080", "192.168.1.7", "planner.example.com.evil.example", "[fe80::1%25eth0]:8080"},
		},
		{
			name:    "bound to every interface",
			bound:   "0.0.0.0:8080",
			allowed: []string{"192.168.1.7:8080", "10.0.0.5", "[2001:db8::5]:8080", "localhost:8080", "planner.example.com"},
			refused: []string{"evil.example:8080", "rebind.192.168.1.7.nip.io:8080"},
		},
		{
			name:    "bound to one address",
			bound:   "192.0.2.10:8080",
			allowed: []string{"192.0.2.10:8080", "192.0.2.10", "127.0.0.1:8080", "[::ffff:192.0.2.10]:8080"},
			refused: []string{"192.0.2.11:8080", "evil.example"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, err := net.ResolveTCPAddr("tcp", tc.bound)
			if err != nil {
				t.Fatal(err)
			}
			s := newServer(t, Options{Addr: addr, Hosts: hosts})
			for _, host := range tc.allowed {
				if rec := send(s, http.MethodGet, "/v1/tiers", nil, "Host", host); rec.Code != http.StatusOK {
					t.Errorf("Host %q: %d %s", host, rec.Code, rec.Body)
				}
			}
			for _, host := range tc.refused {
				rec := send(s, http.MethodPost, "/v1/plans", planBody(t), "Host", host)
				if rec.Code != http.StatusForbidden {
					t.Errorf("Host %q: %d, want 403", host, rec.Code)
					continue
				}
				if p := readProblem(t, rec); !slices.Equal(p.locations(), []string{"header.Host"}) || !strings.Contains(p.Detail, "allowed_hosts") {
					t.Errorf("Host %q: %+v", host, p)
				}
			}
		})
	}
}

// TestForeignOriginIsRefused refuses a request that a page of another
// origin sends, whatever its method, unless the origin is configured.
// The service's own page (its origin is the Host it was loaded from) and
// clients that send no Origin pass.
func TestForeignOriginIsRefused(t *testing.T) {
	s := newServer(t, Options{Origins: []string{"http://localhost:3000", "https://tools.example.com"}})
	for _, tc := range []struct {
		name   string
		method string
		header []string
		want   int
	}{
		{"no origin (curl, the CLI)", http.MethodPost, nil, http.StatusOK},
		{"the service's own page", http.MethodPost, []string{"Origin", "http://127.0.0.1:8080", "Sec-Fetch-Site", "same-origin"}, http.StatusOK},
		{"its own page by localhost", http.MethodPost, []string{"Host", "localhost:41234", "Origin", "http://localhost:41234"}, http.StatusOK},
		{"its own page, old browser", http.MethodPost, []string{"Origin", "http://127.0.0.1:8080"}, http.StatusOK},
		{"a configured origin", http.MethodPost, []string{"Origin", "http://localhost:3000", "Sec-Fetch-Site", "same-site"}, http.StatusOK},
		{"another configured origin", http.MethodPost, []string{"Origin", "https://tools.example.com", "Sec-Fetch-Site", "cross-site"}, http.StatusOK},
		{"a foreign site", http.MethodPost, []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"a foreign site, old browser", http.MethodPost, []string{"Origin", "https://evil.example"}, http.StatusForbidden},
		{"another port of localhost", http.MethodPost, []string{"Host", "localhost:8080", "Origin", "http://localhost:8081", "Sec-Fetch-Site", "same-site"}, http.StatusForbidden},
		{"another scheme", http.MethodPost, []string{"Origin", "ftp://127.0.0.1:8080"}, http.StatusForbidden},
		{"an opaque origin", http.MethodPost, []string{"Origin", "null"}, http.StatusForbidden},
		{"cross-site without Origin", http.MethodPost, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"a read from a foreign site", http.MethodGet, []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"a read from the service's page", http.MethodGet, []string{"Origin", "http://127.0.0.1:8080"}, http.StatusOK},
		{"a link from another site", http.MethodGet, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, body := "/v1/plans", planBody(t)
			if tc.method == http.MethodGet {
				path, body = "/v1/tiers", nil
			}
			rec := send(s, tc.method, path, body, tc.header...)
			if rec.Code != tc.want {
				t.Fatalf("%d, want %d: %s", rec.Code, tc.want, rec.Body)
			}
			if tc.want == http.StatusForbidden {
				if p := readProblem(t, rec); !slices.Equal(p.locations(), []string{"header.Origin"}) || !strings.Contains(p.Detail, "allowed_origins") {
					t.Errorf("%+v", p)
				}
			}
		})
	}
}

// TestBodyMustBeDeclared refuses a body that is not declared as JSON or
// YAML: without a Content-Type, or as one of the types a page may send
// to another site without the browser asking first.
func TestBodyMustBeDeclared(t *testing.T) {
	s := newServer(t, Options{})
	for _, tc := range []struct {
		ctype string
		want  int
	}{
		{"", http.StatusUnsupportedMediaType},
		{"text/plain", http.StatusUnsupportedMediaType},
		{"text/plain; charset=utf-8", http.StatusUnsupportedMediaType},
		{"application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"multipart/form-data; boundary=x", http.StatusUnsupportedMediaType},
		{"text/plain+json", http.StatusUnsupportedMediaType},
		{"application/json;;", http.StatusUnsupportedMediaType},
		{"application/json", http.StatusOK},
		{"application/json; charset=utf-8", http.StatusOK},
		{"application/json; charset=UTF-8", http.StatusOK},
		{`application/json; charset="utf-8"`, http.StatusOK},
		{"application/json; charset=iso-8859-1", http.StatusUnsupportedMediaType},
		{"APPLICATION/JSON; CHARSET=LATIN1", http.StatusUnsupportedMediaType},
		{"application/yaml; charset=utf-16", http.StatusUnsupportedMediaType},
		{"APPLICATION/XML", http.StatusUnsupportedMediaType},
		{"Text/Plain", http.StatusUnsupportedMediaType},
	} {
		rec := send(s, http.MethodPost, "/v1/plans", planBody(t), "Content-Type", tc.ctype)
		if rec.Code != tc.want {
			t.Errorf("Content-Type %q: %d, want %d: %s", tc.ctype, rec.Code, tc.want, rec.Body)
			continue
		}
		if tc.want == http.StatusUnsupportedMediaType {
			p := readProblem(t, rec)
			if !slices.Equal(p.locations(), []string{"header.Content-Type"}) {
				t.Errorf("Content-Type %q: %+v", tc.ctype, p)
			}
			// A refused charset is named.
			if mt, params, err := mime.ParseMediaType(tc.ctype); err == nil && slices.Contains(bodyTypes, mt) &&
				(len(p.Errors) == 0 || !strings.Contains(p.Errors[0].Message, strconv.Quote(params["charset"]))) {
				t.Errorf("Content-Type %q: the problem does not name the charset: %+v", tc.ctype, p)
			}
		}
	}
	// The header is set empty, as curl -H 'Content-Type:' does.
	req := send(s, http.MethodPost, "/v1/plans", planBody(t), "Content-Type", "")
	if req.Code != http.StatusUnsupportedMediaType {
		t.Errorf("an empty Content-Type: %d", req.Code)
	}
	// A request without a body needs no type.
	if rec := send(s, http.MethodDelete, "/v1/probes/nope", nil); rec.Code == http.StatusUnsupportedMediaType {
		t.Errorf("a request without a body: %d %s", rec.Code, rec.Body)
	}
}

// TestMediaTypeIsCaseInsensitive: a media type is read in any case (RFC
// 9110, §8.3.1), so a body declared APPLICATION/JSON or Application/YAML
// gets exactly the answer of one declared in lower case, and its
// problems are those of its body.
func TestMediaTypeIsCaseInsensitive(t *testing.T) {
	s := newServer(t, Options{})
	text, _ := planner.Example("chat")
	yamlBody := []byte("scenario:\n  " + strings.ReplaceAll(strings.TrimSpace(string(text)), "\n", "\n  ") + "\n")
	badJSON := bytes.Replace(planBody(t), []byte(`"name":"chat"`), []byte(`"name":"bad name!"`), 1)
	if bytes.Equal(badJSON, planBody(t)) {
		t.Fatal("the chat scenario has no class named chat")
	}
	for _, tc := range []struct {
		lower string
		body  []byte
		cases []string
	}{
		{"application/json", planBody(t), []string{"APPLICATION/JSON", "Application/Json", "application/JSON; Charset=UTF-8"}},
		{"application/json", badJSON, []string{"APPLICATION/JSON"}},
		{"application/yaml", yamlBody, []string{"Application/YAML", "APPLICATION/YAML", "application/Yaml; charset=utf-8"}},
	} {
		want := send(s, http.MethodPost, "/v1/plans", tc.body, "Content-Type", tc.lower)
		if want.Code != http.StatusOK && want.Code != http.StatusUnprocessableEntity {
			t.Fatalf("%s: %d %s", tc.lower, want.Code, want.Body)
		}
		for _, ct := range tc.cases {
			got := send(s, http.MethodPost, "/v1/plans", tc.body, "Content-Type", ct)
			if got.Code != want.Code || got.Body.String() != want.Body.String() {
				t.Errorf("Content-Type %q: %d %.400s\nwant, as %s: %d %.400s", ct, got.Code, got.Body, tc.lower, want.Code, want.Body)
			}
		}
	}
}

// TestEncodedBodyIsRefused: a compressed body is a 415 at its
// Content-Encoding, not a body that fails to parse; identity is none.
func TestEncodedBodyIsRefused(t *testing.T) {
	s := newServer(t, Options{})
	for ce, want := range map[string]int{"gzip": http.StatusUnsupportedMediaType, "br": http.StatusUnsupportedMediaType, "identity": http.StatusOK, "": http.StatusOK} {
		rec := send(s, http.MethodPost, "/v1/plans", planBody(t), "Content-Encoding", ce)
		if rec.Code != want {
			t.Errorf("Content-Encoding %q: %d, want %d: %.300s", ce, rec.Code, want, rec.Body)
		} else if want != http.StatusOK && !slices.Equal(readProblem(t, rec).locations(), []string{"header.Content-Encoding"}) {
			t.Errorf("Content-Encoding %q: %s", ce, rec.Body)
		}
	}
	// Every header and every coding of a list counts.
	req := httptest.NewRequest(http.MethodPost, "/v1/plans", bytes.NewReader(planBody(t)))
	req.Host, req.Header["Content-Type"] = testHost, []string{"application/json"}
	req.Header["Content-Encoding"] = []string{"identity", "gzip"}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnsupportedMediaType {
		t.Errorf("identity, then gzip in a second header: %d", rec.Code)
	}
	if rec := send(s, http.MethodPost, "/v1/plans", planBody(t), "Content-Encoding", "identity, gzip"); rec.Code != http.StatusUnsupportedMediaType {
		t.Errorf("identity, gzip: %d", rec.Code)
	}
}

// TestYAMLBody plans a scenario sent as YAML, as the command line and the
// page read it: the same plan as the JSON body, and problems located the
// same way.
func TestYAMLBody(t *testing.T) {
	s := newServer(t, Options{})
	text, _ := planner.Example("chat")
	yamlBody := "scenario:\n  " + strings.ReplaceAll(strings.TrimSpace(string(text)), "\n", "\n  ") + "\n"
	fromYAML := send(s, http.MethodPost, "/v1/plans", []byte(yamlBody), "Content-Type", "application/yaml")
	fromJSON := send(s, http.MethodPost, "/v1/plans", planBody(t))
	if fromYAML.Code != http.StatusOK || fromJSON.Code != http.StatusOK {
		t.Fatalf("YAML %d %s; JSON %d", fromYAML.Code, fromYAML.Body, fromJSON.Code)
	}
	if fromYAML.Body.String() != fromJSON.Body.String() {
		t.Errorf("the YAML body planned differently:\n%s\n%s", fromYAML.Body, fromJSON.Body)
	}
	for _, tc := range []struct {
		name, body string
		status     int
		location   string
	}{
		{"a field problem", strings.Replace(yamlBody, "- name: chat", "- name: 'bad name!'", 1), http.StatusUnprocessableEntity, "body.scenario.classes[0].name"},
		{"not YAML", "scenario: [unclosed", http.StatusBadRequest, "body"},
		// Only one document is read: a second one, valid or not, is
		// refused rather than ignored.
		{"a malformed second document", yamlBody + "---\nscenario: [unclosed\n", http.StatusBadRequest, "body"},
		{"a second scenario", yamlBody + "---\n" + yamlBody, http.StatusBadRequest, "body"},
		{"an empty second document", yamlBody + "---\n", http.StatusBadRequest, "body"},
		{"aliases that expand without end", "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n" +
			"d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n" +
			"g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\nscenario: [*h, *h, *h, *h, *h, *h, *h, *h, *h]\n", http.StatusBadRequest, "body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := send(s, http.MethodPost, "/v1/plans", []byte(tc.body), "Content-Type", "application/yaml")
			if rec.Code != tc.status {
				t.Fatalf("%d, want %d: %.500s", rec.Code, tc.status, rec.Body)
			}
			p := readProblem(t, rec)
			if !slices.Contains(p.locations(), tc.location) {
				t.Errorf("locations %q lack %q", p.locations(), tc.location)
			}
			if strings.Contains(tc.body, "---") && (len(p.Errors) != 1 || !strings.Contains(p.Errors[0].Message, "more than one YAML document")) {
				t.Errorf("the problem does not say the body holds more than one document: %+v", p)
			}
		})
	}
	// A document end marker ends the one document; it starts none.
	if rec := send(s, http.MethodPost, "/v1/plans", []byte(yamlBody+"...\n"), "Content-Type", "application/yaml"); rec.Code != http.StatusOK {
		t.Errorf("one document ended by ...: %d %.300s", rec.Code, rec.Body)
	}
}

// TestSecurityHeaders: every answer says nosniff, and every answer but
// the page and the docs page, whose scripts must run, forbids everything
// a document could load or run.
func TestSecurityHeaders(t *testing.T) {
	s := newServer(t, Options{})
	saved := send(s, http.MethodPost, "/v1/plans", mustJSON(t, map[string]any{"scenario": exampleDoc(t, "chat"), "save": true}))
	id := decode[PlanResponse](t, saved.Body.Bytes()).ID
	for _, tc := range []struct {
		method, path string
		body         []byte
		csp          string // "": the page's own policy
	}{
		{http.MethodGet, "/v1/plans/" + id + "/report?format=html", nil, documentCSP},
		{http.MethodGet, "/v1/plans/" + id + "/report?format=md", nil, documentCSP},
		{http.MethodGet, "/v1/records?format=md", nil, documentCSP},
		{http.MethodGet, "/v1/tiers", nil, documentCSP},
		{http.MethodPost, "/v1/plans", []byte("{"), documentCSP},
		{http.MethodGet, "/healthz", nil, documentCSP},
		{http.MethodGet, "/metrics", nil, documentCSP},
		{http.MethodGet, "/openapi.yaml", nil, documentCSP},
		{http.MethodGet, "/no/such/path", nil, documentCSP},
		{http.MethodGet, "/v1/plans/" + id, nil, documentCSP},
		{http.MethodGet, "/docs", nil, docsCSP},
		{http.MethodGet, "/", nil, ""},
		{http.MethodGet, "/ui/js/main.js", nil, ""},
	} {
		rec := send(s, tc.method, tc.path, tc.body)
		if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s (%d): X-Content-Type-Options %q", tc.method, tc.path, rec.Code, got)
		}
		got := rec.Header().Get("Content-Security-Policy")
		if (tc.csp != "" && got != tc.csp) || (tc.csp == "" && (got == "" || got == documentCSP)) {
			t.Errorf("%s %s (%d): Content-Security-Policy %q, want %q", tc.method, tc.path, rec.Code, got, tc.csp)
		}
	}
	// Refused requests carry them too.
	rec := send(s, http.MethodGet, "/v1/tiers", nil, "Host", "evil.example")
	if rec.Code != http.StatusForbidden || rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("Content-Security-Policy") != documentCSP {
		t.Errorf("a refused request: %d %v", rec.Code, rec.Header())
	}
}
