package store

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/testutil"
)

// v1Rows are plans and a probe as the release before schema_version stored
// them: the plans of every shipped example, one backed by a probe of
// planner sim whose analysis has a knee and a USL fit.
const v1Rows = "testdata/v1/rows.json"

// TestVersion1DocumentsRead: rows stored before documents carried a
// schema version read back as the same plans and analysis, field for
// field: each document, written again as version 2, is byte for byte what
// that release stored but for its schema_version.
func TestVersion1DocumentsRead(t *testing.T) {
	eachBackend(t, func(t *testing.T, db string) {
		s := openDB(t, db)
		testutil.InsertRows(t, s.db, v1Rows, "probes", "plans")
		ctx := context.Background()
		var stored []struct{ ID, Plan string }
		rows, err := s.db.QueryContext(ctx, `SELECT id, plan FROM plans ORDER BY seq`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var r struct{ ID, Plan string }
			if err := rows.Scan(&r.ID, &r.Plan); err != nil {
				t.Fatal(err)
			}
			stored = append(stored, r)
		}
		rows.Close()
		if len(stored) != 6 {
			t.Fatalf("%d fixture plans, want 6", len(stored))
		}
		for _, r := range stored {
			if strings.Contains(r.Plan, "schema_version") {
				t.Fatalf("plan %s of the fixture already has a schema version", r.ID)
			}
			p, err := s.GetPlan(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			b, err := encodePlan(p.Plan)
			if got := unversioned(t, b, err); got != r.Plan {
				t.Errorf("plan %s (%s) reads differently:\n got %.300s\nwant %.300s", r.ID, p.Name, got, r.Plan)
			}
		}
		var result string
		if err := s.db.QueryRowContext(ctx, `SELECT result FROM probes`).Scan(&result); err != nil {
			t.Fatal(err)
		}
		runs, _, err := s.ListProbes(ctx, ListOptions{})
		if err != nil || len(runs) != 1 || runs[0].Result == nil {
			t.Fatalf("probes %+v, %v", runs, err)
		}
		a := runs[0].Result.Analysis
		b, err := encodeResult(a)
		if got := unversioned(t, b, err); got != result {
			t.Errorf("the probe's analysis reads differently:\n got %.300s\nwant %.300s", got, result)
		}
		if a.Knee == nil || a.USL == nil || a.USL.Peak == nil || a.USL.Gamma == 0 || len(a.Steps) != 4 {
			t.Errorf("analysis %+v", a)
		}
	})
}

// unversioned is a version 2 document without its schema_version.
func unversioned(t *testing.T, b []byte, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	const v = `"schema_version":2,`
	if !strings.HasPrefix(string(b), "{"+v) {
		t.Fatalf("document without schema_version 2: %.100s", b)
	}
	return "{" + strings.TrimPrefix(string(b), "{"+v)
}

// TestDocumentsCarryTheirVersion: what the store writes has
// schema_version 2 and reads back as it was; a document of a version this
// binary does not know is refused, naming the version, not misread.
func TestDocumentsCarryTheirVersion(t *testing.T) {
	eachBackend(t, func(t *testing.T, db string) {
		s := openDB(t, db)
		ctx := context.Background()
		in := examplePlan(t, "chat-and-batch")
		id, err := s.SavePlan(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		probeID, err := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		peak := 12.5
		knee := 8
		res := measure.Result{Steps: []measure.Step{{Concurrency: 1, Requests: 4, OK: 4, GoodputRPS: 2.5, RateRPS: 1}}, Knee: &knee,
			USL: &measure.USLFit{Peak: &peak}, Notes: []string{"a note"}}
		res.USL.Alpha, res.USL.Beta, res.USL.Gamma, res.USL.R2 = 0.01, 0.002, 3.5, 0.99
		if err := s.SaveProbeResult(ctx, probeID, ProbeResult{Analysis: res}); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{`SELECT plan FROM plans`, `SELECT result FROM probes`} {
			var doc string
			if err := s.db.QueryRowContext(ctx, q).Scan(&doc); err != nil {
				t.Fatal(err)
			}
			var v struct {
				SchemaVersion int `json:"schema_version"`
			}
			if err := json.Unmarshal([]byte(doc), &v); err != nil || v.SchemaVersion != 2 {
				t.Errorf("%s: schema_version %d (%v)", q, v.SchemaVersion, err)
			}
		}
		got, err := s.GetPlan(ctx, id)
		if err != nil || !reflect.DeepEqual(got.Plan, in.Plan) {
			t.Errorf("the plan changed in the store (%v)", err)
		}
		run, err := s.GetProbe(ctx, probeID)
		if err != nil || !reflect.DeepEqual(run.Result.Analysis, res) {
			t.Errorf("the analysis changed in the store: %+v (%v)", run.Result, err)
		}

		if _, err := s.db.ExecContext(ctx, `UPDATE plans SET plan = '{"schema_version":3,"classes":[]}'`); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetPlan(ctx, id); err == nil || !strings.Contains(err.Error(), "schema version 3 is newer") {
			t.Errorf("a newer plan document: %v", err)
		}
		if _, err := s.db.ExecContext(ctx, `UPDATE probes SET result = '{"schema_version":9,"steps":[]}'`); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetProbe(ctx, probeID); err == nil || !strings.Contains(err.Error(), "schema version 9 is newer") {
			t.Errorf("a newer analysis document: %v", err)
		}
	})
}

// TestPlanDocumentKeepsEveryPart: a plan with every optional part (ties,
// batch with daily limits, shedding, remedies, endpoint loads and
// reservations) survives the store unchanged.
func TestPlanDocumentKeepsEveryPart(t *testing.T) {
	one, two := 1, 2
	f := 1.5
	p := plan.Plan{
		Classes: []plan.ClassPlan{{
			Name: "c", TiedConstraints: []string{"rpm"}, MinPool: &two, Ceilings: []plan.Ceiling{{Constraint: "tpm", MaxPool: &one, Detail: "d"}},
			Predicted: plan.Predicted{TTFTP95Ms: &f, OfferedRPS: 2, Extrapolated: true, Utilization: map[string]float64{"rpm": 0.5}},
			Admission: plan.Admission{MaxQueueWaitMs: &f, Status: 429, RetryAfterS: 2}, Retry: plan.Retry{HonorHeaders: []string{"retry-after"}},
			Batch: &plan.BatchPlan{Requests: 10, CompletionHours: &f, DailyLimits: []plan.DailyCheck{{Constraint: "rpd", Needed: 3, OK: true}}},
			Shed:  &plan.Shed{SustainableRPS: 1, ShedRPS: 0.5}, Remedies: []plan.Remedy{{Constraint: "tpm", Value: 9, Path: "/quotas/0/tpm", Class: "o"}},
			Warnings: []string{}, Pacing: plan.Pacing{RateRPS: 2, Burst: 3}, Adaptive: plan.Adaptive{Floor: 1, Ceiling: 4},
		}},
		Quotas: []plan.QuotaPlan{{Name: "k", Allocations: []plan.Allocation{{Class: "c", Allotted: map[string]float64{"rpm": 1},
			Reserved: map[string]float64{"rpm": 0.5}}}}},
		Endpoints: []plan.EndpointPlan{{Name: "default", Knee: &two, Budget: &one, Load: &two, BudgetConstraint: "knee",
			Allocations: []plan.EndpointAllocation{{Class: "c", Pool: 1, Allotted: &f, Reserved: &f}}}},
	}
	b, err := encodePlan(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodePlan(b)
	if err != nil || !reflect.DeepEqual(got, p) {
		t.Errorf("round trip:\n got %+v\nwant %+v (%v)", got, p, err)
	}
}

// TestStoredDocumentsCarryEveryField: a plan, a probe's analysis and a
// request row with every field set (testutil.Fill) read back from the
// store field for field, so that a field the engine or the probe adds is
// kept or fails here, named.
func TestStoredDocumentsCarryEveryField(t *testing.T) {
	eachBackend(t, func(t *testing.T, db string) {
		s := openDB(t, db)
		ctx := context.Background()
		t.Run("plan", func(t *testing.T) {
			testutil.Carried(t, func(t testing.TB, p plan.Plan) plan.Plan {
				stored := examplePlan(t, "chat")
				stored.Plan = p
				id, err := s.SavePlan(ctx, stored)
				if err != nil {
					t.Fatal(err)
				}
				got, err := s.GetPlan(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				return got.Plan
			})
		})
		t.Run("analysis", func(t *testing.T) {
			testutil.Carried(t, func(t testing.TB, r measure.Result) measure.Result {
				id, err := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.SaveProbeResult(ctx, id, ProbeResult{Analysis: r}); err != nil {
					t.Fatal(err)
				}
				run, err := s.GetProbe(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				return run.Result.Analysis
			})
		})
		t.Run("request row", func(t *testing.T) {
			testutil.Carried(t, func(t testing.TB, r measure.Record) measure.Record {
				id, err := s.CreateProbe(ctx, ProbeRun{Status: StatusRunning, BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.AppendRecords(ctx, id, []measure.Record{r}); err != nil {
					t.Fatal(err)
				}
				got, err := s.Records(ctx, id)
				if err != nil || len(got) != 1 {
					t.Fatalf("%d rows, %v", len(got), err)
				}
				return got[0]
			})
		})
	})
}
