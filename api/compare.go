package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"

	"github.com/danielgtaylor/huma/v2"

	"github.com/plannerdev/planner/internal/compare"
	"github.com/plannerdev/planner/internal/report"
	"github.com/plannerdev/planner/internal/store"
)

type compareInput struct {
	Probes   []string `query:"probes" required:"true" nullable:"false" minItems:"1" maxItems:"16" doc:"Ids of ended probes (each of 1 to 64 characters), comma-separated, in the order to show them: the runs of one ladder on several models, or the records of one endpoint over time."`
	Baseline string   `query:"baseline" maxLength:"64" doc:"The probe the others are compared with, one of probes; default the first."`
	Format   string   `query:"format" enum:"json,md,csv" default:"json" doc:"json: the comparison as data; md: a Markdown table; csv: one row per probe, figures unrounded."`
}

func (s *Server) registerCompare() {
	schema := s.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[compare.Comparison](), true, "")
	register(s, huma.Operation{
		OperationID: "compare-probes",
		Method:      http.MethodGet,
		Path:        "/v1/compare",
		Summary:     "Compare probes side by side",
		Description: "Puts ended probes side by side, in the order given: for each, the knee (and knee_refined), the " +
			"TTFT and E2E p95 and the goodput at the knee, the 429 answers, whether the quota limited it, the model " +
			"its answers named and when it ran; and for each but the baseline, the drift of the knee, the p95s and " +
			"the goodput against the baseline, in percent of the baseline's figure (null where either lacks the " +
			"figure). An unknown id gets a 404, a probe still running a 409, a probe without a step measured in a " +
			"steady state a 422, each located at its place in probes.",
		Tags:   []string{tagProbes},
		Errors: []int{http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
		Responses: map[string]*huma.Response{"200": {
			Description: "The comparison.",
			Content: map[string]*huma.MediaType{
				"application/json": {Schema: schema},
				"text/markdown":    {Schema: &huma.Schema{Type: huma.TypeString}},
				"text/csv":         {Schema: &huma.Schema{Type: huma.TypeString}},
			},
		}},
	}, s.compareProbes)
}

func (s *Server) compareProbes(ctx context.Context, in *compareInput) (*documentOutput, error) {
	if err := s.needStore(); err != nil {
		return nil, err
	}
	baseline := in.Baseline
	if baseline != "" && !slices.Contains(in.Probes, baseline) {
		return nil, huma.Error422UnprocessableEntity("the baseline is none of the probes compared",
			&huma.ErrorDetail{Location: "query.baseline", Message: "not one of probes", Value: baseline})
	}
	runs := make([]compare.Run, 0, len(in.Probes))
	for i, id := range in.Probes {
		at := fmt.Sprintf("query.probes[%d]", i)
		switch {
		case id == "":
			return nil, huma.Error422UnprocessableEntity("a probe's id is empty",
				&huma.ErrorDetail{Location: at, Message: "empty: the ids are comma-separated, one between two commas and none after the last", Value: id})
		case len(id) > 64:
			return nil, huma.Error422UnprocessableEntity("a probe's id is too long",
				&huma.ErrorDetail{Location: at, Message: "expected length <= 64", Value: id})
		}
		if slices.Index(in.Probes, id) < i {
			return nil, huma.Error422UnprocessableEntity("a probe is given twice", &huma.ErrorDetail{Location: at, Message: "given twice", Value: id})
		}
		run, err := s.store.GetProbe(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil, huma.Error404NotFound("no probe "+id, &huma.ErrorDetail{Location: at, Message: "no probe has this id", Value: id})
		case err != nil:
			return nil, s.storeError(err, "probe", id)
		case !run.Status.Ended():
			return nil, huma.Error409Conflict(fmt.Sprintf("probe %s is still %s; it is compared once it has ended", id, run.Status),
				&huma.ErrorDetail{Location: at, Message: "still " + string(run.Status), Value: id})
		case !measured(run):
			return nil, huma.Error422UnprocessableEntity("a probe has no step measured in a steady state",
				&huma.ErrorDetail{Location: at, Message: "no step measured in a steady state", Value: id})
		}
		date := run.StartedAt
		if date.IsZero() {
			date = run.CreatedAt
		}
		runs = append(runs, compare.Run{Name: run.ID, Endpoint: run.BaseURL, Model: run.Model, Date: date, Result: run.Result.Analysis})
	}
	c, err := compare.New(runs, baseline)
	if err != nil {
		return nil, fmt.Errorf("compare probes: %w", err) // the checks above leave none
	}
	switch in.Format {
	case "md", "csv":
		format, contentType := report.FormatMarkdown, "text/markdown; charset=utf-8"
		if in.Format == "csv" {
			format, contentType = report.FormatCSV, "text/csv; charset=utf-8"
		}
		var buf bytes.Buffer
		if err := report.WriteComparison(&buf, c, format); err != nil {
			return nil, fmt.Errorf("render the comparison: %w", err)
		}
		return &documentOutput{ContentType: contentType, Body: buf.Bytes()}, nil
	}
	return jsonDocument(c)
}
