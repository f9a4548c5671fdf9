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
// repeats. data has been decoded already, so it is valid JSON: a scan of
// its bytes that keeps each open object's keys as slices of data, without
// a token or a map per object, so that a large body (an analysis's
// measurements) costs little more than its decoding.
func repeatedKey(data []byte) error {
	type frame struct {
		object bool
		keys   [][]byte // the object's keys so far, raw
		index  int      // the array's element
	}
	var stack []frame
	expectKey := false
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		if f := &stack[len(stack)-1]; f.object {
			expectKey = true
		} else {
			f.index++
		}
	}
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			switch {
			case f.object && b.Len() > 0:
				b.WriteByte('.')
				fallthrough
			case f.object:
				b.Write(f.keys[len(f.keys)-1])
			default:
				fmt.Fprintf(&b, "[%d]", f.index)
			}
		}
		return b.String()
	}
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '{':
			stack = append(stack, frame{object: true})
			expectKey = true
		case '[':
			stack = append(stack, frame{})
			expectKey = false
		case '}', ']':
			stack = stack[:len(stack)-1]
			valueDone()
		case '"':
			start := i + 1
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
			str := data[start:min(i, len(data))]
			if !expectKey {
				valueDone()
				continue
			}
			f := &stack[len(stack)-1]
			for _, k := range f.keys {
				if bytes.Equal(k, str) {
					f.keys = append(f.keys, str)
					return fmt.Errorf("%s: the key %q is given twice in one object", path(), str)
				}
			}
			f.keys = append(f.keys, str)
			expectKey = false
		case ',', ':', ' ', '\t', '\n', '\r':
		default: // a number, true, false or null
			for i+1 < len(data) && !endsLiteral(data[i+1]) {
				i++
			}
			valueDone()
		}
	}
	return nil
}

// endsLiteral reports whether c ends a number or a literal in JSON.
func endsLiteral(c byte) bool {
	switch c {
	case ',', ':', ']', '}', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}
