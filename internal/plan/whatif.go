package plan

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

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
// scenario with a new engine. See Engine.Sweep.
func Sweep(base scenario.Scenario, vars []Variation) (*WhatIf, error) {
	return New().Sweep(context.Background(), base, vars, nil)
}

// Workers hands out extra workers to a sweep: a service bounds the
// computations it runs at once and lends a sweep the slots that are free.
type Workers interface {
	// TryAcquire takes a slot when one is free, without waiting.
	TryAcquire() bool
	// Release frees a slot that TryAcquire took.
	Release()
}

// Sweep plans every combination of up to two variations of a valid
// scenario. A path that does not exist in the scenario, or a grid larger
// than MaxWhatIfCells, is an error located at the variation; a value that
// makes the scenario invalid only marks its cell. Cells are planned by one
// worker and by as many more as workers lends (up to one per CPU; with nil
// workers, one per CPU), sharing the engine's draws, samples and tails. It
// gives up when ctx is done, returning ctx.Err().
func (e *Engine) Sweep(ctx context.Context, base scenario.Scenario, vars []Variation, workers Workers) (*WhatIf, error) {
	if len(vars) == 0 || len(vars) > 2 {
		return nil, scenario.Errors{{Path: "variations", Message: "give one or two variations"}}
	}
	ptrs := make([]scenario.Pointer, len(vars))
	cells := 1
	for i, v := range vars {
		cells *= len(v.Values)
		if len(v.Values) == 0 {
			return nil, scenario.Errors{{Path: fmt.Sprintf("variations[%d].values", i), Message: "give at least one value"}}
		}
		var err error
		if ptrs[i], err = variationPointer(base, v.Path); err != nil {
			return nil, scenario.Errors{{Path: fmt.Sprintf("variations[%d].path", i), Message: err.Error()}}
		}
	}
	if cells > MaxWhatIfCells {
		return nil, scenario.Errors{{Path: "variations", Message: fmt.Sprintf("the grid has %d cells; at most %d are allowed", cells, MaxWhatIfCells)}}
	}
	out := &WhatIf{Variations: vars, Cells: make([]Cell, cells)}
	next := make(chan int, cells)
	for i := range cells {
		next <- i
	}
	close(next)
	work := func() {
		for i := range next {
			if ctx.Err() != nil {
				return
			}
			values := make([]any, len(vars))
			rest := i
			for j := len(vars) - 1; j >= 0; j-- {
				values[j] = vars[j].Values[rest%len(vars[j].Values)]
				rest /= len(vars[j].Values)
			}
			out.Cells[i] = e.planCell(ctx, base, ptrs, values)
		}
	}
	var wg sync.WaitGroup
	for range min(cells, runtime.GOMAXPROCS(0)) - 1 {
		if workers != nil && !workers.TryAcquire() {
			break
		}
		wg.Go(func() {
			if workers != nil {
				defer workers.Release()
			}
			work()
		})
	}
	work()
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func (e *Engine) planCell(ctx context.Context, base scenario.Scenario, ptrs []scenario.Pointer, values []any) Cell {
	cell := Cell{Values: values}
	s, errs := cellScenario(base, ptrs, values)
	if len(errs) > 0 {
		cell.Errors = errs
		return cell
	}
	// A cell shows pools and binding constraints, not remedies, so it
	// skips working them out (each is checked by planning again).
	p, err := e.plan(ctx, s, false)
	if err == nil {
		for _, c := range p.Classes {
			cell.Classes = append(cell.Classes, CellClass{Name: c.Name, Pool: c.Pool, BindingConstraint: c.BindingConstraint, MinPool: c.MinPool, Feasible: c.Feasible})
		}
		return cell
	}
	if errors.As(err, &errs) {
		cell.Errors = errs
	} else {
		cell.Errors = []scenario.FieldError{{Message: err.Error()}}
	}
	return cell
}
