package testutil

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

type inner struct {
	F float64 `json:"f"`
}

type hidden struct {
	H int `json:"h"`
}

type everyKind struct {
	_ struct{} `nullable:"true"` // a tag for the OpenAPI document, no data
	hidden
	Inner
	B   bool               `json:"b"`
	I   int                `json:"i"`
	U   uint64             `json:"u"`
	S   string             `json:"s"`
	P   *int               `json:"p,omitempty"`
	L   []inner            `json:"l"`
	M   map[string]*inner  `json:"m"`
	A   any                `json:"a"`
	T   time.Time          `json:"t"`
	Raw json.RawMessage    `json:"raw"`
	N   map[int][2]float32 `json:"n"`
}

type Inner struct {
	X int `json:"x"`
}

// recorder is a testing.TB that keeps what a check reports.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

func (r *recorder) Failed() bool { return len(r.errors) > 0 }

func newRecorder(t *testing.T) *recorder { return &recorder{TB: t} }

// TestFillSetsEveryField: every field, embedded ones included, is set, to
// values no two fields share (a blank field is no data and is let be), and
// the filled value survives JSON.
func TestFillSetsEveryField(t *testing.T) {
	var v everyKind
	Fill(t, &v)
	if v.P == nil || len(v.L) != 1 || len(v.M) != 1 || len(v.N) != 1 || v.A == nil || v.T.IsZero() || len(v.Raw) == 0 {
		t.Fatalf("not filled: %+v", v)
	}
	nums := []float64{float64(v.H), float64(v.X), float64(v.I), float64(v.U), float64(*v.P), v.L[0].F}
	for _, e := range v.M {
		nums = append(nums, e.F)
	}
	for _, e := range v.N {
		nums = append(nums, float64(e[0]), float64(e[1]))
	}
	for i, n := range nums {
		if n == 0 || slices.Index(nums, n) != i {
			t.Errorf("value %d is %v: zero or shared (%v)", i, n, nums)
		}
	}
	if !v.B || !strings.HasPrefix(v.S, "S ") {
		t.Errorf("b %v, s %q", v.B, v.S)
	}
	if d := Diff(v, JSONRoundTrip(t, v)); d != nil {
		t.Errorf("a filled value changes through JSON: %v", d)
	}
}

// TestCarriedNamesWhatIsLost: a field that JSON leaves out (json:"-"), a
// field of an embedded struct hidden by an outer field of the same JSON
// name, and a field that a copy forgets are named by their paths;
// unexported fields and funcs are refused before anything is carried.
func TestCarriedNamesWhatIsLost(t *testing.T) {
	type doc struct {
		Inner
		Kept    int   `json:"kept"`
		Skipped int   `json:"-"`
		Shadow  int   `json:"x"`
		Nested  inner `json:"nested"`
	}
	r := newRecorder(t)
	Carried(r, JSONRoundTrip[doc])
	want := []string{
		"not carried: testutil.doc.Inner.X: 1, got 0",
		"not carried: testutil.doc.Skipped: 3, got 0",
	}
	if !slices.Equal(r.errors, want) {
		t.Errorf("reported %q, want %q", r.errors, want)
	}

	r = newRecorder(t)
	Carried(r, func(_ testing.TB, in doc) doc {
		return doc{Inner: in.Inner, Kept: in.Kept, Skipped: in.Skipped, Shadow: in.Shadow}
	})
	if want := []string{"not carried: testutil.doc.Nested.F: 5.5, got 0"}; !slices.Equal(r.errors, want) {
		t.Errorf("reported %q, want %q", r.errors, want)
	}

	type bad struct {
		Fine int
		//lint:ignore U1000 the field that Fill must refuse
		secret int
		Hook   func()
	}
	r = newRecorder(t)
	carried := false
	Carried(r, func(_ testing.TB, in bad) bad { carried = true; return in })
	if want := []string{
		"testutil.bad.secret: an unexported field, which no JSON document carries",
		"testutil.bad.Hook: a func that JSON cannot carry",
	}; !slices.Equal(r.errors, want) || carried {
		t.Errorf("reported %q (carried %t), want %q", r.errors, carried, want)
	}
}

// TestDiff: equal values have no difference; a field of an unexported
// embedded struct, nil against empty, a missing map entry, another time
// and another dynamic type are named.
func TestDiff(t *testing.T) {
	type doc struct {
		hidden
		L []int
		M map[string]int
		T time.Time
		A any
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := doc{L: []int{}, M: map[string]int{"k": 1}, T: at, A: "x"}
	if d := Diff(a, doc{L: []int{}, M: map[string]int{"k": 1}, T: at.In(time.FixedZone("X", 3600)), A: "x"}); d != nil {
		t.Errorf("equal values differ: %v", d)
	}
	got := Diff(a, doc{hidden: hidden{H: 2}, M: map[string]int{"j": 1}, T: at.Add(time.Second), A: 1.0})
	want := []string{
		"testutil.doc.hidden.H: 0, got 2",
		"testutil.doc.L: 0 elements (nil false), got 0 (nil true)",
		"testutil.doc.M[k]: missing",
		"testutil.doc.M[j]: not expected",
		"testutil.doc.T: 2026-01-01 00:00:00 +0000 UTC, got 2026-01-01 00:00:01 +0000 UTC",
		"testutil.doc.A: a string, got a float64",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Diff = %q, want %q", got, want)
	}
}
