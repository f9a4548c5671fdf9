package api

import "testing"

// TestRepeatedKey names the first key given twice in one object by where
// it is, through objects and arrays; the same key in two objects is not
// repeated.
func TestRepeatedKey(t *testing.T) {
	for doc, want := range map[string]string{
		`{"a":1,"b":{"a":2}}`:                         "",
		`[{"a":1},{"a":2}]`:                           "",
		`{"a":1,"a":2}`:                               `a: the key "a" is given twice in one object`,
		`{"a":[{"b":1},{"c":[1,"x",{"d":1,"d":2}]}]}`: `a[1].c[2].d: the key "d" is given twice in one object`,
		`{"a":{},"b":[[],[{"e":[],"e":{}}]]}`:         `b[1][0].e: the key "e" is given twice in one object`,
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
