package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/yamldoc"
)

// Parse reads a scenario from YAML or JSON and returns it with every problem
// found: keys given twice, schema violations (types, ranges, unknown
// fields) and the rules of Check. The error is Errors when the document
// parsed but is invalid. A document whose aliases would expand it past
// yamldoc.Bound of its size is refused before it is expanded, and so is
// a file of more than one YAML document (yamldoc.ErrDocuments).
func Parse(data []byte) (Scenario, error) {
	// Strict: a key given twice (a curve.yaml appended to a scenario that
	// has its own latency) is refused rather than silently overridden.
	js, err := yamldoc.ToJSON(data)
	if _, ok := errors.AsType[*yamldoc.PathError](err); ok || errors.Is(err, yamldoc.ErrExpansion) || errors.Is(err, yamldoc.ErrDocuments) {
		return Scenario{}, fmt.Errorf("scenario: %w", err)
	}
	if err != nil {
		return Scenario{}, fmt.Errorf("scenario is not valid YAML or JSON (or repeats a key): %w", err)
	}
	var generic any
	if err := json.Unmarshal(js, &generic); err != nil {
		return Scenario{}, fmt.Errorf("scenario: %w", err)
	}
	if _, ok := generic.(map[string]any); !ok {
		return Scenario{}, errors.New("scenario must be a mapping with quotas, latency, classes and policy")
	}
	errs := validateDocument(generic)
	var s Scenario
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil && len(errs) == 0 {
		return Scenario{}, fmt.Errorf("scenario: %w", err)
	}
	errs = append(errs, onlyNewPaths(errs, s.Check())...)
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b FieldError) int { return fieldpath.Compare(a.Path, b.Path) })
		return s, errs
	}
	return s, nil
}

// onlyNewPaths drops rule problems at a path related to one where the
// schema already found a problem (fieldpath.Related).
func onlyNewPaths(have, more Errors) Errors {
	var out Errors
	for _, e := range more {
		covered := slices.ContainsFunc(have, func(h FieldError) bool { return fieldpath.Related(h.Path, e.Path) })
		if !covered {
			out = append(out, e)
		}
	}
	return out
}
