package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/simulate"
)

// The CSV forms of the tables (RFC 4180, a header row first). A cell holds
// the number itself, in its unit as the column's name says (_ms, _rps),
// unrounded and without thousands separators, so that a spreadsheet reads
// it as a number; a figure the table shows as "-" is an empty cell, and
// yes/no columns hold true or false.

// WriteCSV writes a header and rows as CSV: the one CSV writer of the
// package, for the tables that other packages render.
func WriteCSV(w io.Writer, header []string, rows [][]string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	if err := cw.WriteAll(rows); err != nil {
		return fmt.Errorf("write CSV: %w", err)
	}
	return nil
}

// CSVNumber is a number as a CSV cell: the shortest decimal that reads
// back as v.
func CSVNumber(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// csvOptional is a number that may be absent: empty when p is nil.
func csvOptional(p *float64) string {
	if p == nil {
		return ""
	}
	return CSVNumber(*p)
}

func csvInt(p *int) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}

// planCSVHeader are the columns of WritePlanCSV: the table's, unrounded.
var planCSVHeader = []string{"class", "mode", "quota", "endpoint", "pool", "binding_constraint", "min_pool", "feasible",
	"fits", "check", "ttft_p95_ms", "e2e_p95_ms", "throughput_rps", "offered_rps", "counts"}

// WritePlanCSV writes a plan as CSV, one row per class: the columns of the
// terminal table (WriteTable) with their numbers unrounded, the endpoint
// and the offered rate beside them, and what the pool and the rates count
// (counts: tasks for an agent task class, whose E2E is the task's).
// feasible is the queueing model's answer; fits and check are the
// table's FITS and CHECK (holds, or what breaks), empty for a plan that
// was not checked.
func WritePlanCSV(w io.Writer, p *plan.Plan) error {
	rows := make([][]string, 0, len(p.Classes))
	for _, c := range p.Classes {
		offered := ""
		if c.Predicted.OfferedRPS > 0 {
			offered = CSVNumber(c.Predicted.OfferedRPS)
		}
		rows = append(rows, []string{c.Name, c.Mode, c.Quota, c.Endpoint, strconv.Itoa(c.Pool), c.BindingConstraint,
			csvInt(c.MinPool), strconv.FormatBool(c.Feasible), csvFits(c.Fits), csvCheck(c.Check), csvOptional(c.Predicted.TTFTP95Ms), csvOptional(c.Predicted.E2EP95Ms),
			CSVNumber(c.Predicted.ThroughputRPS), offered, planCounts(c)})
	}
	return WriteCSV(w, planCSVHeader, rows)
}

func csvFits(fits *bool) string {
	if fits == nil {
		return ""
	}
	return strconv.FormatBool(*fits)
}

// csvCheck is a class's check as the what-if CSV has it: holds, or what
// breaks.
func csvCheck(c *plan.ClassCheck) string {
	switch {
	case c == nil:
		return ""
	case !c.Holds && len(c.Misses) == 0:
		return "breaks"
	}
	return missWords(c.Misses)
}

// planCounts is what a class's pool and rates count: tasks for an agent
// task class, requests for any other (as a simulation's counts says).
func planCounts(c plan.ClassPlan) string {
	if c.Task != nil {
		return simulate.CountsTasks
	}
	return simulate.CountsRequests
}

// writeWhatIfCSV writes a what-if grid as CSV, one row per cell and class
// as the table has them: the cell's values (one column per variation,
// headed by its path, compact JSON for a value that is not a number or a
// word), then the class's pool, binding constraint, min_pool and whether
// it is feasible; for a checked grid whether it fits and what its check
// saw (the table's CHECK: holds, or what breaks); with prices what the
// cell's plan costs a day, unrounded, and its currency. A cell whose
// values make the scenario invalid has one row with its problems in the
// last column, error.
func writeWhatIfCSV(w io.Writer, g *plan.WhatIf) error {
	checked, priced := whatIfChecked(g), whatIfPriced(g)
	head := make([]string, 0, len(g.Variations)+10)
	for _, v := range g.Variations {
		head = append(head, v.Path)
	}
	head = append(head, "class", "pool", "binding_constraint", "min_pool", "feasible")
	if checked {
		head = append(head, "fits", "check")
	}
	if priced {
		head = append(head, "plan_cost_per_day", "currency")
	}
	head = append(head, "error")
	var rows [][]string
	for _, c := range g.Cells {
		values := make([]string, len(c.Values))
		for i, v := range c.Values {
			values[i] = csvValue(v)
		}
		if len(c.Errors) > 0 {
			msgs := make([]string, len(c.Errors))
			for i, e := range c.Errors {
				msgs[i] = e.Error()
			}
			row := append(values, make([]string, len(head)-len(values)-1)...)
			rows = append(rows, append(row, strings.Join(msgs, "; ")))
			continue
		}
		for _, cl := range c.Classes {
			row := append(slices.Clone(values), cl.Name, strconv.Itoa(cl.Pool), cl.BindingConstraint,
				csvInt(cl.MinPool), strconv.FormatBool(cl.Feasible))
			if checked {
				if cl.Fits != nil {
					row = append(row, strconv.FormatBool(*cl.Fits), missWords(cl.Misses))
				} else {
					row = append(row, "", "")
				}
			}
			if priced {
				if c.Cost != nil {
					row = append(row, CSVNumber(c.Cost.PerDay), c.Cost.Currency)
				} else {
					row = append(row, "", "")
				}
			}
			rows = append(rows, append(row, ""))
		}
	}
	return WriteCSV(w, head, rows)
}

// csvValue is a varied value as a cell: a number unrounded, anything else
// as the table shows it.
func csvValue(v any) string {
	if x, ok := v.(float64); ok {
		return CSVNumber(x)
	}
	return cellValue(v)
}

// simulationCSVHeader are the columns of WriteSimulationCSV.
var simulationCSVHeader = []string{"class", "pool", "counts", "requests", "completed", "throughput_rps", "planned_rps", "goodput_rps",
	"shed", "rate_limited", "retries", "gave_up", "queue_wait_p95_ms", "ttft_p95_ms", "planned_ttft_p95_ms",
	"e2e_p95_ms", "planned_e2e_p95_ms", "tpot_p95_ms", "holds"}

// WriteSimulationCSV writes a simulation as CSV, one row per class: the
// simulated figures beside the plan's, as the table has them, with the
// counts the Markdown form adds and what they count (ClassRun.Counts:
// tasks for an agent task class).
func WriteSimulationCSV(w io.Writer, r *simulate.Simulation) error {
	rows := make([][]string, 0, len(r.Classes))
	for _, c := range r.Classes {
		s := c.Simulated
		rows = append(rows, []string{c.Name, strconv.Itoa(c.Pool), c.Counts, strconv.Itoa(s.Requests), strconv.Itoa(s.Completed),
			CSVNumber(s.ThroughputRPS), CSVNumber(c.VsPlan.ExpectedRPS), CSVNumber(s.GoodputRPS),
			strconv.Itoa(s.Shed), strconv.Itoa(s.RateLimited), strconv.Itoa(s.Retries), strconv.Itoa(s.GaveUp),
			CSVNumber(s.QueueWaitP95Ms), csvOptional(s.TTFTP95Ms), csvOptional(c.Predicted.TTFTP95Ms),
			csvOptional(s.E2EP95Ms), csvOptional(c.Predicted.E2EP95Ms), csvOptional(s.TPOTP95Ms), strconv.FormatBool(c.Verdict.Holds)})
	}
	return WriteCSV(w, simulationCSVHeader, rows)
}

// stepCSVHeader are the columns of WriteStepCSV: the two step tables'
// figures in one row per step, with the step's marks as columns.
var stepCSVHeader = []string{"concurrency", "rate_rps", "requests", "ok", "rate_limited", "errors",
	"goodput_rps", "goodput_ci_lo", "goodput_ci_hi", "throughput_rps", "output_tps", "window_s",
	"ttft_p50_ms", "ttft_p90_ms", "ttft_p95_ms", "ttft_p99_ms",
	"tpot_p50_ms", "tpot_p90_ms", "tpot_p95_ms", "tpot_p99_ms",
	"e2e_p50_ms", "e2e_p90_ms", "e2e_p95_ms", "e2e_p99_ms",
	"concurrency_estimated", "refine", "too_short"}

// WriteStepCSV writes a ramp's steps as CSV, one row per step with the
// figures of WriteStepTable. A figure the source did not give (0 in the
// step) and the counts of a source that gave none are empty cells.
func WriteStepCSV(w io.Writer, steps []measure.Step) error {
	given := func(v float64) string {
		if v == 0 {
			return ""
		}
		return CSVNumber(v)
	}
	rows := make([][]string, 0, len(steps))
	for _, s := range steps {
		counts := []string{strconv.Itoa(s.Requests), strconv.Itoa(s.OK), strconv.Itoa(s.RateLimited), strconv.Itoa(s.Errors)}
		if s.CountsUnknown {
			counts = []string{"", "", "", ""}
		}
		lo, hi := "", ""
		if s.GoodputCI != nil {
			lo, hi = CSVNumber(s.GoodputCI.Lo), CSVNumber(s.GoodputCI.Hi)
		}
		conc := ""
		if s.Concurrency > 0 {
			conc = strconv.Itoa(s.Concurrency)
		}
		row := append([]string{conc, given(s.RateRPS)}, counts...)
		row = append(row, CSVNumber(s.GoodputRPS), lo, hi, CSVNumber(s.ThroughputRPS), given(s.OutputTPS), given(s.WallS))
		for _, v := range []float64{s.TTFTP50Ms, s.TTFTP90Ms, s.TTFTP95Ms, s.TTFTP99Ms, s.TPOTP50Ms, s.TPOTP90Ms, s.TPOTP95Ms, s.TPOTP99Ms,
			s.E2EP50Ms, s.E2EP90Ms, s.E2EP95Ms, s.E2EP99Ms} {
			row = append(row, given(v))
		}
		row = append(row, strconv.FormatBool(s.ConcurrencyEstimated), strconv.FormatBool(s.Refine), strconv.FormatBool(s.TooShort))
		rows = append(rows, row)
	}
	return WriteCSV(w, stepCSVHeader, rows)
}
