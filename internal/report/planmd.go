package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
)

// WriteMarkdown writes a plan as a Markdown document: a summary table, then
// for each class its explanation, ceilings, remedies (with what they cost)
// and warnings, then the division of each key and, with prices, the cost.
func WriteMarkdown(w io.Writer, p *plan.Plan) error {
	ew := &errWriter{w: w}
	fmt.Fprintln(ew, "# Capacity plan")
	fmt.Fprintln(ew)
	fmt.Fprintln(ew, "| Class | Mode | Key | Pool (cap) | Min pool (needed) | Binding | Fits | Check | TTFT p95 | E2E p95 | req/s (demand / capacity) |")
	fmt.Fprintln(ew, "|---|---|---|--:|--:|---|---|---|--:|--:|--:|")
	for _, c := range p.Classes {
		fmt.Fprintf(ew, "| %s | %s | %s | %d | %s | **%s** | %s | %s | %s | %s | %s |\n",
			mdText(c.Name), c.Mode, mdText(c.Quota), c.Pool, intOrDash(c.MinPool), c.BindingConstraint,
			fitWord(c.Fits), checkWord(c.Check), msOrDash(c.Predicted.TTFTP95Ms), e2eCell(c), rates(c))
	}
	fmt.Fprintf(ew, "\n%s\n", Legend)
	if p.Check != nil {
		fmt.Fprintf(ew, "\nCheck: %s.\n", mdProse(checkLine(p.Check)))
	}
	for _, c := range p.Classes {
		fmt.Fprintf(ew, "\n## %s\n\n%s\n\n", mdText(c.Name), mdProse(c.Explanation))
		if v := atPercentileWords(c.Predicted); v != "" {
			fmt.Fprintf(ew, "Predicted %s.\n\n", v)
		}
		if c.Check != nil {
			fmt.Fprintf(ew, "Check: %s.\n\n", mdProse(c.Check.Summary))
		}
		fmt.Fprintln(ew, "| Constraint | Max pool | Derivation |")
		fmt.Fprintln(ew, "|---|--:|---|")
		for _, ce := range c.Ceilings {
			name := ce.Constraint
			if name == c.BindingConstraint {
				name = "**" + name + "** (binds)"
			}
			fmt.Fprintf(ew, "| %s | %s | %s |\n", name, intOrDash(ce.MaxPool), mdText(ce.Detail))
		}
		fmt.Fprintf(ew, "\n%s\n", mdText(clientSettings(c)))
		if v := classShedRule(c); v != "" {
			fmt.Fprintln(ew, mdProse(v))
		}
		if len(c.Remedies) > 0 {
			fmt.Fprintln(ew, "\nTo make it fit:")
			for _, r := range c.Remedies {
				fmt.Fprintf(ew, "- %s\n", mdText(remedyWords(r)))
			}
		}
		if len(c.Warnings) > 0 {
			fmt.Fprintln(ew, "\nWarnings:")
			for _, warn := range c.Warnings {
				fmt.Fprintf(ew, "- %s\n", mdText(warn))
			}
		}
	}
	if len(p.Windows) > 0 {
		fmt.Fprintln(ew, "\n## Windows of the day (UTC)")
		fmt.Fprintln(ew)
		for _, win := range p.Windows {
			fmt.Fprintf(ew, "- %s: %s\n", windowSpan(win), mdText(windowClasses(win)))
		}
	}
	for _, q := range p.Quotas {
		fmt.Fprintf(ew, "\n## Key %s\n\n%s.\n\n", mdText(q.Name), strings.ToUpper(utilization(q.Utilization)[:1])+utilization(q.Utilization)[1:])
		fmt.Fprintln(ew, "| Class | Allotted | Reserved |")
		fmt.Fprintln(ew, "|---|---|---|")
		for _, a := range q.Allocations {
			fmt.Fprintf(ew, "| %s | %s | %s |\n", mdText(a.Class), limits(a.Allotted), limits(a.Reserved))
		}
	}
	writeCostMarkdown(ew, p)
	if len(p.Warnings) > 0 {
		fmt.Fprintln(ew, "\n## Warnings")
		fmt.Fprintln(ew)
		for _, warn := range p.Warnings {
			fmt.Fprintf(ew, "- %s\n", mdText(warn))
		}
	}
	return ew.err
}

func limits(m map[string]float64) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, d := range scenario.DimensionNames() {
		if v, ok := m[d]; ok {
			parts = append(parts, d+" "+fmtNum(v))
		}
	}
	return strings.Join(parts, ", ")
}
