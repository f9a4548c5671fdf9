package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/plannerdev/planner/internal/plan"
)

// WriteWhatIf writes a what-if grid in one of PlanFormats. The table and
// the Markdown table have one row per cell and class: the cell's values
// (one column per variation, headed by its path), then the class's pool,
// binding constraint, min_pool and whether it is feasible, for a checked
// grid whether it fits and what its check saw break, and with prices what
// the cell's plan costs a day; a cell whose values make the scenario
// invalid has one row with its problems. A sweep over tiers adds their
// ranking by cost. CSV has the same rows and columns, its numbers
// unrounded (writeWhatIfCSV). JSON and YAML are the grid as
// POST /v1/what-if returns it.
func WriteWhatIf(w io.Writer, g *plan.WhatIf, format string) error {
	switch format {
	case FormatTable, FormatMarkdown:
	case FormatCSV:
		return writeWhatIfCSV(w, g)
	default:
		return WriteData(w, g, format)
	}
	md := format == FormatMarkdown
	ew := &errWriter{w: w}
	var rows [][]string
	head := make([]string, 0, len(g.Variations)+5)
	for _, v := range g.Variations {
		head = append(head, v.Path)
	}
	checked := whatIfChecked(g)
	head = append(head, "CLASS", "POOL", "BINDING", "MIN", "FEASIBLE")
	if checked {
		head = append(head, "FITS", "CHECK")
	}
	priced := whatIfPriced(g)
	if priced {
		head = append(head, "PLAN/DAY")
	}
	for _, c := range g.Cells {
		values := make([]string, len(c.Values))
		for i, v := range c.Values {
			values[i] = cellValue(v)
		}
		if len(c.Errors) > 0 {
			msgs := make([]string, len(c.Errors))
			for i, e := range c.Errors {
				msgs[i] = e.Error()
			}
			row := append(values, "invalid: "+strings.Join(msgs, "; "))
			rows = append(rows, append(row, make([]string, len(head)-len(row))...))
			continue
		}
		for _, cl := range c.Classes {
			row := append(slices.Clone(values), cl.Name, fmt.Sprint(cl.Pool), cl.BindingConstraint, intOrDash(cl.MinPool), yesNo(cl.Feasible))
			if checked {
				row = append(row, "-", "-")
				if cl.Fits != nil {
					row[len(row)-2], row[len(row)-1] = yesNo(*cl.Fits), missWords(cl.Misses)
				}
			}
			if priced {
				row = append(row, cellCost(c))
			}
			rows = append(rows, row)
		}
	}
	if md {
		fmt.Fprintf(ew, "| %s |\n|%s\n", strings.Join(mdCells(head), " | "), strings.Repeat("---|", len(head)))
		for _, r := range rows {
			fmt.Fprintf(ew, "| %s |\n", strings.Join(mdCells(r), " | "))
		}
		if g.Ranking != nil {
			if err := writeRanking(ew, g.Ranking, true); err != nil {
				return err
			}
		}
		return ew.err
	}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.TrimRight(strings.Join(r, "\t"), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if g.Ranking != nil {
		if err := writeRanking(ew, g.Ranking, false); err != nil {
			return err
		}
	}
	return ew.err
}

// whatIfChecked reports whether a grid's cells were checked: the table
// and the CSV then have whether each class fits and what its check saw.
func whatIfChecked(g *plan.WhatIf) bool {
	return slices.ContainsFunc(g.Cells, func(c plan.Cell) bool {
		return slices.ContainsFunc(c.Classes, func(cl plan.CellClass) bool { return cl.Fits != nil })
	})
}

// whatIfPriced reports whether some cell's plan has a cost: the table and
// the CSV then have what each cell's plan costs a day.
func whatIfPriced(g *plan.WhatIf) bool {
	return slices.ContainsFunc(g.Cells, func(c plan.Cell) bool { return c.Cost != nil })
}

// cellCost is what a cell's plan costs a day, "-" without a price.
func cellCost(c plan.Cell) string {
	if c.Cost == nil {
		return "-"
	}
	return fmtMoney(c.Cost.PerDay) + " " + c.Cost.Currency
}

// missWords names what a cell's check saw break, "holds" when nothing:
// each figure by its name for people, a share as the share it came to
// against the most it may be, another figure by how far over its bound.
func missWords(ms []plan.Miss) string {
	if len(ms) == 0 {
		return "holds"
	}
	names := make([]string, len(ms))
	for i, m := range ms {
		label := missLabel(m.Metric)
		switch {
		case m.OverPct == nil || m.Value == nil:
			names[i] = label + " (nothing completed)"
		case strings.HasSuffix(m.Metric, "_share"):
			names[i] = fmt.Sprintf("%s %s %% (at most %s %%)", label, fmtNum(100**m.Value), fmtNum(100*m.Bound))
		case *m.OverPct < 0:
			names[i] = fmt.Sprintf("%s %s %%", label, fmtNum(*m.OverPct))
		default:
			names[i] = fmt.Sprintf("%s +%s %%", label, fmtNum(*m.OverPct))
		}
	}
	return strings.Join(names, ", ")
}

// missLabels names a check's figures (plan.Miss.Metric) as people read
// them.
var missLabels = map[string]string{
	"ttft_p95_ms": "TTFT p95", "e2e_p95_ms": "E2E p95", "tpot_p95_ms": "TPOT p95",
	"ttft_ms_at_percentile": "TTFT at its percentile", "e2e_ms_at_percentile": "E2E at its percentile",
	"tpot_ms_at_percentile": "TPOT at its percentile",
	"rate_limited_share":    "429s", "lost_share": "lost",
	"batch_hours": "batch time", "backlog": "left waiting",
	"predicted_ttft_p95_ms": "predicted TTFT p95", "predicted_e2e_p95_ms": "predicted E2E p95",
	"predicted_ttft_ms_at_percentile": "predicted TTFT at its percentile", "predicted_e2e_ms_at_percentile": "predicted E2E at its percentile",
	"predicted_tpot_ms_at_percentile": "predicted TPOT at its percentile",
	"events":                          "simulation events",
}

// missLabel is a check's figure as people read it; one missLabels does
// not know, as it is.
func missLabel(metric string) string {
	if label, ok := missLabels[metric]; ok {
		return label
	}
	return metric
}

// cellValue shows a varied value on one line of its row: a number or
// string as it is, anything else as compact JSON; a string with a line
// break or another control character as JSON too, and a number too large
// to write out in full (1e+300) in exponent form.
func cellValue(v any) string {
	switch x := v.(type) {
	case string:
		if !strings.ContainsFunc(x, unicode.IsControl) {
			return x
		}
	case float64:
		if math.Abs(x) >= 1e21 {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		return fmtNum(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func mdCells(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = mdText(c)
	}
	return out
}
