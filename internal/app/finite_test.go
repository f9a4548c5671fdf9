package app

import (
	"math"
	"testing"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/plan"
)

func TestNonFinite(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"finite plan", &plan.Plan{Classes: []plan.ClassPlan{{Pacing: plan.Pacing{RateRPS: 1}}}}, ""},
		{"NaN field", &plan.Plan{Classes: []plan.ClassPlan{{}, {Pacing: plan.Pacing{RateRPS: nan}}}}, "classes[1].pacing.rate_rps"},
		{"Inf behind a pointer", &plan.Plan{Classes: []plan.ClassPlan{{Predicted: plan.Predicted{E2EP95Ms: &inf}}}}, "classes[0].predicted.e2e_p95_ms"},
		{"Inf in a map", &plan.Plan{Quotas: []plan.QuotaPlan{{Utilization: map[string]float64{"tpm": inf}}}}, "quotas[0].utilization.tpm"},
		{"nil pointers", &plan.Plan{Classes: []plan.ClassPlan{{MinPool: nil}}}, ""},
		{"NaN in embedded structs", &struct {
			Format string `json:"format"`
			measure.Result
		}{Result: measure.Result{USL: &measure.USLFit{USL: model.USL{Beta: nan}}}}, "usl.beta"},
	} {
		if got := NonFinite(tc.v); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
