package importer

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/plannerdev/planner/internal/measure"
)

// Ramp CSVs hold one row per request of a ramp, so every step is
// summarised from its rows.
//
// The probe's own requests.csv (measure.CSVHeader, or the older layout
// without the retry columns) carries every figure docs/probe.md defines;
// its steps are summarised as the probe summarises them: a closed-loop
// step in its steady state (analysis.Summarize), an open-loop step (a row
// with a rate) over its window (analysis.SummarizeOpen). The workshop layout, written by a common pandas ramp
// script, has the columns step (the concurrency), idx, ok (okForms),
// code (HTTP status), ms (end-to-end latency in milliseconds)
// and wall_s (the step's wall time, repeated on each row); it has no TTFT
// and no token counts, so TTFT and TPOT are unknown there.

func looksProbeCSV(header []string) bool { return measure.IsProbeCSVHeader(header) }

func parseProbeCSV(_ string, data []byte) (*part, error) {
	recs, err := measure.ReadCSV(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if len(recs) > maxRows {
		return nil, errTooManyRows()
	}
	if len(recs) == 0 {
		return nil, errors.New("has no request rows")
	}
	for i := range recs {
		if err := checkRow(&recs[i], fmt.Sprintf("line %d", i+2)); err != nil {
			return nil, err
		}
	}
	recs, repeated, err := onceEach(recs, func(i int) request {
		return request{recs[i].Step, recs[i].RateRPS, recs[i].Refine, recs[i].Index}
	}, func(i int) any { return recs[i] }, "a run")
	if err != nil {
		return nil, err
	}
	type key struct {
		c    int
		rate float64
	}
	byStep := measure.GroupRecords(recs, func(r *measure.Record) key { return key{r.Step, r.RateRPS} })
	keys := slices.SortedFunc(maps.Keys(byStep), func(a, b key) int { return cmp.Or(cmp.Compare(a.c, b.c), cmp.Compare(a.rate, b.rate)) })
	p := &part{source: Source{Tool: "planner probe"}, notes: repeated}
	for _, k := range keys {
		if k.c < 1 || k.c > maxConcurrency {
			return nil, fmt.Errorf("step %d is not a concurrency", k.c)
		}
		r := &run{label: fmt.Sprintf("step %d", k.c), concurrency: k.c, rateRPS: k.rate,
			records: byStep[k], recordsComplete: true, recordsTimed: true, probeLoop: "closed"}
		if k.rate > 0 {
			r.label, r.probeLoop = fmt.Sprintf("step %d at %g req/s", k.c, k.rate), "open"
		}
		p.runs = append(p.runs, r)
	}
	return p, nil
}

var workshopColumns = []string{"step", "idx", "ok", "code", "ms", "wall_s"}

func workshopIndex(header []string) map[string]int {
	idx := map[string]int{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		if slices.Contains(workshopColumns, h) {
			if _, dup := idx[h]; !dup {
				idx[h] = i
			}
		}
	}
	return idx
}

// workshopRepeats refuses a header that names one of the layout's
// columns twice: which of the two holds the figure is not known, so
// neither is taken.
func workshopRepeats(header []string) error {
	first := map[string]int{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		if !slices.Contains(workshopColumns, h) {
			continue
		}
		if j, dup := first[h]; dup {
			return fmt.Errorf("the header names the %q column twice, in columns %d and %d: which one holds the figure is not known; keep one", h, j+1, i+1)
		}
		first[h] = i
	}
	return nil
}

func looksWorkshopCSV(header []string) bool {
	return len(workshopIndex(header)) == len(workshopColumns)
}

func parseWorkshopCSV(_ string, data []byte) (*part, error) {
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("is empty")
	}
	if err != nil {
		return nil, err
	}
	width := len(header)
	if err := workshopRepeats(header); err != nil {
		return nil, err
	}
	col := workshopIndex(header)
	for _, c := range workshopColumns {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("has no %q column", c)
		}
	}
	// The rows are read into one slice, sized from the lines, and grouped
	// by step afterwards: a slice per step grown row by row copied every
	// row several times over.
	recs := make([]measure.Record, 0, min(rowsIn(data), maxRows))
	type step struct {
		n     int
		wallS float64
	}
	steps := map[int]*step{}
	walls := make([]float64, 0, cap(recs))
	var uneven []string
	for line := 2; ; line++ {
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(recs) == maxRows {
			return nil, errTooManyRows()
		}
		if len(row) != width {
			return nil, fmt.Errorf("line %d has %d fields where the header has %d (truncated file?)", line, len(row), width)
		}
		rec, wall, err := workshopRow(row, col)
		if err == nil {
			err = checkRecord(&rec)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		st := steps[rec.Step]
		if st == nil {
			st = &step{}
			steps[rec.Step] = st
		}
		if s := strconv.Itoa(rec.Step); st.wallS != 0 && wall != st.wallS && !slices.Contains(uneven, s) {
			uneven = append(uneven, s)
		}
		st.wallS = math.Max(st.wallS, wall)
		st.n++
		recs = append(recs, rec)
		walls = append(walls, wall)
	}
	if len(steps) == 0 {
		return nil, errors.New("has no request rows")
	}
	type row struct {
		rec  measure.Record
		wall float64
	}
	recs, repeated, err := onceEach(recs, func(i int) request {
		return request{step: recs[i].Step, idx: recs[i].Index}
	}, func(i int) any { return row{recs[i], walls[i]} }, "a ramp")
	if err != nil {
		return nil, err
	}
	p := &part{source: Source{Tool: "workshop ramp script"}, notes: repeated}
	p.notes = append(p.notes, "the workshop layout has no TTFT and no token counts: TTFT and TPOT are unknown, so the latency block can hold the knee only; E2E is the ms column")
	if len(uneven) > 0 {
		p.notes = append(p.notes, fmt.Sprintf("wall_s differs between rows of step %s: the largest is used", strings.Join(uneven, ", ")))
	}
	byStep := measure.GroupRecords(recs, func(r *measure.Record) int { return r.Step })
	for _, c := range slices.Sorted(maps.Keys(steps)) {
		p.runs = append(p.runs, &run{
			label: fmt.Sprintf("step %d", c), concurrency: c, wallS: steps[c].wallS,
			records: byStep[c], recordsComplete: true,
		})
	}
	return p, nil
}

// request names one request of a ramp CSV: its step (with an open-loop
// step's rate and a refinement's mark) and its idx, which a run numbers
// from 0 in each step.
type request struct {
	step   int
	rate   float64
	refine bool
	idx    int
}

// onceEach keeps each request of recs (rows in file order, the header on
// line 1) once. A row that repeats an earlier one exactly, as a store
// that wrote a batch twice or a file appended to itself has it, is left
// out, and the note says how many were; a row that names an earlier
// row's request with other figures is two runs in one file, refused with
// both lines. Counted twice, a request would double its step's goodput.
func onceEach(recs []measure.Record, key func(i int) request, content func(i int) any, what string) ([]measure.Record, []string, error) {
	seen := make(map[request]int, len(recs))
	var drop []int
	for i := range recs {
		k := key(i)
		first, dup := seen[k]
		switch {
		case !dup:
			seen[k] = i
		case content(first) == content(i):
			drop = append(drop, i)
		default:
			return nil, nil, fmt.Errorf("line %d: step %d, idx %d is the request of line %d again, with other figures: %s numbers each request of a step once, so the file holds two runs (give each run its own file)", i+2, k.step, k.idx, first+2, what)
		}
	}
	if len(drop) == 0 {
		return recs, nil, nil
	}
	kept := make([]measure.Record, 0, len(recs)-len(drop))
	for i := range recs {
		if len(drop) > 0 && drop[0] == i {
			drop = drop[1:]
			continue
		}
		kept = append(kept, recs[i])
	}
	dropped := len(recs) - len(kept)
	return kept, []string{fmt.Sprintf("%s repeat an earlier row exactly (the same request written twice): each request is counted once", plural(dropped, "row"))}, nil
}

// rowsIn bounds the number of CSV rows in data by its lines, to size the
// slice of records.
func rowsIn(data []byte) int { return bytes.Count(data, []byte{'\n'}) + 1 }

func workshopRow(row []string, col map[string]int) (measure.Record, float64, error) {
	var rec measure.Record
	cell := func(name string) string { return strings.TrimSpace(row[col[name]]) }
	step, err := wholeNumber(cell("step"))
	if err != nil || step < 1 || step > maxConcurrency {
		return rec, 0, fmt.Errorf("step %q is not a concurrency", cell("step"))
	}
	idx, err := wholeNumber(cell("idx"))
	if err != nil || idx < 0 {
		return rec, 0, fmt.Errorf("idx %q is not a row number", cell("idx"))
	}
	ok, err := boolish(cell("ok"))
	if err != nil {
		return rec, 0, err
	}
	code := 0
	if c := cell("code"); c != "" {
		if code, err = wholeNumber(c); err != nil || !httpStatus(code) {
			return rec, 0, fmt.Errorf("code %q is not an HTTP status: one is 100 to 599, with 0 or an empty cell when no answer arrived", c)
		}
	}
	if ok && code != 0 && (code < 200 || code > 299) {
		// The row contradicts itself: counted as a success, its 429 or
		// error would count as none (POST /v1/analyses refuses it too).
		return rec, 0, fmt.Errorf("ok is %s but code is %d: a successful row was answered 2xx, so set ok to 0 or the code to 2xx", cell("ok"), code)
	}
	var ms float64
	if m := cell("ms"); m != "" {
		if ms, err = strconv.ParseFloat(m, 64); err != nil || !(ms >= 0) || math.IsInf(ms, 0) {
			return rec, 0, fmt.Errorf("ms %q is not a latency", m)
		}
	} else if ok {
		return rec, 0, errors.New("a successful row has no ms")
	}
	wall, err := strconv.ParseFloat(cell("wall_s"), 64)
	if err != nil || !(wall > 0) || math.IsInf(wall, 0) {
		return rec, 0, fmt.Errorf("wall_s %q is not a wall time", cell("wall_s"))
	}
	rec = measure.Record{Step: step, Index: idx, OK: ok, Status: code, E2EMs: ms, Attempts: 1}
	switch {
	case ok:
	case code == 200:
		rec.ErrorClass = measure.ErrBadStream
	default:
		rec.ErrorClass = classForStatus(code)
	}
	return rec, wall, nil
}

// wholeNumber reads an integer, also as pandas writes one in a float column
// ("8.0").
func wholeNumber(s string) (int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1e12 {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	return int(f), nil
}

// okForms are the forms of the workshop layout's ok column, each in any
// case: what boolish reads and what its refusal lists. An empty cell is a
// failure too.
var okForms = struct{ success, failure []string }{
	success: []string{"1", "1.0", "true", "t", "yes"},
	failure: []string{"0", "0.0", "false", "f", "no"},
}

// boolish reads the ok column: one of okForms, or an empty cell (false).
func boolish(s string) (bool, error) {
	for _, t := range okForms.success {
		if strings.EqualFold(s, t) {
			return true, nil
		}
	}
	if s == "" {
		return false, nil
	}
	for _, f := range okForms.failure {
		if strings.EqualFold(s, f) {
			return false, nil
		}
	}
	return false, fmt.Errorf("ok %q is none of %s (a success) or %s or an empty cell (a failure), in any case",
		s, strings.Join(okForms.success, ", "), strings.Join(okForms.failure, ", "))
}
