package store

import (
	"encoding/json"
	"fmt"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/plan"
)

// The store keeps a plan and a probe's analysis as JSON documents: the
// engine's own types (plan.Plan, measure.Result) in an envelope that
// carries schema_version, so that every field the engine adds is stored
// and read back. Version 1 is the unversioned document that releases
// before the version wrote, with the same names but for one (stepsV1); a
// document of a version this binary does not know (written by a newer
// release) is refused rather than misread. A change of names in the
// engine's JSON is a new version, with the reader still decoding the old
// ones: TestVersion1DocumentsRead reads the documents an earlier release
// stored and writes them again byte for byte, so a renamed field fails it.
const schemaVersion = 2

// version is the schema_version of a stored document.
type version struct {
	SchemaVersion int `json:"schema_version,omitempty"`
}

// check accepts the versions this binary reads: 1 (no schema_version) and
// schemaVersion.
func (v version) check() error {
	switch v.SchemaVersion {
	case 0, 1, schemaVersion:
		return nil
	}
	return fmt.Errorf("schema version %d is newer than this planner reads (%d): use a newer planner", v.SchemaVersion, schemaVersion)
}

// planDoc is a stored plan: its schema_version, then the plan's members.
type planDoc struct {
	version
	plan.Plan
}

// resultDoc is a stored probe analysis: its schema_version, then the
// result's members.
type resultDoc struct {
	version
	measure.Result
}

// stepsV1 are the members of version 1's steps that later versions name
// otherwise: goodput_from_throughput is goodput_estimated.
type stepsV1 struct {
	Steps []struct {
		GoodputFromThroughput bool `json:"goodput_from_throughput"`
	} `json:"steps"`
}

// encodePlan is the stored document of a plan.
func encodePlan(p plan.Plan) ([]byte, error) {
	return json.Marshal(planDoc{version{schemaVersion}, p})
}

// decodePlan reads a stored plan document of any version this binary knows.
func decodePlan(b []byte) (plan.Plan, error) {
	var d planDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return plan.Plan{}, err
	}
	if err := d.check(); err != nil {
		return plan.Plan{}, err
	}
	return d.Plan, nil
}

// encodeResult is the stored document of a probe's analysis.
func encodeResult(r measure.Result) ([]byte, error) {
	return json.Marshal(resultDoc{version{schemaVersion}, r})
}

// decodeResult reads a stored analysis document of any version this binary
// knows.
func decodeResult(b []byte) (measure.Result, error) {
	var d resultDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return measure.Result{}, err
	}
	if err := d.check(); err != nil {
		return measure.Result{}, err
	}
	if d.SchemaVersion < 2 {
		var v1 stepsV1
		if err := json.Unmarshal(b, &v1); err != nil {
			return measure.Result{}, err
		}
		for i, s := range v1.Steps {
			d.Steps[i].GoodputEstimated = d.Steps[i].GoodputEstimated || s.GoodputFromThroughput
		}
	}
	return d.Result, nil
}
