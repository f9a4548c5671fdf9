package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
)

// Object keys are matched as the schema spells them. huma otherwise
// validates a key in any case as the property it folds to
// ("requeSts" as requests) and encoding/json then fills that field, so a
// body the published schema refuses would be planned.
func init() { huma.ValidateStrictCasing = true }

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
// notation. Both read a number written as -0 (-0.0, -0e3) as 0, so that
// no answer echoes a "-0" (a stored scenario read back, a what-if's
// values).
func decodeJSONBody(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return syntaxProblem(data, se)
	}
	if zeros := positiveZeros(data); len(zeros) != len(data) {
		data, err = zeros, json.Unmarshal(zeros, v)
	}
	if _, generic := v.(*any); generic {
		var te *json.UnmarshalTypeError
		if err != nil && !(errors.As(err, &te) && strings.HasPrefix(te.Value, "number")) {
			return err
		}
		if perr := repeatedKey(data); perr != nil || err == nil {
			return perr
		}
		return err
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
// of a JSON document, or the first number beyond the range of a float64
// (1e999), with where it is ("quotas[0].rpm"); nil when neither. Keys are compared as the API reads them: unescaped, and as
// written ("rpm" and "\u0072pm" are one key; "RPM" is another, which a
// body's schema refuses as unknown, and in a map such as labels a key of
// its own). data has been decoded already, so it is valid JSON: a scan of
// its bytes that keeps each open object's keys as slices of data while it
// has few and in a set beyond, in time linear in the body.
func repeatedKey(data []byte) error {
	type frame struct {
		object bool
		keys   [][]byte            // the object's keys so far, raw
		set    map[string]struct{} // unescaped keys, once there are many
		index  int                 // the array's element
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
				b.WriteString(keyText(f.keys[len(f.keys)-1]))
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
			if seen(f.keys, &f.set, str) {
				f.keys = append(f.keys, str)
				return fmt.Errorf("%s: the key %q is given twice in one object", shortPath(path()), shortPath(keyText(str)))
			}
			f.keys = append(f.keys, str)
			expectKey = false
		case ',', ':', ' ', '\t', '\n', '\r':
		default: // a number, true, false or null
			start := i
			for i+1 < len(data) && !endsLiteral(data[i+1]) {
				i++
			}
			if lit := data[start : i+1]; c == '-' || c >= '0' && c <= '9' {
				if _, err := strconv.ParseFloat(string(lit), 64); errors.Is(err, strconv.ErrRange) {
					return fmt.Errorf("%s: the number %s is beyond the range of a number", shortPath(path()), lit)
				}
			}
			valueDone()
		}
	}
	return nil
}

// manyKeys is the number of keys past which an object's keys are looked
// up in a set rather than compared one by one.
const manyKeys = 16

// seen reports whether key, raw, is one of keys, read as keyText reads
// them. While an object has fewer than manyKeys, all plain, they are
// compared in place; a key that is not plain, or one past manyKeys, moves
// them into a set of their text.
func seen(keys [][]byte, set *map[string]struct{}, key []byte) bool {
	if *set == nil && len(keys) < manyKeys && plain(key) {
		for _, k := range keys {
			if bytes.Equal(k, key) {
				return true
			}
		}
		return false
	}
	if *set == nil {
		*set = make(map[string]struct{}, 2*len(keys))
		for _, k := range keys {
			(*set)[keyText(k)] = struct{}{}
		}
	}
	f := keyText(key)
	if _, ok := (*set)[f]; ok {
		return true
	}
	(*set)[f] = struct{}{}
	return false
}

// plain reports whether a raw key is ASCII without an escape, so that
// comparing its bytes is comparing its text (encoding/json reads a byte
// that is not UTF-8 as U+FFFD: "a\xff" and "a\xfe" are one key).
func plain(raw []byte) bool {
	for _, c := range raw {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// keyText is a raw key, as written between its quotes, read as
// encoding/json reads it: unescaped, a byte that is not UTF-8 as U+FFFD.
func keyText(raw []byte) string {
	if plain(raw) {
		return string(raw)
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s) != nil {
		return string(raw)
	}
	return s
}

// endsLiteral reports whether c ends a number or a literal in JSON.
func endsLiteral(c byte) bool {
	switch c {
	case ',', ':', ']', '}', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// syntaxProblem says where a body that is not JSON goes wrong: the path of
// the value being read there ("scenario.quotas[0].rpm"), line and column,
// and what is wrong, in plain words for the faults a client makes most
// (NaN or Infinity, which JSON has not; a body cut short; a second value
// after the first) and in encoding/json's otherwise.
func syntaxProblem(data []byte, se *json.SyntaxError) error {
	off := int(min(max(se.Offset-1, 0), int64(len(data))))
	what := se.Error()
	switch rest := data[off:]; {
	case se.Offset >= int64(len(data)) && strings.HasPrefix(what, "unexpected end"):
		off, what = len(data), "the body ends before its JSON does (is it cut short?)"
	case strings.HasSuffix(what, "after top-level value"):
		what = "a second JSON value follows the first; give one"
	case strings.HasSuffix(what, "exceeded max depth"):
		what = "arrays and objects nest deeper than 10,000 levels"
	default:
		if off > 0 && data[off-1] == '-' && bytes.HasPrefix(rest, []byte("Infinity")) {
			off-- // encoding/json stops at the I of -Infinity
			rest = data[off:]
		}
		for _, lit := range []string{"NaN", "Infinity", "-Infinity"} {
			if bytes.HasPrefix(rest, []byte(lit)) {
				what = lit + " is not a JSON number"
			}
		}
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := 1 + off - (bytes.LastIndexByte(data[:off], '\n') + 1)
	where := fmt.Sprintf("line %d, column %d: %s", line, col, what)
	if p := pathAt(data[:off]); p != "" {
		return errors.New(shortPath(p) + ": " + where)
	}
	return errors.New(where)
}

// pathAt is the path of the value that a JSON text cut at its end was
// reading ("a.b[2]"): in an object, its key once one was read; in an
// array, the element's index; "" at the top level, or between an
// object's keys at its top.
func pathAt(prefix []byte) string {
	type frame struct {
		object bool
		key    []byte // the object's last key, while its value is read
		index  int    // the array's element
	}
	var stack []frame
	expectKey := false
	for i := 0; i < len(prefix); i++ {
		switch c := prefix[i]; c {
		case '{':
			stack = append(stack, frame{object: true})
			expectKey = true
		case '[':
			stack = append(stack, frame{})
			expectKey = false
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expectKey = false
		case ',':
			if len(stack) == 0 {
				continue
			}
			if f := &stack[len(stack)-1]; f.object {
				f.key, expectKey = nil, true
			} else {
				f.index++
			}
		case '"':
			start := i + 1
			for i++; i < len(prefix) && prefix[i] != '"'; i++ {
				if prefix[i] == '\\' {
					i++
				}
			}
			if expectKey && len(stack) > 0 {
				stack[len(stack)-1].key = prefix[start:min(i, len(prefix))]
				expectKey = false
			}
		}
	}
	var b strings.Builder
	for _, f := range stack {
		switch {
		case !f.object:
			fmt.Fprintf(&b, "[%d]", f.index)
		case f.key == nil:
			return b.String()
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(keyText(f.key))
		}
	}
	return b.String()
}

// maxPathText is the most of a path that a problem quotes.
const maxPathText = 240

// shortPath is a path as a problem quotes it: whole up to maxPathText
// bytes, and beyond its beginning and end around "…", so that a body
// nested thousands of levels deep is not echoed in its problem.
func shortPath(p string) string {
	if len(p) <= maxPathText {
		return p
	}
	head, tail := p[:maxPathText/2], p[len(p)-maxPathText/2:]
	if i := strings.LastIndexAny(head, "[."); i > 0 {
		head = head[:i] // cut between two steps of the path
	}
	if i := strings.IndexAny(tail, "[."); i >= 0 {
		tail = tail[i:]
	}
	for !utf8.ValidString(head) {
		head = head[:len(head)-1]
	}
	for !utf8.ValidString(tail) {
		tail = tail[1:]
	}
	return head + "…" + tail
}

// positiveZeros is data, a JSON text, with every number that is a zero
// written with a minus sign (-0, -0.0, -0e3) written as 0; data itself
// when there is none.
func positiveZeros(data []byte) []byte {
	if !bytes.Contains(data, []byte("-0")) {
		return data
	}
	var out []byte
	last := 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case !endsLiteral(c) && c != '{' && c != '[': // a number, true, false or null, read whole
			start := i
			for i+1 < len(data) && !endsLiteral(data[i+1]) {
				i++
			}
			if c != '-' {
				continue
			}
			if f, err := strconv.ParseFloat(string(data[start:i+1]), 64); err == nil && f == 0 {
				out = append(append(out, data[last:start]...), '0')
				last = i + 1
			}
		}
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}
