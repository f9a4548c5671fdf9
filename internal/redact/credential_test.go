package redact

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"nightly run, 4 GPUs", ""},
		{"Bearer abcdefghijklmnop", "holds a token"},
		{"key " + key, "holds a token"},
		{"bearer short", ""},
		{"http://u:p@127.0.0.1/v1", "carries user information"},
		{"http://token@127.0.0.1/v1", "carries user information"},
		{"https://x.openai.azure.com/openai?api-version=2024-06-01&api-key=abc", "has a api-key parameter"},
		{"http://127.0.0.1:8000/v1?token=abc&sig=x", "has a sig parameter"},
		{"https://x.openai.azure.com/openai?api-version=2024-06-01&api-key=" + Mark, ""},
		{"https://x.openai.azure.com/openai?api-key=", ""},
		{"http://127.0.0.1:8000/v1?model=m", ""},
		{"see http://[::1", ""},
	} {
		if got := Find(tc.in); got != tc.want {
			t.Errorf("Find(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if LooksLikeSecret(tc.in) != (tc.want != "") {
			t.Errorf("LooksLikeSecret(%q) disagrees with Find", tc.in)
		}
	}
	for name, want := range map[string]bool{"api_key": true, "API-Key": true, "X-Api-Key": true, "Authorization": true, " password ": true, "credential": false, "api_key_set": false} {
		if IsSecretKey(name) != want {
			t.Errorf("IsSecretKey(%q) = %v", name, !want)
		}
	}
}

func TestTokens(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain message", "plain message"},
		{"Authorization: Bearer abc.def-ghi_jkl", "Authorization: Bearer " + Mark},
		{"key sk-proj-ABCDEFGHIJKLMNOP1234 rejected", "key sk-" + Mark + " rejected"},
		{"bearer short", "bearer short"},
	} {
		if got := Tokens(tc.in); got != tc.want {
			t.Errorf("Tokens(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestURL: a URL for display keeps its host, path and api-version, puts
// the one mark in every other query value and drops user information;
// what it gives holds no credential.
func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"},
		{"https://u:p@x.openai.azure.com/openai?api-version=2024-06-01&api-key=abc", "https://x.openai.azure.com/openai?api-key=[redacted]&api-version=2024-06-01"},
		{"http://h/v1?token=a&token=b&x=1", "http://h/v1?token=[redacted]&x=[redacted]"},
		{"http://h/v1?api-version=a+b", "http://h/v1?api-version=a+b"},
		{"http://h/v1?abcSECRET", "http://h/v1?[redacted]"},
		{"://nope", "(unparsable url)"},
	} {
		got := URL(tc.in)
		if got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if why := Find(got); why != "" || strings.Contains(got, "abc") {
			t.Errorf("URL(%q) = %q still %s", tc.in, got, why)
		}
	}
}

// TestURLValues: the values URL hides are what a redactor of the URL's
// credentials needs, and a text quoting the URL keeps none of them.
func TestURLValues(t *testing.T) {
	raw := "https://user:pa55word@x.example/v1?api-version=2024-06-01&key=k3y-value&sig=s1gnature"
	got := URLValues(raw)
	slices.Sort(got)
	if want := []string{"k3y-value", "pa55word", "s1gnature", "user"}; !slices.Equal(got, want) {
		t.Errorf("URLValues(%q) = %q, want %q", raw, got, want)
	}
	text := New(got...).String(`Post "` + raw + `": dial tcp: connection refused`)
	for _, v := range []string{"k3y-value", "pa55word", "s1gnature"} {
		if strings.Contains(text, v) {
			t.Errorf("%q survives in %q", v, text)
		}
	}
	if !strings.Contains(text, "api-version=2024-06-01") {
		t.Errorf("the api-version is gone from %q", text)
	}
	for _, raw := range []string{
		"http://h/v1?api-key=abc%2Bdef%2FSECRETX",
		"http://h/v1?a=1;key=SECRET3",
		"http://h/v1?SECRET5",
		"http://h/v1?k=SECRET9&k=SECRET10",
	} {
		u, _ := url.Parse(raw)
		text := New(URLValues(raw)...).String(`Post "` + raw + `": refused; ` + u.Query().Encode())
		for _, secret := range []string{"SECRET", "abc+def"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s: %q survives in %q", raw, secret, text)
			}
		}
	}
	if URLValues("://bad") != nil {
		t.Error("an unparsable URL has values")
	}
}
