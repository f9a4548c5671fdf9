package api

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/validate"
)

// opExamples are one operation's request and response examples.
type opExamples struct {
	request, response map[string]*huma.Example
}

// exampleTime is the fixed time of the examples, so that the document is
// the same on every build.
var exampleTime = time.Date(2026, 1, 15, 9, 30, 0, 0, time.UTC)

// probeExamples are the examples of POST /v1/probes.
func probeExamples() opExamples {
	req := map[string]any{
		"target":            map[string]any{"base_url": "http://127.0.0.1:8000/v1", "model": "sim-model", "credential": "sim"},
		"steps":             []int{1, 2, 4, 8, 16},
		"requests_per_step": 40,
		"max_tokens":        64,
		"ignore_eos":        true,
		"input_tokens":      256,
		"deadline_ms":       12000,
		"budgets":           map[string]any{"max_requests": 2000, "max_tokens": 2000000, "max_duration_s": 600},
		"stop":              map[string]any{"max_429_ratio": 0.2},
		"label":             "sim rehearsal",
	}
	cfg := probe.Config{
		BaseURL: "http://127.0.0.1:8000/v1", Model: "sim-model", APIKey: "redacted", Steps: []int{1, 2, 4, 8, 16},
		RequestsPerStep: 40, MaxTokens: 64, IgnoreEOS: true, InputTokens: 256, Deadline: 12 * time.Second, Max429Ratio: 0.2,
		Budget: probe.Budget{MaxRequests: 2000, MaxTokens: 2000000, MaxDuration: 10 * time.Minute}, Seed: 1,
	}
	resp := Probe{
		ID: "x7k2m4q9r3t8v5w1y6z0a2b4c6", Status: "queued", Label: "sim rehearsal",
		Target: ProbeEndpoint{BaseURL: cfg.BaseURL, Model: cfg.Model}, Config: map[string]any{},
		CreatedAt: exampleTime, Steps: []analysis.Step{},
	}
	b, err := json.Marshal(cfg.WithDefaults())
	if err == nil {
		err = json.Unmarshal(b, &resp.Config)
	}
	if err != nil {
		panic(fmt.Sprintf("build the probe example: %v", err))
	}
	return opExamples{
		request:  map[string]*huma.Example{"sim": {Summary: "A ramp against planner sim with a named credential", Value: req}},
		response: map[string]*huma.Example{"queued": {Summary: "The probe, queued", Value: resp}},
	}
}

// analysisExampleSteps is a ramp whose knee is at 8.
var analysisExampleSteps = []AnalysisStep{
	{Concurrency: 1, Requests: 40, OK: 40, GoodputRPS: 1.6, ThroughputRPS: 1.6, TTFTP50Ms: 200, TTFTP95Ms: 210, E2EP50Ms: 600, E2EP95Ms: 640, TPOTP50Ms: 20, TPOTP95Ms: 21},
	{Concurrency: 2, Requests: 40, OK: 40, GoodputRPS: 3.1, ThroughputRPS: 3.1, TTFTP50Ms: 205, TTFTP95Ms: 220, E2EP50Ms: 620, E2EP95Ms: 660, TPOTP50Ms: 20.5, TPOTP95Ms: 21.5},
	{Concurrency: 4, Requests: 40, OK: 40, GoodputRPS: 5.9, ThroughputRPS: 5.9, TTFTP50Ms: 215, TTFTP95Ms: 240, E2EP50Ms: 660, E2EP95Ms: 700, TPOTP50Ms: 21.5, TPOTP95Ms: 22.5},
	{Concurrency: 8, Requests: 40, OK: 40, GoodputRPS: 10.4, ThroughputRPS: 10.4, TTFTP50Ms: 240, TTFTP95Ms: 290, E2EP50Ms: 760, E2EP95Ms: 820, TPOTP50Ms: 24, TPOTP95Ms: 26},
	{Concurrency: 16, Requests: 64, OK: 64, GoodputRPS: 10.9, ThroughputRPS: 10.9, TTFTP50Ms: 700, TTFTP95Ms: 900, E2EP50Ms: 1450, E2EP95Ms: 1700, TPOTP50Ms: 30, TPOTP95Ms: 34},
}

// analysisExamples are the examples of POST /v1/analyses; the response is
// the analysis of the request.
var analysisExamples = sync.OnceValue(func() opExamples {
	in := &analysisInput{Body: AnalysisRequest{Steps: analysisExampleSteps, DeadlineMs: 12000}}
	out, err := (&Server{}).createAnalysis(context.Background(), in)
	if err != nil {
		panic(fmt.Sprintf("build the analysis example: %v", err))
	}
	return opExamples{
		request: map[string]*huma.Example{
			"steps": {Summary: "A step table measured elsewhere", Value: map[string]any{"steps": analysisExampleSteps, "deadline_ms": 12000}},
			"file": {Summary: "A ramp CSV (the workshop layout)", Value: map[string]any{"file": map[string]any{
				"name":    "ramp.csv",
				"content": "step,idx,ok,code,ms,wall_s\n1,0,1,200,612,0.6\n1,1,1,200,598,1.2\n2,0,1,200,640,0.7\n2,1,1,200,655,0.7\n",
			}}},
		},
		response: map[string]*huma.Example{"steps": {Summary: "Knee at 8: goodput grew less than 10 % from 8 to 16", Value: out.Body}},
	}
})

// validateExamples are the examples of POST /v1/plans/{id}/validate: the
// predictions are the engine's for the chat example; the measurements are
// illustrative.
var validateExamples = sync.OnceValue(func() opExamples {
	text, _ := planner.Example("chat")
	sc, err := scenario.Parse(text)
	if err != nil {
		panic(fmt.Sprintf("build the validation example: %v", err))
	}
	p, err := plan.Compute(sc)
	if err != nil {
		panic(fmt.Sprintf("build the validation example: %v", err))
	}
	cp := p.Classes[0]
	cr := validate.ClassReport{Class: cp.Name, Pool: cp.Pool, BindingConstraint: cp.BindingConstraint, Verdict: validate.VerdictOK}
	for i, c := range validate.Concurrencies(cp.Pool) {
		pred, err := plan.PredictAt(sc, cp.Name, c)
		if err != nil {
			panic(fmt.Sprintf("build the validation example: %v", err))
		}
		cr.InputTokens, cr.OutputTokens = int(math.Round(pred.InputTokensP50)), int(math.Round(pred.MeanOutputTokens))
		f := 0.97 - 0.02*float64(i)
		m := &validate.Measured{
			Requests: 4 * c, OK: 4 * c, ThroughputRPS: round2(pred.ThroughputRPS * f),
			TTFTP95Ms: round2(pred.TTFTP95Ms * 1.04), E2EP95Ms: round2(pred.E2EP95Ms * 1.03), MeanOutputTokens: float64(cr.OutputTokens),
		}
		cr.Points = append(cr.Points, validate.Point{Concurrency: c, Predicted: pred, Measured: m,
			RelativeErrorPct: &validate.Errors{ThroughputRPS: round2((f - 1) * 100), TTFTP95Ms: 4, E2EP95Ms: 3}})
	}
	cr.Reasons = []string{
		fmt.Sprintf("at the pool of %d, within 25 %% of the prediction: throughput -3.0 %%, TTFT p95 +4.0 %%, E2E p95 +3.0 %%", cp.Pool),
		fmt.Sprintf("at %d (1.25 × the pool), within 25 %% of the prediction: throughput -5.0 %%, TTFT p95 +4.0 %%, E2E p95 +3.0 %%", validate.Concurrencies(cp.Pool)[1]),
	}
	resp := ValidateResponse{PlanID: "p3n8c2x5v7b9m1q4w6e8r0t2y4", Report: validate.Report{
		Verdict: validate.VerdictOK, TolerancePct: validate.DefaultTolerancePct, Classes: []validate.ClassReport{cr},
		Summary: "the plan holds: every class validated (1) measured throughput, TTFT p95 and E2E p95 within the tolerance of the model at its pool and 1.25 × it, without 429s at the pool",
	}}
	req := map[string]any{
		"target":        map[string]any{"base_url": "http://127.0.0.1:8000/v1", "model": "sim-model"},
		"deadline_ms":   30000,
		"tolerance_pct": 25,
		"budgets":       map[string]any{"max_requests": 1000, "max_duration_s": 180},
	}
	return opExamples{
		request:  map[string]*huma.Example{"sim": {Summary: "Validate against planner sim", Value: req}},
		response: map[string]*huma.Example{"ok": {Summary: "The chat example's plan holds (illustrative measurements)", Value: resp}},
	}
})

func round2(v float64) float64 { return math.Round(v*100) / 100 }
