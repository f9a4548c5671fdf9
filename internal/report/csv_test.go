package report

import (
	"bytes"
	"encoding/csv"
	"slices"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
)

// TestParseFormat: md is markdown wherever markdown is allowed, and
// nowhere else; the message names each format with its aliases.
func TestParseFormat(t *testing.T) {
	allowed := []string{FormatTable, FormatMarkdown, FormatCSV}
	for name, want := range map[string]string{"md": FormatMarkdown, "markdown": FormatMarkdown, "csv": FormatCSV, "table": FormatTable} {
		if got, err := ParseFormat(name, allowed); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	_, err := ParseFormat("md", []string{FormatJSON})
	if err == nil || err.Error() != `the output format must be one of json, got "md"` {
		t.Errorf("md where markdown is not allowed: %v", err)
	}
	if _, err := ParseFormat("pdf", allowed); err == nil || !strings.Contains(err.Error(), "table, markdown (or md), csv") {
		t.Errorf("pdf: %v", err)
	}
	if got := DescribeFormats([]string{FormatMarkdown, FormatHTML}); got != "markdown (or md), html" {
		t.Errorf("DescribeFormats = %q", got)
	}
}

// TestPlanCSVSaysWhetherItFits: the plan's CSV has the table's FITS and
// CHECK beside feasible, so that a class feasible by the queueing model
// whose own simulation breaks reads as not fitting there too, as the
// table and the JSON (fits: false) say.
func TestPlanCSVSaysWhetherItFits(t *testing.T) {
	no, yes := false, true
	over := 125.1
	v := 2251.4
	p := &plan.Plan{Classes: []plan.ClassPlan{
		{Name: "a", Mode: "interactive", Quota: "q", Endpoint: "default", Pool: 11, Feasible: true, Fits: &no,
			Check: &plan.ClassCheck{Misses: []plan.Miss{{Metric: "ttft_p95_ms", Value: &v, Bound: 1000, OverPct: &over}}}},
		{Name: "b", Mode: "semi", Quota: "q", Endpoint: "default", Pool: 1, Feasible: true, Fits: &yes, Check: &plan.ClassCheck{Holds: true}},
	}}
	var b bytes.Buffer
	if err := WritePlan(&b, p, FormatCSV); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(recs) != 3 {
		t.Fatalf("%v: %q", err, recs)
	}
	col := func(name string) int { return slices.Index(recs[0], name) }
	if col("fits") < 0 || col("check") < 0 {
		t.Fatalf("header %q: want fits and check columns", recs[0])
	}
	if got := []string{recs[1][col("fits")], recs[1][col("check")], recs[2][col("fits")], recs[2][col("check")]}; !slices.Equal(got, []string{"false", "TTFT p95 +125.1 %", "true", "holds"}) {
		t.Errorf("fits and check %q, want false, what breaks, true, holds", got)
	}
}

// TestCSVCells: absent figures are empty cells, numbers unrounded, and a
// cell with a comma or a quote is quoted so that it reads back whole.
func TestCSVCells(t *testing.T) {
	ttft := 915.125
	p := &plan.Plan{Classes: []plan.ClassPlan{
		{Name: "a,b", Mode: "interactive", Quota: `q"1`, Endpoint: "default", Pool: 0, BindingConstraint: "tpm", Predicted: plan.Predicted{TTFTP95Ms: &ttft}},
	}}
	var b bytes.Buffer
	if err := WritePlan(&b, p, FormatCSV); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(recs) != 2 {
		t.Fatalf("%v: %q", err, recs)
	}
	want := []string{"a,b", "interactive", `q"1`, "default", "0", "tpm", "", "false", "", "", "915.125", "", "0", "", "requests"}
	if !slices.Equal(recs[1], want) {
		t.Errorf("row %q, want %q", recs[1], want)
	}

	g := &plan.WhatIf{
		Variations: []plan.Variation{{Path: "/classes/0/demand", Values: []any{map[string]any{"rps": 2.0}}}},
		Cells:      []plan.Cell{{Values: []any{map[string]any{"rps": 2.0}}, Errors: []scenario.FieldError{{Path: "classes[0].x", Message: "bad"}, {Path: "y", Message: "worse"}}}},
	}
	b.Reset()
	if err := WriteWhatIf(&b, g, FormatCSV); err != nil {
		t.Fatal(err)
	}
	recs, err = csv.NewReader(&b).ReadAll()
	if err != nil || !slices.Equal(recs[1], []string{`{"rps":2}`, "", "", "", "", "", "classes[0].x: bad; y: worse"}) {
		t.Errorf("%v: %q", err, recs)
	}

	b.Reset()
	if err := WriteStepCSV(&b, []measure.Step{{Concurrency: 4, CountsUnknown: true, GoodputRPS: 1.5, GoodputCI: &measure.Interval{Lo: 1, Hi: 2}, E2EP95Ms: 1200}}); err != nil {
		t.Fatal(err)
	}
	recs, err = csv.NewReader(&b).ReadAll()
	if err != nil || len(recs) != 2 || len(recs[1]) != len(stepCSVHeader) {
		t.Fatalf("%v: %q", err, recs)
	}
	row := map[string]string{}
	for i, h := range recs[0] {
		row[h] = recs[1][i]
	}
	if row["concurrency"] != "4" || row["requests"] != "" || row["goodput_ci_lo"] != "1" || row["goodput_ci_hi"] != "2" || row["e2e_p95_ms"] != "1200" || row["ttft_p95_ms"] != "" {
		t.Errorf("step row %v", row)
	}
}
