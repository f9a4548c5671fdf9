package api

import (
	"net/http"
	"slices"
	"testing"
)

func TestAuthentication(t *testing.T) {
	const token, other = "first-token-0123456789", "second-token-0123456789"
	secured := newServer(t, Options{Tokens: []string{token, other}})
	open := newServer(t, Options{})
	routes := []struct{ method, path string }{
		{http.MethodGet, "/v1/tiers"},
		{http.MethodPost, "/v1/plans"},
		{http.MethodPost, "/v1/what-if"},
		{http.MethodGet, "/readyz"},
		{http.MethodGet, "/metrics"},
		{http.MethodGet, "/docs"},
		{http.MethodGet, "/docs/assets/styles.min.css"},
		{http.MethodGet, "/openapi.yaml"},
		{http.MethodGet, "/openapi.json"},
		{http.MethodGet, "/no-such-route"},
	}
	for _, r := range routes {
		for _, header := range []string{"", "Bearer wrong-token-0123456789", "Bearer " + token + "x", "Basic " + token, token, "Bearer"} {
			rec := send(secured, r.method, r.path, nil, "Authorization", header)
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("%s %s with %q: %d, want 401", r.method, r.path, header, rec.Code)
				continue
			}
			p := readProblem(t, rec)
			if !slices.Equal(p.locations(), []string{"header.Authorization"}) || rec.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s: problem %+v, WWW-Authenticate %q", r.method, r.path, p, rec.Header().Get("WWW-Authenticate"))
			}
		}
		for _, header := range []string{"Bearer " + token, "bearer " + other} {
			if rec := send(secured, r.method, r.path, nil, "Authorization", header); rec.Code == http.StatusUnauthorized {
				t.Errorf("%s %s with a configured token: 401", r.method, r.path)
			}
		}
		if rec := send(open, r.method, r.path, nil); rec.Code == http.StatusUnauthorized {
			t.Errorf("%s %s without tokens configured: 401", r.method, r.path)
		}
	}
	if rec := send(secured, http.MethodGet, "/healthz", nil); rec.Code != http.StatusOK {
		t.Errorf("/healthz needs no token: %d", rec.Code)
	}
}

func TestTokenMatches(t *testing.T) {
	tokens := hashTokens([]string{"alpha-token-0123456789", "beta-token-0123456789"})
	for _, tc := range []struct {
		header string
		want   bool
	}{
		{"Bearer alpha-token-0123456789", true},
		{"Bearer beta-token-0123456789", true},
		{"bearer beta-token-0123456789", true},
		{"BEARER  beta-token-0123456789 ", true},
		{"Bearer alpha-token-012345678", false},
		{"Bearer alpha-token-01234567890", false},
		{"Bearer ", false},
		{"Bearer", false},
		{"", false},
		{"alpha-token-0123456789", false},
		{"Basic alpha-token-0123456789", false},
		{"Token alpha-token-0123456789", false},
	} {
		if got := tokenMatches(tc.header, tokens); got != tc.want {
			t.Errorf("tokenMatches(%q) = %v, want %v", tc.header, got, tc.want)
		}
	}
	if tokenMatches("Bearer anything", nil) {
		t.Error("no tokens must match nothing")
	}
}
