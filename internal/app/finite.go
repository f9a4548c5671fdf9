package app

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
)

// NonFinite returns the JSON path of the first NaN or infinite number in v
// (a plan, a simulation, an analysis), or "" when every number is finite.
// JSON cannot carry such numbers, so an answer holding one must not be
// sent.
func NonFinite(v any) string {
	steps, found := walkFinite(reflect.ValueOf(v))
	if !found {
		return ""
	}
	slices.Reverse(steps)
	return strings.TrimPrefix(strings.Join(steps, ""), ".")
}

// walkFinite looks for a non-finite number under v; the path to it is
// built, innermost step first, only once one is found.
func walkFinite(v reflect.Value) ([]string, bool) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		return nil, math.IsNaN(f) || math.IsInf(f, 0)
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return walkFinite(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if steps, found := walkFinite(v.Field(i)); found {
				f := v.Type().Field(i)
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				switch {
				case name == "" && f.Anonymous:
					return steps, true // an embedded struct's fields are the outer document's
				case name == "":
					name = f.Name
				}
				return append(steps, "."+name), true
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if steps, found := walkFinite(v.Index(i)); found {
				return append(steps, fmt.Sprintf("[%d]", i)), true
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if steps, found := walkFinite(iter.Value()); found {
				return append(steps, fmt.Sprint(".", iter.Key().Interface())), true
			}
		}
	}
	return nil, false
}
