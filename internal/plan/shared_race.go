//go:build race

package plan

import (
	"fmt"
	"reflect"
)

// pristineCopy is a deep copy of a plan the cache hands out.
func pristineCopy(p *Plan) *Plan { return deepCopy(reflect.ValueOf(p)).Interface().(*Plan) }

// checkUnchanged panics when a cached plan no longer equals its pristine
// copy: a caller modified a plan that others share.
func checkUnchanged(p, pristine *Plan) {
	if !reflect.DeepEqual(p, pristine) {
		panic(fmt.Sprintf("a cached plan was modified by a caller (plans from Engine.Plan are shared and must not be changed): %+v", diffPlans(p, pristine)))
	}
}

// diffPlans names the first class whose plan differs, for the message.
func diffPlans(p, pristine *Plan) string {
	for i := range min(len(p.Classes), len(pristine.Classes)) {
		if !reflect.DeepEqual(p.Classes[i], pristine.Classes[i]) {
			return "class " + pristine.Classes[i].Name
		}
	}
	return "its quotas, endpoints or warnings"
}

// deepCopy copies v and everything it points to. Blank (_) fields, which
// hold no data (a tag for the OpenAPI document), stay zero.
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Type().Elem())
		n.Elem().Set(deepCopy(v.Elem()))
		return n
	case reflect.Struct:
		n := reflect.New(v.Type()).Elem()
		for i := range v.NumField() {
			if v.Type().Field(i).Name != "_" {
				n.Field(i).Set(deepCopy(v.Field(i)))
			}
		}
		return n
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			n.Index(i).Set(deepCopy(v.Index(i)))
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeMapWithSize(v.Type(), v.Len())
		it := v.MapRange()
		for it.Next() {
			n.SetMapIndex(it.Key(), deepCopy(it.Value()))
		}
		return n
	}
	return v
}
