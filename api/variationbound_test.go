package api

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/plannerdev/planner/internal/plan"
)

// TestVariationBoundIsTheEngines: the schema's bound on one variation's
// values and tiers is the engine's, which the command line holds too.
func TestVariationBoundIsTheEngines(t *testing.T) {
	for _, name := range []string{"Values", "Tiers"} {
		f, _ := reflect.TypeFor[Variation]().FieldByName(name)
		if got := f.Tag.Get("maxItems"); got != strconv.Itoa(plan.MaxVariationValues) {
			t.Errorf("%s: maxItems %q, want plan.MaxVariationValues %d", name, got, plan.MaxVariationValues)
		}
	}
}
