package testutil

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The contract checks: a result type that the command line writes, the
// API serves and the store keeps must carry every field it has. Fill gives
// each field a value of its own, Carried passes the filled value through
// a path (a JSON round trip, the store, an HTTP response) and Diff names
// every field that came back different, so that a field left out of a
// document (json:"-", a clash of JSON names, a copy that forgot it) fails
// with its path.

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// Fill sets every exported field of the value that ptr points to,
// recursively, each to a value no other field has: numbers to distinct
// non-zero values (floats with a fraction), strings to their field's name
// and a number, bools to true, times to distinct whole seconds in UTC,
// json.RawMessage to a JSON number, an interface of type any to a
// string, all within a field's enum and maximum tags, as its schema
// allows. Pointers point to filled values, slices hold one filled element
// and maps one filled entry; embedded structs are filled field by field,
// exported or not, and blank (_) fields, which hold no data, are left
// alone. A struct type met again inside itself is left zero. Fill fails
// the test on a field that a JSON document cannot carry (an unexported
// field, a func, a chan, an interface with methods), naming it.
func Fill(t testing.TB, ptr any) {
	t.Helper()
	v := reflect.ValueOf(ptr)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		t.Fatalf("Fill needs a non-nil pointer, got %T", ptr)
	}
	f := &filler{t: t, open: map[reflect.Type]bool{}}
	f.fill(v.Elem(), v.Elem().Type().String())
}

type filler struct {
	t    testing.TB
	n    int
	open map[reflect.Type]bool // struct types being filled, against recursion
}

// next is the next distinct value.
func (f *filler) next() int {
	f.n++
	return f.n
}

func (f *filler) fill(v reflect.Value, path string) {
	f.t.Helper()
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(time.Date(2026, 1, 1, 0, 0, f.next(), 0, time.UTC)))
		return
	case v.Type() == rawType:
		v.SetBytes([]byte(fmt.Sprint(f.next())))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := int64(f.next())
		if v.OverflowInt(n) {
			n = n%100 + 1
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n := uint64(f.next())
		if v.OverflowUint(n) {
			n = n%100 + 1
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.next()) + 0.5)
	case reflect.String:
		v.SetString(fmt.Sprintf("%s %d", lastName(path), f.next()))
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		f.fill(e.Elem(), path)
		v.Set(e)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		f.fill(s.Index(0), path+"[0]")
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			f.fill(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		m := reflect.MakeMapWithSize(v.Type(), 1)
		k := reflect.New(v.Type().Key()).Elem()
		f.fill(k, path+".key")
		e := reflect.New(v.Type().Elem()).Elem()
		f.fill(e, fmt.Sprintf("%s[%v]", path, k))
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Interface:
		if v.NumMethod() > 0 {
			f.t.Errorf("%s: an interface (%s) that JSON cannot decode into", path, v.Type())
			return
		}
		v.Set(reflect.ValueOf(fmt.Sprintf("%s %d", lastName(path), f.next())))
	case reflect.Struct:
		f.fillStruct(v, path)
	default:
		f.t.Errorf("%s: a %s that JSON cannot carry", path, v.Kind())
	}
}

func (f *filler) fillStruct(v reflect.Value, path string) {
	f.t.Helper()
	if f.open[v.Type()] {
		return
	}
	f.open[v.Type()] = true
	defer delete(f.open, v.Type())
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		p := path + "." + sf.Name
		switch {
		case sf.Name == "_":
			// a blank field holds no data (a tag for the OpenAPI document)
		case sf.Anonymous && sf.Type.Kind() == reflect.Struct:
			f.fill(v.Field(i), p) // its exported fields are settable, the struct exported or not
		case !sf.IsExported():
			f.t.Errorf("%s: an unexported field, which no JSON document carries", p)
		default:
			f.fill(v.Field(i), p)
			if enum := sf.Tag.Get("enum"); enum != "" {
				f.pickEnum(v.Field(i), strings.Split(enum, ","))
			}
			if hi, err := strconv.ParseFloat(sf.Tag.Get("maximum"), 64); err == nil {
				lo, _ := strconv.ParseFloat(sf.Tag.Get("minimum"), 64)
				f.bound(v.Field(i), lo, hi)
			}
		}
	}
}

// pickEnum replaces the strings that fill gave a field with an enum tag
// (a string, or a pointer or slice of them) with one of its values, as
// the field's schema allows.
func (f *filler) pickEnum(v reflect.Value, values []string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(values[f.next()%len(values)])
	case reflect.Pointer:
		if !v.IsNil() {
			f.pickEnum(v.Elem(), values)
		}
	case reflect.Slice:
		for i := range v.Len() {
			f.pickEnum(v.Index(i), values)
		}
	}
}

// bound brings the numbers that fill gave a field with a maximum tag (a
// number, or a pointer or slice of them) within [lo, hi], as the field's
// schema allows: floats strictly inside, ints from lo+1, still distinct
// for the first thousand values.
func (f *filler) bound(v reflect.Value, lo, hi float64) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if v.Float() > hi {
			v.SetFloat(lo + (hi-lo)*float64(f.next()%1000+1)/1002)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if span := int64(hi - lo); float64(v.Int()) > hi && span > 0 {
			v.SetInt(int64(lo) + 1 + int64(f.next())%span)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			f.bound(v.Elem(), lo, hi)
		}
	case reflect.Slice:
		for i := range v.Len() {
			f.bound(v.Index(i), lo, hi)
		}
	}
}

// lastName is the last field name of a path, for the text of a string.
func lastName(path string) string {
	path = path[strings.LastIndexAny(path, ".")+1:]
	if i := strings.IndexByte(path, '['); i >= 0 {
		path = path[:i]
	}
	return path
}

// Diff names every field where got differs from want, by its Go path
// ("plan.Plan.Classes[0].Batch.MeetsWindow: true, got false"); nil when
// they are equal. Times are compared with time.Time.Equal.
func Diff(want, got any) []string {
	var out []string
	diff(reflect.ValueOf(want), reflect.ValueOf(got), reflect.TypeOf(want).String(), &out)
	return out
}

func diff(w, g reflect.Value, path string, out *[]string) {
	if !w.IsValid() || !g.IsValid() {
		if w.IsValid() != g.IsValid() {
			*out = append(*out, fmt.Sprintf("%s: %v, got %v", path, show(w), show(g)))
		}
		return
	}
	if w.Type() != g.Type() {
		*out = append(*out, fmt.Sprintf("%s: a %s, got a %s", path, w.Type(), g.Type()))
		return
	}
	if w.Type() == timeType && w.CanInterface() {
		if !w.Interface().(time.Time).Equal(g.Interface().(time.Time)) {
			*out = append(*out, fmt.Sprintf("%s: %v, got %v", path, w, g))
		}
		return
	}
	switch w.Kind() {
	case reflect.Pointer, reflect.Interface:
		if w.IsNil() || g.IsNil() {
			if w.IsNil() != g.IsNil() {
				*out = append(*out, fmt.Sprintf("%s: %v, got %v", path, show(w), show(g)))
			}
			return
		}
		diff(w.Elem(), g.Elem(), path, out)
	case reflect.Struct:
		for i := range w.NumField() {
			diff(w.Field(i), g.Field(i), path+"."+w.Type().Field(i).Name, out)
		}
	case reflect.Slice, reflect.Array:
		if w.Kind() == reflect.Slice && w.IsNil() != g.IsNil() || w.Len() != g.Len() {
			*out = append(*out, fmt.Sprintf("%s: %d elements (nil %t), got %d (nil %t)", path, w.Len(), w.Kind() == reflect.Slice && w.IsNil(), g.Len(), g.Kind() == reflect.Slice && g.IsNil()))
			return
		}
		for i := range w.Len() {
			diff(w.Index(i), g.Index(i), fmt.Sprintf("%s[%d]", path, i), out)
		}
	case reflect.Map:
		if w.IsNil() != g.IsNil() {
			*out = append(*out, fmt.Sprintf("%s: nil %t, got nil %t", path, w.IsNil(), g.IsNil()))
			return
		}
		iter := w.MapRange()
		for iter.Next() {
			p := fmt.Sprintf("%s[%v]", path, iter.Key())
			if gv := g.MapIndex(iter.Key()); gv.IsValid() {
				diff(iter.Value(), gv, p, out)
			} else {
				*out = append(*out, p+": missing")
			}
		}
		iter = g.MapRange()
		for iter.Next() {
			if !w.MapIndex(iter.Key()).IsValid() {
				*out = append(*out, fmt.Sprintf("%s[%v]: not expected", path, iter.Key()))
			}
		}
	default:
		if !sameScalar(w, g) {
			*out = append(*out, fmt.Sprintf("%s: %v, got %v", path, w, g))
		}
	}
}

// sameScalar compares two values of one basic kind, also when they are
// read through an unexported embedded struct; funcs and chans are not
// data and compare equal.
func sameScalar(w, g reflect.Value) bool {
	switch w.Kind() {
	case reflect.Bool:
		return w.Bool() == g.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return w.Int() == g.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return w.Uint() == g.Uint()
	case reflect.Float32, reflect.Float64:
		return w.Float() == g.Float()
	case reflect.Complex64, reflect.Complex128:
		return w.Complex() == g.Complex()
	case reflect.String:
		return w.String() == g.String()
	}
	return true
}

// show prints a value of a difference, nil or not.
func show(v reflect.Value) any {
	if !v.IsValid() || (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
		return "nil"
	}
	if v.Kind() == reflect.Pointer {
		return v.Elem()
	}
	return v
}

// Carried fills a T, passes it along a path with carry (which returns
// what arrived at the other end) and fails the test naming every field
// that arrived different or not at all.
func Carried[T any](t testing.TB, carry func(t testing.TB, in T) T) {
	t.Helper()
	var in T
	Fill(t, &in)
	if t.Failed() {
		return
	}
	for _, d := range Diff(in, carry(t, in)) {
		t.Errorf("not carried: %s", d)
	}
}

// JSONRoundTrip is v encoded as JSON and decoded into a new T: a path for
// Carried.
func JSONRoundTrip[T any](t testing.TB, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%v: %.300s", err, b)
	}
	return out
}
