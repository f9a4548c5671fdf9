package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// The store's callers already drop credentials before they store anything;
// the checks here are a second line, so that a mistake upstream fails
// loudly instead of writing a key to disk.

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

// redactedValue is what a caller writes in place of a credential it
// removed; it is not itself a credential.
const redactedValue = "redacted"

// checkDocument refuses a JSON document that carries a credential: a field
// named like one (api_key, authorization, ...) whose value is not empty,
// null, false or "redacted"; a string that holds a bearer token or an sk-
// key; a string that is a URL with a password or a credential parameter.
func checkDocument(what string, doc []byte) error {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%s is not valid JSON: %w", what, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s is not a single JSON document", what)
	}
	return checkValue(what, v)
}

func checkValue(path string, v any) error {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			p := path + "." + k
			if secretKeys[normalizeKey(k)] && hasValue(child) {
				return fmt.Errorf("%w: %s holds a value", ErrSecret, p)
			}
			if err := checkValue(p, child); err != nil {
				return err
			}
		}
	case []any:
		for i, child := range x {
			if err := checkValue(path+"["+strconv.Itoa(i)+"]", child); err != nil {
				return err
			}
		}
	case string:
		return checkText(path, x)
	}
	return nil
}

// hasValue reports whether a field holds something other than an empty or
// redacted value.
func hasValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != "" && x != redactedValue
	case map[string]any:
		return len(x) > 0
	case []any:
		return len(x) > 0
	}
	return true
}

// checkText refuses a string that holds a token or is a URL carrying a
// credential.
func checkText(path, s string) error {
	if tokenPattern.MatchString(s) {
		return fmt.Errorf("%w: %s holds a token", ErrSecret, path)
	}
	if !strings.Contains(s, "://") {
		return nil
	}
	return checkURL(path, s)
}

// checkURL refuses a URL with user information (a password, or a token
// written as the user name) or a credential in its query.
func checkURL(path, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return nil // not a URL; nothing to read credentials from
	}
	if u.User != nil {
		return fmt.Errorf("%w: %s carries user information", ErrSecret, path)
	}
	for k, vs := range u.Query() {
		n := normalizeKey(k)
		if !secretKeys[n] && !urlSecretParams[n] {
			continue
		}
		for _, v := range vs {
			if v != "" && v != redactedValue {
				return fmt.Errorf("%w: %s has a %s parameter", ErrSecret, path, k)
			}
		}
	}
	return nil
}

// redactText replaces the tokens in a free-text message (an error from the
// endpoint, say) so that a message can always be stored.
func redactText(s string) string {
	return tokenPattern.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(strings.ToLower(m), "bearer") {
			return "Bearer [redacted]"
		}
		return "sk-[redacted]"
	})
}

// LooksLikeSecret reports whether a text would be refused as a credential
// (a bearer token, an sk- key, a URL with a password or a key parameter),
// so that a caller can locate the problem before storing the text.
func LooksLikeSecret(s string) bool {
	return checkText("", s) != nil
}
