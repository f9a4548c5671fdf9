package api

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/report"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/simulate"
	"github.com/plannerdev/planner/internal/store"
)

// StoredPlan is a stored plan with its scenario.
type StoredPlan struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels"`
	CreatedAt time.Time         `json:"created_at"`
	ProbeID   string            `json:"probe_id,omitempty" doc:"The probe whose measurements back the plan."`
	Scenario  scenario.Scenario `json:"scenario"`
	Plan      plan.Plan         `json:"plan"`
}

// PlanSummary is a stored plan in a list: what it is and how each class
// came out.
type PlanSummary struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels"`
	CreatedAt time.Time         `json:"created_at"`
	ProbeID   string            `json:"probe_id,omitempty"`
	Classes   []ClassSummary    `json:"classes"`
}

// ClassSummary is one class of a stored plan.
type ClassSummary struct {
	Name              string `json:"name"`
	Pool              int    `json:"pool"`
	BindingConstraint string `json:"binding_constraint"`
	Feasible          bool   `json:"feasible"`
	Fits              *bool  `json:"fits,omitempty" doc:"Feasible and its plan's own simulation (check) holds, as the stored plan's class says; absent from a plan stored unchecked by an earlier release."`
}

// PlanList is one page of stored plans, newest first.
type PlanList struct {
	Items      []PlanSummary `json:"items"`
	NextCursor string        `json:"next_cursor,omitempty" doc:"Cursor of the next page; absent on the last page."`
}

type planListOutput struct {
	Body *PlanList
}

type planIDInput struct {
	ID string `path:"id" maxLength:"64" doc:"Id of a stored plan."`
}

type storedPlanOutput struct {
	Body *StoredPlan
}

type reportInput struct {
	ID        string       `path:"id" maxLength:"64" doc:"Id of a stored plan."`
	Format    reportFormat `query:"format" default:"html" doc:"html: one self-contained page with inline SVG charts; markdown (or md): Markdown with the same numbers in tables."`
	SimulateS float64      `query:"simulate_s" minimum:"0" maximum:"604800" doc:"Add a simulated run of the plan this many seconds long (at least 1), as POST /v1/simulations runs it with its defaults, with a time-series chart per class; 0, the default, adds none. At most the server's limits.simulation_max_duration."`
}

// Resolve refuses a simulate_s that is not a number: NaN passes the
// schema's bounds, as every comparison with it is false.
func (in *reportInput) Resolve(huma.Context) []error {
	if math.IsNaN(in.SimulateS) {
		return []error{&huma.ErrorDetail{Location: "query.simulate_s", Value: "NaN", Message: "must be a number of seconds"}}
	}
	return nil
}

// reportFormat is the format of a team report: html, or markdown under
// either of its names (report.FormatNames).
type reportFormat string

// Schema lists the names.
func (reportFormat) Schema(huma.Registry) *huma.Schema {
	return formatSchema(report.FormatHTML, report.FormatMarkdown)
}

// formatSchema is the schema of a format parameter that takes the given
// formats under every name that report.FormatNames gives them, the names
// the command line's -o takes.
func formatSchema(formats ...string) *huma.Schema {
	var enum []any
	for _, n := range report.FormatNames(formats...) {
		enum = append(enum, n)
	}
	return &huma.Schema{Type: huma.TypeString, Enum: enum}
}

// isMarkdown reports whether a format parameter's value names Markdown.
func isMarkdown(name string) bool {
	f, err := report.ParseFormat(name, []string{report.FormatMarkdown})
	return err == nil && f == report.FormatMarkdown
}

type documentOutput struct {
	ContentType string `header:"Content-Type"`
	Body        []byte
}

func (s *Server) registerSavedPlans() {
	register(s, huma.Operation{
		OperationID: "list-plans",
		Method:      http.MethodGet,
		Path:        "/v1/plans",
		Summary:     "List the stored plans",
		Description: "Returns one page of the plans stored with save, newest first: each with its id, name, labels, " +
			"creation time, backing probe and every class's pool, binding constraint, feasibility and whether it fits. Follow " +
			"next_cursor for the next page.",
		Tags:   []string{tagPlans},
		Errors: []int{http.StatusUnauthorized, http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
	}, s.listPlans)

	register(s, huma.Operation{
		OperationID: "get-plan",
		Method:      http.MethodGet,
		Path:        "/v1/plans/{id}",
		Summary:     "Get a stored plan",
		Description: "Returns a stored plan with its scenario, name, labels, creation time and backing probe.",
		Tags:        []string{tagPlans},
		Errors:      notFoundStatuses,
	}, s.getPlan)

	register(s, huma.Operation{
		OperationID: "get-plan-report",
		Method:      http.MethodGet,
		Path:        "/v1/plans/{id}/report",
		Summary:     "Get a stored plan's team report",
		Description: "Returns the report of a stored plan, a document a team can read without the tool: the " +
			"scenario in words, the plan, each class's ceilings as a bar chart with the binding one marked and, " +
			"when a probe backs the plan, what it measured with the throughput chart (knee marked) and the latency " +
			"charts (SLO lines), and with simulate_s a simulated run of the plan (docs/simulate.md) with its verdict. " +
			"The HTML form is one self-contained page whose charts are inline SVG; the Markdown form carries the " +
			"same numbers in tables. A simulated run takes one of the service's computation slots (a 503 with " +
			"Retry-After when they are all busy) and stops at the server's plan_timeout.",
		Tags:   []string{tagPlans},
		Errors: notFoundStatuses,
		Responses: map[string]*huma.Response{"200": {
			Description: "The report.",
			Content: map[string]*huma.MediaType{
				"text/html":     {Schema: &huma.Schema{Type: huma.TypeString}},
				"text/markdown": {Schema: &huma.Schema{Type: huma.TypeString}},
			},
		}},
	}, s.planReport)
	s.declareRetryAfter(http.MethodGet, "/v1/plans/{id}/report", http.StatusServiceUnavailable, computeBusy+
		" (with simulate_s), or a server without a store.")

	s.registerExport()
}

func (s *Server) listPlans(ctx context.Context, in *PageQuery) (*planListOutput, error) {
	if err := s.needStore(); err != nil {
		return nil, err
	}
	plans, next, err := s.store.ListPlans(ctx, in.options())
	if err != nil {
		return nil, s.storeError(err, "plan", "")
	}
	out := &PlanList{Items: make([]PlanSummary, 0, len(plans)), NextCursor: next}
	for _, p := range plans {
		sum := PlanSummary{ID: p.ID, Name: p.Name, Labels: labelsOf(p), CreatedAt: p.CreatedAt, ProbeID: p.ProbeID, Classes: []ClassSummary{}}
		for _, c := range p.Plan.Classes {
			sum.Classes = append(sum.Classes, ClassSummary{Name: c.Name, Pool: c.Pool, BindingConstraint: c.BindingConstraint, Feasible: c.Feasible, Fits: c.Fits})
		}
		out.Items = append(out.Items, sum)
	}
	return &planListOutput{Body: out}, nil
}

func labelsOf(p store.StoredPlan) map[string]string {
	if p.Labels == nil {
		return map[string]string{}
	}
	return p.Labels
}

// storedPlan reads a plan, or answers 404.
func (s *Server) storedPlan(ctx context.Context, id string) (store.StoredPlan, error) {
	if err := s.needStore(); err != nil {
		return store.StoredPlan{}, err
	}
	p, err := s.store.GetPlan(ctx, id)
	if err != nil {
		return store.StoredPlan{}, s.storeError(err, "plan", id)
	}
	return p, nil
}

func (s *Server) getPlan(ctx context.Context, in *planIDInput) (*storedPlanOutput, error) {
	p, err := s.storedPlan(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	return &storedPlanOutput{Body: &StoredPlan{
		ID: p.ID, Name: p.Name, Labels: labelsOf(p), CreatedAt: p.CreatedAt, ProbeID: p.ProbeID, Scenario: p.Scenario, Plan: p.Plan,
	}}, nil
}

func (s *Server) planReport(ctx context.Context, in *reportInput) (*documentOutput, error) {
	p, err := s.storedPlan(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	rin := report.ReportInput{Title: p.Name, Generated: time.Now().UTC(), Scenario: p.Scenario, Plan: &p.Plan}
	if p.ProbeID != "" {
		run, err := s.store.GetProbe(ctx, p.ProbeID)
		if err != nil {
			return nil, s.storeError(err, "probe", p.ProbeID)
		}
		rin.Probe, _ = probeData(run)
	}
	if in.SimulateS > 0 {
		if rin.Simulation, err = s.reportSimulation(ctx, p.Scenario, in.SimulateS); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	write, ct := report.WriteReportHTML, "text/html; charset=utf-8"
	if isMarkdown(string(in.Format)) {
		write, ct = report.WriteReportMarkdown, "text/markdown; charset=utf-8"
	}
	if err := write(&buf, rin); err != nil {
		s.log.Error("render a report", "plan", p.ID, "error", err)
		return nil, huma.Error500InternalServerError("the report could not be rendered; the server log has the cause")
	}
	return &documentOutput{ContentType: ct, Body: buf.Bytes()}, nil
}

// reportSimulation simulates a stored plan's scenario for a report, within
// the limits that bound POST /v1/simulations.
func (s *Server) reportSimulation(ctx context.Context, sc scenario.Scenario, seconds float64) (*simulate.Simulation, error) {
	at := func(string) string { return "query.simulate_s" }
	if seconds > s.simCaps.maxDuration.Seconds() {
		return nil, huma.Error422UnprocessableEntity("the request is invalid", &huma.ErrorDetail{Location: at(""), Value: seconds,
			Message: fmt.Sprintf("at most %g s, the server's limits.simulation_max_duration", s.simCaps.maxDuration.Seconds())})
	}
	r, err := s.simulate(ctx, sc, simulate.Options{DurationS: seconds, MaxEvents: s.simCaps.maxEvents})
	if err != nil {
		return nil, s.simulationError(ctx, err, at, at(""))
	}
	return r, nil
}
