package plan

import (
	"errors"
	"slices"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

// TestSweepPathIsAField: a variation's path names a field of the scenario
// or is refused at the variation, before any cell is planned.
func TestSweepPathIsAField(t *testing.T) {
	base := handScenario(scenario.Quota{RPM: 600})
	for path, want := range map[string]string{
		"/quotas/0/colour":      "no field at /quotas/0/colour in the scenario",
		"/classes/0/slo/x":      "no field at /classes/0/slo/x in the scenario",
		"/classes/0/slo/x~":     "/classes/0/slo/x~ is not a JSON Pointer: write ~ as ~0 and / as ~1",
		"/classes/0/demand/rps": "no field at /classes/0/demand/rps in the scenario", // the class states no demand
	} {
		_, err := sweep(base, []Variation{{Path: path, Values: []any{1}}})
		var errs scenario.Errors
		if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Path != "variations[0].path" || errs[0].Message != want {
			t.Errorf("%s: %v, want %q at variations[0].path", path, err, want)
		}
	}
}

// TestSweepCellProblems: a cell lists the problems of every variation's
// value, at the fields' locations in document order; a value that leaves
// out an object the other variation writes into makes that path the
// cell's problem; the rules that span fields mark their cell too.
func TestSweepCellProblems(t *testing.T) {
	base := handScenario(scenario.Quota{RPM: 600})
	base.Classes[0].Demand = &scenario.Demand{RPS: 1}
	w, err := sweep(base, []Variation{
		{Path: "/classes/0/demand", Values: []any{nil, map[string]any{"rps": 2.0}, "many"}},
		{Path: "/classes/0/demand/rps", Values: []any{3.0, -1.0}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]scenario.FieldError{
		{{Path: "classes[0].demand.rps", Message: "no field at /classes/0/demand/rps in the scenario"}},
		{{Path: "classes[0].demand.rps", Message: "expected number > 0"}},
		nil,
		{{Path: "classes[0].demand.rps", Message: "expected number > 0"}},
		{{Path: "classes[0].demand", Message: "expected object"}},
		{{Path: "classes[0].demand", Message: "expected object"}, {Path: "classes[0].demand.rps", Message: "expected number > 0"}},
	}
	for i, c := range w.Cells {
		if !slices.Equal(c.Errors, want[i]) {
			t.Errorf("cell %d %v: errors %v, want %v", i, c.Values, c.Errors, want[i])
		}
	}
	if len(w.Cells[2].Classes) != 1 {
		t.Errorf("cell 2 was not planned: %+v", w.Cells[2])
	}
	w, err = sweep(base, []Variation{{Path: "/classes/0/quota", Values: []any{"key", "nope"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Cells[0].Errors) != 0 || !slices.Equal(w.Cells[1].Errors, []scenario.FieldError{{Path: "classes[0].quota", Message: `no quota named "nope"`}}) {
		t.Errorf("cells %+v", w.Cells)
	}
}
