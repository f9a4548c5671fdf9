package compare

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/testutil"
)

func ptr[T any](v T) *T { return &v }

// morning and evening are two records of one endpoint: the evening's knee
// is half the morning's, its p95s a quarter longer, its goodput a quarter
// lower.
func morning() Run {
	return Run{Name: "morning", Endpoint: "http://127.0.0.1:8000/v1", Model: "gpt-4o", Date: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC),
		Result: measure.Result{
			Knee: ptr(8), KneeRefined: ptr(6), KneeResolution: ptr(1),
			Served: &measure.Served{Asked: "gpt-4o", Check: measure.ServedMatch, Models: []measure.ServedCount{{Name: "gpt-4o-2024-08-06", Answers: 230, Matches: true}}},
			Steps: []measure.Step{
				{Concurrency: 4, Answers: 50, TTFTP95Ms: 300, E2EP95Ms: 1500, GoodputRPS: 2.5},
				{Concurrency: 8, Answers: 60, RateLimited: 2, TTFTP95Ms: 400, E2EP95Ms: 2000, GoodputRPS: 4},
				{Concurrency: 6, Refine: true, Answers: 50, TTFTP95Ms: 350, E2EP95Ms: 1800, GoodputRPS: 3.9},
				{Concurrency: 16, Answers: 70, RateLimited: 5, TTFTP95Ms: 900, E2EP95Ms: 4000, GoodputRPS: 4.1},
			},
		}}
}

func evening() Run {
	return Run{Name: "evening", Model: "gpt-4o", Date: time.Date(2026, 3, 2, 19, 0, 0, 0, time.FixedZone("CET", 3600)),
		Result: measure.Result{
			Knee: ptr(4), QuotaLimited: true,
			Steps: []measure.Step{
				{Concurrency: 4, Answers: 48, RateLimited: 6, TTFTP95Ms: 500, E2EP95Ms: 2500, GoodputRPS: 3},
				{Concurrency: 8, Answers: 55, RateLimited: 20, TTFTP95Ms: 800, E2EP95Ms: 3000, GoodputRPS: 3.1},
			},
		}}
}

// TestTwoRunsSideBySide checks a comparison by hand: the evening against
// the morning, knee (4 − 8)/8 = −50 %, TTFT p95 (500 − 400)/400 = +25 %,
// E2E p95 (2500 − 2000)/2000 = +25 %, goodput (3 − 4)/4 = −25 %; the 429s
// are summed over the steps, 2 + 5 = 7 of 230 and 6 + 20 = 26 of 103.
func TestTwoRunsSideBySide(t *testing.T) {
	c, err := New([]Run{morning(), evening()}, "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Baseline != "morning" || len(c.Runs) != 2 {
		t.Fatalf("%+v", c)
	}
	m, e := c.Runs[0], c.Runs[1]
	if m.Name != "morning" || *m.Knee != 8 || *m.KneeRefined != 6 || *m.KneeResolution != 1 || m.Drift != nil ||
		*m.AtKnee != (AtKnee{TTFTP95Ms: 400, E2EP95Ms: 2000, GoodputRPS: 4}) || m.RateLimited != 7 || m.Answers != 230 ||
		m.Served.Names() != "gpt-4o-2024-08-06" || !m.Date.Equal(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("morning: %+v", m)
	}
	if e.Name != "evening" || *e.Knee != 4 || e.KneeRefined != nil || e.RateLimited != 26 || e.Answers != 103 || !e.QuotaLimited ||
		e.Served != nil || e.Date.Location() != time.UTC || e.Date.Hour() != 18 {
		t.Errorf("evening: %+v", e)
	}
	d := e.Drift
	if d == nil || *d.KneePct != -50 || *d.TTFTP95Pct != 25 || *d.E2EP95Pct != 25 || *d.GoodputPct != -25 {
		t.Fatalf("drift %+v", d)
	}

	// Against the evening, the morning's knee is +100 % and its goodput
	// (4 − 3)/3 = +33.3 %.
	c, err = New([]Run{morning(), evening()}, "evening")
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Runs[0].Drift; *d.KneePct != 100 || *d.GoodputPct < 33.333 || *d.GoodputPct > 33.334 || c.Runs[1].Drift != nil {
		t.Errorf("against the evening: %+v", d)
	}
}

// TestDriftOfMissingFigures: a run without a knee has no figures at the
// knee, and every drift that needs one is null, never NaN or Inf.
func TestDriftOfMissingFigures(t *testing.T) {
	none := Run{Name: "none", Result: measure.Result{Steps: []measure.Step{{Concurrency: 1, GoodputRPS: 1}}}}
	zero := morning()
	zero.Name = "zero"
	zero.Result.Steps[1].TTFTP95Ms = 0 // a source without TTFT
	c, err := New([]Run{zero, none, morning()}, "zero")
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Runs[1]; r.AtKnee != nil || r.Knee != nil || *r.Drift != (Drift{}) {
		t.Errorf("no knee: %+v %+v", r, r.Drift)
	}
	if d := c.Runs[2].Drift; d.TTFTP95Pct != nil || *d.KneePct != 0 || *d.E2EP95Pct != 0 {
		t.Errorf("against a baseline without TTFT: %+v", d)
	}
}

func TestNewRefuses(t *testing.T) {
	many := make([]Run, MaxRuns+1)
	for i := range many {
		many[i].Name = strings.Repeat("r", i+1)
	}
	for _, c := range []struct {
		runs     []Run
		baseline string
		want     string
	}{
		{nil, "", ErrNoRuns.Error()},
		{many, "", ErrTooManyRuns.Error()},
		{[]Run{morning(), morning()}, "", `run "morning" is given twice`},
		{[]Run{morning(), evening()}, "noon", `the baseline "noon" is none of the runs`},
	} {
		_, err := New(c.runs, c.baseline)
		if err == nil || err.Error() != c.want {
			t.Errorf("got %v, want %s", err, c.want)
		}
	}
	if _, err := New(nil, ""); !errors.Is(err, ErrNoRuns) {
		t.Error(err)
	}
}

// TestComparisonCarriesEveryField: the document planner compare writes and
// the API serves keeps every field.
func TestComparisonCarriesEveryField(t *testing.T) {
	testutil.Carried(t, testutil.JSONRoundTrip[Comparison])
}

// TestLowerBoundKneeHasNoDrift: a run that never reached its knee (knee
// ≥ 4, a run stopped by its budget or Ctrl-C) has no knee to drift from
// or to: its knee drift is null, against a baseline whose knee is 8 and
// as the baseline of that run, rather than −50 % and +100 % for a knee
// that may be the same. Its figures at the step it names still compare.
func TestLowerBoundKneeHasNoDrift(t *testing.T) {
	stopped := evening()
	stopped.Name = "stopped"
	stopped.Result.KneeLowerBound = true
	for _, baseline := range []string{"morning", "stopped"} {
		c, err := New([]Run{morning(), stopped}, baseline)
		if err != nil {
			t.Fatal(err)
		}
		other := c.Runs[1]
		if baseline == "stopped" {
			other = c.Runs[0]
		}
		if d := other.Drift; d == nil || d.KneePct != nil || d.TTFTP95Pct == nil {
			t.Errorf("baseline %s: drift %+v, want no knee drift and the p95s' drift", baseline, d)
		}
	}
}
