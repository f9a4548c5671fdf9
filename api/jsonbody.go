package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// jsonFormat reads and writes application/json as huma does, and reads
// request bodies as the command line reads scenario files: a key given
// twice in one object is refused (encoding/json would keep the last one
// silently), and a whole number written with an exponent or as -0 (7e2,
// -0) fills an integer field as the schema accepts it.
func jsonFormat(base huma.Format) huma.Format {
	return huma.Format{Marshal: base.Marshal, Unmarshal: decodeJSONBody}
}

// decodeJSONBody decodes a request body into v. huma decodes each body
// twice, into an any to validate it and then into the operation's input:
// the first refuses repeated keys, the second takes whole numbers in any
// notation.
func decodeJSONBody(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	if _, generic := v.(*any); generic {
		if err != nil {
			return err
		}
		return repeatedKey(data)
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || !strings.HasPrefix(te.Value, "number") {
		return err
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		return err
	}
	js, merr := json.Marshal(wholeNumbers(doc))
	if merr != nil {
		return err
	}
	if err := json.Unmarshal(js, v); err != nil {
		if errors.As(err, &te) {
			return fmt.Errorf("%s: expected a whole number that fits a %s", te.Field, te.Type)
		}
		return err
	}
	return nil
}

// maxExact is the largest whole number a float64 holds exactly, 2⁵³.
const maxExact = 1 << 53

// wholeNumbers rewrites, in a document decoded with UseNumber, every
// number that is a whole one of at most 2⁵³ in magnitude in plain digits
// (7e2 is 700, -0 is 0), so that an integer field takes it.
func wholeNumbers(doc any) any {
	switch d := doc.(type) {
	case map[string]any:
		for k, v := range d {
			d[k] = wholeNumbers(v)
		}
	case []any:
		for i, v := range d {
			d[i] = wholeNumbers(v)
		}
	case json.Number:
		if f, err := d.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) <= maxExact {
			return json.Number(strconv.FormatInt(int64(f), 10))
		}
	}
	return doc
}

// repeatedKey is an error naming the first key given twice in one object
// of a JSON document, with where it is ("quotas[0].rpm"); nil when no key
// repeats.
func repeatedKey(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object bool
		keys   map[string]bool
		index  int
		path   string
	}
	var stack []*frame
	at := func(f *frame, key string) string {
		if f.path == "" {
			return key
		}
		return f.path + "." + key
	}
	// child is the path of the value that comes next in the innermost
	// object or array; expectKey says whether an object waits for a key.
	var key string
	expectKey := false
	child := func() string {
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if f.object {
			return at(f, key)
		}
		return fmt.Sprintf("%s[%d]", f.path, f.index)
	}
	done := func() { // a value of the innermost container ended
		if len(stack) == 0 {
			return
		}
		if f := stack[len(stack)-1]; f.object {
			expectKey = true
		} else {
			f.index++
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or a syntax error json.Unmarshal reported
		}
		if expectKey {
			if s, ok := tok.(string); ok {
				f := stack[len(stack)-1]
				if f.keys[s] {
					return fmt.Errorf("%s: the key %q is given twice in one object", at(f, s), s)
				}
				f.keys[s] = true
				key, expectKey = s, false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, path: child()})
			expectKey = true
		case json.Delim('['):
			stack = append(stack, &frame{path: child()})
			expectKey = false
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
		default:
			done()
		}
	}
}
