package simulate

import (
	"math"

	"github.com/plannerdev/planner/internal/scenario"
)

// span is an interval [start, end) of simulated time, seconds.
type span struct{ start, end float64 }

// onSpans lists the spans of a run of end seconds, started startHour hours
// after midnight UTC, in which a class with schedule sc runs: its hours of
// every day (docs/simulate.md, "Schedules"). Without a schedule, the whole
// run.
func onSpans(sc *scenario.Schedule, startHour, end float64) []span {
	if sc == nil || sc.Hours >= 24 {
		return []span{{0, end}}
	}
	var out []span
	// The day of the first window that may overlap the run: the one that
	// starts a day before it, in case it runs past midnight into it.
	first := (sc.StartHour - startHour - 24) * 3600
	for t := first; t < end; t += day {
		s, e := math.Max(0, t), math.Min(end, t+sc.Hours*3600)
		if e > s {
			out = append(out, span{s, e})
		}
	}
	return out
}

// gate keeps a rate only inside the spans: outside them it is 0, so that a
// class's arrivals come only in its hours.
func gate(segs []segment, on []span) []segment {
	var out []segment
	for _, s := range segs {
		t := s.start
		for _, o := range on {
			lo, hi := math.Max(s.start, o.start), math.Min(s.end, o.end)
			if hi <= lo {
				continue
			}
			if lo > t {
				out = append(out, segment{t, lo, 0})
			}
			out = append(out, segment{lo, hi, s.rate})
			t = hi
		}
		if t < s.end {
			out = append(out, segment{t, s.end, 0})
		}
	}
	return out
}

// nextOn is the first time at or after t inside the spans, and false when
// none is left in the run.
func nextOn(on []span, t float64) (float64, bool) {
	for _, o := range on {
		if t < o.end {
			return max(t, o.start), true
		}
	}
	return 0, false
}
