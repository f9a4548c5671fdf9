package target

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeResolver maps names to addresses; any other name does not resolve.
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	addrs, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		out[i] = netip.MustParseAddr(a)
	}
	return out, nil
}

// countingDialer counts the connections attempted and dials loopback
// addresses only.
type countingDialer struct{ n atomic.Int64 }

func (d *countingDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	d.n.Add(1)
	var nd net.Dialer
	return nd.DialContext(ctx, network, address)
}

func mustRules(t *testing.T, entries ...string) []Rule {
	t.Helper()
	rules, err := ParseRules(entries)
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		entry, err string
	}{
		{entry: "loopback"},
		{entry: "LOOPBACK"},
		{entry: "vllm.internal:8000"},
		{entry: "*.models.example:443"},
		{entry: "gateway.example:*"},
		{entry: "10.20.0.0/16:*"},
		{entry: "10.20.1.7:8000"},
		{entry: "[::1]:8000"},
		{entry: "[fd00::/8]:443"},
		{entry: "vllm.internal", err: "must be loopback, host:port"},
		{entry: "vllm.internal:http", err: `port "http"`},
		{entry: "vllm.internal:0", err: `port "0"`},
		{entry: "10.20.0.0/33:*", err: "not a CIDR block"},
		{entry: "bad_-.example:80", err: "not a host name"},
		{entry: "-bad.example:80", err: "not a host name"},
		{entry: "::1:8000", err: "must be loopback, host:port"},
		{entry: "[fe80::1%eth0]:80", err: "without a zone"},
		{entry: ":80", err: "must be loopback"},
	} {
		t.Run(tc.entry, func(t *testing.T) {
			_, err := ParseRule(tc.entry)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
}

func TestPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"93.184.216.34": true, "2606:4700::1111": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false, "169.254.169.254": false,
		"100.64.0.1": false, "0.0.0.0": false, "224.0.0.1": false, "203.0.113.5": false, "::1": false,
		"fe80::1": false, "fd00::1": false, "64:ff9b::a00:1": false, "2002:a00:1::": false, "::ffff:10.0.0.1": false,
	} {
		if got := Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v, want %v", addr, got, want)
		}
	}
}

// TestCheck applies the rule of the package documentation.
func TestCheck(t *testing.T) {
	res := fakeResolver{
		"localhost":              {"127.0.0.1", "::1"},
		"api.models.example":     {"93.184.216.34"},
		"evil.models.example":    {"10.1.2.3"},
		"mixed.models.example":   {"93.184.216.34", "169.254.169.254"},
		"lab.models.example":     {"10.20.3.4"},
		"vllm.internal":          {"10.20.1.7"},
		"elsewhere.example":      {"93.184.216.34"},
		"loop.models.example":    {"127.0.0.1"},
		"a.b.models.example":     {"93.184.216.34"},
		"rebound.models.example": {"192.168.0.10"},
	}
	rules := mustRules(t, "loopback", "*.models.example:443", "vllm.internal:8000", "10.20.0.0/16:*")
	g := NewGuard(rules, Network{Resolver: res})
	for _, tc := range []struct {
		url  string
		want error // nil: allowed
		msg  string
	}{
		{url: "http://127.0.0.1:8000/v1"},
		{url: "http://[::1]:1234/v1"},
		{url: "http://localhost:9999/v1"},
		{url: "https://api.models.example/v1"},
		{url: "https://lab.models.example/v1"},  // private, but the CIDR entry allows it
		{url: "http://vllm.internal:8000/v1"},   // the name entry and the CIDR entry
		{url: "https://loop.models.example/v1"}, // loopback, allowed by the loopback entry
		{url: "http://10.20.9.9:1/v1"},          // CIDR, any port
		{url: "http://10.1.2.3:8000/v1", want: ErrForbidden, msg: "10.1.2.3:8000 is not in the probe allow-list"},
		{url: "http://93.184.216.34/v1", want: ErrForbidden, msg: "not in the probe allow-list"},
		{url: "https://evil.models.example/v1", want: ErrForbidden, msg: "resolves to 10.1.2.3, which is not a public address"},
		{url: "https://mixed.models.example/v1", want: ErrForbidden, msg: "resolves to 169.254.169.254"},
		{url: "http://api.models.example:8080/v1", want: ErrForbidden, msg: "neither the name nor that address"},
		{url: "https://elsewhere.example/v1", want: ErrForbidden, msg: "neither the name nor that address"},
		{url: "https://a.b.models.example/v1", want: ErrForbidden, msg: "neither the name"}, // * is one label
		{url: "https://nowhere.models.example/v1", want: ErrUnresolvable, msg: "nowhere.models.example"},
		{url: "ftp://127.0.0.1/v1", want: ErrBadURL, msg: "http or https"},
		{url: "http://user:pass@127.0.0.1:8000/v1", want: ErrBadURL, msg: "user information"},
		{url: "http:///v1", want: ErrBadURL, msg: "no host"},
		{url: "http://[fe80::1%25eth0]:80/v1", want: ErrForbidden, msg: "zone"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			_, err := g.Check(context.Background(), tc.url)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("error %v, want %v", err, tc.want)
			case tc.want != nil && !strings.Contains(err.Error(), tc.msg):
				t.Fatalf("error %q lacks %q", err, tc.msg)
			}
		})
	}
}

// TestDialRechecks resolves a name again at connect time: a name that now
// resolves to a forbidden address is refused without a connection.
func TestDialRechecks(t *testing.T) {
	res := fakeResolver{"api.models.example": {"93.184.216.34"}}
	d := &countingDialer{}
	g := NewGuard(mustRules(t, "loopback", "*.models.example:443"), Network{Resolver: res, Dialer: d})
	if _, err := g.Check(context.Background(), "https://api.models.example/v1"); err != nil {
		t.Fatal(err)
	}
	res["api.models.example"] = []string{"127.0.0.2", "10.0.0.1"} // re-bound
	_, err := g.DialContext(context.Background(), "tcp", "api.models.example:443")
	if !errors.Is(err, ErrForbidden) || d.n.Load() != 0 {
		t.Fatalf("dial after rebinding: %v, %d connections attempted", err, d.n.Load())
	}
	if _, err := g.DialContext(context.Background(), "tcp", "10.0.0.1:443"); !errors.Is(err, ErrForbidden) || d.n.Load() != 0 {
		t.Fatalf("dial to a forbidden literal: %v, %d connections attempted", err, d.n.Load())
	}
}

func TestPreflight(t *testing.T) {
	var gotKey atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ok/models", func(w http.ResponseWriter, r *http.Request) {
		gotKey.Store(r.Header.Get("Authorization"))
		_, _ = w.Write([]byte(`{"data":[]}`))
	})
	mux.HandleFunc("GET /found/models", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://10.9.8.7:8000/v1/models?sig=secret", http.StatusFound)
	})
	mux.HandleFunc("GET /temporary/models", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("GET /bare/models", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusMultipleChoices)
	})
	mux.HandleFunc("GET /locked/models", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad key", http.StatusUnauthorized)
	})
	mux.HandleFunc("GET /padded/models", func(w http.ResponseWriter, r *http.Request) {
		// Headers past the cap: net/http would read 10 MiB of them.
		for i := range 4 {
			w.Header().Set(fmt.Sprintf("X-Pad-%d", i), strings.Repeat("a", MaxResponseHeaderBytes/4))
		}
		_, _ = w.Write([]byte(`{"data":[]}`))
	})
	srv := httptest.NewServer(mux) // unknown paths answer 404, which passes
	defer srv.Close()
	d := &countingDialer{}
	g := NewGuard(mustRules(t, "loopback"), Network{Dialer: d})
	key := http.Header{"Authorization": {"Bearer sk-preflight-0123456789abcdef"}}
	for _, tc := range []struct {
		path string
		want error
		msg  string
	}{
		{path: "/ok"},
		{path: "/missing"},
		{path: "/found", want: ErrRedirect, msg: "302, a redirect to http://10.9.8.7:8000/v1/models"},
		{path: "/temporary", want: ErrRedirect, msg: "307, a redirect to http://169.254.169.254/latest"},
		{path: "/bare", want: ErrRedirect, msg: "300"},
		{path: "/locked", want: ErrUnauthorized, msg: "401"},
		{path: "/padded", want: ErrUnreachable, msg: "headers exceeded"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			tg, err := g.Check(context.Background(), srv.URL+tc.path)
			if err != nil {
				t.Fatal(err)
			}
			err = g.Preflight(context.Background(), tg, key)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("error %v, want %v", err, tc.want)
			case tc.want != nil && (!strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), "secret")):
				t.Fatalf("error %q: want %q, and no query", err, tc.msg)
			}
		})
	}
	if gotKey.Load() != "Bearer sk-preflight-0123456789abcdef" {
		t.Errorf("the preflight sent Authorization %q", gotKey.Load())
	}
	before := d.n.Load()
	unreachable := NewGuard(mustRules(t, "loopback"), Network{Dialer: d})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	tg, err := unreachable.Check(context.Background(), "http://"+addr+"/v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := unreachable.Preflight(context.Background(), tg, key); !errors.Is(err, ErrUnreachable) || strings.Contains(err.Error(), "sk-preflight") {
		t.Errorf("closed port: %v", err)
	}
	if d.n.Load() == before {
		t.Error("the closed port was not even tried")
	}
}

func TestRedact(t *testing.T) {
	h := http.Header{"Authorization": {"Bearer sk-abc-0123456789"}}
	got := Redact("sent Bearer sk-abc-0123456789, echoed sk-abc-0123456789", h)
	if strings.Contains(got, "sk-abc") {
		t.Errorf("Redact left the key: %q", got)
	}
}
