package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/danielgtaylor/huma/v2"
	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner/internal/fieldpath"
)

// schema is the JSON Schema of Scenario generated from its struct tags, the
// same one the API publishes and validates requests with.
var schema = sync.OnceValues(func() (huma.Registry, *huma.Schema) {
	reg := huma.NewMapRegistry("#/components/schemas/", huma.DefaultSchemaNamer)
	return reg, reg.Schema(reflect.TypeFor[Scenario](), true, "Scenario")
})

// Parse reads a scenario from YAML or JSON and returns it with every problem
// found: schema violations (types, ranges, unknown fields) and the rules of
// Check. The error is Errors when the document parsed but is invalid.
func Parse(data []byte) (Scenario, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return Scenario{}, fmt.Errorf("scenario is neither valid YAML nor JSON: %w", err)
	}
	var generic any
	if err := json.Unmarshal(js, &generic); err != nil {
		return Scenario{}, fmt.Errorf("scenario: %w", err)
	}
	if _, ok := generic.(map[string]any); !ok {
		return Scenario{}, errors.New("scenario must be a mapping with quotas, latency, classes and policy")
	}
	var errs Errors
	reg, sch := schema()
	res := &huma.ValidateResult{}
	huma.Validate(reg, sch, huma.NewPathBuffer(nil, 0), huma.ModeWriteToServer, generic, res)
	for _, e := range res.Errors {
		var d *huma.ErrorDetail
		if errors.As(e, &d) {
			errs = append(errs, FieldError{Path: strings.TrimPrefix(d.Location, "."), Message: d.Message})
		} else {
			errs = append(errs, FieldError{Message: e.Error()})
		}
	}
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

// onlyNewPaths drops rule problems at a path where, under which, or above
// which the schema already found one: a bad value is reported once, not
// again through the rules it breaks.
func onlyNewPaths(have, more Errors) Errors {
	inside := func(x, y string) bool { return y == "" || strings.HasPrefix(x, y+".") || strings.HasPrefix(x, y+"[") }
	var out Errors
	for _, e := range more {
		covered := slices.ContainsFunc(have, func(h FieldError) bool {
			return h.Path == e.Path || inside(h.Path, e.Path) || inside(e.Path, h.Path)
		})
		if !covered {
			out = append(out, e)
		}
	}
	return out
}
