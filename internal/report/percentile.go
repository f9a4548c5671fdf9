package report

import (
	"strings"

	"github.com/plannerdev/planner/internal/plan"
)

// atPercentileWords says what a class is predicted to do at the percentile
// its SLO names, "" for a class whose SLO names none: "at p99: TTFT 1,200
// ms, E2E 9,000 ms, TPOT 31 ms".
func atPercentileWords(pr plan.Predicted) string {
	if pr.Percentile == nil {
		return ""
	}
	parts := []string{}
	for _, v := range []struct {
		name string
		ms   *float64
	}{{"TTFT", pr.TTFTMsAtPercentile}, {"E2E", pr.E2EMsAtPercentile}, {"TPOT", pr.TPOTMsAtPercentile}} {
		if v.ms != nil {
			parts = append(parts, v.name+" "+fmtNum(*v.ms)+" ms")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "at p" + fmtNum(*pr.Percentile) + ": " + strings.Join(parts, ", ")
}
