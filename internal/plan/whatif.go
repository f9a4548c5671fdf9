package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/plannerdev/planner/internal/scenario"
)

// MaxWhatIfCells bounds a what-if grid: the product of the variations'
// value counts.
const MaxWhatIfCells = 400

// MaxVariationValues bounds one variation's values (and tiers), as the
// API's schema of variations[].values does.
const MaxVariationValues = 200

// Variation varies one field of a scenario over a list of values.
type Variation struct {
	Path   string `json:"path"`             // a JSON Pointer (RFC 6901) into the scenario
	Values []any  `json:"values,omitempty"` // one grid row or column each
	// Tiers name the catalogue tiers whose quotas Values are
	// (TierVariation): the grid shows each cell's tier by its name, and
	// the variation by its tiers rather than the quotas they give.
	Tiers []string `json:"tiers,omitempty"`
}

// WhatIf is the grid of a what-if sweep: one cell per combination of the
// variations' values, in row-major order (the last variation varies fastest).
type WhatIf struct {
	Variations []Variation `json:"variations"`
	Cells      []Cell      `json:"cells"`
	// Ranking ranks the tiers of a sweep over catalogue tiers alone by
	// cost (RankTiers); nil for any other sweep.
	Ranking *TierRanking `json:"ranking,omitempty"`
}

// Cell is one combination of values and the plan's essentials for it, or
// the problems that made the varied scenario invalid.
type Cell struct {
	Values  []any                 `json:"values"`
	Classes []CellClass           `json:"classes,omitempty"`
	Errors  []scenario.FieldError `json:"errors,omitempty"`
	// Cost and QuotaCosts are the plan's cost and each priced key's.
	Cost       *Cost           `json:"cost,omitempty" doc:"What the cell's plan costs at the demand, over every key with a price."`
	QuotaCosts map[string]Cost `json:"quota_costs,omitempty" doc:"What each key with a price costs, by its name."`
}

// CellClass is one class's outcome in a cell.
type CellClass struct {
	Name              string `json:"name"`
	Pool              int    `json:"pool"`
	BindingConstraint string `json:"binding_constraint"`
	MinPool           *int   `json:"min_pool"`
	Feasible          bool   `json:"feasible"`
	// Fits and Misses are the check's, when the cells were checked.
	Fits   *bool  `json:"fits,omitempty" doc:"With check: the class is feasible and its plan's own simulation holds."`
	Misses []Miss `json:"misses,omitempty" doc:"With check: what the simulation saw break, and by how much."`
}

// Fitting reports whether the class fits by its cell's check; false in a
// cell that was not checked.
func (c CellClass) Fitting() bool { return c.Fits != nil && *c.Fits }

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
	return e.sweepWith(ctx, base, vars, nil)
}

// encloses reports whether the JSON Pointer outer names the value inner
// names or an object or array that holds it (/quotas/0 holds
// /quotas/0/tpm).
func encloses(outer, inner string) bool {
	return strings.HasPrefix(inner, outer) && (len(inner) == len(outer) || inner[len(outer)] == '/')
}

// reachedInFirst reports whether path, inside the object that the first
// variation (at p0) puts in place, names a field of the scenario with one
// of its values written in: a field of an object that the scenario
// itself does not have (a task on a class without one). A cell whose
// value of the first does not hold it is marked by its problem.
func reachedInFirst(base scenario.Scenario, p0 scenario.Pointer, first Variation, path string) bool {
	if !encloses(first.Path, path) {
		return false
	}
	for _, v := range first.Values {
		if len(p0.Check(v)) > 0 {
			continue
		}
		s, err := base.Set(p0, v)
		if err != nil {
			continue
		}
		if _, err := variationPointer(s, path); err == nil {
			return true
		}
	}
	return false
}

// repeatedValue reports the first value that repeats an earlier one, j,
// that one, k, and the value as JSON: equal as JSON (1 and 1.0 alike,
// objects whatever the order of their keys). A value JSON cannot write
// repeats nothing.
func repeatedValue(values []any) (j, k int, text string, ok bool) {
	seen := make(map[string]int, len(values))
	for j, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		if k, dup := seen[string(b)]; dup {
			return j, k, string(b), true
		}
		seen[string(b)] = j
	}
	return 0, 0, "", false
}

// sweepWith is Sweep, each valid cell's plan checked by check when it is
// not nil.
func (e *Engine) sweepWith(ctx context.Context, base scenario.Scenario, vars []Variation, check Checker) (*WhatIf, error) {
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
		if len(v.Values) > MaxVariationValues {
			return nil, scenario.Errors{{Path: fmt.Sprintf("variations[%d].values", i), Message: fmt.Sprintf("%d values; at most %d are allowed in one variation", len(v.Values), MaxVariationValues)}}
		}
		if j, k, text, ok := repeatedValue(v.Values); ok {
			return nil, scenario.Errors{{Path: fmt.Sprintf("variations[%d].values[%d]", i, j), Message: fmt.Sprintf("%s repeats values[%d]: its cells would be that one's again", text, k)}}
		}
		var err error
		if ptrs[i], err = variationPointer(base, v.Path); err != nil && (i == 0 || !reachedInFirst(base, ptrs[0], vars[0], v.Path)) {
			return nil, scenario.Errors{{Path: fmt.Sprintf("variations[%d].path", i), Message: err.Error()}}
		}
		if i == 1 && encloses(v.Path, vars[0].Path) {
			// The second's values would replace the first's in every cell.
			// (A field inside the first's object may vary: its values are
			// written into each of the first's.)
			return nil, scenario.Errors{{Path: "variations[1].path", Message: fmt.Sprintf("varies what variations[0] (%s) varies, or the object that holds it: every cell would show the second's values; vary the object first, then a field inside it", vars[0].Path)}}
		}
	}
	if cells > MaxWhatIfCells {
		return nil, scenario.Errors{{Path: "variations", Message: fmt.Sprintf("the grid has %d cells; at most %d are allowed", cells, MaxWhatIfCells)}}
	}
	var out *WhatIf
	err := e.Run(ctx, func(ctx context.Context) error {
		var err error
		out, err = e.sweep(ctx, vars, cells, func(ctx context.Context, values []any) Cell { return e.planCell(ctx, base, ptrs, values, check) })
		return err
	})
	if err != nil {
		return nil, err
	}
	out.nameTiers()
	return out, nil
}

// nameTiers shows each tier variation by its tiers, and its value in each
// cell as the tier's name rather than the quota it gives.
func (w *WhatIf) nameTiers() {
	vars := w.Variations
	for i := range w.Cells {
		rest := i
		for j := len(vars) - 1; j >= 0; j-- {
			n := len(vars[j].Values)
			if len(vars[j].Tiers) == n {
				w.Cells[i].Values[j] = vars[j].Tiers[rest%n]
			}
			rest /= n
		}
	}
	w.Variations = slices.Clone(vars)
	for j, v := range w.Variations {
		if len(v.Tiers) == len(v.Values) {
			w.Variations[j].Values = nil
		}
	}
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

func (e *Engine) planCell(ctx context.Context, base scenario.Scenario, ptrs []scenario.Pointer, values []any, check Checker) Cell {
	cell := Cell{Values: values}
	s, errs := cellScenario(base, ptrs, values)
	if len(errs) > 0 {
		cell.Errors = errs
		return cell
	}
	// A cell shows pools and binding constraints, not remedies, so it
	// skips working them out (each is checked by planning again).
	p, err := e.plan(ctx, s, false, nil)
	if err == nil && check != nil {
		p, err = check(ctx, s, p, func(ctx context.Context, floors map[string]int) (*Plan, error) {
			return e.plan(ctx, s, false, floors)
		})
	}
	if err == nil {
		for _, c := range p.Classes {
			cc := CellClass{Name: c.Name, Pool: c.Pool, BindingConstraint: c.BindingConstraint, MinPool: c.MinPool, Feasible: c.Feasible}
			if c.Check != nil {
				cc.Fits = c.Fits
				cc.Misses = c.Check.Misses
			}
			cell.Classes = append(cell.Classes, cc)
		}
		if p.Cost != nil {
			c := *p.Cost // the plan may be shared: the cell's is its own
			cell.Cost = &c
		}
		for _, q := range p.Quotas {
			if q.Cost != nil {
				if cell.QuotaCosts == nil {
					cell.QuotaCosts = map[string]Cost{}
				}
				cell.QuotaCosts[q.Name] = *q.Cost
			}
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
