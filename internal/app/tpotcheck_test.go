package app

import (
	"strings"
	"testing"
)

// TestTPOTTargetInTheCheck: a TPOT target above the TPOT distribution's
// p99 (lognormal, p50 20 ms and p95 40 ms: p99 about 54 ms) fits and its
// check holds, judging TPOT; one below it fits neither in the plan, where
// slo_tpot binds at 0 since no pool changes TPOT, nor in its check, and
// both name TPOT.
func TestTPOTTargetInTheCheck(t *testing.T) {
	for _, tc := range []struct {
		target string
		fits   bool
	}{{"70", true}, {"35", false}} {
		s := parse(t, `
quotas: [{name: k, rpm: 100000, tpm: 100000000}]
latency: {ttft_ms: {fixed: 400}, tpot_ms: {p50: 20, p95: 40}, knee: 200}
classes:
  - {name: c, quota: k, mode: interactive, demand: {rps: 2}, input_tokens: {fixed: 500}, output_tokens: {fixed: 101},
     slo: {tpot_ms: `+tc.target+`, percentile: 99}}
`)
		p := mustPlan(t, s)
		consistent(t, s, p)
		c := p.Classes[0]
		cc := c.Check
		if c.Fitting() != tc.fits || cc.Holds != tc.fits {
			t.Errorf("tpot_ms %s: fits %v, check holds %v, want %v: %+v", tc.target, c.Fitting(), cc.Holds, tc.fits, cc)
		}
		if tc.fits {
			if cc.TPOTP95Ms == nil || cc.TPOTP95Ms.Value < 38 || cc.TPOTP95Ms.Value > 42 {
				t.Errorf("tpot_ms %s: the check's TPOT p95 %+v, want about 40 ms", tc.target, cc.TPOTP95Ms)
			}
			if !strings.Contains(cc.Summary, "TPOT p99") {
				t.Errorf("tpot_ms %s: summary %q does not judge TPOT", tc.target, cc.Summary)
			}
			continue
		}
		var metrics []string
		for _, m := range cc.Misses {
			metrics = append(metrics, m.Metric)
		}
		if c.BindingConstraint != "slo_tpot" || c.Pool != 0 {
			t.Errorf("tpot_ms %s: binding %s at %d, want slo_tpot at 0", tc.target, c.BindingConstraint, c.Pool)
		}
		if !strings.Contains(strings.Join(metrics, ","), "tpot_ms_at_percentile") || !strings.Contains(cc.Summary, "TPOT SLO of 35 ms") {
			t.Errorf("tpot_ms %s: misses %q, summary %q: want TPOT named", tc.target, metrics, cc.Summary)
		}
		if !strings.Contains(strings.Join(c.Warnings, " "), "slo.tpot_ms") {
			t.Errorf("tpot_ms %s: the plan's warnings %q do not name slo.tpot_ms", tc.target, c.Warnings)
		}
	}
}
