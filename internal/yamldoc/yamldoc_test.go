package yamldoc

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// bombs are documents whose aliases expand them hundreds of times or more:
// the one long scalar aliased 900 times of the report, aliases of aliases,
// merge keys that copy a large mapping again and again, and many aliases
// of a small node.
func bombs() map[string]string {
	long := strings.Repeat("x", 200_000)
	var scalar strings.Builder
	fmt.Fprintf(&scalar, "a: &a %s\nb:\n", long)
	for range 900 {
		scalar.WriteString("  - *a\n")
	}
	var laughs strings.Builder
	laughs.WriteString("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&laughs, "l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	var merge strings.Builder
	merge.WriteString("base: &base\n")
	for i := range 2000 {
		fmt.Fprintf(&merge, "  key%d: value of some length %d\n", i, i)
	}
	merge.WriteString("copies:\n")
	for i := range 2000 {
		fmt.Fprintf(&merge, "  - {<<: *base, n: %d}\n", i)
	}
	var small strings.Builder
	fmt.Fprintf(&small, "s: &s {ttft_ms: {p50: 400, p95: 900}, tpot_ms: {p50: 22, p95: 35}, note: %s}\nlist: [", strings.Repeat("y", 200))
	for range 30_000 {
		small.WriteString("*s,")
	}
	small.WriteString("*s]\n")
	return map[string]string{
		"one scalar aliased 900 times": scalar.String(),
		"aliases of aliases":           laughs.String(),
		"merge keys":                   merge.String(),
		"many small aliases":           small.String(),
	}
}

// TestBombsAreRefusedCheaply: every bomb is refused with ErrExpansion, and
// refusing it allocates a small multiple of its own size, never what it
// would expand to.
func TestBombsAreRefusedCheaply(t *testing.T) {
	for name, doc := range bombs() {
		t.Run(name, func(t *testing.T) {
			data := []byte(doc)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := ToJSON(data)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrExpansion) {
				t.Fatalf("%d bytes: error %v, want ErrExpansion", len(data), err)
			}
			t.Logf("%d bytes, %d allocated", len(data), after.TotalAlloc-before.TotalAlloc)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64*uint64(len(data))+4<<20 {
				t.Errorf("refusing %d bytes allocated %d bytes", len(data), alloc)
			}
		})
	}
}

// TestAliasesWithinTheBound: a document that aliases a little converts as
// sigs.k8s.io/yaml converts it, and so does one without anchors; a key
// given twice is still refused, and so is an alias inside its own anchor.
func TestAliasesWithinTheBound(t *testing.T) {
	for _, doc := range []string{
		"latency: &l {ttft_ms: {p50: 400, p95: 900}}\nendpoints:\n  - {name: a, latency: *l}\n  - {name: b, latency: *l}\n",
		"base: &b {rpm: 10, name: k}\nquotas: [{<<: *b, tpm: 5}]\n",
		`{"quotas": [{"name": "k", "rpm": 10}], "note": "no anchors here"}`,
		"note: R&D, without an anchor\n",
	} {
		got, err := ToJSON([]byte(doc))
		want, werr := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil || werr != nil || string(got) != string(want) {
			t.Errorf("%q: %s (%v), want %s (%v)", doc, got, err, want, werr)
		}
	}
	for _, doc := range []string{"a: 1\na: 2\n", "a: &a [1, *a]\n", "a: *nothing\n"} {
		if _, err := ToJSON([]byte(doc)); err == nil {
			t.Errorf("%q was accepted", doc)
		}
	}
	// At the bound and just past it: a scalar near 1/65 of the bound of a
	// small document, written once and aliased 64 times.
	for _, tc := range []struct {
		n    int
		fits bool
	}{{MinExpanded/65 - 100, true}, {MinExpanded/65 + 100, false}} {
		doc := fmt.Sprintf("a: &a %s\nb: [%s*a]\n", strings.Repeat("z", tc.n), strings.Repeat("*a, ", 63))
		if _, err := ToJSON([]byte(doc)); (err == nil) != tc.fits {
			t.Errorf("64 aliases of %d bytes: error %v", tc.n, err)
		}
	}
}

// TestCoreSchema: plain scalars resolve as the YAML 1.2 core schema says,
// not as YAML 1.1 would: y, yes, no, on and off are strings, only the
// spellings of true, false and null are booleans and null, 017 is
// seventeen and 0o17 fifteen, and a quoted or tagged scalar is what its
// quotes or tag make it.
func TestCoreSchema(t *testing.T) {
	for doc, want := range map[string]string{
		"name: y":                       `{"name":"y"}`,
		"[y, Y, yes, No, on, OFF, n]":   `["y","Y","yes","No","on","OFF","n"]`,
		"[true, True, TRUE, false, ~]":  `[true,true,true,false,null]`,
		"[null, Null, NULL, '']":        `[null,null,null,""]`,
		"a:":                            `{"a":null}`,
		"[017, 0o17, 0x1F, -5, +7]":     `[17,15,31,-5,7]`,
		"[1.5, .5, 1e3, -2.5E-1, 1.]":   `[1.5,0.5,1000,-0.25,1]`,
		"[1_000, 0b11, 12:30, 0x]":      `["1_000","0b11","12:30","0x"]`,
		"[!!str 12, !!str true, '12']":  `["12","true","12"]`,
		"[!!float 3, !!int 0x10]":       `[3,16]`,
		"big: 123456789012345678901234": `{"big":123456789012345678901234}`,
		"{1: a, true: b, null: c}":      `{"1":"a","null":"c","true":"b"}`,
		"b: 2\na: 1":                    `{"a":1,"b":2}`,
	} {
		got, err := ToJSON([]byte(doc))
		if err != nil || string(got) != want {
			t.Errorf("%q: %s (%v), want %s", doc, got, err, want)
		}
	}
	for _, doc := range []string{"[.inf]", "[-.Inf]", "[.nan]", "[1e400]", "[!!int abc]", "[!!bool yes]", "a: !!binary aGk="} {
		if got, err := ToJSON([]byte(doc)); err == nil {
			t.Errorf("%q gave %s", doc, got)
		}
	}
}

// TestEmptyDocuments: a file with no document (empty, blank or only
// comments) reads as JSON null, as a file that says nothing.
func TestEmptyDocuments(t *testing.T) {
	for _, in := range []string{"", "\n\n", "# only a comment\n", "---\n"} {
		js, err := ToJSON([]byte(in))
		if err != nil || string(js) != "null" {
			t.Errorf("%q: %s, %v; want null", in, js, err)
		}
	}
}

// TestOneDocument: a stream of more than one document is refused, whatever
// the documents after the first hold (valid, malformed or empty), where
// it was read as its first; a document end marker, or comments after
// it, start none.
func TestOneDocument(t *testing.T) {
	for _, in := range []string{"a: 1\n---\nb: 2\n", "a: 1\n---\nb: [unclosed\n", "a: 1\n---\n", "---\na: 1\n--- # c\n", "{\"a\": 1}\n---\n{}\n"} {
		if js, err := ToJSON([]byte(in)); !errors.Is(err, ErrDocuments) {
			t.Errorf("%q: %s, %v; want ErrDocuments", in, js, err)
		}
	}
	for _, in := range []string{"a: 1\n", "---\na: 1\n", "a: 1\n...\n", "a: 1\n...\n# done\n"} {
		if js, err := ToJSON([]byte(in)); err != nil || string(js) != `{"a":1}` {
			t.Errorf("%q: %s, %v; want {\"a\":1}", in, js, err)
		}
	}
}

// TestProblemsNameTheirPath: a value that JSON cannot hold, a key given
// twice or a tag JSON has not is refused with the path of the value
// (quotas[0].rpm, the path a scenario's problems have) and its line, as a
// PathError, not with its line alone.
func TestProblemsNameTheirPath(t *testing.T) {
	for doc, want := range map[string]string{
		"quotas:\n  - name: a\n    rpm: .nan\n": "quotas[0].rpm: line 3: .nan is not a number JSON can hold",
		"a:\n  b: [1, 2, -.inf]\n":              "a.b[2]: line 2: -.inf is not a number JSON can hold",
		"a:\n  b: 1\n  b: 2\n":                  `a.b: line 3: key "b" already set in this mapping`,
		"x: [{y: !!binary aGk=}]\n":             "x[0].y: line 1: the tag !!binary is not one JSON can hold",
		"[[1e999]]\n":                           "[0][0]: line 1: the number 1e999 is beyond what JSON holds",
		"base: &b {rpm: .nan}\nquotas: [*b]\n":  "base.rpm: line 1: .nan is not a number JSON can hold",
	} {
		_, err := ToJSON([]byte(doc))
		var pe *PathError
		if err == nil || err.Error() != want || !errors.As(err, &pe) {
			t.Errorf("%q: %v, want the PathError %q", doc, err, want)
		}
	}
}
