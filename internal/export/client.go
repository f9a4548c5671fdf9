package export

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
)

// ClientSettingsVersion is the version of the client settings file: it
// changes when a field changes meaning or goes away.
const ClientSettingsVersion = 1

// clientSettings is the client settings file (docs/exports.md, "Client
// settings"): for every class, what a client sets in its SDK.
type clientSettings struct {
	Version int           `json:"version"`
	Classes []clientClass `json:"classes"`
}

// clientClass is one class's settings: the plan's fields, as it has them.
type clientClass struct {
	Name      string `json:"name"`
	Mode      string `json:"mode"`
	Quota     string `json:"quota"`
	Endpoint  string `json:"endpoint"`
	Feasible  bool   `json:"feasible"`
	MaxTokens int    `json:"max_tokens,omitempty"`
	// MaxInFlight is the pool: 0 when no pool fits, and the class sends
	// nothing.
	MaxInFlight int            `json:"max_in_flight"`
	Pacing      plan.Pacing    `json:"pacing"`
	Admission   plan.Admission `json:"admission"`
	Retry       plan.Retry     `json:"retry"`
	AIMD        plan.Adaptive  `json:"aimd"`
}

// fits is whether the plan fits class cp: by the queueing model and by
// its own simulation, or by the model alone in a plan stored without a
// check.
func fits(cp plan.ClassPlan) bool {
	if cp.Fits != nil {
		return *cp.Fits
	}
	return cp.Feasible
}

// writeClient writes the client settings file as indented JSON.
func writeClient(w io.Writer, sc scenario.Scenario, p *plan.Plan) error {
	classes, err := classesOf(sc, p)
	if err != nil {
		return err
	}
	out := clientSettings{Version: ClientSettingsVersion, Classes: make([]clientClass, 0, len(classes))}
	for _, c := range classes {
		cp := c.plan
		out.Classes = append(out.Classes, clientClass{
			Name: cp.Name, Mode: cp.Mode, Quota: cp.Quota, Endpoint: cp.Endpoint, Feasible: fits(cp), MaxTokens: c.spec.MaxTokens,
			MaxInFlight: cp.Pool, Pacing: cp.Pacing, Admission: cp.Admission, Retry: cp.Retry, AIMD: cp.Adaptive,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("encode the client settings: %w", err)
	}
	return nil
}
