package analysis

import (
	"math"
	"testing"

	"github.com/plannerdev/planner/internal/measure"
)

// TestWilsonByHand: 8 of 10 is [0.4902, 0.9433] (p = 0.8, z = 1.96:
// centre 0.99207, half-width 0.31362, over 1.38415); 0 of 20 reaches up to
// 0.1611 rather than collapsing to 0, and n of n down to 1 − that.
func TestWilsonByHand(t *testing.T) {
	for _, tc := range []struct {
		k, n   int
		lo, hi float64
	}{{8, 10, 0.4902, 0.9433}, {0, 20, 0, 0.1611}, {20, 20, 0.8389, 1}} {
		iv := wilson(tc.k, tc.n)
		if iv == nil || iv.Lo != tc.lo || iv.Hi != tc.hi {
			t.Errorf("wilson(%d, %d) = %+v, want [%g, %g]", tc.k, tc.n, iv, tc.lo, tc.hi)
		}
	}
	if wilson(0, 0) != nil {
		t.Error("an interval of no requests")
	}
}

// TestSLOGoodputCountsEveryTarget: a step of 40 measured requests, every
// fourth with a TTFT of 600 ms and every fifth with a TPOT of 60 ms, under
// ttft:500ms,tpot:50ms: 10 miss the TTFT, 8 the TPOT, 2 both (every
// twentieth), so 40 − 16 = 24 meet both, an attainment of 0.6; over a
// wall time of 40 s the goodput is 0.6 req/s, and without the SLO, with
// every request good, 1 req/s. Two later rows are warm-up.
func TestSLOGoodputCountsEveryTarget(t *testing.T) {
	var recs []measure.Record
	for i := range 42 {
		ttft, tpot := 100.0, 20.0
		if i%4 == 0 {
			ttft = 600
		}
		if i%5 == 0 {
			tpot = 60
		}
		// Output 11 tokens, so TPOT = (E2E − TTFT) / 10.
		recs = append(recs, measure.Record{Step: 1, Index: i, StartS: float64(i), TTFTMs: ttft, E2EMs: ttft + 10*tpot,
			OutputTokens: 11, Status: 200, OK: true, Attempts: 1, Warmup: i >= 40})
	}
	slo := measure.Targets{TTFTMs: 500, TPOTMs: 50}
	var met, n int
	for _, r := range recs {
		if !r.Warmup {
			n++
			if slo.Met(r) {
				met++
			}
		}
	}
	if met != 24 || n != 40 {
		t.Fatalf("%d of %d meet the SLO by the rows, want 24 of 40", met, n)
	}
	with := SummarizeOver(recs, Options{SLO: slo}, map[int]float64{1: 40})[0]
	without := SummarizeOver(recs, Options{}, map[int]float64{1: 40})[0]
	if with.SLO == nil || with.SLO.Met != 24 || with.SLO.Attainment != 0.6 {
		t.Fatalf("SLO stats %+v, want 24 met, attainment 0.6", with.SLO)
	}
	if iv := with.SLO.AttainmentCI; iv == nil || !(iv.Lo < 0.6 && 0.6 < iv.Hi) {
		t.Errorf("attainment interval %+v does not hold 0.6", iv)
	}
	if math.Abs(with.GoodputRPS-24.0/40) > 1e-12 || math.Abs(without.GoodputRPS-1) > 1e-12 || without.SLO != nil {
		t.Errorf("goodput %g with the SLO, %g without (SLO %+v); want 0.6 and 1", with.GoodputRPS, without.GoodputRPS, without.SLO)
	}
	res := Analyze([]measure.Step{with}, Options{SLO: slo, DeadlineMs: 10_000})
	if res.SLO == nil || *res.SLO != slo {
		t.Errorf("the result carries SLO %+v, want %+v", res.SLO, slo)
	}
}

// TestKneeJudgesSLOGoodput: three steps whose throughput grows 1, 2, 3.6
// req/s, the last at an attainment of 0.5: its SLO goodput (1.8) is below
// the step before's (2), so the gain rule fails it and the knee is 2;
// without the SLO it gains 80 % and the knee is a lower bound at 4.
func TestKneeJudgesSLOGoodput(t *testing.T) {
	step := func(c int, x, attainment float64) measure.Step {
		iv := &measure.Interval{Lo: x * attainment * 0.99, Hi: x * attainment * 1.01}
		return measure.Step{Concurrency: c, Requests: 100, OK: 100, GoodputRPS: x * attainment, GoodputCI: iv, ThroughputRPS: x,
			TTFTP50Ms: 100, TTFTP95Ms: 200, TPOTP50Ms: 10, TPOTP95Ms: 20, E2EP50Ms: 500, E2EP95Ms: 800,
			SLO: &measure.SLOStats{Met: int(100 * attainment), Attainment: attainment}}
	}
	slo := measure.Targets{TTFTMs: 500}
	withSLO := Analyze([]measure.Step{step(1, 1, 1), step(2, 2, 1), step(4, 3.6, 0.5)}, Options{SLO: slo, DeadlineMs: 10_000})
	if withSLO.Knee == nil || *withSLO.Knee != 2 || withSLO.KneeLowerBound {
		t.Errorf("knee %v (lower bound %v) on SLO goodput, want 2", withSLO.Knee, withSLO.KneeLowerBound)
	}
	plain := Analyze([]measure.Step{step(1, 1, 1), step(2, 2, 1), step(4, 3.6, 1)}, Options{DeadlineMs: 10_000})
	if plain.Knee == nil || *plain.Knee != 4 || !plain.KneeLowerBound {
		t.Errorf("knee %v (lower bound %v) without an SLO, want a lower bound of 4", plain.Knee, plain.KneeLowerBound)
	}
}
