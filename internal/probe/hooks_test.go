package probe

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/plannerdev/planner/internal/measure"
)

// TestDialHook routes every connection through Config.DialContext, and
// never through a proxy.
func TestDialHook(t *testing.T) {
	_, base := startSim(t, fastSim)
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1") // would break every request if used
	var dials atomic.Int64
	cfg := quick(base)
	cfg.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	res := run(t, context.Background(), cfg, nil)
	if res.Failure() != nil || dials.Load() == 0 {
		t.Fatalf("failure %v, %d dials", res.Failure(), dials.Load())
	}
	refused := quick(base)
	refused.DialContext = func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("address not allowed")
	}
	res = run(t, context.Background(), refused, nil)
	if res.Failure() == nil || !strings.Contains(res.ErrorSamples[measure.ErrTransport], "address not allowed") {
		t.Fatalf("a refusing dialer: %v %v", res.Failure(), res.ErrorSamples)
	}
}

// TestRedirectHook lets Config.CheckRedirect refuse a redirect: the
// request fails as a transport error and the redirect's target is never
// asked.
func TestRedirectHook(t *testing.T) {
	var elsewhere atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	defer target.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	cfg := quick(redirect.URL + "/v1")
	cfg.Steps = []int{1}
	cfg.CheckRedirect = func(*http.Request, []*http.Request) error { return errors.New("redirects are refused") }
	res := run(t, context.Background(), cfg, nil)
	if elsewhere.Load() != 0 || !strings.Contains(res.ErrorSamples[measure.ErrTransport], "redirects are refused") {
		t.Fatalf("%d requests reached the redirect's target; samples %v", elsewhere.Load(), res.ErrorSamples)
	}
}

// TestKeyAsIs sends a whole Authorization value and redacts it, and its
// token, from every message.
func TestKeyAsIs(t *testing.T) {
	const token = "sk-asis-0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"Incorrect API key provided: `+token+` (`+r.Header.Get("Authorization")+`)"}}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	cfg := quick(srv.URL + "/v1")
	cfg.Steps = []int{1}
	cfg.APIKey, cfg.APIKeyAsIs = "Bearer "+token, true
	res := run(t, context.Background(), cfg, nil)
	sample := res.ErrorSamples[measure.ErrClient]
	if !strings.Contains(sample, "Incorrect API key") || strings.Contains(sample, token) || strings.Contains(res.Failure().Error(), token) {
		t.Fatalf("sample %q, failure %v", sample, res.Failure())
	}
	if !strings.Contains(sample, "([redacted])") {
		t.Errorf("the header value was not sent as is, or not redacted: %q", sample)
	}
}
