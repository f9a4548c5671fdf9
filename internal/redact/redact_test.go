package redact

import (
	"strings"
	"testing"
	"unicode/utf8"
)

const key = "sk-proj-0123456789abcdefghijklmnopqrstu" // 39 characters

func TestString(t *testing.T) {
	r := New("Bearer " + key)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"none", "nothing secret here", "nothing secret here"},
		{"whole header value", "sent Authorization: Bearer " + key + " to it", "sent Authorization: [redacted] to it"},
		{"the token alone", `{"error":"bad key ` + key + `"}`, `{"error":"bad key [redacted]"}`},
		{"upper-cased", "INVALID KEY " + strings.ToUpper(key), "INVALID KEY [redacted]"},
		{"mixed case, twice", "a " + strings.ToTitle(key[:10]) + key[10:] + " b " + key, "a [redacted] b [redacted]"},
		{"regexp characters are literal", "x.y", "x.y"},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("%s: String(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestShortAndEmptyValuesAreIgnored(t *testing.T) {
	for _, r := range []*Redactor{New(), New(""), New("abc"), nil, {}} {
		if got := r.String("abc Bearer abc"); got != "abc Bearer abc" {
			t.Errorf("a redactor of nothing changed the text: %q", got)
		}
		if got := r.Clip("abcdef", 3); got != "abc"+Ellipsis {
			t.Errorf("Clip = %q", got)
		}
	}
	if got := New("Bearer abc").String("abc Bearer abc"); got != "abc [redacted]" {
		t.Errorf("a whole header value with a short token: %q", got)
	}
}

func TestRegexpMetacharactersInKey(t *testing.T) {
	r := New("a+b(c)*d.e")
	if got := r.String("x a+B(C)*D.E y aXbcd" + "e"); got != "x [redacted] y aXbcde" {
		t.Errorf("got %q", got)
	}
}

// TestClipRedactsBeforeCutting is the echo of a key placed across the cut:
// redacting after the cut would leave its first part behind.
func TestClipRedactsBeforeCutting(t *testing.T) {
	r := New(key)
	prefix := strings.Repeat("x", 166)
	for _, echoed := range []string{key, strings.ToUpper(key)} {
		got := r.Clip(prefix+echoed+" was refused", 200)
		if strings.Contains(strings.ToLower(got), strings.ToLower(key[:MinLen])) {
			t.Errorf("part of the key survived: %q", got)
		}
		want := prefix + "[redacted] was refused"
		if got != want {
			t.Errorf("Clip = %q, want %q", got, want)
		}
	}
	long := strings.Repeat("y", 190) + key
	if got := r.Clip(long, 195); got != strings.Repeat("y", 190)+"[reda"+Ellipsis {
		t.Errorf("a cut through the mark: %q", got)
	}
}

func TestTruncated(t *testing.T) {
	r := New(key)
	for n := 0; n <= len(key); n++ {
		text := "echo: " + strings.ToUpper(key[:n])
		got := r.Truncated(text)
		switch {
		case n >= MinLen && got != "echo: [redacted]":
			t.Errorf("a text cut %d bytes into the key: %q", n, got)
		case n < MinLen && got != text:
			t.Errorf("a tail of %d bytes, shorter than MinLen, was changed: %q", n, got)
		}
	}
	if got := r.Truncated("skip"); got != "skip" {
		t.Errorf("a tail that is not the key's start was changed: %q", got)
	}
	if got := r.Truncated(key + " and sk-"); got != "[redacted] and sk-" {
		t.Errorf("got %q", got)
	}
}

func TestCutKeepsCharacters(t *testing.T) {
	s := strings.Repeat("é", 10) // 2 bytes each
	for max := 0; max <= len(s); max++ {
		got := Cut(s, max)
		if !utf8.ValidString(got) {
			t.Fatalf("Cut(%d) split a character: %q", max, got)
		}
		body := strings.TrimSuffix(got, Ellipsis)
		if len(body) > max || (max < len(s) && len(body) < max-1) {
			t.Errorf("Cut(%d) kept %d bytes", max, len(body))
		}
	}
	if Cut("short", 10) != "short" {
		t.Error("a short text was changed")
	}
}
