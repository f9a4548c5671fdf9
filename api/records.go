package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/plannerdev/planner/internal/report"
	"github.com/plannerdev/planner/internal/store"
)

// RecordList is one page of record cards, newest probe first.
type RecordList struct {
	Items      []report.RecordCard `json:"items"`
	NextCursor string              `json:"next_cursor,omitempty" doc:"Cursor of the next page; absent on the last page. A page may hold fewer cards than limit: probes without a step measured in a steady state have no card."`
}

type recordsInput struct {
	PageQuery
	Format cardFormat `query:"format" default:"json" doc:"json: the cards as data; markdown (or md): the cards as Markdown, one after the other."`
}

type recordInput struct {
	ProbeID string     `path:"probe_id" maxLength:"64" doc:"Id of a probe that has ended."`
	Format  cardFormat `query:"format" default:"json" doc:"json: the card as data; markdown (or md): the card as Markdown."`
}

// cardFormat is the format of record cards: json, or markdown under
// either of its names (report.FormatNames).
type cardFormat string

// Schema lists the names.
func (cardFormat) Schema(huma.Registry) *huma.Schema {
	return formatSchema(report.FormatJSON, report.FormatMarkdown)
}

// markdown reports whether the format names Markdown.
func (f cardFormat) markdown() bool { return isMarkdown(string(f)) }

func (s *Server) registerRecords() {
	listJSON := s.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[RecordList](), true, "")
	cardJSON := s.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[report.RecordCard](), true, "")
	register(s, huma.Operation{
		OperationID: "list-records",
		Method:      http.MethodGet,
		Path:        "/v1/records",
		Summary:     "List the record cards",
		Description: "Returns the dated record cards of the probes that have ended with at least one step measured in a steady state, " +
			"newest first: the endpoint and model, the date, the deadline, the knee with its p95 and goodput, the " +
			"pools of the newest plan the probe backs with their binding constraints and shedding rule, and the " +
			"decision table (what to do when 429s appear, when latency exceeds the SLO at its percentile, when goodput falls). The " +
			"artefact an on-call engineer reads; JSON or Markdown.",
		Tags:   []string{tagRecords},
		Errors: []int{http.StatusUnauthorized, http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
		Responses: map[string]*huma.Response{"200": {
			Description: "The cards.",
			Content: map[string]*huma.MediaType{
				"application/json": {Schema: listJSON},
				"text/markdown":    {Schema: &huma.Schema{Type: huma.TypeString}},
			},
		}},
	}, s.listRecords)

	register(s, huma.Operation{
		OperationID: "get-record",
		Method:      http.MethodGet,
		Path:        "/v1/records/{probe_id}",
		Summary:     "Get a probe's record card",
		Description: "Returns the record card of one probe that has ended, with the pools of the newest plan it " +
			"backs. A probe still running gets a 409; one without a step measured in a steady state (none finished, " +
			"or only one cut short, as by a cancel after a few requests) a 404.",
		Tags:   []string{tagRecords},
		Errors: []int{http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
		Responses: map[string]*huma.Response{"200": {
			Description: "The card.",
			Content: map[string]*huma.MediaType{
				"application/json": {Schema: cardJSON},
				"text/markdown":    {Schema: &huma.Schema{Type: huma.TypeString}},
			},
		}},
	}, s.getRecord)
}

// probeData is what a report or a card shows of a probe; false when the
// probe has no finished step.
func probeData(run store.ProbeRun) (*report.ProbeData, bool) {
	if !measured(run) {
		return nil, false
	}
	pd := &report.ProbeData{
		Result: run.Result.Analysis, Endpoint: run.BaseURL, Model: run.Model, Date: run.StartedAt,
		Source: fmt.Sprintf("From probe %s (%s", run.ID, run.Status),
	}
	if pd.Date.IsZero() {
		pd.Date = run.CreatedAt
	}
	if run.Result.StopReason != "" {
		pd.Source += ", stopped: " + run.Result.StopReason
	}
	pd.Source += ")."
	var cfg struct {
		Deadline string `json:"deadline"`
	}
	if json.Unmarshal(run.Config, &cfg) == nil {
		if d, err := time.ParseDuration(cfg.Deadline); err == nil && d > 0 {
			pd.DeadlineMs = float64(d) / float64(time.Millisecond)
		}
	}
	return pd, true
}

// card builds the record card of an ended probe with its newest plan.
func (s *Server) card(ctx context.Context, run store.ProbeRun) (report.RecordCard, bool, error) {
	pd, ok := probeData(run)
	if !ok || !run.Status.Ended() {
		return report.RecordCard{}, false, nil
	}
	in := report.CardInput{ProbeID: run.ID, Probe: *pd}
	plans, err := s.store.PlansForProbe(ctx, run.ID)
	if err != nil {
		return report.RecordCard{}, false, err
	}
	if len(plans) > 0 {
		p := plans[0]
		in.PlanID, in.Scenario, in.Plan = p.ID, &p.Scenario, &p.Plan
	}
	return report.NewRecordCard(in), true, nil
}

func (s *Server) listRecords(ctx context.Context, in *recordsInput) (*documentOutput, error) {
	if err := s.needStore(); err != nil {
		return nil, err
	}
	runs, next, err := s.store.ListProbes(ctx, in.options())
	if err != nil {
		return nil, s.storeError(err, "probe", "")
	}
	cards := make([]report.RecordCard, 0, len(runs))
	for _, r := range runs {
		c, ok, err := s.card(ctx, r)
		if err != nil {
			return nil, s.storeError(err, "probe", r.ID)
		}
		if ok {
			cards = append(cards, c)
		}
	}
	if in.Format.markdown() {
		var buf bytes.Buffer
		for i, c := range cards {
			if i > 0 {
				buf.WriteString("\n---\n\n")
			}
			if err := report.WriteRecordCardMarkdown(&buf, c); err != nil {
				return nil, fmt.Errorf("render record card %s: %w", c.ProbeID, err)
			}
		}
		if len(cards) == 0 {
			buf.WriteString("No record cards yet: a probe gets one when it ends with a finished step.\n")
		}
		return &documentOutput{ContentType: "text/markdown; charset=utf-8", Body: buf.Bytes()}, nil
	}
	return jsonDocument(RecordList{Items: cards, NextCursor: next})
}

func (s *Server) getRecord(ctx context.Context, in *recordInput) (*documentOutput, error) {
	if err := s.needStore(); err != nil {
		return nil, err
	}
	run, err := s.store.GetProbe(ctx, in.ProbeID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, huma.Error404NotFound("no probe "+in.ProbeID, &huma.ErrorDetail{Location: "path.probe_id", Message: "no probe has this id", Value: in.ProbeID})
	}
	if err != nil {
		return nil, s.storeError(err, "probe", in.ProbeID)
	}
	if !run.Status.Ended() {
		return nil, huma.Error409Conflict(fmt.Sprintf("the probe is still %s; its record card is made when it ends", run.Status))
	}
	c, ok, err := s.card(ctx, run)
	if err != nil {
		return nil, s.storeError(err, "probe", run.ID)
	}
	if !ok {
		return nil, huma.Error404NotFound("the probe has no record card: it ended without a step measured in a steady state",
			&huma.ErrorDetail{Location: "path.probe_id", Message: "no measured step", Value: in.ProbeID})
	}
	if in.Format.markdown() {
		var buf bytes.Buffer
		if err := report.WriteRecordCardMarkdown(&buf, c); err != nil {
			return nil, fmt.Errorf("render record card %s: %w", c.ProbeID, err)
		}
		return &documentOutput{ContentType: "text/markdown; charset=utf-8", Body: buf.Bytes()}, nil
	}
	return jsonDocument(c)
}

// jsonDocument encodes v as a JSON answer.
func jsonDocument(v any) (*documentOutput, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return &documentOutput{ContentType: "application/json", Body: append(b, '\n')}, nil
}
