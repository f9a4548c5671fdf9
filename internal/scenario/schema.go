package scenario

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// The scenario's field rules, its shapes and ranges, are declared once, in
// the struct tags of its types (minimum, maximum, exclusiveMinimum,
// exclusiveMaximum, minLength, maxLength, pattern, enum, minItems,
// maxItems, nullable:"false" on a list that null may not stand for, and
// required unless the JSON name says omitempty or omitzero), and every
// check reads them there:
//
//   - the API publishes and enforces them as its JSON Schema (huma);
//   - validateDocument enforces them on a decoded YAML or JSON document
//     for the command line (Parse), and Pointer.Check on a value written
//     at a pointer (what-if cells), so that the engine needs no HTTP
//     framework; its messages are huma's, and a test in the API checks
//     that both find the same problems at the same places;
//   - the tier catalogue, whose tiers are quotas, takes the bounds of
//     Quota's tags through Bounds into its configuration checks.
//
// The rules that span fields are Check's, which the API and Parse both
// run; a rule problem related to a schema problem is dropped by both
// (fieldpath.Related).

// validateDocument checks a generic JSON document (maps, slices, float64,
// string, bool, nil) against the tags of Scenario and returns every
// problem, located by its path.
func validateDocument(doc any) Errors {
	var v validator
	v.value("", doc, reflect.TypeFor[Scenario](), reflect.StructTag(""))
	return v.errs
}

type validator struct{ errs Errors }

func (v *validator) add(path, format string, args ...any) {
	v.errs = append(v.errs, FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}

// value checks one value against its Go type and the field's tag.
func (v *validator) value(path string, doc any, t reflect.Type, tag reflect.StructTag) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := doc.(map[string]any)
		if !ok {
			v.add(path, "expected object")
			return
		}
		v.object(path, obj, t)
	case reflect.Slice:
		arr, ok := doc.([]any)
		if !ok {
			v.add(path, "expected array")
			return
		}
		if n, ok := intTag(tag, "minItems"); ok && len(arr) < n {
			v.add(path, "expected array length >= %d", n)
		}
		if n, ok := intTag(tag, "maxItems"); ok && len(arr) > n {
			v.add(path, "expected array length <= %d", n)
			return
		}
		for i, e := range arr {
			v.value(fmt.Sprintf("%s[%d]", path, i), e, t.Elem(), "")
		}
	case reflect.String:
		s, ok := doc.(string)
		if !ok {
			v.add(path, "expected string")
			return
		}
		v.str(path, s, tag)
	case reflect.Bool:
		if _, ok := doc.(bool); !ok {
			v.add(path, "expected boolean")
		}
	case reflect.Float64, reflect.Int, reflect.Uint64:
		f, ok := doc.(float64)
		if !ok {
			v.add(path, "expected number")
			return
		}
		if t.Kind() != reflect.Float64 && f != math.Trunc(f) {
			v.add(path, "expected integer")
			return
		}
		if t.Kind() != reflect.Float64 && math.Abs(f) >= 1<<53 {
			v.add(path, "expected an integer below 2^53 in magnitude, which every JSON reader reads exactly")
			return
		}
		if t.Kind() == reflect.Uint64 && f < 0 {
			v.add(path, "expected number >= 0")
			return
		}
		v.number(path, f, tag)
	}
}

// object checks an object's members against a struct's fields: unknown
// members, missing required fields, and each member's value.
func (v *validator) object(path string, obj map[string]any, t reflect.Type) {
	fields := structFields(t)
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		f, ok := fields.byName[k]
		if !ok {
			v.add(join(path, k), "unexpected property")
			continue
		}
		if obj[k] == nil && (!fields.isRequired(k) || f.Type.Kind() == reflect.Slice && f.Tag.Get("nullable") != "false") {
			continue // an optional member, or a list that may be null, given as null is absent
		}
		v.value(join(path, k), obj[k], f.Type, f.Tag)
	}
	for _, name := range fields.required {
		if _, ok := obj[name]; !ok {
			v.add(path, "expected required property %s to be present", name)
		}
	}
}

func (v *validator) str(path, s string, tag reflect.StructTag) {
	if n, ok := intTag(tag, "minLength"); ok && utf8.RuneCountInString(s) < n {
		v.add(path, "expected length >= %d", n)
	}
	if n, ok := intTag(tag, "maxLength"); ok && utf8.RuneCountInString(s) > n {
		v.add(path, "expected length <= %d", n)
	}
	if p := tag.Get("pattern"); p != "" && !compiled(p).MatchString(s) {
		v.add(path, "expected string to match pattern %s", p)
	}
	if e := tag.Get("enum"); e != "" && !slices.Contains(strings.Split(e, ","), s) {
		v.add(path, "expected value to be one of %q", strings.ReplaceAll(e, ",", ", "))
	}
}

func (v *validator) number(path string, f float64, tag reflect.StructTag) {
	if m, ok := floatTag(tag, "minimum"); ok && f < m {
		v.add(path, "expected number >= %v", m)
	}
	if m, ok := floatTag(tag, "exclusiveMinimum"); ok && f <= m {
		v.add(path, "expected number > %v", m)
	}
	if m, ok := floatTag(tag, "maximum"); ok && f > m {
		v.add(path, "expected number <= %v", m)
	}
	if m, ok := floatTag(tag, "exclusiveMaximum"); ok && f >= m {
		v.add(path, "expected number < %v", m)
	}
}

// fieldSet is a struct's fields by JSON name and its required names.
type fieldSet struct {
	byName   map[string]reflect.StructField
	required []string
}

// isRequired reports whether the member name must be present.
func (fs fieldSet) isRequired(name string) bool { return slices.Contains(fs.required, name) }

var fieldSets sync.Map // reflect.Type → fieldSet

func structFields(t reflect.Type) fieldSet {
	if fs, ok := fieldSets.Load(t); ok {
		return fs.(fieldSet)
	}
	fs := fieldSet{byName: map[string]reflect.StructField{}}
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fs.byName[name] = f
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			fs.required = append(fs.required, name)
		}
	}
	fieldSets.Store(t, fs)
	return fs
}

var patterns sync.Map // string → *regexp.Regexp

func compiled(p string) *regexp.Regexp {
	if re, ok := patterns.Load(p); ok {
		return re.(*regexp.Regexp)
	}
	re := regexp.MustCompile(p)
	patterns.Store(p, re)
	return re
}

func intTag(tag reflect.StructTag, key string) (int, bool) {
	s := tag.Get(key)
	if s == "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func floatTag(tag reflect.StructTag, key string) (float64, bool) {
	s := tag.Get(key)
	if s == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
