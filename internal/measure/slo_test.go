package measure

import (
	"strings"
	"testing"
)

func TestParseTargets(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Targets
	}{
		{"ttft:500ms,tpot:50ms,e2e:10s", Targets{TTFTMs: 500, TPOTMs: 50, E2EMs: 10_000}},
		{"ttft:500", Targets{TTFTMs: 500}},
		{" E2E : 1.5s , tpot:12.5 ", Targets{TPOTMs: 12.5, E2EMs: 1500}},
		{"tpot:250us", Targets{TPOTMs: 0.25}},
	} {
		got, err := ParseTargets(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseTargets(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if back, err := ParseTargets(got.String()); err != nil || back != got {
			t.Errorf("%q does not read back: %+v, %v", got.String(), back, err)
		}
	}
	for in, complaint := range map[string]string{
		"":                "no targets",
		"ttft":            "NAME:VALUE",
		"itl:5ms":         "unknown target",
		"ttft:1s,ttft:2s": "twice",
		"ttft:-5ms":       "not a positive time",
		"ttft:0":          "not a positive time",
		"e2e:soon":        "neither a duration",
		"ttft:Inf":        "ttft: Inf is beyond the longest target, 1h0m0s",
		"e2e:2h":          "e2e: 2h is beyond the longest target, 1h0m0s",
		"tpot:3600001":    "tpot: 3600001 is beyond the longest target, 1h0m0s",
		"ttft:NaN":        "ttft: NaN is not a positive time",
	} {
		if _, err := ParseTargets(in); err == nil || !strings.Contains(err.Error(), complaint) {
			t.Errorf("ParseTargets(%q): %v, want an error saying %q", in, err, complaint)
		}
	}
}

func TestSLOCheck(t *testing.T) {
	if errs := (Targets{TTFTMs: 500, E2EMs: MaxSLOMs}).Check("slo"); len(errs) != 0 {
		t.Errorf("a valid SLO: %v", errs)
	}
	errs := Targets{TTFTMs: -1, TPOTMs: MaxSLOMs + 1}.Check("slo")
	if len(errs) != 2 || errs[0].Path != "slo.ttft_ms" || errs[1].Path != "slo.tpot_ms" {
		t.Errorf("problems %v, want one at slo.ttft_ms and one at slo.tpot_ms", errs)
	}
}

// TestSLOMet: a request meets the SLO when it succeeded and met every
// target given at once; one output token has no TPOT and meets a TPOT
// target, as vLLM counts it.
func TestSLOMet(t *testing.T) {
	slo := Targets{TTFTMs: 500, TPOTMs: 50, E2EMs: 10_000}
	ok := func(ttft, e2e float64, out int) Record {
		return Record{OK: true, TTFTMs: ttft, E2EMs: e2e, OutputTokens: out}
	}
	for _, tc := range []struct {
		name string
		r    Record
		want bool
	}{
		{"every target met", ok(400, 4400, 81), true},     // TPOT (4400−400)/80 = 50
		{"TTFT above", ok(501, 4400, 81), false},          // TTFT 501 > 500
		{"TPOT above", ok(400, 4481, 81), false},          // TPOT 51.0125 > 50
		{"E2E above", ok(400, 10_001, 1000), false},       // E2E above 10 s, TPOT 9.6
		{"one token, no TPOT", ok(400, 400, 1), true},     // no TPOT to judge
		{"a failure", Record{TTFTMs: 1, E2EMs: 1}, false}, // not OK
	} {
		if got := slo.Met(tc.r); got != tc.want {
			t.Errorf("%s: Met = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !(Targets{}).Met(ok(1e6, 1e7, 2)) {
		t.Error("an SLO without targets refused a success")
	}
	g := Goal{DeadlineMs: 4000, SLO: Targets{TTFTMs: 500}}
	if g.Good(ok(400, 4400, 81)) || !g.Good(ok(400, 3900, 81)) {
		t.Error("a goal ignored its deadline")
	}
}
