package analysis

import (
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/plannerdev/planner/internal/measure"
)

// steps builds a ramp from (concurrency, goodput, e2e p95) triples; each
// step has 100 measured requests and 100 answers.
func steps(rows ...[3]float64) []measure.Step {
	out := make([]measure.Step, len(rows))
	for i, r := range rows {
		out[i] = measure.Step{Concurrency: int(r[0]), Requests: 100, OK: 100, Answers: 100, GoodputRPS: r[1], ThroughputRPS: r[1], E2EP95Ms: r[2]}
	}
	return out
}

func TestKneeRule(t *testing.T) {
	opts := Options{DeadlineMs: 10000}
	tests := []struct {
		name     string
		steps    []measure.Step
		knee     *int
		collapse *int
	}{
		{
			name:  "saturates at 8",
			steps: steps([3]float64{1, 0.8, 1200}, [3]float64{2, 1.6, 1210}, [3]float64{4, 3.2, 1230}, [3]float64{8, 6.3, 1260}, [3]float64{16, 6.4, 2500}, [3]float64{32, 6.4, 5000}),
			knee:  ptr(8),
		},
		{
			name: "noise after the knee does not move it",
			// 16 gains under 10 %, 32 gains again: the knee stays at 8.
			steps:    steps([3]float64{1, 1, 1000}, [3]float64{2, 2, 1000}, [3]float64{4, 4, 1000}, [3]float64{8, 7.5, 1100}, [3]float64{16, 7.9, 2000}, [3]float64{32, 9.5, 3000}),
			knee:     ptr(8),
			collapse: nil,
		},
		{
			name:  "p95 breaks the rule before goodput does",
			steps: steps([3]float64{1, 1, 2000}, [3]float64{2, 2, 4000}, [3]float64{4, 4, 6500}, [3]float64{8, 8, 9000}),
			knee:  ptr(2), // 6,500 ms is not under 0.6 × 10,000 ms
		},
		{
			name:  "first step fails: no knee",
			steps: steps([3]float64{1, 1, 7000}, [3]float64{2, 2, 7100}),
			knee:  nil,
		},
		{
			name: "flat from the start: the knee is the first step",
			// goodput 5.1 to 4.7 at 4 is a fall of 7.8 %, beyond the 5 % tolerance.
			steps:    steps([3]float64{1, 5, 1000}, [3]float64{2, 5.1, 1900}, [3]float64{4, 4.7, 3900}),
			knee:     ptr(1),
			collapse: ptr(4),
		},
		{
			name: "a dip within the tolerance is no collapse",
			// 5.1 to 5.0 is 2 % down: within collapse_tolerance_pct.
			steps: steps([3]float64{1, 5, 1000}, [3]float64{2, 5.1, 1900}, [3]float64{4, 5.0, 3900}),
			knee:  ptr(1),
		},
		{
			name:     "collapse after the knee",
			steps:    steps([3]float64{4, 4, 1000}, [3]float64{8, 8, 1100}, [3]float64{16, 8.2, 2000}, [3]float64{32, 5, 4000}),
			knee:     ptr(8),
			collapse: ptr(32),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Analyze(tt.steps, opts)
			if !equalPtr(res.Knee, tt.knee) {
				t.Errorf("knee = %v, want %v", deref(res.Knee), deref(tt.knee))
			}
			if !equalPtr(res.Collapse, tt.collapse) {
				t.Errorf("collapse = %v, want %v", deref(res.Collapse), deref(tt.collapse))
			}
		})
	}
}

// TestCollapseNeedsMoreThanNoise: a fall beyond the tolerance whose
// intervals overlap is noise, not a collapse; the same fall with tight
// intervals is one.
func TestCollapseNeedsMoreThanNoise(t *testing.T) {
	a := measure.Step{Concurrency: 16, GoodputRPS: 10, GoodputCI: &measure.Interval{Lo: 8.5, Hi: 11.5}}
	b := measure.Step{Concurrency: 32, GoodputRPS: 9.3, GoodputCI: &measure.Interval{Lo: 8.0, Hi: 10.6}}
	if Fell(a, b, 5) {
		t.Error("a 7 % fall within overlapping intervals counted as a fall")
	}
	a.GoodputCI, b.GoodputCI = &measure.Interval{Lo: 9.9, Hi: 10.1}, &measure.Interval{Lo: 9.2, Hi: 9.4}
	if !Fell(a, b, 5) {
		t.Error("a 7 % fall with intervals apart did not count")
	}
	if Fell(a, b, 10) {
		t.Error("a 7 % fall counted against a 10 % tolerance")
	}
}

// TestTooShortStepsAreNotJudged: a step cut short (3 requests) gives no
// knee, however well it did.
func TestTooShortStepsAreNotJudged(t *testing.T) {
	short := measure.Step{Concurrency: 1, Requests: 3, OK: 3, Answers: 3, GoodputRPS: 5, ThroughputRPS: 5, TooShort: true}
	res := Analyze([]measure.Step{short}, Options{})
	if res.Knee != nil || !strings.Contains(strings.Join(res.Notes, " "), "too short") {
		t.Errorf("knee %v notes %v: want no knee and a note", deref(res.Knee), res.Notes)
	}
	ss := steps([3]float64{1, 1, 100}, [3]float64{2, 2, 100}, [3]float64{4, 2.05, 100})
	ss[2].TooShort = true // would fail the gain rule; it is not judged
	if res := Analyze(ss, Options{}); res.Knee == nil || *res.Knee != 2 || res.FirstFailing != nil {
		t.Errorf("knee %v first failing %v, want knee 2 with no failing step", deref(res.Knee), deref(res.FirstFailing))
	}
}

func TestAmbiguousGain(t *testing.T) {
	ss := steps([3]float64{1, 1, 100}, [3]float64{2, 1.12, 100})
	ss[0].GoodputCI = &measure.Interval{Lo: 0.97, Hi: 1.03}
	ss[1].GoodputCI = &measure.Interval{Lo: 1.05, Hi: 1.19}
	// The gain is 12 %; the intervals allow 1.9 % to 22.7 %, around the 10 % rule.
	if res := Analyze(ss, Options{}); res.Ambiguous == nil || *res.Ambiguous != 2 {
		t.Errorf("ambiguous = %v, want 2", deref(res.Ambiguous))
	}
	ss[1].GoodputCI = &measure.Interval{Lo: 1.115, Hi: 1.125}
	ss[0].GoodputCI = &measure.Interval{Lo: 0.999, Hi: 1.001}
	if res := Analyze(ss, Options{}); res.Ambiguous != nil {
		t.Errorf("ambiguous = %v with tight intervals", deref(res.Ambiguous))
	}
}

// TestKneeAtTheEndOfTheRampIsALowerBound: a ramp whose every step passes
// never reached its knee: the knee is its last step, marked as a lower
// bound in the result and in the latency block, with a note; a ramp with a
// failing step has a measured knee.
func TestKneeAtTheEndOfTheRampIsALowerBound(t *testing.T) {
	ss := steps([3]float64{1, 1, 100}, [3]float64{2, 2, 100}, [3]float64{4, 4, 100})
	for i := range ss {
		ss[i].TTFTP50Ms, ss[i].TTFTP95Ms, ss[i].TPOTP50Ms, ss[i].TPOTP95Ms = 50, 60, 5, 6
	}
	res := Analyze(ss, Options{DeadlineMs: 1000})
	if res.Knee == nil || *res.Knee != 4 || !res.KneeLowerBound || res.FirstFailing != nil ||
		!slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "knee ≥ 4; probe to higher concurrency") }) {
		t.Fatalf("knee %v, lower bound %v, notes %v: want knee ≥ 4 with a note to probe further", deref(res.Knee), res.KneeLowerBound, res.Notes)
	}
	l, err := Latency(res)
	if err != nil || l.Knee == nil || *l.Knee != 4 || !l.KneeLowerBound || l.KneeRefined != nil {
		t.Fatalf("latency block %+v, %v: want knee 4 as a lower bound", l, err)
	}
	file, err := CurveFile(l, res.Steps, nil)
	if err != nil || !strings.Contains(string(file), "  knee: 4\n") || !strings.Contains(string(file), "  knee_lower_bound: true\n") {
		t.Fatalf("curve file %s, %v", file, err)
	}
	measured := Analyze(append(ss, steps([3]float64{8, 4.1, 100})...), Options{DeadlineMs: 1000})
	if measured.Knee == nil || *measured.Knee != 4 || measured.KneeLowerBound {
		t.Errorf("knee %v, lower bound %v: want a measured knee of 4", deref(measured.Knee), measured.KneeLowerBound)
	}
}

// TestKneeRefinedNeedsAPlateau: knee_refined places the knee on the first
// failing step's plateau, so a step that failed on its p95 while its
// throughput still grew gives none (it would place the knee at the step
// that broke the latency rule), and one that failed on its gain does.
func TestKneeRefinedNeedsAPlateau(t *testing.T) {
	opts := Options{DeadlineMs: 10000}
	late := Analyze(steps([3]float64{1, 1, 1000}, [3]float64{2, 2, 2000}, [3]float64{4, 4, 4000}, [3]float64{8, 8, 7000}), opts)
	if deref(late.Knee) != 4 || deref(late.FirstFailing) != 8 || late.KneeRefined != nil || late.KneeLowerBound {
		t.Errorf("p95 failure: knee %v, first failing %v, refined %v; want 4, 8 and none", deref(late.Knee), deref(late.FirstFailing), deref(late.KneeRefined))
	}
	flat := Analyze(steps([3]float64{1, 1, 1000}, [3]float64{2, 2, 1000}, [3]float64{4, 4, 1000}, [3]float64{8, 4.1, 2000}), opts)
	if deref(flat.Knee) != 4 || deref(flat.FirstFailing) != 8 || deref(flat.KneeRefined) != 4 {
		t.Errorf("gain failure: knee %v, first failing %v, refined %v; want 4, 8, 4", deref(flat.Knee), deref(flat.FirstFailing), deref(flat.KneeRefined))
	}
}

// TestOneConcurrencyHasNoKnee: a ramp of one concurrency, even of two
// steps at it (two rates placed at one estimated concurrency), passes the
// knee rule without showing any growth, so it has no knee.
func TestOneConcurrencyHasNoKnee(t *testing.T) {
	for _, ss := range [][]measure.Step{
		steps([3]float64{5, 1, 100}),
		steps([3]float64{5, 1, 100}, [3]float64{5, 1.5, 100}),
	} {
		res := Analyze(ss, Options{DeadlineMs: 1000})
		if res.Knee != nil || res.FirstFailing != nil || !slices.ContainsFunc(res.Notes, func(n string) bool {
			return strings.Contains(n, "one concurrency only (5): no knee")
		}) {
			t.Errorf("%d steps at 5: knee %v, first failing %v, notes %q", len(ss), deref(res.Knee), deref(res.FirstFailing), res.Notes)
		}
	}
}

// TestQuotaLimited: 429s whose share rises with concurrency mean the
// quota binds; the same number of 429s at a flat rate is a warning.
func TestQuotaLimited(t *testing.T) {
	ss := steps([3]float64{1, 1, 100}, [3]float64{2, 2, 100}, [3]float64{4, 2.1, 100})
	if res := Analyze(ss, Options{}); res.QuotaLimited {
		t.Fatal("no 429s, yet quota-limited")
	}
	rising := steps([3]float64{1, 1, 100}, [3]float64{2, 2, 100}, [3]float64{4, 2.1, 100})
	rising[0].RateLimited, rising[1].RateLimited, rising[2].RateLimited = 0, 10, 45
	if res := Analyze(rising, Options{}); !res.QuotaLimited {
		t.Errorf("429 shares 0, 10 %%, 45 %%: not quota-limited; notes %v", res.Notes)
	}
	flat := steps([3]float64{1, 1, 100}, [3]float64{2, 2, 100}, [3]float64{4, 2.1, 100})
	flat[0].RateLimited, flat[1].RateLimited, flat[2].RateLimited = 11, 9, 10
	res := Analyze(flat, Options{})
	if res.QuotaLimited || !strings.Contains(strings.Join(res.Notes, " "), "does not rise with concurrency") {
		t.Errorf("429 shares 11 %%, 9 %%, 10 %%: quota-limited %v, notes %v", res.QuotaLimited, res.Notes)
	}
	// 429s only past the first failing step say nothing about the knee.
	beyond := steps([3]float64{1, 1, 100}, [3]float64{2, 2, 100}, [3]float64{4, 2.1, 100}, [3]float64{8, 2.1, 100})
	beyond[3].RateLimited = 60
	if res := Analyze(beyond, Options{}); res.QuotaLimited {
		t.Errorf("429s beyond the first failing step made the ramp quota-limited")
	}
}

// TestRateTrendByHand checks the Cochran–Armitage statistic against a hand
// computation: scores 0, 1, 2 (concurrency 1, 2, 4), 100 answers each,
// 0, 10 and 20 429s: p = 0.1, s̄ = 1, Σx(s − s̄) = 20, Σn(s − s̄)² = 200,
// Z = 20 / √(0.09·200) = 4.714.
func TestRateTrendByHand(t *testing.T) {
	ss := steps([3]float64{1, 1, 0}, [3]float64{2, 2, 0}, [3]float64{4, 4, 0})
	ss[1].RateLimited, ss[2].RateLimited = 10, 20
	z, ok := rateTrend(ss)
	if !ok || math.Abs(z-20/math.Sqrt(0.09*200)) > 1e-9 {
		t.Errorf("z = %g (%v), want %g", z, ok, 20/math.Sqrt(0.09*200))
	}
}

func TestAnalyzeFitsUSL(t *testing.T) {
	ss := steps([3]float64{1, 1, 100}, [3]float64{2, 1.9, 100}, [3]float64{4, 3.4, 100}, [3]float64{8, 5.2, 100}, [3]float64{16, 6.0, 100}, [3]float64{32, 5.1, 100})
	res := Analyze(ss, Options{})
	if res.USL == nil || res.USL.Peak == nil {
		t.Fatalf("no USL fit with a peak: %+v", res.USL)
	}
	if p := *res.USL.Peak; p < 10 || p > 30 {
		t.Errorf("peak N* = %g, want between 10 and 30 for a curve that tops out at 16", p)
	}
	if res.USL.R2 < 0.95 {
		t.Errorf("R² = %g", res.USL.R2)
	}
	if res.USL.PeakBeyondRange {
		t.Errorf("a peak of %g within a ramp to 32 is marked beyond its range", *res.USL.Peak)
	}
	// A ramp that still grows almost linearly at its top step fits a peak
	// far beyond it: marked, for every reader to show as an extrapolation.
	linear := Analyze(steps([3]float64{1, 1, 100}, [3]float64{2, 1.99, 100}, [3]float64{4, 3.96, 100}), Options{})
	if u := linear.USL; u == nil || u.Peak == nil || *u.Peak <= measure.PeakRangeFactor*4 || !u.PeakBeyondRange {
		t.Errorf("a near-linear ramp to 4: USL %+v; want a peak beyond 16 marked beyond the measured range", u)
	}
}

func TestSummarizeOverKnownNumbers(t *testing.T) {
	var recs []measure.Record
	// measure.Step 2: four requests over 2 s, one late, one 429 after two 429s
	// retried; a warm-up request with a retried 429.
	recs = append(recs,
		measure.Record{Step: 2, Index: 0, StartS: 0, TTFTMs: 100, E2EMs: 1000, OutputTokens: 11, Status: 200, OK: true, Attempts: 1},
		measure.Record{Step: 2, Index: 1, StartS: 0, TTFTMs: 200, E2EMs: 1000, OutputTokens: 11, Status: 200, OK: true, Attempts: 1},
		measure.Record{Step: 2, Index: 2, StartS: 1, TTFTMs: 300, E2EMs: 1000, OutputTokens: 21, Status: 200, OK: true, Attempts: 1},
		measure.Record{Step: 2, Index: 3, StartS: 1, E2EMs: 5, Status: 429, ErrorClass: measure.ErrRateLimited, Attempts: 3},
		measure.Record{Step: 2, Index: 4, StartS: 0, TTFTMs: 100, E2EMs: 100, OutputTokens: 3, Status: 200, OK: true, Warmup: true, Attempts: 2},
	)
	got := SummarizeOver(recs, Options{DeadlineMs: 900}, nil)
	if len(got) != 1 {
		t.Fatalf("steps = %d, want 1", len(got))
	}
	s := got[0]
	if s.Requests != 4 || s.OK != 3 || s.RateLimitedFailed != 1 || s.Errors != 0 {
		t.Errorf("counts %+v", s)
	}
	// 429 answers: 3 of the failed request, 1 of the warm-up's retry; answers 1+1+1+3+2.
	if s.RateLimited != 4 || s.Answers != 8 {
		t.Errorf("429 answers %d of %d, want 4 of 8", s.RateLimited, s.Answers)
	}
	if s.WallS != 2 {
		t.Errorf("wall = %g s, want 2", s.WallS)
	}
	if s.ThroughputRPS != 1.5 || s.GoodputRPS != 0 || s.OutputTPS != 21.5 {
		t.Errorf("throughput %g goodput %g output tps %g, want 1.5, 0 (all late), 21.5", s.ThroughputRPS, s.GoodputRPS, s.OutputTPS)
	}
	if s.TTFTP50Ms != 200 || math.Abs(s.TTFTP95Ms-290) > 1e-9 || math.Abs(s.TTFTP90Ms-280) > 1e-9 || math.Abs(s.TTFTP99Ms-298) > 1e-9 {
		t.Errorf("ttft p50 %g p90 %g p95 %g p99 %g, want 200, 280, 290, 298", s.TTFTP50Ms, s.TTFTP90Ms, s.TTFTP95Ms, s.TTFTP99Ms)
	}
	// TPOT: 900/10 = 90, 800/10 = 80, 700/20 = 35.
	if s.TPOTP50Ms != 80 || math.Abs(s.TPOTP95Ms-89) > 1e-9 {
		t.Errorf("tpot p50 %g p95 %g, want 80 and 89", s.TPOTP50Ms, s.TPOTP95Ms)
	}
	if s.TooShort || s.GoodputCI != nil {
		t.Errorf("a step over a given wall has no steady state to judge: %+v", s)
	}
	withWall := SummarizeOver(recs, Options{}, map[int]float64{2: 4})
	if withWall[0].WallS != 4 || withWall[0].GoodputRPS != 0.75 {
		t.Errorf("given wall: %+v", withWall[0])
	}
}

// TestSteadyStateByHand: two workers, one second per request, the second
// worker opening half a second after the first, four requests each, the
// first two warm-up. The window runs from 1.5 s (the warm-up's end) to
// 4 s (the first completion after the last send, at 3.5 s); the requests
// [1, 2] and [3.5, 4.5] count half each, four others whole: 5 requests in
// 2.5 s, 2 req/s = c / S.
func TestSteadyStateByHand(t *testing.T) {
	var recs []measure.Record
	idx := 0
	for k := range 4 {
		for w := range 2 {
			start := float64(k) + 0.5*float64(w)
			recs = append(recs, measure.Record{Step: 2, Index: idx, StartS: start, TTFTMs: 100, E2EMs: 1000,
				OutputTokens: 10, Status: 200, OK: true, Attempts: 1, Warmup: idx < 2})
			idx++
		}
	}
	st, ok := steadyState(recs, 2, measure.Goal{})
	if !ok || st.a != 1.5 || st.b != 4 {
		t.Fatalf("window [%g, %g] (%v), want [1.5, 4]", st.a, st.b, ok)
	}
	if math.Abs(st.throughput-2) > 1e-12 || math.Abs(st.outputTPS-20) > 1e-12 || st.measured != 6 {
		t.Errorf("throughput %g, output tps %g, measured %d; want 2, 20, 6", st.throughput, st.outputTPS, st.measured)
	}
	s := Summarize(recs, Options{})[0]
	if s.WallS != 2.5 || s.ThroughputRPS != st.throughput || !s.TooShort {
		t.Errorf("summary %+v: want the window's figures, and too short (6 < 2c + 10)", s)
	}
	if s.GoodputCI == nil || s.GoodputCI.Lo != 2 || s.GoodputCI.Hi != 2 {
		t.Errorf("goodput interval %+v, want [2, 2] for identical requests", s.GoodputCI)
	}
}

// TestSteadyStateNeverPassesTheBound runs simulated closed loops (c
// workers, service times of one second with 5 % jitter, spread starts,
// warm-up of one round) and checks that the steady-state throughput never
// passes c / E[S] of the step's own rows by more than 5 %, at every size
// of step and concurrency a probe uses. With widely varying service times
// (0.5 to 1.5 s) the estimate stays unbiased: within 5 % of c / E[S] once
// the step is long enough for E[S] itself to be known that well.
func TestSteadyStateNeverPassesTheBound(t *testing.T) {
	rnd := newTestRand(7)
	check := func(c, n int, draw func() float64) float64 {
		recs := closedLoop(c, n, c, 1, draw)
		s := Summarize(recs, Options{})[0]
		var sum float64
		var k int
		for _, r := range recs {
			if !r.Warmup {
				sum += r.E2EMs / 1000
				k++
			}
		}
		return s.ThroughputRPS / (float64(c) / (sum / float64(k)))
	}
	worst := 0.0
	for _, c := range []int{1, 2, 4, 8, 16, 32, 64} {
		for _, n := range []int{MinAdaptive(c) + c, MinMeasured(c) + c, 4 * MinMeasured(c)} {
			for range 20 {
				r := check(c, n, func() float64 { return 0.95 + 0.1*rnd.Float64() })
				worst = math.Max(worst, r)
				if r > 1.05 {
					t.Errorf("c %d, n %d: throughput %.1f %% above c/E[S]", c, n, 100*(r-1))
				}
			}
			if r := check(c, 20*MinMeasured(c), func() float64 { return 0.5 + rnd.Float64() }); math.Abs(r-1) > 0.05 {
				t.Errorf("c %d, widely varying service times: throughput / (c/E[S]) = %.3f", c, r)
			}
		}
	}
	t.Logf("worst ratio to c/E[S]: %.4f", worst)
}

// TestQuantileCI checks the order-statistic interval against tables
// (Conover, Table A3): for n = 100 and the median, ranks 40 and 61.
func TestQuantileCI(t *testing.T) {
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(i + 1)
	}
	ci := quantileCI(xs, 0.5)
	if ci.Lo != 40 || ci.Hi != 61 {
		t.Errorf("median interval of 1..100 = [%g, %g], want [40, 61]", ci.Lo, ci.Hi)
	}
	// With 40 values the p95's upper rank is beyond the data: the maximum.
	ci = quantileCI(xs[:40], 0.95)
	if ci.Hi != 40 || ci.Lo < 30 || ci.Lo > 38 {
		t.Errorf("p95 interval of 1..40 = [%g, %g], want up to the maximum", ci.Lo, ci.Hi)
	}
}

func TestIsotonic(t *testing.T) {
	tests := []struct {
		ys, ws, want []float64
	}{
		{[]float64{1, 2, 3}, []float64{1, 1, 1}, []float64{1, 2, 3}},
		// One noisy step: pooled with its neighbour, not spread onwards.
		{[]float64{100, 300, 200, 400}, []float64{1, 1, 1, 1}, []float64{100, 250, 250, 400}},
		// Weights: the heavier step pulls the pooled mean.
		{[]float64{300, 200}, []float64{1, 3}, []float64{225, 225}},
		{[]float64{5, 4, 3}, []float64{1, 1, 1}, []float64{4, 4, 4}},
	}
	for _, tt := range tests {
		got := isotonic(tt.ys, tt.ws)
		for i := range got {
			if math.Abs(got[i]-tt.want[i]) > 1e-12 {
				t.Errorf("isotonic(%v, %v) = %v, want %v", tt.ys, tt.ws, got, tt.want)
				break
			}
		}
	}
}

// TestOpenLoopStepsMakeNoCurve: an open loop's steps at offered rates
// under a cap of 8 in flight are not points of a curve by concurrency (a
// step at 20 req/s carried 14.7, where 8 slots carry 144.6), so they make
// none, and the error says why; an imported rate run whose concurrency is
// estimated from what it held is a point as before.
func TestOpenLoopStepsMakeNoCurve(t *testing.T) {
	step := func(rate, x float64, estimated bool) measure.Step {
		return measure.Step{Concurrency: 8, RateRPS: rate, ConcurrencyEstimated: estimated, OK: 40, Requests: 40, Answers: 40,
			TTFTP50Ms: 25, TTFTP95Ms: 30, TPOTP50Ms: 2, TPOTP95Ms: 3, ThroughputRPS: x}
	}
	_, err := Latency(measure.Result{Steps: []measure.Step{step(20, 14.7, false), step(50, 49, false)}})
	if err == nil || !strings.Contains(err.Error(), "an open loop's steps are offered rates under a cap of 8 in flight") {
		t.Errorf("open loop at its cap: %v, want no curve and why", err)
	}
	l, err := Latency(measure.Result{Steps: []measure.Step{step(20, 14.7, true)}})
	if err != nil || len(l.Curve) != 1 || l.Curve[0].ThroughputRPS != 14.7 {
		t.Errorf("a rate run of estimated concurrency: %+v, %v; want its one point", l, err)
	}
}

func TestLatencyBlock(t *testing.T) {
	ss := []measure.Step{
		{Concurrency: 1, OK: 10, Requests: 10, Answers: 10, TTFTP50Ms: 200, TTFTP95Ms: 210, TPOTP50Ms: 20, TPOTP95Ms: 30, ThroughputRPS: 1},
		{Concurrency: 2, OK: 0, Requests: 10, Errors: 10, Answers: 10},
		{Concurrency: 4, OK: 10, Requests: 10, RateLimited: 1, Answers: 10, TTFTP50Ms: 220, TTFTP95Ms: 260, TPOTP50Ms: 21, TPOTP95Ms: 23, ThroughputRPS: 3.5},
		{Concurrency: 8, OK: 3, Requests: 3, Answers: 3, TTFTP50Ms: 999, TTFTP95Ms: 999, TPOTP50Ms: 99, TPOTP95Ms: 99, TooShort: true},
	}
	l, err := Latency(measure.Result{Steps: ss, Knee: ptr(4)})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Curve) != 2 || l.Curve[1].Concurrency != 4 || l.Curve[1].RateLimitedRate != 0.1 || *l.Knee != 4 {
		t.Fatalf("latency block %+v", l)
	}
	// TPOT p95 30 then 23: pooled to 26.5, not 30 carried on.
	if l.Curve[0].TPOTP95Ms != 26.5 || l.Curve[1].TPOTP95Ms != 26.5 {
		t.Errorf("TPOT p95 = %g, %g; want 26.5, 26.5", l.Curve[0].TPOTP95Ms, l.Curve[1].TPOTP95Ms)
	}
	if _, err := Latency(measure.Result{Steps: ss[1:2]}); err == nil || !strings.Contains(err.Error(), "no step has successful responses") {
		t.Fatalf("a ramp without successes: %v", err)
	}
	// Steps too short to judge are said to be that, not to have no
	// successes.
	if _, err := Latency(measure.Result{Steps: ss[3:]}); err == nil || !strings.Contains(err.Error(), "every step is too short") {
		t.Fatalf("a ramp of short steps: %v", err)
	}
}

func equalPtr(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func deref(p *int) any {
	if p == nil {
		return "null"
	}
	return *p
}

// TestKneeRefined walks the refinement by hand on an endpoint of 12 slots
// and unit service time: X(c) = min(c, 12). The doubling rule's knee is 16
// (8 to 16 still gains 50 %), the first failing step 32, and the plateau
// X(32) = 12. A step is on it when X(c) ≥ 12·(1 − 1/(2(c+1))): 16 does,
// 8 does not. Nothing at 9 to 11 can: a closed loop of c carries at most
// c·X(8)/8 = c, and 11 < 12·(1 − 1/24) = 11.5; so the knee
// lies in (11, 16], and measuring 12, the smallest concurrency left open,
// settles it at 12 exactly.
func TestKneeRefined(t *testing.T) {
	type stage struct {
		add              int
		refined, res     int
		next             int
		knee, firstFails int
	}
	walk := func(t *testing.T, x func(c int) float64, noise func(c int) float64, stages []stage) measure.Result {
		t.Helper()
		step := func(c int, refine bool) measure.Step {
			v, n := x(c), noise(c)
			return measure.Step{Concurrency: c, Requests: 100, OK: 100, Answers: 100, GoodputRPS: v, ThroughputRPS: v, Refine: refine,
				GoodputCI: &measure.Interval{Lo: v * (1 - n), Hi: v * (1 + n)}}
		}
		var ss []measure.Step
		for _, c := range []int{1, 2, 4, 8, 16, 32} {
			ss = append(ss, step(c, false))
		}
		var res measure.Result
		for _, tc := range stages {
			if tc.add > 0 {
				ss = append(ss, step(tc.add, true))
			}
			res = Analyze(ss, Options{})
			next, precision, ok := NextRefinement(res)
			if deref(res.Knee) != tc.knee || deref(res.FirstFailing) != tc.firstFails || deref(res.KneeRefined) != tc.refined ||
				deref(res.KneeResolution) != tc.res || next != tc.next || ok != (tc.next > 0) {
				t.Errorf("after %d: knee %v, first failing %v, refined %v ± %v, next %d (%v); want %d, %d, %d ± %d, next %d",
					tc.add, deref(res.Knee), deref(res.FirstFailing), deref(res.KneeRefined), deref(res.KneeResolution), next, ok,
					tc.knee, tc.firstFails, tc.refined, tc.res, tc.next)
			}
			// The step measured next must resolve half a slot with the
			// plateau's noise (0.1 %) on top.
			if ok && math.Abs(precision-(1/(2*float64(next))-noise(32))) > 1e-12 {
				t.Errorf("after %d: precision %g for %d, want 1/(2·%d) − %g", tc.add, precision, next, next, noise(32))
			}
		}
		return res
	}
	quiet := func(int) float64 { return 0.001 }
	slots := func(c int) float64 { return math.Min(float64(c), 12) }
	res := walk(t, slots, quiet, []stage{
		{0, 16, 5, 12, 16, 32},
		{12, 12, 1, 0, 16, 32},
	})
	if !strings.Contains(strings.Join(res.Notes, " "), "9 to 11 in flight cannot reach the plateau") {
		t.Errorf("no note on the concurrencies the bound rules out: %v", res.Notes)
	}
	// An endpoint that scales by half a slot per request between 8 and 16:
	// X(c) = 8 + (c − 8)/2 there. 12 falls short (10 < 11.5), and bounds
	// 13 (13·10/12 = 10.8 < 11.54); the bisection of (13, 16] measures 15,
	// which falls short too, and leaves 16 exact.
	gradual := func(c int) float64 { return math.Min(float64(c), math.Min(8+float64(c-8)/2, 12)) }
	walk(t, gradual, quiet, []stage{
		{0, 16, 5, 12, 16, 32},
		{12, 16, 3, 15, 16, 32},
		{15, 16, 1, 0, 16, 32},
	})
	// A refinement step whose noise (10 %) passes the half slot it must
	// resolve (1/24) stops the bisection, and says why.
	noisy := walk(t, gradual, func(c int) float64 {
		if c == 12 {
			return 0.1
		}
		return 0.001
	}, []stage{{0, 16, 5, 12, 16, 32}, {12, 16, 4, 0, 16, 32}})
	if !strings.Contains(strings.Join(noisy.Notes, " "), "noise is more than half a slot") {
		t.Errorf("noisy refinement: notes %v", noisy.Notes)
	}
	// Scaling efficiency against concurrency 1: 1 up to the slots, 12/c after.
	for _, s := range res.Steps {
		if want := math.Min(float64(s.Concurrency), 12) / float64(s.Concurrency); math.Abs(s.Efficiency-want) > 1e-4 {
			t.Errorf("efficiency at %d = %g, want %g", s.Concurrency, s.Efficiency, want)
		}
	}
}

// TestPrecisionOfTheSentPrefix: a running step's precision is that of the
// steady state its first sent requests would have measured alone, in
// whatever order the rows completed and whatever completed after them;
// once its buffers have grown, the check allocates nothing.
func TestPrecisionOfTheSentPrefix(t *testing.T) {
	rnd := newTestRand(7)
	recs := closedLoop(4, 80, 4, 0.2, func() float64 { return 0.2 + 0.1*rnd.Float64() })
	prefix := slices.Clone(recs[:50])
	want, ok := steadyState(prefix, 4, measure.Goal{})
	if !ok || want.goodputCI() == nil {
		t.Fatal("the prefix has no steady state")
	}
	shuffled := slices.Clone(recs)
	rnd.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	var sc Scratch
	rel, measured := Precision(shuffled, 4, measure.Goal{}, 50, &sc)
	if wantRel := want.goodputCI().HalfWidthRel(want.goodput); math.Abs(rel-wantRel) > 1e-12 || measured != want.measured {
		t.Errorf("precision %g over %d requests, want %g over %d", rel, measured, wantRel, want.measured)
	}
	if rel, _ := Precision(shuffled, 4, measure.Goal{}, 3, &sc); !math.IsInf(rel, 1) {
		t.Errorf("three sends of four slots: precision %g, want +Inf", rel)
	}
	if n := testing.AllocsPerRun(50, func() { Precision(shuffled, 4, measure.Goal{}, 50, &sc) }); n != 0 {
		t.Errorf("Precision allocates %g times a call", n)
	}
}

// TestQuantileCIRanksAsScanned holds the bisected ranks of quantileCI to
// the definition: l the largest rank with P(B ≤ l−1) ≤ α/2, u the
// smallest with P(B ≤ u−1) ≥ 1 − α/2, found by a scan over every rank.
func TestQuantileCIRanksAsScanned(t *testing.T) {
	scan := func(n int, q float64) (int, int) {
		bin := distuv.Binomial{N: float64(n), P: q}
		alpha := (1 - confidence) / 2
		l := 0
		for k := 1; k <= n && bin.CDF(float64(k-1)) <= alpha; k++ {
			l = k
		}
		u := n
		for k := 1; k <= n; k++ {
			if bin.CDF(float64(k-1)) >= 1-alpha {
				u = k
				break
			}
		}
		return l, u
	}
	for _, n := range []int{2, 3, 5, 10, 19, 20, 40, 59, 60, 100, 333, 1000, 4096} {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(i + 1) // the value of rank k is k
		}
		for _, q := range []float64{0.5, 0.9, 0.95, 0.99} {
			l, u := scan(n, q)
			lo := 1.0
			if l >= 1 {
				lo = float64(l)
			}
			ci := quantileCI(xs, q)
			if ci == nil || ci.Lo != lo || ci.Hi != float64(u) {
				t.Errorf("n %d, q %g: interval %+v, want [%g, %d]", n, q, ci, lo, u)
			}
		}
	}
}

// TestUnknownConcurrencyIsNotJudged: a step whose concurrency is unknown
// (0) takes no part in the knee rules, so no verdict names concurrency 0,
// and the notes say why nothing was judged.
func TestUnknownConcurrencyIsNotJudged(t *testing.T) {
	st := measure.Step{Concurrency: 0, Requests: 100, OK: 100, Answers: 100, GoodputRPS: 0, ThroughputRPS: 0, E2EP95Ms: 1000}
	res := Analyze([]measure.Step{st}, Options{})
	if res.FirstFailing != nil || res.Knee != nil {
		t.Errorf("first failing %v, knee %v: a step of unknown concurrency was judged", res.FirstFailing, res.Knee)
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "unknown concurrency is shown but not judged") }) ||
		!slices.Contains(res.Notes, "no step can be judged: no knee") {
		t.Errorf("notes %q", res.Notes)
	}
}
