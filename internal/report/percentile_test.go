package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/testutil"
)

// TestPlanRenderingsShowThePercentile: a class whose SLO names p99 shows
// its predictions there in the table and the Markdown; one without shows
// nothing new.
func TestPlanRenderingsShowThePercentile(t *testing.T) {
	sc := testutil.Example(t, "chat")
	slo := sc.Classes[0].SLO
	sc.Classes[0].SLO = &scenario.SLO{TTFTMs: slo.TTFT(), E2EMs: 3 * slo.E2E(), Percentile: 99}
	p, err := plan.New(plan.Options{}).Plan(t.Context(), sc)
	if err != nil {
		t.Fatal(err)
	}
	pr := p.Classes[0].Predicted
	want := "at p99: TTFT " + fmtNum(*pr.TTFTMsAtPercentile) + " ms, E2E " + fmtNum(*pr.E2EMsAtPercentile) + " ms, TPOT " + fmtNum(*pr.TPOTMsAtPercentile) + " ms"
	var md, text bytes.Buffer
	if err := WriteMarkdown(&md, p); err != nil {
		t.Fatal(err)
	}
	if err := WriteTable(&text, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "Predicted "+want+".") || !strings.Contains(strings.Join(strings.Fields(text.String()), " "), "predicted "+want) {
		t.Errorf("renderings lack %q:\n%s\n%s", want, md.String(), text.String())
	}
	if got := atPercentileWords(plan.Predicted{}); got != "" {
		t.Errorf("a class without a percentile: %q", got)
	}
}
