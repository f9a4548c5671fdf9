package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/plannerdev/planner/internal/redact"
)

// The store's callers already drop credentials before they store anything;
// the checks here are a second line, so that a mistake upstream fails
// loudly instead of writing a key to disk. What a credential looks like is
// package redact's.

// checkDocument refuses a JSON document that carries a credential: a field
// named like one (api_key, authorization, ...) whose value is not empty,
// null, false or redact.Mark; a string that holds a bearer token or an sk-
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
			if redact.IsSecretKey(k) && hasValue(child) {
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
		return x != "" && x != redact.Mark
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
	if why := redact.Find(s); why != "" {
		return fmt.Errorf("%w: %s %s", ErrSecret, path, why)
	}
	return nil
}
