package verify

import (
	"testing"

	"github.com/plannerdev/planner/internal/testutil"
)

// TestReportCarriesEveryField: a validation report with every field set
// comes back from its JSON document field for field: the document that
// planner plan --validate -o json writes and the API serves.
func TestReportCarriesEveryField(t *testing.T) {
	testutil.Carried(t, testutil.JSONRoundTrip[Report])
}
