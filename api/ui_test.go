package api

import (
	"net/http"
	"testing"
)

// TestPageNeedsNoToken checks the one exemption from the token: a browser
// loads the page and its static files without a header, while every API
// route stays closed.
func TestPageNeedsNoToken(t *testing.T) {
	const token = "page-test-token-0123456789"
	secured := newServer(t, Options{Tokens: []string{token}})
	for _, path := range []string{"/", "/ui/", "/ui/js/main.js", "/ui/css/app.css", "/ui/vendor/js-yaml.esm.min.mjs", "/ui/examples/", "/ui/examples/chat.yaml"} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			if rec := send(secured, method, path, nil); rec.Code != http.StatusOK {
				t.Errorf("%s %s without a token: %d, want 200", method, path, rec.Code)
			}
		}
	}
	closed := []struct{ method, path string }{
		{http.MethodGet, "/v1/tiers"},
		{http.MethodPost, "/v1/plans"},
		{http.MethodPost, "/v1/what-if"},
		{http.MethodGet, "/openapi.yaml"},
		{http.MethodGet, "/metrics"},
		{http.MethodPost, "/"},
		{http.MethodPost, "/ui/examples/"},
		{http.MethodDelete, "/ui/js/main.js"},
		{http.MethodGet, "/ui/../v1/tiers"},
		{http.MethodGet, "/ui//v1/tiers"},
		{http.MethodGet, "/uinot"},
		{http.MethodGet, "/v1/ui/"},
	}
	for _, r := range closed {
		rec := send(secured, r.method, r.path, nil)
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("%s %s without a token: %d, want 401", r.method, r.path, rec.Code)
		}
	}
	if rec := send(secured, http.MethodGet, "/v1/tiers", nil, "Authorization", "Bearer "+token); rec.Code != http.StatusOK {
		t.Errorf("GET /v1/tiers with the token: %d", rec.Code)
	}
}
