package plan

import (
	"testing"

	"github.com/plannerdev/planner/internal/testutil"
)

// TestDocumentsCarryEveryField: a plan, a what-if grid and a prediction
// with every field set come back from their JSON document field for
// field. The command line, the API and the store carry these types as
// they are, so a field that JSON would leave out (json:"-", unexported, a
// clash of names) fails here, named.
func TestDocumentsCarryEveryField(t *testing.T) {
	t.Run("plan", func(t *testing.T) { testutil.Carried(t, testutil.JSONRoundTrip[Plan]) })
	t.Run("what-if", func(t *testing.T) { testutil.Carried(t, testutil.JSONRoundTrip[WhatIf]) })
	t.Run("prediction", func(t *testing.T) { testutil.Carried(t, testutil.JSONRoundTrip[Prediction]) })
}
