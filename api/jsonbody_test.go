package api

import (
	"fmt"
	"strings"
	"testing"
)

// TestRepeatedKey names the first key given twice in one object by where
// it is, through objects and arrays, with keys compared unescaped and as
// written (a key in another case is another key); the same key in two
// objects is not repeated.
func TestRepeatedKey(t *testing.T) {
	for doc, want := range map[string]string{
		`{"a":1,"b":{"a":2}}`:                         "",
		`[{"a":1},{"a":2}]`:                           "",
		`{"a":1,"a":2}`:                               `a: the key "a" is given twice in one object`,
		`{"a":[{"b":1},{"c":[1,"x",{"d":1,"d":2}]}]}`: `a[1].c[2].d: the key "d" is given twice in one object`,
		`{"a":{},"b":[[],[{"e":[],"e":{}}]]}`:         `b[1][0].e: the key "e" is given twice in one object`,
		`{"rpm":1,"RPM":2}`:                           "",
		`{"rpm":1,"\u0072pm":2}`:                      `rpm: the key "rpm" is given twice in one object`,
		`{"\u0072pm":1,"Rpm":2}`:                      "",
		`{"R\u0070m":1,"Rpm":2}`:                      `Rpm: the key "Rpm" is given twice in one object`,
		`{"a\"b":1,"a\"b":2}`:                         `a"b: the key "a\"b" is given twice in one object`,
		`{"a\"b":1,"a\\b":2}`:                         "",
		"{\"a\xff\":1,\"a\xfe\":2}":                   "a\ufffd: the key \"a\ufffd\" is given twice in one object",
		"{\"a\xff\":1,\"a\\ufffd\":2}":                "a\ufffd: the key \"a\ufffd\" is given twice in one object",
		`{"a":[1,{"b":-2e308}]}`:                      "a[1].b: the number -2e308 is beyond the range of a number",
		`{"a":1e-400,"b":[1.5e300]}`:                  "",
	} {
		got := ""
		if err := repeatedKey([]byte(doc)); err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("%s: %q, want %q", doc, got, want)
		}
	}
}

// TestRepeatedKeyIsLinear: an object of many keys, and one of many keys
// that repeats one of them, are each read in one pass:
// past manyKeys the keys are looked up in a set, so that the cost does
// not grow with the square of the keys (100,000 keys once took 20 s).
func TestRepeatedKeyIsLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"x":{`)
	for i := range 200_000 {
		fmt.Fprintf(&b, `"k%d":0,`, i)
	}
	doc := b.String()
	if err := repeatedKey([]byte(doc[:len(doc)-1] + "}}")); err != nil {
		t.Fatal(err)
	}
	err := repeatedKey([]byte(doc + `"k199999":1}}`))
	if err == nil || err.Error() != `x.k199999: the key "k199999" is given twice in one object` {
		t.Fatal(err)
	}
}

// TestSyntaxErrorsAreLocated: a body that is not JSON is refused with
// where the fault is, by the path of the value being read there, line
// and column, and what is wrong in words a client can act on: NaN and
// Infinity are not JSON numbers, a body that ends early is truncated, a
// second value after the first is one too many.
func TestSyntaxErrorsAreLocated(t *testing.T) {
	for doc, want := range map[string]string{
		`{"scenario":{"quotas":[{"rpm":NaN}]}}`:            "scenario.quotas[0].rpm: line 1, column 31: NaN is not a JSON number",
		"{\"a\":[1,\n  -Infinity]}":                        "a[1]: line 2, column 3: -Infinity is not a JSON number",
		`{"a":{"b":Infinity}}`:                             "a.b: line 1, column 11: Infinity is not a JSON number",
		"{\"scenario\": {\"quotas\": [\n":                  "scenario.quotas[0]: line 2, column 1: the body ends before its JSON does (is it cut short?)",
		`{"a":1} {"b":2}`:                                  "line 1, column 9: a second JSON value follows the first; give one",
		`{"a":1, b:2}`:                                     "line 1, column 9: invalid character 'b' looking for beginning of object key string",
		`{"a":{"b":[1,2,x]}}`:                              "a.b[2]: line 1, column 16: invalid character 'x' looking for beginning of value",
		`{"a\"":{"b":tru}}`:                                "a\".b: line 1, column 16: invalid character '}' in literal true (expecting 'e')",
		`{"scenario":{"classes":[{"name":"x"},{"n":1,}]}}`: "scenario.classes[1]: line 1, column 45: invalid character '}' looking for beginning of object key string",
	} {
		var v any
		err := decodeJSONBody([]byte(doc), &v)
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}

// TestDeepBodiesAreQuotedShort: a problem about a body nested thousands
// of levels deep, or with a key of thousands of bytes, quotes the path
// and the key by their beginning and end, not whole (a body of 10,001
// nested arrays once had a problem of 30 KB).
func TestDeepBodiesAreQuotedShort(t *testing.T) {
	deep := `{"scenario":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + "}"
	dup := `{"a":` + strings.Repeat("[", 5000) + `{"b":1,"b":2}` + strings.Repeat("]", 5000) + "}"
	long := strings.Repeat("k", 5000)
	key := `{"` + long + `":1,"` + long + `":2}`
	for doc, want := range map[string]string{
		deep: "scenario" + strings.Repeat("[0]", 37) + "…" + strings.Repeat("[0]", 40) + ": line 1, column 10012: arrays and objects nest deeper than 10,000 levels",
		dup:  "a" + strings.Repeat("[0]", 39) + "…" + strings.Repeat("[0]", 39) + ".b: the key \"b\" is given twice in one object",
		key:  strings.Repeat("k", 120) + "…" + strings.Repeat("k", 120) + ": the key \"" + strings.Repeat("k", 120) + "…" + strings.Repeat("k", 120) + "\" is given twice in one object",
	} {
		var v any
		err := decodeJSONBody([]byte(doc), &v)
		if err == nil || err.Error() != want {
			t.Errorf("%.40s…: %.400v, want %q", doc, err, want)
		}
	}
}

// TestPositiveZeros: a zero written with a minus sign is written 0, and
// nothing else changes: not a string, not an exponent's sign.
func TestPositiveZeros(t *testing.T) {
	for doc, want := range map[string]string{
		`{"a":-0,"b":[-0.0,1e-0,-0e5],"c":"-0","d":-0.5}`: `{"a":0,"b":[0,1e-0,0],"c":"-0","d":-0.5}`,
		`{"x\"-0":-0}`: `{"x\"-0":0}`,
		`[1,2]`:        `[1,2]`,
	} {
		if got := string(positiveZeros([]byte(doc))); got != want {
			t.Errorf("%s: %s, want %s", doc, got, want)
		}
	}
}
