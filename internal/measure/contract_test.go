package measure

import (
	"testing"

	"github.com/plannerdev/planner/internal/testutil"
)

// TestResultCarriesEveryField: an analysis with every field set, steps
// and intervals included, comes back from its JSON document field for
// field: the document that planner probe writes, the store keeps and the
// API serves.
func TestResultCarriesEveryField(t *testing.T) {
	testutil.Carried(t, testutil.JSONRoundTrip[Result])
}
