// Package redact is the one home of the credential policy
// (docs/security.md, "Credentials"): it removes credentials from text
// before the text is stored, logged, sent in an event or put in a report,
// and recognises credentials whose value it does not know. Every
// occurrence of a known key is replaced in any letter case (an endpoint
// may echo it upper-cased), and always before the text is cut to length,
// so that no part of a key survives a cut; tokens, sk- keys and URLs with
// a password or a key parameter are found by their form. Whatever is
// removed is replaced by one mark, Mark.
package redact

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Mark is what replaces a credential.
const Mark = "[redacted]"

// MinLen is the length below which a value is not treated as a credential:
// shorter strings occur in ordinary text, and no real key is that short.
const MinLen = 4

// Ellipsis ends a text that Clip cut short.
const Ellipsis = "…"

// Redactor replaces a fixed set of credential values. The zero value and a
// nil *Redactor replace nothing. It is safe for concurrent use.
type Redactor struct {
	re      *regexp.Regexp
	secrets []string // longest first
}

// New returns a redactor of the given credential values. A value of the
// form "Scheme TOKEN" (an Authorization header value such as "Bearer
// sk-...") adds TOKEN too, since an endpoint may echo either. Values
// shorter than MinLen are ignored.
func New(values ...string) *Redactor {
	seen := map[string]bool{}
	var secrets []string
	add := func(v string) {
		v = strings.TrimSpace(v)
		if len(v) < MinLen || seen[strings.ToLower(v)] {
			return
		}
		seen[strings.ToLower(v)] = true
		secrets = append(secrets, v)
	}
	for _, v := range values {
		add(v)
		if _, token, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
			add(token)
		}
	}
	if len(secrets) == 0 {
		return &Redactor{}
	}
	// Longest first, so that "Bearer KEY" is replaced whole rather than
	// leaving "Bearer " in front of the mark of KEY.
	slices.SortFunc(secrets, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	quoted := make([]string, len(secrets))
	for i, s := range secrets {
		quoted[i] = regexp.QuoteMeta(s)
	}
	return &Redactor{re: regexp.MustCompile(`(?i)` + strings.Join(quoted, "|")), secrets: secrets}
}

// String replaces every occurrence of each credential in s, in any letter
// case, with Mark.
func (r *Redactor) String(s string) string {
	if r == nil || r.re == nil {
		return s
	}
	return r.re.ReplaceAllLiteralString(s, Mark)
}

// Truncated redacts a text that was read up to a size limit, which may
// have cut a credential: besides every whole credential, a tail of s that
// is the beginning of one (MinLen bytes or more) is replaced too.
func (r *Redactor) Truncated(s string) string {
	s = r.String(s)
	if r == nil {
		return s
	}
	for _, secret := range r.secrets {
		for n := min(len(secret)-1, len(s)); n >= MinLen; n-- {
			if strings.EqualFold(s[len(s)-n:], secret[:n]) {
				return s[:len(s)-n] + Mark
			}
		}
	}
	return s
}

// Clip redacts s and then cuts it to at most max bytes, at a character
// boundary, ending it with Ellipsis when it was cut. Redacting first is
// what keeps a cut from leaving part of a credential behind.
func (r *Redactor) Clip(s string, max int) string {
	return Cut(r.String(s), max)
}

// Cut shortens an already redacted text to at most max bytes (plus the
// ellipsis), at a character boundary.
func Cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + Ellipsis
}
