package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// obj is a decoded JSON object read leniently: the tools add, rename and
// null out keys between versions, so every accessor says whether the key
// held a value of the wanted kind instead of failing.
type obj map[string]any

// decodeJSONValues decodes one JSON value or several in a row (newline
// separated objects, as vLLM's --append-result and JSON Lines files hold).
// On a syntax error it returns the values decoded before it, so that a
// truncated file can still be recognised.
//
// Result files run to tens of megabytes, so the common layouts are decoded
// without a second copy of the file: a single value in place (its numbers
// as float64, exact for every count and time a single-document layout
// holds), and JSON Lines line by line (numbers kept as written, for the
// nanosecond timestamps of AIPerf's records). Anything else goes through
// a streaming decoder.
func decodeJSONValues(data []byte) ([]any, error) {
	if json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		var typeErr *json.UnmarshalTypeError
		if err == nil || errors.As(err, &typeErr) {
			// A number beyond float64 (1e400) is left out as null, as
			// asNum refuses it anyway.
			return []any{v}, nil
		}
	}
	if vals, ok := decodeJSONLines(data); ok {
		return vals, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var vals []any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			if len(vals) == 0 {
				return nil, errors.New("no JSON value")
			}
			return vals, nil
		}
		if err != nil {
			after := ""
			if len(vals) > 0 {
				after = fmt.Sprintf(" after %d complete values", len(vals))
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return vals, fmt.Errorf("the JSON ends early%s (truncated file?)", after)
			}
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return vals, fmt.Errorf("invalid JSON%s: %s", after, syntaxAt(data, se))
			}
			return vals, fmt.Errorf("invalid JSON%s: %w", after, err)
		}
		vals = append(vals, v)
	}
}

// decodeJSONLines decodes data as one JSON value per line (blank lines
// aside), or reports false when a line is not a whole value.
func decodeJSONLines(data []byte) ([]any, bool) {
	var vals []any
	for line := range bytes.Lines(data) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) {
			return nil, false
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		vals = append(vals, v)
	}
	return vals, len(vals) > 0
}

// asObj returns v as an object.
func asObj(v any) (obj, bool) {
	m, ok := v.(map[string]any)
	return obj(m), ok
}

// asNum returns v as a finite number. JSON numbers and numeric strings
// qualify; null, "inf", "NaN" and out-of-range literals do not.
func asNum(v any) (float64, bool) {
	var f float64
	var err error
	switch x := v.(type) {
	case json.Number:
		f, err = x.Float64()
	case string:
		f, err = strconv.ParseFloat(strings.TrimSpace(x), 64)
	case float64:
		f = x
	default:
		return 0, false
	}
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// asInt64 returns v as an exact integer, for nanosecond timestamps that a
// float64 would round.
func asInt64(v any) (int64, bool) {
	if n, ok := v.(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			return i, true
		}
	}
	f, ok := asNum(v)
	if !ok || math.Abs(f) > 9e18 {
		return 0, false
	}
	return int64(f), true
}

func (o obj) has(key string) bool {
	_, ok := o[key]
	return ok
}

func (o obj) num(key string) (float64, bool) { return asNum(o[key]) }

// optNum reads a figure that a file may leave out: absent, null (or the
// text None, null or NaN, as a pandas CSV writes a missing value) is
// (0, false, nil); a finite number, or text that holds one, is (v, true,
// nil); anything else is an error that names the key, rather than the
// figure taken as missing.
func (o obj) optNum(key string) (float64, bool, error) {
	v, present := o[key]
	if !present || v == nil {
		return 0, false, nil
	}
	if f, ok := asNum(v); ok {
		return f, true, nil
	}
	if s, ok := v.(string); ok {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "", "none", "null", "nan":
			return 0, false, nil
		}
	}
	return 0, false, fmt.Errorf("%q is %s: not a finite number", key, shownValue(v))
}

// optCount reads a count of requests or tokens that a file may leave out,
// as optNum does, and refuses one that is not a whole number of at least 0.
func (o obj) optCount(key string) (int, bool, error) {
	f, ok, err := o.optNum(key)
	if err != nil || !ok {
		return 0, ok, err
	}
	n, isCount := count(f)
	if !isCount {
		return 0, false, fmt.Errorf("%q is %g: not a whole number of at least 0", key, f)
	}
	return n, true, nil
}

// shownValue writes a JSON value for a message, as the file holds it
// (text quoted), cut to 40 characters.
func shownValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 40 {
		return string(b[:37]) + "..."
	}
	return string(b)
}

func (o obj) str(key string) (string, bool) {
	s, ok := o[key].(string)
	return s, ok
}

func (o obj) obj(key string) (obj, bool) { return asObj(o[key]) }

func (o obj) arr(key string) ([]any, bool) {
	a, ok := o[key].([]any)
	return a, ok
}

// at follows a path of object keys.
func (o obj) at(keys ...string) (any, bool) {
	var cur any = map[string]any(o)
	for _, k := range keys {
		m, ok := asObj(cur)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func (o obj) numAt(keys ...string) (float64, bool) {
	v, ok := o.at(keys...)
	if !ok {
		return 0, false
	}
	return asNum(v)
}

func (o obj) strAt(keys ...string) (string, bool) {
	v, ok := o.at(keys...)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

func (o obj) objAt(keys ...string) (obj, bool) {
	v, ok := o.at(keys...)
	if !ok {
		return nil, false
	}
	return asObj(v)
}

// firstString returns the first element of a list of strings, or the value
// itself when it is a string (tools store model names either way).
func firstString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		if len(x) > 0 {
			if s, ok := x[0].(string); ok {
				return s
			}
		}
	}
	return ""
}

// count reads a non-negative whole number of requests.
func count(v any) (int, bool) {
	f, ok := asNum(v)
	if !ok || f < 0 || f > 1e12 || f != math.Trunc(f) {
		return 0, false
	}
	return int(f), true
}

// syntaxAt says where a syntax error is, by line and column, and what it
// found there when it is a literal that Python's json module writes and
// JSON has not (NaN, Infinity): the file of a tool that wrote a missing
// figure so.
func syntaxAt(data []byte, se *json.SyntaxError) string {
	off := int(min(max(se.Offset-1, 0), int64(len(data))))
	if off > 0 && data[off-1] == '-' && bytes.HasPrefix(data[off:], []byte("Infinity")) {
		off-- // the error is at the I of -Infinity
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := 1 + off - (bytes.LastIndexByte(data[:off], '\n') + 1)
	rest := data[off:]
	for _, lit := range []string{"NaN", "Infinity", "-Infinity"} {
		if bytes.HasPrefix(rest, []byte(lit)) {
			return fmt.Sprintf("line %d, column %d: %s is not a JSON number (Python's json module writes it; a missing figure is null)", line, col, lit)
		}
	}
	return fmt.Sprintf("line %d, column %d: %v", line, col, se)
}
