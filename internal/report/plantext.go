package report

import (
	"fmt"
	"io"
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
	fmt.Fprintln(tw, "CLASS\tMODE\tKEY\tPOOL\tBINDING\tMIN\tFITS\tTTFT p95\tE2E p95\treq/s")
	for _, c := range p.Classes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n",
			clip(c.Name, 16), c.Mode, clip(c.Quota, 12), c.Pool, c.BindingConstraint, intOrDash(c.MinPool),
			yesNo(c.Feasible), msOrDash(c.Predicted.TTFTP95Ms), msOrDash(c.Predicted.E2EP95Ms), fmtNum(c.Predicted.ThroughputRPS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range p.Classes {
		fmt.Fprintf(ew, "\n%s\n", c.Name)
		wrap(ew, "  ", c.Explanation)
		if v := atPercentileWords(c.Predicted); v != "" {
			wrap(ew, "  predicted ", v)
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
			wrap(ew, "  cost: ", costWords(c.Cost))
		}
	}
	for _, q := range p.Quotas {
		fmt.Fprintf(ew, "\nkey %s: %s\n", q.Name, utilization(q.Utilization))
		if q.Cost != nil {
			wrap(ew, "  cost: ", costWords(q.Cost))
		}
	}
	if p.Cost != nil {
		fmt.Fprintln(ew)
		wrap(ew, "cost: ", strings.TrimPrefix(totalWords(p.Cost), "the plan costs "))
	}
	for _, warn := range p.Warnings {
		wrap(ew, "warning: ", warn)
	}
	return ew.err
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
// decimals.
func fmtNum(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
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
