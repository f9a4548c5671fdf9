package plan

import (
	"slices"

	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/scenario"
)

// WithRemedies is the scenario with every remedy written in at its path,
// as a team would apply them by hand.
func WithRemedies(s scenario.Scenario, rems []Remedy) (scenario.Scenario, error) {
	return withRemedies(s, rems)
}

// withRemedies writes every remedy into a copy of the scenario.
func withRemedies(s scenario.Scenario, rems []Remedy) (scenario.Scenario, error) {
	for _, rm := range rems {
		p, err := scenario.ParsePointer(rm.Path)
		if err != nil {
			return s, err
		}
		if s, err = s.Set(p, rm.Value); err != nil {
			return s, err
		}
	}
	return s, nil
}

// variationPointer reads a variation's path and checks that base reaches
// it: a path that is not there is the variation's error, not a cell's.
func variationPointer(base scenario.Scenario, path string) (scenario.Pointer, error) {
	p, err := scenario.ParsePointer(path)
	if err != nil {
		return p, err
	}
	return p, base.Reaches(p)
}

// cellScenario is base with each variation's value of a cell written at
// its pointer, or the scenario's problems in document order: the values
// that its field rules refuse, located at their fields, or else the rules
// that span fields (Check), as scenario.Parse would report them.
func cellScenario(base scenario.Scenario, ptrs []scenario.Pointer, values []any) (scenario.Scenario, scenario.Errors) {
	var errs scenario.Errors
	for j, p := range ptrs {
		errs = append(errs, p.Check(values[j])...)
	}
	s := base
	for j, p := range ptrs {
		if len(errs) > 0 {
			break
		}
		var err error
		if s, err = s.Set(p, values[j]); err != nil {
			errs = scenario.Errors{{Path: p.Location(), Message: err.Error()}}
		}
	}
	if len(errs) == 0 {
		errs = s.Check()
	}
	slices.SortStableFunc(errs, func(a, b scenario.FieldError) int { return fieldpath.Compare(a.Path, b.Path) })
	return s, errs
}
