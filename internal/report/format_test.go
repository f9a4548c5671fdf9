package report

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/plan"
)

// TestFormatNames: Markdown goes by markdown and md wherever it is
// taken, and the other formats by their one name.
func TestFormatNames(t *testing.T) {
	if got, want := FormatNames(FormatHTML, FormatMarkdown), []string{"html", "markdown", "md"}; !slices.Equal(got, want) {
		t.Errorf("FormatNames = %v, want %v", got, want)
	}
	for _, tc := range []struct{ name, want string }{{"md", FormatMarkdown}, {"markdown", FormatMarkdown}, {"json", FormatJSON}} {
		if got, err := ParseFormat(tc.name, PlanFormats); err != nil || got != tc.want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	_, err := ParseFormat("md", []string{FormatJSON, FormatYAML})
	if err == nil || !strings.Contains(err.Error(), "json, yaml") {
		t.Errorf("md where Markdown is not a format: %v", err)
	}
	_, err = ParseFormat("pdf", PlanFormats)
	if err == nil || !strings.Contains(err.Error(), "table, json, yaml, markdown (or md), csv") || !strings.Contains(err.Error(), `"pdf"`) {
		t.Errorf("an unknown format: %v", err)
	}
}

// TestMissWords: a what-if cell's misses read by the names of their
// figures, a share as what it came to against its bound, the others with
// their sign, and one with nothing completed as that rather than as a
// percentage.
func TestMissWords(t *testing.T) {
	over, under, ttft, lost, hours := 9889.0, -12.5, 2200.0, 0.9989, 5.25
	over10 := 10.0
	got := missWords([]plan.Miss{{Metric: "ttft_p95_ms"}, {Metric: "lost_share", Value: &lost, Bound: 0.01, OverPct: &over},
		{Metric: "batch_hours", Value: &hours, Bound: 6, OverPct: &under}, {Metric: "e2e_p95_ms", Value: &ttft, Bound: 2000, OverPct: &over10}})
	if want := "TTFT p95 (nothing completed), lost 99.89 % (at most 1 %), batch time -12.5 %, E2E p95 +10 %"; got != want {
		t.Errorf("missWords = %q, want %q", got, want)
	}
	if got := missWords(nil); got != "holds" {
		t.Errorf("no misses: %q, want holds", got)
	}
}

// TestEveryMissHasALabel: each figure a check may name (plan.Miss's
// enum) has a name for people.
func TestEveryMissHasALabel(t *testing.T) {
	f, _ := reflect.TypeFor[plan.Miss]().FieldByName("Metric")
	metrics := strings.Split(f.Tag.Get("enum"), ",")
	if len(metrics) < 10 {
		t.Fatalf("plan.Miss.Metric has the enum %q", f.Tag.Get("enum"))
	}
	for _, m := range metrics {
		if _, ok := missLabels[m]; !ok {
			t.Errorf("%s has no label", m)
		}
	}
}

// TestFmtNumSmall: a number too small for two decimals keeps two
// significant digits instead of reading as 0 or -0.
func TestFmtNumSmall(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.001: "0.001", -0.001: "-0.001", 1e-5: "1e-05", 0.0042: "0.0042", 0.25: "0.25", 1234.5: "1,234.5"} {
		if got := fmtNum(v); got != want {
			t.Errorf("fmtNum(%v) = %q, want %q", v, got, want)
		}
	}
}
