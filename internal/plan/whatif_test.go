package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

func TestSweepOneVariationMatchesSinglePlans(t *testing.T) {
	base := handScenario(scenario.Quota{RPM: 600})
	w, err := sweep(base, []Variation{{Path: "/quotas/0/rpm", Values: []any{240, 600, 1200}}})
	if err != nil {
		t.Fatal(err)
	}
	// 0.9 × rpm/60 × 2.5 s: 9 → 9, 22.5 → 22, 45 → 45.
	want := []int{9, 22, 45}
	for i, c := range w.Cells {
		if len(c.Errors) > 0 || c.Classes[0].Pool != want[i] || c.Classes[0].BindingConstraint != "rpm" {
			t.Errorf("cell %d: %+v, want pool %d by rpm", i, c, want[i])
		}
	}
}

func TestSweepTwoVariationsGrid(t *testing.T) {
	base := handScenario(scenario.Quota{RPM: 600})
	w, err := sweep(base, []Variation{
		{Path: "/quotas/0/rpm", Values: []any{600, 1200}},
		{Path: "/latency/knee", Values: []any{10, 40, 100}}, // absent in the base: added
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Cells) != 6 {
		t.Fatalf("%d cells, want 6", len(w.Cells))
	}
	// Row-major: (600,10) (600,40) (600,100) (1200,10) ...; knee ceiling ⌊0.7·k⌋ = 7, 28, 70.
	want := []struct {
		pool    int
		binding string
	}{{7, "knee"}, {22, "rpm"}, {22, "rpm"}, {7, "knee"}, {28, "knee"}, {45, "rpm"}}
	for i, c := range w.Cells {
		if got := c.Classes[0]; got.Pool != want[i].pool || got.BindingConstraint != want[i].binding {
			t.Errorf("cell %d %v: pool %d by %s, want %d by %s", i, c.Values, got.Pool, got.BindingConstraint, want[i].pool, want[i].binding)
		}
	}
}

func TestSweepInvalidValueMarksOnlyItsCell(t *testing.T) {
	base := handScenario(scenario.Quota{RPM: 600})
	w, err := sweep(base, []Variation{{Path: "/quotas/0/rpm", Values: []any{-1, 600, "lots"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Cells[0].Errors) == 0 || w.Cells[0].Errors[0].Path != "quotas[0].rpm" || len(w.Cells[1].Errors) != 0 || len(w.Cells[2].Errors) == 0 {
		t.Fatalf("cells %+v", w.Cells)
	}
}

func TestSweepRejectsBadVariations(t *testing.T) {
	base := handScenario(scenario.Quota{RPM: 600})
	many := make([]any, 21)
	for i := range many {
		many[i] = i + 1
	}
	tests := []struct {
		name string
		vars []Variation
		path string
	}{
		{"none", nil, "variations"},
		{"three", []Variation{{Path: "/quotas/0/rpm", Values: []any{1}}, {Path: "/quotas/0/rpm", Values: []any{1}}, {Path: "/quotas/0/rpm", Values: []any{1}}}, "variations"},
		{"missing array element", []Variation{{Path: "/quotas/3/rpm", Values: []any{1}}}, "variations[0].path"},
		{"no leading slash", []Variation{{Path: "quotas/0/rpm", Values: []any{1}}}, "variations[0].path"},
		{"insert into array", []Variation{{Path: "/classes/1", Values: []any{1}}}, "variations[0].path"},
		{"no values", []Variation{{Path: "/quotas/0/rpm", Values: nil}}, "variations[0].values"},
		{"a value twice", []Variation{{Path: "/quotas/0/rpm", Values: []any{600, 900, 600.0}}}, "variations[0].values[2]"},
		{"an object twice", []Variation{{Path: "/quotas/0/rpm", Values: []any{1}}, {Path: "/classes/0/demand", Values: []any{map[string]any{"rps": 1, "burst": 2}, map[string]any{"burst": 2, "rps": 1}}}}, "variations[1].values[1]"},
		{"too big", []Variation{{Path: "/quotas/0/rpm", Values: many}, {Path: "/latency/knee", Values: many}}, "variations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sweep(base, tt.vars)
			var errs scenario.Errors
			if !errors.As(err, &errs) || errs[0].Path != tt.path {
				t.Fatalf("error %v, want one at %s", err, tt.path)
			}
		})
	}
}

// TestOneValueVariedTwiceIsRefused: two variations of one value, or of a
// field and then the object that holds it, would let the second's values
// replace the first's in every cell; a field inside the first's object
// may vary (TestSweepCellProblems).
func TestOneValueVariedTwiceIsRefused(t *testing.T) {
	base := handScenario(scenario.Quota{RPM: 600, TPM: 100000})
	_, err := sweep(base, []Variation{{Path: "/quotas/0/tpm", Values: []any{1000.0}}, {Path: "/quotas/0/tpm", Values: []any{2000.0}}})
	var errs scenario.Errors
	if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Path != "variations[1].path" || !strings.Contains(errs[0].Message, "varies what variations[0] (/quotas/0/tpm) varies") {
		t.Errorf("tpm twice: %v", err)
	}
	if _, err := sweep(base, []Variation{{Path: "/quotas/0/tpm", Values: []any{1000.0}}, {Path: "/quotas/0/rpm", Values: []any{100.0}}}); err != nil {
		t.Errorf("tpm and rpm: %v", err)
	}
	// The object after a field inside it would replace the field's values.
	base.Classes[0].Demand = &scenario.Demand{RPS: 1}
	_, err = sweep(base, []Variation{{Path: "/classes/0/demand/rps", Values: []any{0.1, 0.2}}, {Path: "/classes/0/demand", Values: []any{map[string]any{"rps": 0.3}}}})
	if !errors.As(err, &errs) || errs[0].Path != "variations[1].path" {
		t.Errorf("demand after demand.rps: %v", err)
	}
	for _, tc := range [][2]string{{"/quotas/0", "/quotas/0/tpm"}, {"/quotas/0/tpm", "/quotas/0/tpm"}, {"/quotas/1", "/quotas/10/tpm"}, {"/quotas/0/tpm", "/quotas/0/tpmx"}} {
		want := tc[0] == "/quotas/0" || tc[0] == tc[1]
		if got := encloses(tc[0], tc[1]); got != want {
			t.Errorf("%s encloses %s: %v, want %v", tc[0], tc[1], got, want)
		}
	}
}
