package simulate

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"

	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/signed"
)

// Thresholds of the verdict (docs/simulate.md, "Verdict"); a plan's check
// judges by them too.
const (
	// MaxLimitedShare is the share of sends answered 429 above which the
	// 429s are more than incidental: even a start-up burst that clears
	// costs requests retried, delayed or given up. The alerting rules of
	// an exported plan (package export) fire above it too.
	MaxLimitedShare = 0.01
	// MaxLostShare is the share of requests shed or given up that a plan
	// may lose and still hold.
	MaxLostShare = 0.01
	// backlogShare is, with the pool, the backlog at the end of the run
	// that still counts as keeping pace: max(pool, 1 % of the requests).
	backlogShare = 0.01
)

// KeepsPace reports whether a class with arrivals kept pace with them:
// at the end no more requests wait than max(pool, 1 % of its requests).
// For a batch it means the batch is done in its window.
func (c ClassRun) KeepsPace() bool {
	return float64(c.Simulated.Backlog) <= math.Max(float64(c.Pool), backlogShare*float64(c.Simulated.Requests))
}

// check is one test of the verdict: whether it passed, a short name for
// the summary, and the reason in words.
type check struct {
	ok     bool
	label  string
	reason string
}

// verdict judges whether the plan held for the class: its SLOs met, at
// most 1 % of its sends answered 429, almost nothing shed or given up, and the arrivals served
// (for a batch: done in its window). The comparison with the plan's
// figures is given as a reason but does not decide.
func (c *client) verdict(sm Simulated) SimulationVerdict {
	if v, ok := c.nothingToJudge(sm); ok {
		c.unjudged = true
		return v
	}
	return c.judge(sm)
}

// nothingToJudge is the verdict of a class the run had nothing to judge
// by, and whether it had nothing: not scheduled in the run, no arrival,
// or a run too short for any request to complete. Such a class holds, and
// the run's verdict names it.
func (c *client) nothingToJudge(sm Simulated) (SimulationVerdict, bool) {
	if sc := c.spec.Schedule; len(c.on) == 0 && c.kind != ArrivalsReplay {
		return SimulationVerdict{Holds: true, Summary: fmt.Sprintf("%s: not scheduled in this run", c.spec.Name),
			Reasons: []string{fmt.Sprintf("it runs %s h a day from %s UTC, outside this run", Num(sc.Hours), clock(sc.StartHour))}}, true
	}
	many, one, rate := Units(c.spec)
	if r, ok := c.arr.(*replay); ok && sm.Requests == 0 {
		// Every arrival it replays starts after the run's end.
		return SimulationVerdict{Holds: true, Summary: fmt.Sprintf("%s: no %s arrived in this run", c.spec.Name, one),
			Reasons: []string{fmt.Sprintf("none of its %s replayed arrivals starts within the run's %s s: nothing to judge", count(r.given), Num(c.s.end))}}, true
	}
	if sm.Requests == 0 && c.spec.Demand != nil && c.spec.Demand.Rate() > 0 {
		// Its demand is too light for one arrival in the run: nothing
		// happened that could break the plan (the plan's check says so too).
		return SimulationVerdict{Holds: true, Summary: fmt.Sprintf("%s: no %s arrived in this run", c.spec.Name, one),
			Reasons: []string{fmt.Sprintf("at %.3g %s no %s arrived in the run: nothing to judge; run it longer", c.spec.Demand.Rate(), rate, one)}}, true
	}
	if e2e := c.cp.Predicted.E2EP95Ms; sm.Completed == 0 && sm.Shed == 0 && sm.GaveUp == 0 && e2e != nil && c.s.end*1000 < *e2e {
		// The run ended before a request could complete, none of them
		// lost: it is too short to say anything about the plan.
		return SimulationVerdict{Holds: true, Summary: fmt.Sprintf("%s: no %s could complete in this run", c.spec.Name, one),
			Reasons: []string{fmt.Sprintf("%s %s arrived and none completed in %s s, shorter than the plan's %s p95 of %s ms: nothing to judge; run it longer", count(sm.Requests), many, Num(c.s.end), e2eName(c.spec), Num(*e2e))}}, true
	}
	return SimulationVerdict{}, false
}

// e2eName names what a class's E2E times: the whole task of an agent
// task class, each request of any other.
func e2eName(c scenario.Class) string {
	if c.Task != nil {
		return "task E2E"
	}
	return "E2E"
}

// Units names what a class's arrivals, losses and backlog count, as many
// and as one, and their rate: an agent task class's are tasks, every
// other class's requests.
func Units(c scenario.Class) (many, one, rate string) {
	if c.Task != nil {
		return CountsTasks, "task", "tasks/s"
	}
	return CountsRequests, "request", "req/s"
}

// What a simulated class's counts count (ClassRun.Counts).
const (
	CountsRequests = "requests"
	CountsTasks    = "tasks"
)

// judge is the verdict of a class the run judged (verdict).
func (c *client) judge(sm Simulated) SimulationVerdict {
	var checks []check
	add := func(ok bool, label, format string, args ...any) {
		checks = append(checks, check{ok: ok, label: label, reason: fmt.Sprintf(format, args...)})
	}
	unit, one, rate := Units(c.spec)
	for _, t := range Targets(c.spec.SLO, sm) {
		switch {
		case t.Got == nil:
			add(false, "no "+one+" completed", "no %s completed, so the %s SLO of %s ms is not met", one, t.Name, Num(t.Bound))
		case t.AtEdge():
			add(true, "", "%s %s %s%s ms meets the SLO of %s ms at its edge: its 95 %% interval reaches %s ms, so another seed or a longer run may miss it", t.Name, t.At, Num(*t.Got), plusMinus(t.CI95), Num(t.Bound), Num(*t.Got+*t.CI95))
		case t.Met():
			add(true, "", "%s %s %s ms meets the SLO of %s ms", t.Name, t.At, Num(*t.Got), Num(t.Bound))
		default:
			add(false, t.Name+" "+t.At+" over its SLO", "%s %s %s%s ms breaks the SLO of %s ms", t.Name, t.At, Num(*t.Got), plusMinus(t.CI95), Num(t.Bound))
		}
	}
	sends := c.st.waitN + sm.Retries
	switch share := ratio(sm.RateLimited, sends); {
	case sm.RateLimited == 0:
		add(true, "", "no 429s")
	case share <= MaxLimitedShare:
		add(true, "", "%s of %s sends answered 429 (%s, at most 1 %%), %s", count(sm.RateLimited), count(sends), pct(share), c.limitedSpan())
	default:
		add(false, "429s on "+pct(share)+" of sends", "%s of %s sends answered 429 (%s, over 1 %%), %s", count(sm.RateLimited), count(sends), pct(share), c.limitedSpan())
	}
	if lost := sm.Shed + sm.GaveUp; lost > 0 {
		var parts []string
		if sm.Shed > 0 {
			parts = append(parts, fmt.Sprintf("shed %s after the max queue wait of %s ms", count(sm.Shed), Num(c.wait*1000)))
		}
		if sm.GaveUp > 0 {
			parts = append(parts, fmt.Sprintf("%s gave up after 429s", count(sm.GaveUp)))
		}
		share := ratio(lost, sm.Requests)
		add(share <= MaxLostShare, unit+" lost", "%s of %s %s lost (%s): %s", count(lost), count(sm.Requests), unit, pct(share), strings.Join(parts, "; "))
	}
	if c.arr != nil {
		keeps := ClassRun{Pool: c.cp.Pool, Simulated: sm}.KeepsPace()
		if d := c.spec.Demand; d != nil && d.Requests > 0 && c.kind != ArrivalsReplay {
			switch {
			case keeps:
				add(true, "", "the batch of %s %s is done in its %s h window: the pool keeps pace with its %s %s", count(int(d.Requests)), unit, Num(d.WithinHours), Num(d.Rate()), rate)
			case sm.ThroughputRPS > 0:
				h := d.Requests / sm.ThroughputRPS / 3600
				add(false, "batch not done in its window", "at %s %s the batch of %s %s takes %s h, over its %s h window", Num(sm.ThroughputRPS), rate, count(int(d.Requests)), unit, Num(h), Num(d.WithinHours))
			default:
				add(false, "batch not done in its window", "nothing completed: the batch is not done in its %s h window", Num(d.WithinHours))
			}
		} else if keeps {
			add(true, "", "kept pace with its arrivals (%s waiting at the end)", count(sm.Backlog))
		} else {
			add(false, "fell behind", "fell behind: %s %s waiting at the end; it served %s %s of the %s %s that arrived", count(sm.Backlog), unit, Num(sm.ThroughputRPS), rate, Num(sm.OfferedRPS), rate)
		}
	}
	v := SimulationVerdict{Holds: true, Reasons: []string{}}
	var failed []string
	for _, ch := range checks {
		v.Reasons = append(v.Reasons, ch.reason)
		if !ch.ok {
			v.Holds = false
			if !slices.Contains(failed, ch.label) {
				failed = append(failed, ch.label)
			}
		}
	}
	v.Reasons = append(v.Reasons, c.against(sm))
	if v.Holds {
		v.Summary = fmt.Sprintf("%s: the plan holds", c.spec.Name)
	} else {
		v.Summary = fmt.Sprintf("%s: %s", c.spec.Name, strings.Join(failed, ", "))
	}
	return v
}

// limitedSpan says when the class's 429s came: the simulated times from the
// start of the first interval with one to the end of the last.
func (c *client) limitedSpan() string {
	iv := c.st.limitedIv
	first, last := slices.IndexFunc(iv, func(n int) bool { return n > 0 }), 0
	for i := range iv {
		if iv[i] > 0 {
			last = i
		}
	}
	g := c.s.grid
	return fmt.Sprintf("all between %s s and %s s of the %s s run", Num(float64(first)*g.step), Num(g.edge(last)), Num(g.end))
}

// against compares the run with the plan's figures in words.
func (c *client) against(sm Simulated) string {
	vp := c.vsPlan(sm)
	_, _, rate := Units(c.spec)
	s := fmt.Sprintf("throughput %s %s against the plan's %s", Num(sm.ThroughputRPS), rate, Num(vp.ExpectedRPS))
	if e := vp.ThroughputErrorPct; e != nil {
		s += " (" + signed.Pct(*e) + ")"
	}
	if e := vp.TTFTP95ErrorPct; e != nil {
		s += fmt.Sprintf("; TTFT p95 %s ms against %s (%s)", Num(*sm.TTFTP95Ms), Num(*c.cp.Predicted.TTFTP95Ms), signed.Pct(*e))
	}
	if e := vp.E2EP95ErrorPct; e != nil {
		s += fmt.Sprintf("; %s p95 %s ms against %s (%s)", e2eName(c.spec), Num(*sm.E2EP95Ms), Num(*c.cp.Predicted.E2EP95Ms), signed.Pct(*e))
	}
	return s
}

// overall is the plan's verdict: it holds when it holds for every class
// and no key spent a daily limit at a pace its day does not allow
// (overdrawn, dailyOverdrawn's reasons).
func overall(classes []ClassRun, unjudged []bool, overdrawn []string) SimulationVerdict {
	v := SimulationVerdict{Holds: true, Reasons: []string{}}
	var failing, nothing []string
	for i, c := range classes {
		if !c.Verdict.Holds {
			v.Holds = false
			failing = append(failing, c.Verdict.Summary)
		}
		if unjudged[i] {
			nothing = append(nothing, c.Verdict.Summary)
		}
	}
	if len(overdrawn) > 0 {
		v.Holds = false
		failing = append(failing, overdrawn...)
	}
	switch {
	case v.Holds && len(nothing) > 0 && len(nothing) == len(classes):
		v.Summary = "nothing to judge: " + strings.Join(nothing, "; ")
		v.Reasons = nothing
		return v
	case v.Holds && len(nothing) > 0:
		v.Summary = "the plan holds for every class the run could judge: each met its SLOs, with at most 1 % of its sends answered 429, and kept pace with its arrivals; nothing to judge for " + strings.Join(nothing, "; ")
		v.Reasons = nothing
		return v
	case v.Holds:
		v.Summary = "the plan holds: every class met its SLOs, with at most 1 % of its sends answered 429, and kept pace with its arrivals"
		return v
	}
	v.Summary = "the plan does not hold for " + strings.Join(failing, "; ")
	v.Reasons = failing
	return v
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Num writes a simulation's number for people: grouped thousands, one
// decimal from 10 and two below, without trailing zeros, halves rounded
// away from zero on the digits shown (0.345 is 0.35). The reasons of a
// verdict and every rendering of a simulation write their numbers with
// it, and so do the plan's check's (internal/app), so that a figure
// reads the same in a table and in the words. A number that two decimals
// would write as 0 keeps two significant digits.
func Num(v float64) string {
	digits := 2
	switch a := math.Abs(v); {
	case a >= 100:
		digits = 0
	case a >= 10:
		digits = 1
	case a > 0 && a < 0.005:
		// Two decimals would write 0, which for a target means none: a
		// target of 0.004 ms is written so, with two significant digits.
		g, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 2, 64), 64)
		return strconv.FormatFloat(g, 'f', -1, 64)
	}
	s := humanize.CommafWithDigits(signed.Round(v, digits), digits)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func count(n int) string { return humanize.Comma(int64(n)) }

func pct(share float64) string { return fmt.Sprintf("%.1f %%", share*100) }

// clock writes hours after midnight as HH:MM.
func clock(h float64) string {
	m := int(math.Round(h * 60))
	return fmt.Sprintf("%02d:%02d", m/60%24, m%60)
}

// plusMinus is " ± h" for a value with an interval's half-width h, empty
// without one.
func plusMinus(hw *float64) string {
	if hw == nil {
		return ""
	}
	return " ± " + Num(*hw)
}
