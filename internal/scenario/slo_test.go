package scenario

import (
	"errors"
	"strings"
	"testing"
)

func TestSLOFormsAndPercentile(t *testing.T) {
	withSLO := func(slo string) string {
		return strings.Replace(good, "slo: {ttft_p95_ms: 1500, e2e_p95_ms: 12000}", "slo: "+slo, 1)
	}
	s, err := Parse([]byte(withSLO("{ttft_ms: 800, e2e_ms: 9000, tpot_ms: 40, percentile: 99}")))
	if err != nil {
		t.Fatal(err)
	}
	if slo := *s.Classes[0].SLO; slo.TTFT() != 800 || slo.E2E() != 9000 || slo.TPOT() != 40 || slo.At() != 99 {
		t.Fatalf("new form read as %+v", slo)
	}
	s, err = Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if slo := *s.Classes[0].SLO; slo.TTFT() != 1500 || slo.E2E() != 12000 || slo.TPOT() != 0 || slo.At() != 95 {
		t.Fatalf("older form read as %+v: the targets at p95", slo)
	}
	for _, tc := range []struct{ slo, path, says string }{
		{"{ttft_p95_ms: 1500, ttft_ms: 800}", "classes[0].slo.ttft_ms", "not both"},
		{"{e2e_p95_ms: 9000, percentile: 99}", "classes[0].slo.percentile", "not both"},
		{"{ttft_p95_ms: 1500, tpot_ms: 30}", "classes[0].slo.tpot_ms", "not both"},
		{"{ttft_ms: 800, percentile: 40}", "classes[0].slo.percentile", ""},
		{"{ttft_ms: 800, percentile: 99.95}", "classes[0].slo.percentile", ""},
	} {
		_, err := Parse([]byte(withSLO(tc.slo)))
		var errs Errors
		if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Path != tc.path || !strings.Contains(errs[0].Message, tc.says) {
			t.Errorf("slo %s: got %v, want one problem at %s", tc.slo, err, tc.path)
		}
	}
}
