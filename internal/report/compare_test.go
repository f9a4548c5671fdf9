package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/compare"
	"github.com/plannerdev/planner/internal/measure"
)

// twoRuns is gpt-4o in the morning (knee 8: TTFT p95 400 ms, E2E p95
// 2,000 ms, goodput 4 req/s) against the evening, whose answers came from
// gpt-4o-mini (knee 4: 500 ms, 2,500 ms, 3 req/s).
func twoRuns(t *testing.T) compare.Comparison {
	t.Helper()
	k8, k6, r1, k4 := 8, 6, 1, 4
	c, err := compare.New([]compare.Run{
		{Name: "morning", Model: "gpt-4o", Date: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC), Result: measure.Result{
			Knee: &k8, KneeRefined: &k6, KneeResolution: &r1,
			Served: &measure.Served{Asked: "gpt-4o", Check: measure.ServedMatch, Models: []measure.ServedCount{{Name: "gpt-4o-2024-08-06", Answers: 110, Matches: true}}},
			Steps:  []measure.Step{{Concurrency: 8, Answers: 110, RateLimited: 2, TTFTP95Ms: 400, E2EP95Ms: 2000, GoodputRPS: 4}},
		}},
		{Name: "evening", Model: "gpt-4o", Date: time.Date(2026, 3, 2, 19, 0, 0, 0, time.UTC), Result: measure.Result{
			Knee:   &k4,
			Served: measure.SummarizeServed("gpt-4o", false, []measure.Record{{ServedModel: "gpt-4o-mini"}}),
			Steps:  []measure.Step{{Concurrency: 4, Answers: 50, RateLimited: 9, TTFTP95Ms: 500, E2EP95Ms: 2500, GoodputRPS: 3}},
		}},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestComparisonTable: both runs side by side, with the evening's drift
// against the morning worked by hand: knee (4 − 8)/8 = −50 %, TTFT and
// E2E p95 +25 %, goodput (3 − 4)/4 = −25 %.
func TestComparisonTable(t *testing.T) {
	var b bytes.Buffer
	if err := WriteComparison(&b, twoRuns(t), FormatTable); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	fields := func(i int) []string { return strings.Fields(lines[i]) }
	for i, want := range []string{
		"run model served date knee refined ttft_p95 e2e_p95 goodput 429 quota",
		"morning gpt-4o gpt-4o-2024-08-06 2026-03-02 09:00 UTC 8 6 (res. 1) 400.0 2000.0 4.000 2 of 110 no",
		"evening gpt-4o gpt-4o-mini ! 2026-03-02 19:00 UTC 4 - 500.0 2500.0 3.000 9 of 50 no",
		"",
		"run knee_drift ttft_drift e2e_drift goodput_drift",
		"morning base base base base",
		"evening -50.0 % +25.0 % +25.0 % -25.0 %",
	} {
		if got := strings.Join(fields(i), " "); got != want {
			t.Errorf("line %d: %q, want %q", i, got, want)
		}
	}
	for _, want := range []string{"drift in % of the baseline, morning", "! the answers named another model than the one asked",
		"evening: WARNING: the answers named another model than the one asked (gpt-4o): gpt-4o-mini (1 of 1 answers)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestComparisonMarkdownAndCSV(t *testing.T) {
	var md bytes.Buffer
	if err := WriteComparison(&md, twoRuns(t), FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# Runs compared with morning",
		"| morning | gpt-4o | gpt-4o-2024-08-06 | 2026-03-02 09:00 UTC | 8 | 6 (res. 1) | 400.0 | 2000.0 | 4.000 | 2 of 110 | no | base | base | base | base |",
		"| evening | gpt-4o | **gpt-4o-mini !** | 2026-03-02 19:00 UTC | 4 | - | 500.0 | 2500.0 | 3.000 | 9 of 50 | no | -50.0 % | +25.0 % | +25.0 % | -25.0 % |",
		"- evening: WARNING: the answers named another model",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md.String())
		}
	}
	var b bytes.Buffer
	if err := WriteComparison(&b, twoRuns(t), FormatCSV); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("%v %q", err, rows)
	}
	if got := strings.Join(rows[2], ","); got != "evening,,gpt-4o,gpt-4o-mini,switch,2026-03-02T19:00:00Z,4,,,500,2500,3,9,50,false,-50,25,25,-25,false" {
		t.Errorf("evening: %s", got)
	}
	if got := strings.Join(rows[1][15:19], ","); got != ",,," {
		t.Errorf("the baseline's drift: %s", got)
	}
	var js bytes.Buffer
	if err := WriteComparison(&js, twoRuns(t), FormatJSON); err != nil {
		t.Fatal(err)
	}
	var back compare.Comparison
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Baseline != "morning" || *back.Runs[1].Drift.KneePct != -50 {
		t.Errorf("%v %+v", err, back)
	}
}

func TestComparisonMarksALowerBoundKnee(t *testing.T) {
	four := 4
	if got := compareKnee(compare.Row{Knee: &four, KneeLowerBound: true}); got != "≥ 4" {
		t.Errorf("a lower-bound knee reads %q", got)
	}
	if got := compareKnee(compare.Row{Knee: &four}); got != "4" {
		t.Errorf("a measured knee reads %q", got)
	}
}

// TestComparisonOfARunWithoutTTFT: a run whose rows carry no TTFT (the
// workshop layout) has an empty TTFT cell and no ttft_p95_ms at its knee,
// not a measured 0 ms.
func TestComparisonOfARunWithoutTTFT(t *testing.T) {
	k2 := 2
	c, err := compare.New([]compare.Run{
		{Name: "workshop", Result: measure.Result{Knee: &k2, Steps: []measure.Step{{Concurrency: 2, Answers: 20, E2EP95Ms: 900, GoodputRPS: 2}}}},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteComparison(&b, c, FormatCSV); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != 2 || rows[1][9] != "" || rows[1][10] != "900" {
		t.Fatalf("%v %q: want an empty TTFT cell and E2E 900", err, rows)
	}
	var js bytes.Buffer
	if err := WriteComparison(&js, c, FormatJSON); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(js.String(), `"ttft_p95_ms"`) || !strings.Contains(js.String(), `"e2e_p95_ms": 900`) {
		t.Errorf("JSON %s: want no ttft_p95_ms at the knee", js.String())
	}
}
