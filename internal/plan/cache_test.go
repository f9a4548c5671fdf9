package plan

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	planner "github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/scenario"
)

// TestPlanKeyTellsEveryFieldApart changes each value of each shipped
// example, one at a time, and checks that the plan cache's key changes
// with it, while an unchanged deep copy keeps the key: a key that missed a
// field would answer one scenario with another's plan.
func TestPlanKeyTellsEveryFieldApart(t *testing.T) {
	for _, name := range planner.ExampleNames() {
		s := example(t, name)
		want, ok := planKey(s)
		if !ok {
			t.Fatalf("%s: no key", name)
		}
		if got, _ := planKey(mutable(s)); got != want {
			t.Fatalf("%s: a deep copy has another key", name)
		}
		leaves := 0
		for _, path := range leafPaths(reflect.ValueOf(s), nil) {
			c := mutable(s)
			change(t, at(reflect.ValueOf(&c).Elem(), path))
			if got, _ := planKey(c); got == want {
				t.Errorf("%s: changing the value at %v keeps the key", name, path)
			}
			leaves++
		}
		if leaves < 20 {
			t.Fatalf("%s: only %d values walked", name, leaves)
		}
	}
}

// TestPlanKeyTellsAbsentFromZero checks that a field left out (defaulted)
// and the same field set to zero have different keys: the defaults are
// not always zero.
func TestPlanKeyTellsAbsentFromZero(t *testing.T) {
	s := mutable(example(t, "chat"))
	absent, _ := planKey(s)
	zero := 0.0
	s.Classes[0].ArrivalSCV = &zero
	set, _ := planKey(s)
	if s.Classes[0].ArrivalSCV == nil || absent == set {
		t.Fatal("an absent arrival_scv and an arrival_scv of 0 share a key")
	}
	s.Classes = append(s.Classes, scenario.Class{})
	longer, _ := planKey(s)
	if longer == set {
		t.Fatal("an extra class keeps the key")
	}
	s.Classes[0].InputTokens.Samples = []float64{}
	if empty, _ := planKey(s); empty == longer {
		t.Fatal("no samples and an empty list of samples share a key")
	}
}

// leafPaths lists the field and element indexes of every number, string
// and boolean reachable from v.
func leafPaths(v reflect.Value, prefix []int) [][]int {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return leafPaths(v.Elem(), prefix)
	case reflect.Struct:
		var out [][]int
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out = append(out, leafPaths(v.Field(i), append(prefix[:len(prefix):len(prefix)], i))...)
			}
		}
		return out
	case reflect.Slice:
		var out [][]int
		for i := range v.Len() {
			out = append(out, leafPaths(v.Index(i), append(prefix[:len(prefix):len(prefix)], i))...)
		}
		return out
	default:
		return [][]int{prefix}
	}
}

// at follows a path from leafPaths.
func at(v reflect.Value, path []int) reflect.Value {
	for _, i := range path {
		for v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		if v.Kind() == reflect.Struct {
			v = v.Field(i)
		} else {
			v = v.Index(i)
		}
	}
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	return v
}

// change sets v to a different value of its kind.
func change(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Float64, reflect.Float32:
		v.SetFloat(v.Float()*2 + 1)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(v.Int() + 1)
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	default:
		panic(fmt.Sprintf("a scenario value of kind %s", v.Kind()))
	}
}

// TestPlanDoesNotShareTheScenariosKnee changes the caller's knee after a
// plan: the plan, which the engine keeps and hands out again, must not
// change with it.
func TestPlanDoesNotShareTheScenariosKnee(t *testing.T) {
	s := mutable(example(t, "measured-curve"))
	p, err := New(Options{}).Plan(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	before := *p.Endpoints[0].Knee
	*s.Latency.Knee = before + 100
	if got := *p.Endpoints[0].Knee; got != before {
		t.Fatalf("the plan's knee followed the scenario's to %d", got)
	}
}
