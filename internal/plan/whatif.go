package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"golang.org/x/sync/errgroup"

	"github.com/plannerdev/planner/internal/scenario"
)

// MaxWhatIfCells bounds a what-if grid: the product of the variations'
// value counts.
const MaxWhatIfCells = 400

// Variation varies one field of a scenario over a list of values.
type Variation struct {
	Path   string `json:"path"`   // a JSON Pointer (RFC 6901) into the scenario
	Values []any  `json:"values"` // one grid row or column each
}

// WhatIf is the grid of a what-if sweep: one cell per combination of the
// variations' values, in row-major order (the last variation varies fastest).
type WhatIf struct {
	Variations []Variation `json:"variations"`
	Cells      []Cell      `json:"cells"`
}

// Cell is one combination of values and the plan's essentials for it, or
// the problems that made the varied scenario invalid.
type Cell struct {
	Values  []any                 `json:"values"`
	Classes []CellClass           `json:"classes,omitempty"`
	Errors  []scenario.FieldError `json:"errors,omitempty"`
}

// CellClass is one class's outcome in a cell.
type CellClass struct {
	Name              string `json:"name"`
	Pool              int    `json:"pool"`
	BindingConstraint string `json:"binding_constraint"`
	MinPool           *int   `json:"min_pool"`
	Feasible          bool   `json:"feasible"`
}

// Sweep plans every combination of up to two variations of a valid
// scenario as one computation under the engine's limits (Engine.Run). A
// path that does not exist in the scenario, or a grid larger than
// MaxWhatIfCells, is an error located at the variation; a value that makes
// the scenario invalid only marks its cell. Cells are planned in the
// sweep's slot and in as many more as are free (up to one per CPU), sharing
// the engine's draws, samples and tails; a borrowed slot is given back when
// its worker ends. It gives up when ctx is done or the deadline passes,
// returning the context's error; a panic in any cell fails the whole sweep
// with a *PanicError.
func (e *Engine) Sweep(ctx context.Context, base scenario.Scenario, vars []Variation) (*WhatIf, error) {
	if len(vars) == 0 || len(vars) > 2 {
		return nil, scenario.Errors{{Path: "variations", Message: "give one or two variations"}}
	}
	doc, err := json.Marshal(base)
	if err != nil {
		return nil, fmt.Errorf("encode scenario: %w", err)
	}
	cells := 1
	for i, v := range vars {
		cells *= len(v.Values)
		if len(v.Values) == 0 {
			return nil, scenario.Errors{{Path: fmt.Sprintf("variations[%d].values", i), Message: "give at least one value"}}
		}
		if _, err := set(doc, v.Path, v.Values[0]); err != nil {
			return nil, scenario.Errors{{Path: fmt.Sprintf("variations[%d].path", i), Message: err.Error()}}
		}
	}
	if cells > MaxWhatIfCells {
		return nil, scenario.Errors{{Path: "variations", Message: fmt.Sprintf("the grid has %d cells; at most %d are allowed", cells, MaxWhatIfCells)}}
	}
	var out *WhatIf
	err = e.Run(ctx, func(ctx context.Context) error {
		var err error
		out, err = e.sweep(ctx, vars, cells, func(ctx context.Context, values []any) Cell { return e.planCell(ctx, doc, vars, values) })
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sweep computes the cells of a grid with cell, in the caller's slot and in
// the engine's free ones, each worker recovering its own panics.
func (e *Engine) sweep(ctx context.Context, vars []Variation, cells int, cell func(ctx context.Context, values []any) Cell) (*WhatIf, error) {
	out := &WhatIf{Variations: vars, Cells: make([]Cell, cells)}
	next := make(chan int, cells)
	for i := range cells {
		next <- i
	}
	close(next)
	g, gctx := errgroup.WithContext(ctx)
	work := func() error {
		return recovered(func() error {
			for i := range next {
				if err := gctx.Err(); err != nil {
					return err
				}
				values := make([]any, len(vars))
				rest := i
				for j := len(vars) - 1; j >= 0; j-- {
					values[j] = vars[j].Values[rest%len(vars[j].Values)]
					rest /= len(vars[j].Values)
				}
				out.Cells[i] = cell(gctx, values)
			}
			return nil
		})
	}
	for range min(cells, runtime.GOMAXPROCS(0)) - 1 {
		if !e.limits.tryAcquire() {
			break
		}
		g.Go(func() error {
			defer e.limits.release()
			return work()
		})
	}
	g.Go(work)
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func (e *Engine) planCell(ctx context.Context, doc []byte, vars []Variation, values []any) Cell {
	cell := Cell{Values: values}
	var err error
	for j, v := range vars {
		if doc, err = set(doc, v.Path, values[j]); err != nil {
			cell.Errors = []scenario.FieldError{{Path: strings.TrimPrefix(v.Path, "/"), Message: err.Error()}}
			return cell
		}
	}
	s, err := scenario.Parse(doc)
	if err == nil {
		var p *Plan
		// A cell shows pools and binding constraints, not remedies, so
		// it skips working them out (each is checked by planning again).
		if p, err = e.plan(ctx, s, false); err == nil {
			for _, c := range p.Classes {
				cell.Classes = append(cell.Classes, CellClass{Name: c.Name, Pool: c.Pool, BindingConstraint: c.BindingConstraint, MinPool: c.MinPool, Feasible: c.Feasible})
			}
			return cell
		}
	}
	var errs scenario.Errors
	if errors.As(err, &errs) {
		cell.Errors = errs
	} else {
		cell.Errors = []scenario.FieldError{{Message: err.Error()}}
	}
	return cell
}

// set puts value at the JSON Pointer path of doc: replacing what is there,
// or adding a member to an existing object.
func set(doc []byte, path string, value any) ([]byte, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, errors.New("a JSON Pointer starts with /")
	}
	v, err := json.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("value: %w", err)
	}
	apply := func(op string) ([]byte, error) {
		p, err := jsonpatch.DecodePatch(fmt.Appendf(nil, `[{"op":%q,"path":%q,"value":%s}]`, op, path, v))
		if err != nil {
			return nil, err
		}
		return p.Apply(doc)
	}
	out, err := apply("replace")
	if err == nil {
		return out, nil
	}
	// "add" sets a field that the scenario leaves out (it omits zero values),
	// but on an array index it would insert an element: no scenario object
	// has a numeric key, so a numeric last token is an index.
	if last := path[strings.LastIndex(path, "/")+1:]; strings.Trim(last, "0123456789") != "" && last != "-" {
		if out, err := apply("add"); err == nil {
			return out, nil
		}
		// A settings object that is always there in the scenario (policy,
		// the top-level latency) is left out of its JSON when empty: add
		// it, as setNumber writes into it, so that a remedy's path works
		// here too.
		if filled, ok := withSettingsObjects(doc, path); ok {
			doc = filled
			if out, err := apply("add"); err == nil {
				return out, nil
			}
		}
	}
	return nil, fmt.Errorf("no field at %s in the scenario", path)
}

// withSettingsObjects adds to doc, as {}, every object on the JSON Pointer
// path (but its last member) that is a struct value rather than a pointer
// in scenario.Scenario and that doc leaves out. It reports false when it
// adds none.
func withSettingsObjects(doc []byte, path string) ([]byte, bool) {
	var root any
	if json.Unmarshal(doc, &root) != nil {
		return nil, false
	}
	t, node, added := reflect.TypeFor[scenario.Scenario](), root, false
	tokens := strings.Split(path[1:], "/")
	for _, tok := range tokens[:len(tokens)-1] {
		switch t.Kind() {
		case reflect.Struct:
			f, ok := jsonField(t, tok)
			obj, isObj := node.(map[string]any)
			if !ok || !isObj {
				return nil, false
			}
			t = t.Field(f).Type
			if _, present := obj[tok]; !present && t.Kind() == reflect.Struct {
				obj[tok], added = map[string]any{}, true
			}
			node = obj[tok]
		case reflect.Slice:
			i, err := strconv.Atoi(tok)
			arr, isArr := node.([]any)
			if err != nil || !isArr || i < 0 || i >= len(arr) {
				return nil, false
			}
			t, node = t.Elem(), arr[i]
		default:
			return nil, false
		}
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
	}
	if !added {
		return nil, false
	}
	out, err := json.Marshal(root)
	return out, err == nil
}
