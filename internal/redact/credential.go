package redact

import (
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// What a credential looks like when its value is not known: a field or a
// parameter named like one, a bearer token or an sk- key inside text, a
// URL with user information or a credential parameter. The store refuses
// documents that hold one, the API refuses names and labels that do, and
// URLs are shown without them.

// Kinds describes, for a message, what LooksLikeSecret finds.
const Kinds = "a bearer token, an sk- key, a URL with a password or key"

// secretKeys are field and parameter names that carry credentials, lower
// case with '-' written as '_'.
var secretKeys = map[string]bool{
	"api_key": true, "apikey": true, "x_api_key": true, "authorization": true,
	"x_probe_authorization": true, "proxy_authorization": true, "access_token": true,
	"password": true, "secret": true, "client_secret": true,
}

// urlSecretParams are query parameters that carry credentials in URLs
// (Azure's api-key, shared access signatures, generic tokens), besides
// secretKeys.
var urlSecretParams = map[string]bool{"key": true, "token": true, "sig": true, "signature": true, "code": true}

// tokenPattern matches credentials written inside text: bearer tokens and
// keys in the sk-... form several providers use.
var tokenPattern = regexp.MustCompile(`(?i)\bbearer\s+[a-z0-9._~+/=-]{8,}|\bsk-[a-z0-9_-]{16,}`)

func normalizeKey(k string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(k)), "-", "_")
}

// IsSecretKey reports whether a field, header or query parameter of this
// name carries a credential: api_key, Authorization, X-Api-Key, password,
// ... in any letter case, with - or _.
func IsSecretKey(name string) bool { return secretKeys[normalizeKey(name)] }

// Find says why s holds a credential ("holds a token", "carries user
// information", "has a key parameter"), or returns "" when it holds none.
// A field or parameter whose value is Mark holds none.
func Find(s string) string {
	if tokenPattern.MatchString(s) {
		return "holds a token"
	}
	if !strings.Contains(s, "://") {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		return "" // not a URL; nothing to read credentials from
	}
	if u.User != nil {
		return "carries user information"
	}
	q := u.Query()
	for _, k := range slices.Sorted(maps.Keys(q)) {
		n := normalizeKey(k)
		if !secretKeys[n] && !urlSecretParams[n] {
			continue
		}
		for _, v := range q[k] {
			if v != "" && v != Mark {
				return "has a " + k + " parameter"
			}
		}
	}
	return ""
}

// LooksLikeSecret reports whether s holds a credential (Find), so that a
// caller can refuse it, and say where, before storing or showing it.
func LooksLikeSecret(s string) bool { return Find(s) != "" }

// Tokens replaces the tokens in a free-text message (an error from an
// endpoint, say) whose credential is not known: "Bearer X" becomes
// "Bearer [redacted]" and "sk-X" "sk-[redacted]", so that the message can
// always be kept.
func Tokens(s string) string {
	return tokenPattern.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(strings.ToLower(m), "bearer") {
			return "Bearer " + Mark
		}
		return "sk-" + Mark
	})
}

// URLValues are the values URL would hide in raw: its user information's
// name and password and every query parameter's value but api-version's,
// each as written (percent-encoded, as a transport error quotes the URL)
// and decoded, parameters split at & and ; and a bare one (?SECRET) taken
// whole, so that a redactor of them (New) also clears them from text that
// quotes the URL.
func URLValues(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	add := func(v string) {
		out = append(out, v)
		if d, err := url.QueryUnescape(v); err == nil && d != v {
			out = append(out, d)
		}
	}
	if u.User != nil {
		add(u.User.Username())
		if pw, ok := u.User.Password(); ok {
			add(pw)
		}
	}
	for _, part := range strings.FieldsFunc(u.RawQuery, func(r rune) bool { return r == '&' || r == ';' }) {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			v = k // a bare parameter
		}
		if k != "api-version" {
			add(v)
		}
	}
	return out
}

// URL is raw for display and for storing: without its user information,
// with the value of every query parameter but api-version replaced by
// Mark ("https://x.openai.azure.com/openai?api-key=[redacted]&api-version=2024-06-01"),
// and a parameter without a value (?KEY) replaced whole.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable url)"
	}
	u.User = nil
	q := u.Query()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if !slices.ContainsFunc(q[k], func(v string) bool { return v != "" }) {
			parts = append(parts, Mark) // a bare parameter (?KEY) may be the credential itself
			continue
		}
		if k != "api-version" {
			parts = append(parts, url.QueryEscape(k)+"="+Mark)
			continue
		}
		for _, v := range q[k] {
			parts = append(parts, url.QueryEscape(k)+"="+url.QueryEscape(v))
		}
	}
	u.RawQuery = strings.Join(parts, "&")
	return u.String()
}
