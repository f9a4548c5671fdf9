package plan

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/plannerdev/planner/internal/scenario"
)

// setNumber returns a copy of s with the number at the JSON Pointer path
// (RFC 6901, fields by their JSON names) set to value, rounded down for an
// integer field. Only what lies on the path is copied, the rest is shared
// with s, which planning never writes into; as a JSON Patch "replace" or
// "add", every object on the path must exist, and a missing last member
// is added.
func setNumber(s scenario.Scenario, path string, value float64) (scenario.Scenario, error) {
	if !strings.HasPrefix(path, "/") {
		return s, fmt.Errorf("%q is not a JSON Pointer", path)
	}
	out := s
	v := reflect.ValueOf(&out).Elem()
	tokens := strings.Split(path[1:], "/")
	for k, tok := range tokens {
		if strings.Contains(tok, "~") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		}
		switch v.Kind() {
		case reflect.Struct:
			f, ok := jsonField(v.Type(), tok)
			if !ok {
				return s, fmt.Errorf("no field at %s in the scenario", path)
			}
			v = v.Field(f)
		case reflect.Slice:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= v.Len() {
				return s, fmt.Errorf("no field at %s in the scenario", path)
			}
			c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			reflect.Copy(c, v)
			v.Set(c)
			v = v.Index(i)
		default:
			return s, fmt.Errorf("no field at %s in the scenario", path)
		}
		if v.Kind() == reflect.Pointer {
			c := reflect.New(v.Type().Elem())
			if !v.IsNil() {
				c.Elem().Set(v.Elem())
			} else if k < len(tokens)-1 {
				return s, fmt.Errorf("no field at %s in the scenario", path)
			}
			v.Set(c)
			v = c.Elem()
		}
	}
	switch v.Kind() {
	case reflect.Float64:
		v.SetFloat(value)
	case reflect.Int:
		v.SetInt(int64(value))
	default:
		return s, fmt.Errorf("%s is not a number in the scenario", path)
	}
	return out, nil
}

// jsonField is the index of the field of t whose JSON name is name.
func jsonField(t reflect.Type, name string) (int, bool) {
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if tag == name && t.Field(i).IsExported() {
			return i, true
		}
	}
	return 0, false
}
