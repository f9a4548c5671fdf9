package report

import (
	"bytes"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/simulate"
	"github.com/plannerdev/planner/internal/testutil"
)

// TestRecordCardCarriesEveryField: a record card with every field set
// comes back from its JSON document field for field: the document the
// API serves.
func TestRecordCardCarriesEveryField(t *testing.T) {
	testutil.Carried(t, testutil.JSONRoundTrip[RecordCard])
}

// TestDataOutputsCarryEveryField: what planner plan and planner simulate
// print with -o json and -o yaml reads back as the plan and the
// simulation they were given, field for field.
func TestDataOutputsCarryEveryField(t *testing.T) {
	for _, format := range []string{FormatJSON, FormatYAML} {
		t.Run("plan "+format, func(t *testing.T) {
			testutil.Carried(t, func(t testing.TB, p plan.Plan) plan.Plan {
				var buf bytes.Buffer
				if err := WritePlan(&buf, &p, format); err != nil {
					t.Fatal(err)
				}
				return readData[plan.Plan](t, buf.Bytes())
			})
		})
		t.Run("simulation "+format, func(t *testing.T) {
			testutil.Carried(t, func(t testing.TB, s simulate.Simulation) simulate.Simulation {
				var buf bytes.Buffer
				if err := WriteData(&buf, &s, format); err != nil {
					t.Fatal(err)
				}
				return readData[simulate.Simulation](t, buf.Bytes())
			})
		})
	}
}

// readData reads a JSON or YAML document as a T.
func readData[T any](t testing.TB, doc []byte) T {
	t.Helper()
	var v T
	if err := yaml.UnmarshalStrict(doc, &v); err != nil {
		t.Fatalf("%v:\n%.300s", err, doc)
	}
	return v
}
