package probe

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/optional"
)

// The knee tests run the probe against the simulator, whose slot count
// is the knee to find. Most run under a fake clock (bubble), where every
// time the simulator schedules is exact, so that their verdicts do not
// depend on the machine's speed or load; TestKneeOverLoopback runs the
// same over a real socket, with service times long against scheduling
// noise.

// slotsSim is a simulator of the given slots: TTFT 200 ms and 10 ms per
// token, growing with nothing, so that a request of 8 tokens takes 270 ms
// at any load up to the slot count.
func slotsSim(slots int) fakeendpoint.Config {
	return fakeendpoint.Config{MaxNumSeqs: slots, TTFT: 200 * time.Millisecond, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth}
}

// ladderTo is 1, 2, 4, … up to top.
func ladderTo(top int) []int {
	var out []int
	for c := 1; c <= top; c *= 2 {
		out = append(out, c)
	}
	return out
}

// kneeConfig is a probe of 8-token answers against base.
func kneeConfig(base string, dial dialFunc) Config {
	return Config{BaseURL: base, Model: fakeendpoint.DefaultModel, MaxTokens: optional.Of(8), IgnoreEOS: true, InputTokens: optional.Of(32),
		Pause: optional.Of(time.Millisecond), DialContext: dial}
}

// checkBound fails when a step reports more than 5 % above c / E[S], E[S]
// the mean slot time of the step's own measured rows.
func checkBound(t *testing.T, res *Result) {
	t.Helper()
	for _, s := range res.Analysis.Steps {
		var sum float64
		var n int
		for _, r := range res.Records {
			if r.Step == s.Concurrency && !r.Warmup && r.ErrorClass != measure.ErrCancelled {
				sum += max(r.E2EMs, r.E2EWithRetriesMs) / 1000
				n++
			}
		}
		if bound := float64(s.Concurrency) / (sum / float64(n)); s.ThroughputRPS > 1.05*bound {
			t.Errorf("step %d reports %.3f req/s, %.1f %% above c/E[S] = %.3f", s.Concurrency, s.ThroughputRPS, 100*(s.ThroughputRPS/bound-1), bound)
		}
	}
}

// checkCountedBound fails when a step reports more than 5 % above c /
// E[S], E[S] the mean slot time of the requests the step counts, each
// weighted by the share of it inside the step's window: on a real clock a
// request stalled at the window's edge (a busy machine, the race
// detector) lengthens the plain mean of the step's rows without being
// counted, so only this form is a bound there.
func checkCountedBound(t *testing.T, res *Result) {
	t.Helper()
	for _, s := range res.Analysis.Steps {
		var sum, weight float64
		for _, r := range res.Records {
			if r.Step != s.Concurrency || r.Warmup || r.ErrorClass == measure.ErrCancelled {
				continue
			}
			slot := max(r.E2EMs, r.E2EWithRetriesMs) / 1000
			lo, hi := math.Max(r.StartS, s.WindowStartS), math.Min(r.StartS+slot, s.WindowEndS)
			if hi <= lo || slot <= 0 {
				continue
			}
			f := (hi - lo) / slot
			sum += f * slot
			weight += f
		}
		if bound := float64(s.Concurrency) / (sum / weight); s.ThroughputRPS > 1.05*bound {
			t.Errorf("step %d reports %.3f req/s, %.1f %% above c/E[S] = %.3f of the requests it counts", s.Concurrency, s.ThroughputRPS, 100*(s.ThroughputRPS/bound-1), bound)
		}
	}
}

// TestKneeAgainstSim ramps simulators of 4, 8 and 16 slots up to four
// times their slots with the default step sizes: the knee is the slot
// count, no step reports more than the closed loop can carry, the plateau
// has no collapse, and the queue beyond the slots shows in TTFT.
func TestKneeAgainstSim(t *testing.T) {
	for _, slots := range []int{4, 8, 16} {
		t.Run(fmt.Sprintf("slots=%d", slots), func(t *testing.T) {
			bubble(t, slotsSim(slots), func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
				cfg := kneeConfig(base, dial)
				cfg.Steps = ladderTo(4 * slots)
				res := run(t, t.Context(), cfg, nil)
				if res.StopReason != StopCompleted || len(res.Analysis.Steps) != len(cfg.Steps) {
					t.Fatalf("stop %s (%s) with %d steps", res.StopReason, res.StopDetail, len(res.Analysis.Steps))
				}
				if k := res.Analysis.Knee; k == nil || *k != slots {
					t.Errorf("knee = %v, want %d; steps %+v", k, slots, res.Analysis.Steps)
				}
				if c := res.Analysis.Collapse; c != nil {
					t.Errorf("collapse at %d on a flat plateau", *c)
				}
				checkBound(t, res)
				checkCountedBound(t, res)
				for _, s := range res.Analysis.Steps {
					if s.TooShort || s.GoodputCI == nil || s.TTFTP95CI == nil || s.Requests != analysis.MinMeasured(s.Concurrency) {
						t.Errorf("step %d: %d measured, too short %v, intervals %v %v", s.Concurrency, s.Requests, s.TooShort, s.GoodputCI, s.TTFTP95CI)
					}
				}
				above, at := stepAt(t, res, 2*slots), stepAt(t, res, slots)
				if above.TTFTP50Ms < at.TTFTP50Ms+200 {
					t.Errorf("TTFT p50 at %d = %.0f ms, no queue over %.0f ms at %d", 2*slots, above.TTFTP50Ms, at.TTFTP50Ms, slots)
				}
				if lat, err := analysis.Latency(res.Analysis); err != nil || len(lat.Curve) != len(cfg.Steps) {
					t.Errorf("latency block %+v, %v", lat, err)
				}
			})
		})
	}
}

// TestPlateauWithinNoise ramps 4 slots to 64 with answers of random
// length: the plateau's throughput wobbles by a few per cent from step to
// step, and that is no collapse and no reason to stop.
func TestPlateauWithinNoise(t *testing.T) {
	cfg := slotsSim(4)
	cfg.OutputTokens, cfg.Seed = 8, 11
	bubble(t, cfg, func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
		p := kneeConfig(base, dial)
		p.Steps, p.IgnoreEOS, p.MaxTokens = ladderTo(64), false, optional.Of(32)
		res := run(t, t.Context(), p, nil)
		if res.StopReason != StopCompleted {
			t.Errorf("stop %s (%s)", res.StopReason, res.StopDetail)
		}
		if c := res.Analysis.Collapse; c != nil {
			t.Errorf("collapse at %d", *c)
		}
		if k := res.Analysis.Knee; k == nil || *k != 4 {
			t.Errorf("knee %v, want 4", k)
		}
		lo, hi := math.Inf(1), 0.0
		for _, s := range res.Analysis.Steps {
			if s.Concurrency >= 4 {
				lo, hi = math.Min(lo, s.GoodputRPS), math.Max(hi, s.GoodputRPS)
			}
		}
		t.Logf("plateau goodput from %.3f to %.3f req/s (%.1f %%)", lo, hi, 100*(hi/lo-1))
	})
}

// TestRandom429s: 10 % of the requests are refused with a 429 whatever
// the load. The probe retries them, counts every one, times the retried
// requests from the attempt that succeeded, finds the same knee as
// without them, and does not call the run quota-limited.
func TestRandom429s(t *testing.T) {
	for _, slots := range []int{4, 8, 16} {
		t.Run(fmt.Sprintf("slots=%d", slots), func(t *testing.T) {
			cfg := slotsSim(slots)
			cfg.FailRate, cfg.FailStatus, cfg.Seed = 0.1, 429, uint64(slots)
			bubble(t, cfg, func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
				p := kneeConfig(base, dial)
				p.Steps, p.Max429Ratio = ladderTo(4*slots), optional.Of(0.5)
				res := run(t, t.Context(), p, nil)
				if k := res.Analysis.Knee; k == nil || *k != slots {
					t.Errorf("knee = %v, want %d", k, slots)
				}
				if res.Analysis.QuotaLimited {
					t.Errorf("quota_limited with 429s independent of load; notes %v", res.Analysis.Notes)
				}
				if !strings.Contains(strings.Join(res.Analysis.Notes, "\n"), "does not rise with concurrency") {
					t.Errorf("no warning about the 429s: %v", res.Analysis.Notes)
				}
				for _, s := range res.Analysis.Steps {
					if s.RateLimited == 0 || s.RateLimited > s.Answers {
						t.Errorf("step %d: %d 429s of %d answers", s.Concurrency, s.RateLimited, s.Answers)
					}
					if s.Concurrency <= slots && s.TTFTP50Ms != 200 {
						t.Errorf("step %d: TTFT p50 %.3f ms, want 200: retried requests are timed from the attempt that succeeded", s.Concurrency, s.TTFTP50Ms)
					}
				}
				curve, err := CurveYAML(res)
				if err != nil || !strings.Contains(string(curve), "answers were 429") {
					t.Errorf("curve.yaml does not mark the 429s (%v):\n%s", err, curve)
				}
			})
		})
	}
}

// TestQuotaLimitedByRPM: a key of 60 requests per minute binds long before
// the model does; the share of 429s rises with concurrency and the run is
// quota-limited.
func TestQuotaLimitedByRPM(t *testing.T) {
	cfg := slotsSim(64)
	cfg.RPM = 60
	bubble(t, cfg, func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
		p := kneeConfig(base, dial)
		p.Steps = ladderTo(16)
		res := run(t, t.Context(), p, nil)
		if !res.Analysis.QuotaLimited || !strings.Contains(strings.Join(res.Analysis.Notes, "\n"), "rises with concurrency") {
			t.Errorf("quota_limited %v; steps %+v notes %v", res.Analysis.QuotaLimited, res.Analysis.Steps, res.Analysis.Notes)
		}
		if res.StopReason != StopMax429Ratio {
			t.Errorf("stop %s (%s), want %s", res.StopReason, res.StopDetail, StopMax429Ratio)
		}
	})
}

// searchRow is one line of the search-against-ladder comparison.
type searchRow struct {
	slots                          int
	ladderKnee, searchKnee         int
	ladderRequests, searchRequests int
	refineRequests                 int
	ladderTokens, searchTokens     int
	ladderWall, searchWall         float64
	refined, resolution            int
}

// compare runs the ladder 1, 2, 4, … 4 × slots and the search up to the
// same top against a fresh simulator each.
func compare(t *testing.T, slots int) searchRow {
	row := searchRow{slots: slots}
	for _, search := range []bool{false, true} {
		bubble(t, slotsSim(slots), func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
			p := kneeConfig(base, dial)
			if search {
				p.Search, p.SearchMax = true, optional.Of(4*slots)
			} else {
				p.Steps = ladderTo(4 * slots)
			}
			res := run(t, t.Context(), p, nil)
			if res.Analysis.Knee == nil {
				t.Fatalf("no knee (search %v): %+v", search, res.Analysis.Steps)
			}
			sp := res.Spent()
			if !search {
				row.ladderKnee, row.ladderRequests, row.ladderTokens, row.ladderWall = *res.Analysis.Knee, sp[0].Requests, sp[0].Tokens, sp[0].WallS
				return
			}
			row.searchKnee, row.searchRequests, row.searchTokens, row.searchWall = *res.Analysis.Knee, sp[0].Requests, sp[0].Tokens, sp[0].WallS
			row.refineRequests = sp[1].Requests
			if r := res.Analysis.KneeRefined; r != nil {
				row.refined, row.resolution = *r, *res.Analysis.KneeResolution
			}
			checkBound(t, res)
		})
	}
	return row
}

// TestSearchMatchesLadder: on 4, 8, 16 and 64 slots the search finds the
// ladder's knee and refines it to the slot count exactly, with at most
// 40 % of the ladder's requests all in, the refinement included: the
// doubling steps bound every concurrency between the knee's step and the
// one below it, so that on these endpoints the refinement measures
// nothing.
func TestSearchMatchesLadder(t *testing.T) {
	for _, slots := range []int{4, 8, 16, 64} {
		t.Run(fmt.Sprintf("slots=%d", slots), func(t *testing.T) {
			r := compare(t, slots)
			all := r.searchRequests + r.refineRequests
			t.Logf("slots %d: knee %d/%d, requests %d/%d (+%d refining, %.1f %% all in), tokens %d/%d, wall %.1f/%.1f s, refined %d ± %d",
				slots, r.searchKnee, r.ladderKnee, r.searchRequests, r.ladderRequests, r.refineRequests, 100*float64(all)/float64(r.ladderRequests),
				r.searchTokens, r.ladderTokens, r.searchWall, r.ladderWall, r.refined, r.resolution)
			if r.searchKnee != r.ladderKnee || r.ladderKnee != slots {
				t.Errorf("search knee %d, ladder knee %d, want both %d", r.searchKnee, r.ladderKnee, slots)
			}
			if 10*all > 4*r.ladderRequests {
				t.Errorf("the search sent %d requests with its refinement, more than 40 %% of the ladder's %d", all, r.ladderRequests)
			}
			if r.refined != slots || r.resolution != 1 {
				t.Errorf("knee_refined %d ± %d, want %d ± 1", r.refined, r.resolution, slots)
			}
		})
	}
}

// TestKneeRefinedBetweenPowersOfTwo: with 12 slots the doubling rule's
// knee is 16 (8 to 16 still gains 50 %), and the refinement finds 12 with
// one step: 9 to 11 cannot reach the plateau (at most c·X(8)/8), and 12,
// the smallest concurrency left open, reaches it. All in, the search
// spends at most half the requests of the ladder to its maximum.
func TestKneeRefinedBetweenPowersOfTwo(t *testing.T) {
	bubble(t, slotsSim(12), func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
		p := kneeConfig(base, dial)
		p.Search, p.SearchMax = true, optional.Of(64)
		res := run(t, t.Context(), p, nil)
		a := res.Analysis
		if a.Knee == nil || *a.Knee != 16 || a.KneeRefined == nil || *a.KneeRefined != 12 || *a.KneeResolution != 1 {
			t.Fatalf("knee %v, refined %v ± %v; want 16, 12 ± 1; steps %+v", a.Knee, a.KneeRefined, a.KneeResolution, a.Steps)
		}
		var refined []int
		for _, s := range a.Steps {
			if s.Refine {
				refined = append(refined, s.Concurrency)
				if s.Requests != analysis.MinAdaptive(s.Concurrency) {
					t.Errorf("refinement step %d measured %d requests; a step without noise stops at the least a steady state needs, %d",
						s.Concurrency, s.Requests, analysis.MinAdaptive(s.Concurrency))
				}
			}
		}
		if !slices.Equal(refined, []int{12}) {
			t.Errorf("refinement steps %v, want [12]", refined)
		}
		if last := a.Steps[len(a.Steps)-1]; last.Concurrency != 32 {
			t.Errorf("the search went past the first failing step (32): last step %d", last.Concurrency)
		}
		ladder := 0
		for _, c := range ladderTo(64) {
			ladder += p.WithDefaults().requestsFor(c)
		}
		sp := res.Spent()
		all := sp[0].Requests + sp[1].Requests
		t.Logf("search %d + refinement %d requests = %.1f %% of the ladder's %d", sp[0].Requests, sp[1].Requests, 100*float64(all)/float64(ladder), ladder)
		if 2*all > ladder {
			t.Errorf("the search sent %d requests with its refinement, more than half the ladder's %d", all, ladder)
		}
	})
}

// TestKneeOverLoopback runs the ladder 1, 2, 4, … 4 × slots and the search
// against a simulator on 127.0.0.1 with real sockets and a real clock (8
// slots, 200 ms per request), and checks what holds at any speed: every
// step is measured in a steady state and none passes the closed loop's
// bound over the requests it counts; the search runs nothing past its
// first failing step, refines between measured steps, and spends no more
// than the ladder. Where the knee lands is the fake-clock tests' to
// check: on a real clock a client starved of CPU (a busy machine, the race
// detector) leaves slots idle at the slot count itself, which a real probe
// would measure too; on an idle machine both find 8 (logged), as
// BenchmarkSearchAgainstLadder measures.
func TestKneeOverLoopback(t *testing.T) {
	_, base := startSim(t, fakeendpoint.Config{MaxNumSeqs: 8, TTFT: 130 * time.Millisecond, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
	ladder := kneeConfig(base, nil)
	ladder.Steps = ladderTo(32)
	res := run(t, t.Context(), ladder, nil)
	search := kneeConfig(base, nil)
	search.Search, search.SearchMax = true, optional.Of(32)
	sres := run(t, t.Context(), search, nil)
	for _, r := range []*Result{res, sres} {
		if r.Failure() != nil || r.Analysis.Knee == nil {
			t.Fatalf("stop %s (%s), knee %v, failure %v", r.StopReason, r.StopDetail, r.Analysis.Knee, r.Failure())
		}
		for _, s := range r.Analysis.Steps {
			if s.TooShort || s.GoodputCI == nil || !(s.WindowEndS > s.WindowStartS) {
				t.Errorf("step %d was not measured in a steady state: %+v", s.Concurrency, s)
			}
		}
		checkCountedBound(t, r)
	}
	a := sres.Analysis
	for _, s := range a.Steps {
		if a.FirstFailing != nil && !s.Refine && s.Concurrency > *a.FirstFailing {
			t.Errorf("the search ran %d, past its first failing step %d", s.Concurrency, *a.FirstFailing)
		}
		if s.Refine && (a.Knee == nil || s.Concurrency >= *a.FirstFailing) {
			t.Errorf("refinement step %d outside the bracket below the first failing step %v", s.Concurrency, a.FirstFailing)
		}
	}
	if a.KneeRefined == nil || *a.KneeResolution < 1 {
		t.Errorf("no knee_refined: %+v", a)
	}
	if l, s := res.Spent()[0].Requests, sres.Spent()[0].Requests; s > l {
		t.Errorf("the search sent %d requests, more than the ladder's %d", s, l)
	}
	t.Logf("ladder knee %d (%d requests); search knee %d, refined %d ± %d (%d + %d requests)",
		*res.Analysis.Knee, res.Spent()[0].Requests, *a.Knee, *a.KneeRefined, *a.KneeResolution, sres.Spent()[0].Requests, sres.Spent()[1].Requests)
}
