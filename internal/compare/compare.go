// Package compare puts measured runs side by side: the runs of one ladder
// on several models, or the records of one endpoint over time (shared
// capacity varies with the time of day). Each run gives its knee (and
// knee_refined), its TTFT and E2E p95 and its goodput at the knee, its
// 429 answers and the model its answers named, and the drift of each
// figure against a baseline run (docs/probe.md, "Comparing runs"). It
// reads only the measurements (measure.Result); where the runs come from
// (probe output directories, stored probes, imported files) is its
// callers' business.
package compare

import (
	"errors"
	"fmt"
	"time"

	"github.com/plannerdev/planner/internal/measure"
)

// MaxRuns bounds the runs of one comparison.
const MaxRuns = 16

// Run is one measured run to compare.
type Run struct {
	// Name names the run in the comparison: a probe id, a directory, a
	// file. Names are unique within a comparison.
	Name string
	// Endpoint is the base URL measured and Model the model asked for;
	// "" when the source does not say.
	Endpoint, Model string
	// Date is when the run started; zero when the source does not say.
	Date   time.Time
	Result measure.Result
}

// Comparison is runs side by side, in the order given, each with its drift
// against the baseline.
type Comparison struct {
	Baseline string `json:"baseline" doc:"The name of the run the others are compared with."`
	Runs     []Row  `json:"runs"`
}

// Row is one run of a comparison.
type Row struct {
	Name     string     `json:"name" doc:"The run: a probe id, a directory, a file."`
	Endpoint string     `json:"endpoint,omitempty"`
	Model    string     `json:"model,omitempty" doc:"The model asked for."`
	Date     *time.Time `json:"date,omitempty" doc:"When the run started; absent when its source does not say."`
	// Served is what the run's answers named as their model; nil when
	// its source does not say.
	Served *measure.Served `json:"served,omitempty"`
	// Knee and KneeRefined are the run's, as its result gives them.
	Knee           *int `json:"knee" doc:"The knee concurrency; null when the run found none."`
	KneeLowerBound bool `json:"knee_lower_bound,omitempty" doc:"The knee is a lower bound: the run never reached it (knee ≥ knee)."`
	KneeRefined    *int `json:"knee_refined,omitempty"`
	KneeResolution *int `json:"knee_refined_resolution,omitempty"`
	// AtKnee holds the figures of the step at the knee; nil without one.
	AtKnee *AtKnee `json:"at_knee" doc:"The step at the knee; null without a knee."`
	// RateLimited and Answers are the run's 429 answers and all its
	// answers (retries and warm-up included); Answers is 0 when the
	// source gave no counts.
	RateLimited  int  `json:"rate_limited" doc:"429 answers over the run, retried ones and warm-up included."`
	Answers      int  `json:"answers" doc:"HTTP answers over the run, retries and warm-up included; 0 when the source gave no counts."`
	QuotaLimited bool `json:"quota_limited"`
	// Drift is the run against the baseline; nil for the baseline.
	Drift *Drift `json:"drift" doc:"The change against the baseline, in percent of the baseline's figure; null for the baseline itself."`
}

// AtKnee is what a run measured at its knee.
type AtKnee struct {
	_          struct{} `nullable:"true"`
	TTFTP95Ms  float64  `json:"ttft_p95_ms,omitempty" doc:"Absent where the run did not measure it (the workshop layout has no TTFT)."`
	E2EP95Ms   float64  `json:"e2e_p95_ms,omitempty" doc:"Absent where the run did not measure it."`
	GoodputRPS float64  `json:"goodput_rps"`
}

// Drift is a run's change against the baseline, each figure in percent
// of the baseline's: 100 · (run − baseline) / baseline. A figure is null
// when either run lacks it or the baseline's is 0, and the knee's when
// either knee is a lower bound.
type Drift struct {
	_          struct{} `nullable:"true"`
	KneePct    *float64 `json:"knee_pct" doc:"Null when either run lacks a knee or its knee is a lower bound (knee_lower_bound: the run never reached it)."`
	TTFTP95Pct *float64 `json:"ttft_p95_pct"`
	E2EP95Pct  *float64 `json:"e2e_p95_pct"`
	GoodputPct *float64 `json:"goodput_pct"`
}

// Errors of New.
var (
	ErrNoRuns      = errors.New("no runs to compare")
	ErrTooManyRuns = fmt.Errorf("at most %d runs are compared at once", MaxRuns)
)

// New compares runs against the one named baseline ("" selects the
// first). Names must be unique, and the baseline one of them.
func New(runs []Run, baseline string) (Comparison, error) {
	switch {
	case len(runs) == 0:
		return Comparison{}, ErrNoRuns
	case len(runs) > MaxRuns:
		return Comparison{}, ErrTooManyRuns
	}
	if baseline == "" {
		baseline = runs[0].Name
	}
	seen := map[string]bool{}
	base := -1
	for i, r := range runs {
		if seen[r.Name] {
			return Comparison{}, fmt.Errorf("run %q is given twice", r.Name)
		}
		seen[r.Name] = true
		if r.Name == baseline {
			base = i
		}
	}
	if base < 0 {
		return Comparison{}, fmt.Errorf("the baseline %q is none of the runs", baseline)
	}
	rows := make([]Row, len(runs))
	for i, r := range runs {
		rows[i] = row(r)
	}
	for i := range rows {
		if i != base {
			rows[i].Drift = drift(rows[base], rows[i])
		}
	}
	return Comparison{Baseline: baseline, Runs: rows}, nil
}

// row is a run's figures.
func row(r Run) Row {
	res := r.Result
	out := Row{
		Name: r.Name, Endpoint: r.Endpoint, Model: r.Model, Served: res.Served,
		Knee: res.Knee, KneeLowerBound: res.KneeLowerBound && res.Knee != nil, KneeRefined: res.KneeRefined, KneeResolution: res.KneeResolution, QuotaLimited: res.QuotaLimited,
	}
	if !r.Date.IsZero() {
		d := r.Date.UTC()
		out.Date = &d
	}
	if s, ok := res.KneeStep(); ok {
		out.AtKnee = &AtKnee{TTFTP95Ms: s.TTFTP95Ms, E2EP95Ms: s.E2EP95Ms, GoodputRPS: s.GoodputRPS}
	}
	for _, s := range res.Steps {
		out.RateLimited += s.RateLimited
		out.Answers += s.Answers
	}
	return out
}

// drift is run against base. A knee that is a lower bound (the run
// never reached it) has no drift: the knee it bounds may be the other
// run's.
func drift(base, run Row) *Drift {
	d := &Drift{}
	if base.Knee != nil && run.Knee != nil && !base.KneeLowerBound && !run.KneeLowerBound {
		d.KneePct = pct(float64(*base.Knee), float64(*run.Knee))
	}
	if b, r := base.AtKnee, run.AtKnee; b != nil && r != nil {
		d.TTFTP95Pct, d.E2EP95Pct, d.GoodputPct = pct(b.TTFTP95Ms, r.TTFTP95Ms), pct(b.E2EP95Ms, r.E2EP95Ms), pct(b.GoodputRPS, r.GoodputRPS)
	}
	return d
}

// pct is 100 · (v − base) / base; nil when base or v is not positive (a
// figure the source did not give).
func pct(base, v float64) *float64 {
	if !(base > 0) || !(v > 0) {
		return nil
	}
	p := 100 * (v - base) / base
	return &p
}
