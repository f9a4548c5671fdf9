package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
)

// Width is the widest line the terminal table writes.
const Width = 100

// WriteTable writes a plan as a terminal table, one row per class, then each
// class's explanation, every ceiling with how it was derived, remedies and
// warnings, within Width columns.
func WriteTable(w io.Writer, p *plan.Plan) error {
	ew := &errWriter{w: w}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLASS\tMODE\tKEY\tPOOL\tMIN\tBINDING\tFITS\tCHECK\tTTFT p95\tE2E p95\treq/s")
	names, keys := make([]string, len(p.Classes)), make([]string, len(p.Classes))
	for i, c := range p.Classes {
		names[i], keys[i] = c.Name, c.Quota
	}
	names, keys = clipApart(names, 16), clipApart(keys, 12)
	for i, c := range p.Classes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			names[i], c.Mode, keys[i], c.Pool, intOrDash(c.MinPool), c.BindingConstraint,
			fitWord(c.Fits), checkWord(c.Check), msOrDash(c.Predicted.TTFTP95Ms), e2eCell(c), rates(c))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	wrap(ew, "", Legend)
	for _, c := range p.Classes {
		fmt.Fprintf(ew, "\n%s\n", c.Name)
		wrap(ew, "  ", c.Explanation)
		if v := atPercentileWords(c.Predicted); v != "" {
			wrap(ew, "  predicted ", v)
		}
		if c.Check != nil {
			wrap(ew, "  check: ", c.Check.Summary)
		}
		fmt.Fprintln(ew, "  ceilings (largest pool each allows; * binds):")
		for _, ce := range c.Ceilings {
			v := "unbounded"
			if ce.MaxPool != nil {
				v = strconv.Itoa(*ce.MaxPool)
			}
			if ce.Constraint == c.BindingConstraint {
				v += "*"
			}
			wrapIndent(ew, "    "+ce.Constraint+" "+v+": ", "      ", strings.TrimPrefix(ce.Detail, ce.Constraint+": "))
		}
		for _, r := range c.Remedies {
			wrap(ew, "  remedy: ", remedyWords(r))
		}
		for _, warn := range c.Warnings {
			wrap(ew, "  warning: ", warn)
		}
		if c.Cost != nil {
			wrap(ew, "  cost: ", costWords(c.Cost, classUnit(c)))
		}
	}
	if len(p.Windows) > 0 {
		fmt.Fprintln(ew, "\nwindows of the day (UTC), each planned apart:")
		for _, win := range p.Windows {
			wrap(ew, "  "+windowSpan(win)+": ", windowClasses(win))
		}
	}
	for _, q := range p.Quotas {
		fmt.Fprintf(ew, "\nkey %s: %s\n", q.Name, utilization(q.Utilization))
		if q.Cost != nil {
			wrap(ew, "  cost: ", costWords(q.Cost, keyUnit(p, q.Name)))
		}
	}
	if p.Cost != nil {
		fmt.Fprintln(ew)
		wrap(ew, "cost: ", strings.TrimPrefix(totalWords(p.Cost, planUnit(p)), "the plan costs "))
	}
	if p.Check != nil {
		fmt.Fprintln(ew)
		wrap(ew, "check: ", checkLine(p.Check))
	}
	for _, warn := range p.Warnings {
		wrap(ew, "warning: ", warn)
	}
	return ew.err
}

// Legend says what the plan table's columns mean; the table, the Markdown
// and the page print it under the table.
const Legend = "POOL is a cap: the most requests the class may have in flight. MIN is the least pool that " +
	"meets its SLO at its demand. FITS: the queueing model and the plan's own simulation (CHECK) both hold. " +
	"req/s is the demand against what the pool carries running flat out."

// rates is a class's demand against its pool's capacity, "2 / 5.11", or
// the capacity alone without a demand; an agent task class's in tasks,
// "0.8 / 1.42 tasks/s", as its demand and pool count them.
func rates(c plan.ClassPlan) string {
	s := "- / " + fmtNum(c.Predicted.ThroughputRPS)
	if d := c.Predicted.OfferedRPS; d > 0 {
		s = fmtNum(d) + " / " + fmtNum(c.Predicted.ThroughputRPS)
	}
	if c.Task != nil {
		s += " tasks/s"
	}
	return s
}

// e2eCell is a class's E2E p95 for the plan's tables; an agent task
// class's is a whole task's, "124,186.7 ms a task", as its SLO's
// task_e2e_ms holds it.
func e2eCell(c plan.ClassPlan) string {
	v := msOrDash(c.Predicted.E2EP95Ms)
	if c.Task != nil && c.Predicted.E2EP95Ms != nil {
		v += " a task"
	}
	return v
}

// fitWord is whether a class fits, - when its plan was not checked.
func fitWord(fits *bool) string {
	if fits == nil {
		return "-"
	}
	return yesNo(*fits)
}

// checkWord is a class's check in a word: holds, breaks, or - when the
// plan was not checked.
func checkWord(c *plan.ClassCheck) string {
	switch {
	case c == nil:
		return "-"
	case c.Holds:
		return "holds"
	}
	return "BREAKS"
}

// checkLine is the plan's check in words: its verdict and its runs.
func checkLine(c *plan.Check) string {
	runs := make([]string, len(c.Runs))
	for k, r := range c.Runs {
		runs[k] = fmt.Sprintf("%s s, %s events", fmtNum(r.DurationS), fmtNum(float64(r.Events)))
		if len(c.Runs) > 1 || r.StartHour != 0 {
			runs[k] = fmt.Sprintf("%s s from %s UTC, %s events", fmtNum(r.DurationS), clock(r.StartHour), fmtNum(float64(r.Events)))
		}
	}
	s := c.Summary + " (seeded simulation of the plan: " + strings.Join(runs, "; ") + ")"
	if c.Rounds > 0 {
		s += fmt.Sprintf("; min_pool raised in %d round(s)", c.Rounds)
	}
	return s
}

// windowSpan is a window of the day, "22:00–04:00".
func windowSpan(w plan.WindowPlan) string {
	return clock(w.StartHour) + "–" + clock(w.StartHour+w.Hours)
}

// windowClasses lists a window's classes with the pool each gets there.
func windowClasses(w plan.WindowPlan) string {
	parts := make([]string, len(w.Classes))
	for k, c := range w.Classes {
		parts[k] = fmt.Sprintf("%s pool %d (%s)", c.Name, c.Pool, c.BindingConstraint)
		if c.SetsPool {
			parts[k] += ", sets its pool"
		}
	}
	return strings.Join(parts, "; ")
}

// clock writes hours after midnight as HH:MM.
func clock(h float64) string {
	m := int(math.Round(h * 60))
	return fmt.Sprintf("%02d:%02d", m/60%24, m%60)
}

// wrap writes text after a prefix, folding at word boundaries so that no
// line is wider than Width; continuation lines are indented like the text.
func wrap(w io.Writer, prefix, text string) {
	wrapIndent(w, prefix, strings.Repeat(" ", len([]rune(prefix))), text)
}

// wrapIndent is wrap with continuation lines indented by indent.
func wrapIndent(w io.Writer, prefix, indent, text string) {
	line := prefix
	empty := true
	for _, word := range strings.Fields(text) {
		if !empty && len([]rune(line))+1+len([]rune(word)) > Width {
			fmt.Fprintln(w, line)
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	fmt.Fprintln(w, line)
}

func utilization(u map[string]float64) string {
	var parts []string
	for _, d := range scenario.DimensionNames() {
		if v, ok := u[d]; ok {
			parts = append(parts, fmt.Sprintf("%s %.1f %%", d, v*100))
		}
	}
	return "expected use " + strings.Join(parts, ", ")
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// clipApart clips each name to n characters as clip does, keeping names
// that differ apart in a table: names whose clips would read alike keep
// their start and their end around the "…" (custome…e-west-a beside
// custome…e-west-b), and whole when even that reads alike.
func clipApart(names []string, n int) []string {
	out := make([]string, len(names))
	alike := func(f func(string) string, i int) bool {
		return slices.ContainsFunc(names, func(o string) bool { return o != names[i] && f(o) == f(names[i]) })
	}
	head := func(s string) string { return clip(s, n) }
	ends := func(s string) string {
		r := []rune(s)
		if len(r) <= n {
			return s
		}
		return string(r[:(n-1)/2]) + "…" + string(r[len(r)-n/2:])
	}
	for i, name := range names {
		switch {
		case !alike(head, i):
			out[i] = head(name)
		case !alike(ends, i):
			out[i] = ends(name)
		default:
			out[i] = name
		}
	}
	return out
}

func intOrDash(p *int) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(*p)
}

func msOrDash(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmtNum(*p) + " ms"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

// fmtNum formats a number with thousands separators and at most two
// decimals, or with two significant digits when it is too small for two
// decimals (0.001 req/s is not none).
func fmtNum(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if v != 0 && strings.TrimPrefix(s, "-") == "0" {
		// Too small for two decimals: two significant digits, rather than
		// a 0 (or -0) that reads as none.
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	out := b.String()
	if hasFrac {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}

// errWriter remembers the first write error so that renderers can write
// freely and report it once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
