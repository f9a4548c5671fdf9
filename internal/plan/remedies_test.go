package plan

import (
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

// TestLimitRemedyIsWhatTheClassNeedsOnceRaised: docs/examples/chat.yaml's
// chat (2 req/s) on a key of 1 rpm waits a minute a request at its
// bucket, so its min_pool there is 119, and a raise sized for 119 in
// flight flat out asked for 2,045 rpm and three times the key's tpm. Once
// rpm is raised the wait goes and the chat needs far less: its remedy is
// one raise of rpm, within limitMargin of the least rpm that makes it
// feasible (the chat fits with it, and not with a tenth less), and the
// key's tpm, which it fits within then, is left as it is.
func TestLimitRemedyIsWhatTheClassNeedsOnceRaised(t *testing.T) {
	s := example(t, "chat")
	s.Quotas[0].RPM = 1
	cp := mustPlan(t, s).Classes[0]
	if cp.Feasible || len(cp.Remedies) != 1 || cp.Remedies[0].Path != "/quotas/0/rpm" {
		t.Fatalf("feasible %v, remedies %+v: want one raise of rpm", cp.Feasible, cp.Remedies)
	}
	v := cp.Remedies[0].Value
	at := func(rpm float64) bool {
		c := s
		c.Quotas = append([]scenario.Quota(nil), s.Quotas...)
		c.Quotas[0].RPM = rpm
		return mustPlan(t, c).Classes[0].Feasible
	}
	if !at(v) || at(0.9*v) || v > 1000 {
		t.Errorf("rpm remedy %v: feasible there %v, at a tenth less %v; want the least that fits, within %v, far below 2,045", v, at(v), at(0.9*v), limitMargin)
	}
}
