package simulate

import (
	"testing"

	"github.com/plannerdev/planner/internal/testutil"
)

// TestSimulationCarriesEveryField: a simulation with every field set
// comes back from its JSON document field for field: the document that
// planner simulate -o json writes and the API serves.
func TestSimulationCarriesEveryField(t *testing.T) {
	testutil.Carried(t, testutil.JSONRoundTrip[Simulation])
}
