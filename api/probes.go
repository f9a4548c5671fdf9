package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/jobs"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/optional"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/redact"
	"github.com/plannerdev/planner/internal/report"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/store"
)

// ProbeRequest is the body of POST /v1/probes. Its bounds and defaults
// come from their owners (bounds.go); its rules are the probe's
// (probe.Config.Validate) and the server's caps (probe.Config.WithinCaps),
// applied by the resolver.
type ProbeRequest struct {
	Target          ProbeTarget `json:"target"`
	Steps           []int       `json:"steps,omitempty" minItems:"1" doc:"Not with search."`
	Search          bool        `json:"search,omitempty" doc:"Run the knee search instead of the ladder: concurrency doubles from 1 up to max_concurrency, each step ends once its goodput is known within ±5 % (never before 2c + 10 measured requests), nothing runs past the first step that fails the knee rule, and the knee is then refined by bisection (knee_refined)."`
	MaxConcurrency  int         `json:"max_concurrency,omitempty" minimum:"1" doc:"With search: the highest concurrency it tries."`
	RequestsPerStep int         `json:"requests_per_step,omitempty" minimum:"1"`
	MaxTokens       int         `json:"max_tokens,omitempty" minimum:"1"`
	IgnoreEOS       bool        `json:"ignore_eos,omitempty" doc:"Send ignore_eos (vLLM and compatible servers) so that every answer has exactly max_tokens tokens."`
	InputTokens     int         `json:"input_tokens,omitempty" minimum:"1"`
	DeadlineMs      int         `json:"deadline_ms,omitempty" minimum:"1"`
	PauseMs         *int        `json:"pause_ms,omitempty" minimum:"0"`
	Budgets         *Budgets    `json:"budgets,omitempty"`
	Stop            *ProbeStop  `json:"stop,omitempty"`
	Label           string      `json:"label,omitempty" maxLength:"200" doc:"Free text naming the run; no credentials."`
	// SLO narrows goodput to the requests that meet every target given.
	SLO *measure.Targets `json:"slo,omitempty" doc:"SLO targets: goodput counts only the requests that met every target given at once (vLLM's and AIPerf's --goodput), each step reports its attainment, and the knee's gain rule judges that goodput."`
	// Prefill, Cache and Conversation measure a prompt's cost instead of
	// a concurrency ramp; at most one, and none with steps or search.
	Prefill      *ProbePrefill      `json:"prefill,omitempty" doc:"Measure prefill per 1,000 input tokens instead of a ramp: rounds of one request at each input length, at concurrency 1 (docs/probe.md, \"Prefill and the prompt cache\")."`
	Cache        *ProbeCache        `json:"cache,omitempty" doc:"Measure the prompt cache instead of a ramp: prompts of input_tokens (default 2,048) that repeat one prefix against fresh ones, at concurrency 1. An empty object takes the defaults."`
	Conversation *ProbeConversation `json:"conversation,omitempty" doc:"Replay tasks of serial calls instead of a ramp, each call's input the first input and every earlier answer and tool result (docs/probe.md, \"Conversations\")."`
}

// ProbePrefill is a prefill ladder (probe.PrefillLadder).
type ProbePrefill struct {
	InputTokens []int `json:"input_tokens" minItems:"2" doc:"Input lengths in tokens, strictly ascending."`
	Requests    int   `json:"requests,omitempty" minimum:"1" doc:"Requests at each length, one round of warm-up included."`
}

// ProbeCache is a cache comparison (probe.CacheComparison).
type ProbeCache struct {
	Requests int `json:"requests,omitempty" minimum:"1" doc:"Requests of each kind (repeated and fresh), one of warm-up included."`
}

// ProbeConversation is a conversation (probe.Conversation).
type ProbeConversation struct {
	Calls            int  `json:"calls" minimum:"2" doc:"Serial calls per task."`
	Tasks            int  `json:"tasks,omitempty" minimum:"1" doc:"Tasks to run, one round of warm-up (tasks_in_flight tasks) included; default 10 + tasks_in_flight."`
	TasksInFlight    int  `json:"tasks_in_flight,omitempty" minimum:"1" doc:"Tasks at once, each at most the server's probe.max_concurrency; default 1."`
	ToolTimeMs       *int `json:"tool_time_ms,omitempty" minimum:"0" doc:"Wait between a call's end and the next call, milliseconds; default 0."`
	ToolResultTokens int  `json:"tool_result_tokens,omitempty" minimum:"1" doc:"Length of each tool result in tokens."`
}

// ProbeStop are the probe's stop rules besides the budgets.
type ProbeStop struct {
	Max429Ratio          float64 `json:"max_429_ratio,omitempty" exclusiveMinimum:"0" maximum:"1"`
	CollapseTolerancePct float64 `json:"collapse_tolerance_pct,omitempty" exclusiveMinimum:"0" exclusiveMaximum:"100" doc:"Goodput falls only when it drops by more than this percentage and beyond both steps' intervals: the collapse point, and the stop after goodput fell twice; default 5."`
}

// ProbeEndpoint is where a probe went.
type ProbeEndpoint struct {
	BaseURL string `json:"base_url"`
	Model   string `json:"model"`
}

// ProbeCounts are the rows a probe has written.
type ProbeCounts struct {
	Records     int `json:"records" doc:"Every request row written, warm-up included."`
	OK          int `json:"ok"`
	RateLimited int `json:"rate_limited"`
	Failed      int `json:"failed" doc:"Every other failure, cancelled requests included."`
}

// Probe is a probe run: its configuration, state, the rows it wrote and,
// at the top level, its analysis so far as the store keeps it (the steps
// finished while it runs, everything once it has ended).
type Probe struct {
	ID         string         `json:"id"`
	Status     string         `json:"status" enum:"queued,running,succeeded,failed,cancelled,interrupted" doc:"interrupted: the service stopped (shut down, crashed or was killed) before the run ended; cancelled: a client cancelled it."`
	Label      string         `json:"label"`
	Target     ProbeEndpoint  `json:"target"`
	Config     map[string]any `json:"config" doc:"The run's configuration as the probe ran it, defaults applied, without any key (api_key_set says whether one was sent)."`
	CreatedAt  time.Time      `json:"created_at"`
	StartedAt  *time.Time     `json:"started_at,omitempty"`
	FinishedAt *time.Time     `json:"finished_at,omitempty"`
	Error      string         `json:"error" doc:"Why the run failed or stopped early; empty otherwise."`
	Counts     ProbeCounts    `json:"counts"`
	measure.Result
	RateLimits *probe.RateLimits `json:"rate_limits,omitempty" doc:"The quota the endpoint announced in its rate-limit headers."`
	StopReason string            `json:"stop_reason" doc:"Why the run stopped (completed, max_429_ratio, goodput_falling, no_success, budget_requests, budget_tokens, budget_duration, cancelled); empty while it runs."`
	StopDetail string            `json:"stop_detail,omitempty"`
	Latency    *scenario.Latency `json:"latency,omitempty" doc:"The measured curve and knee as a scenario latency block, when a step had successful answers."`
}

// ProbeSummary is a probe in a list.
type ProbeSummary struct {
	ID         string        `json:"id"`
	Status     string        `json:"status" enum:"queued,running,succeeded,failed,cancelled,interrupted"`
	Label      string        `json:"label"`
	Target     ProbeEndpoint `json:"target"`
	CreatedAt  time.Time     `json:"created_at"`
	StartedAt  *time.Time    `json:"started_at,omitempty"`
	FinishedAt *time.Time    `json:"finished_at,omitempty"`
	Error      string        `json:"error"`
	Counts     ProbeCounts   `json:"counts"`
	Knee       *int          `json:"knee"`
	// KneeLowerBound marks a knee the probe never reached (measure.Result).
	KneeLowerBound bool   `json:"knee_lower_bound,omitempty" doc:"The knee is a lower bound: no step failed the knee rule."`
	StopReason     string `json:"stop_reason"`
}

// ProbeList is one page of probes, newest first.
type ProbeList struct {
	Items      []ProbeSummary `json:"items"`
	NextCursor string         `json:"next_cursor,omitempty" doc:"Cursor of the next page; absent on the last page."`
}

type createProbeInput struct {
	Authorization string `header:"X-Probe-Authorization" doc:"The API key for the target, as the whole Authorization header value to send (\"Bearer sk-...\"), instead of a named credential. It is sent only to the target, and never stored, logged or echoed."`
	RawBody       []byte
	Body          ProbeRequest
}

var probeSchema = sync.OnceValue(schemaOf[ProbeRequest])

// Resolve adds the probe's rules and the server's caps to huma's schema
// validation, through the probe's own Validate: every rule is written
// once, there, and located here in the body's names (probeFields).
func (in *createProbeInput) Resolve(ctx huma.Context) []error {
	_, errs := in.Body.config(operationCaps(ctx))
	rules := bodyRules(probeFields, errs)
	if redact.LooksLikeSecret(in.Body.Label) {
		rules = append(rules, rule{location: "body.label", message: secretMessage, hide: true})
	}
	return uncoveredRules(in.RawBody, probeSchema(), rules)
}

// probeFields names a probe's settings (probe.Config.Validate's paths) as
// the fields of a probe request.
var probeFields = fieldpath.Names{Below: true, Other: "body", Fields: map[string]string{
	"base_url":                "body.target.base_url",
	"model":                   "body.target.model",
	"steps":                   "body.steps",
	"search":                  "body.search",
	"search_max_concurrency":  "body.max_concurrency",
	"requests_per_step":       "body.requests_per_step",
	"max_tokens":              "body.max_tokens",
	"input_tokens":            "body.input_tokens",
	"deadline":                "body.deadline_ms",
	"pause":                   "body.pause_ms",
	"max_429_ratio":           "body.stop.max_429_ratio",
	"collapse_tolerance_pct":  "body.stop.collapse_tolerance_pct",
	"budget.max_requests":     "body.budgets.max_requests",
	"budget.max_tokens_total": "body.budgets.max_tokens",
	"budget.max_duration":     "body.budgets.max_duration_s",
	"prefill":                 "body.prefill",
	"cache":                   "body.cache",
	"conversation":            "body.conversation",
	"conversation.tool_time":  "body.conversation.tool_time_ms",
	"slo":                     "body.slo",
}}

// config is the probe the request asks for under the server's caps, and
// its problems (probe.Config.Validate's, then the caps'). A field the body
// leaves out stays unset, so that the probe's own default applies.
func (r ProbeRequest) config(caps probe.Caps) (probe.Config, []fieldpath.Error) {
	cfg := probe.Config{
		BaseURL: r.Target.BaseURL, Model: r.Target.Model, Steps: r.Steps, Search: r.Search,
		SearchMax: given(r.MaxConcurrency), RequestsPerStep: given(r.RequestsPerStep), MaxTokens: given(r.MaxTokens),
		IgnoreEOS: r.IgnoreEOS, InputTokens: given(r.InputTokens), Deadline: givenMs(r.DeadlineMs), Budget: r.Budgets.budget(),
		Seed: probe.NewSeed(),
	}
	if r.PauseMs != nil {
		cfg.Pause = optional.Of(time.Duration(*r.PauseMs) * time.Millisecond)
	}
	if r.Stop != nil {
		cfg.Max429Ratio, cfg.CollapseTolerancePct = given(r.Stop.Max429Ratio), given(r.Stop.CollapseTolerancePct)
	}
	if r.SLO != nil {
		cfg.SLO = *r.SLO
	}
	if p := r.Prefill; p != nil {
		cfg.Prefill = &probe.PrefillLadder{InputTokens: p.InputTokens, Requests: given(p.Requests)}
	}
	if c := r.Cache; c != nil {
		cfg.Cache = &probe.CacheComparison{Requests: given(c.Requests)}
	}
	if c := r.Conversation; c != nil {
		cfg.Conversation = &probe.Conversation{Calls: c.Calls, Tasks: given(c.Tasks), InFlight: given(c.TasksInFlight),
			ToolResultTokens: given(c.ToolResultTokens)}
		if c.ToolTimeMs != nil {
			cfg.Conversation.ToolTime = optional.Of(time.Duration(*c.ToolTimeMs) * time.Millisecond)
		}
	}
	errs := cfg.Validate()
	cfg, capped := cfg.WithinCaps(caps)
	return cfg, append(errs, capped...)
}

type probeCreatedOutput struct {
	Location string `header:"Location" doc:"Where the probe is: GET it, or its /events."`
	Body     *Probe
}

type probeIDInput struct {
	ID string `path:"id" maxLength:"64" doc:"Id of a probe."`
}

type probeOutput struct {
	Body *Probe
}

type probeListOutput struct {
	Body *ProbeList
}

type plotInput struct {
	ID    string `path:"id" maxLength:"64" doc:"Id of a probe."`
	Chart string `query:"chart" enum:"throughput,latency" default:"throughput" doc:"throughput: goodput, throughput and output TPS against concurrency, the knee marked; latency: TTFT and E2E p95 against concurrency."`
}

// cancelWait bounds how long DELETE waits for a probe to save what it
// measured and end.
const cancelWait = 15 * time.Second

func (s *Server) registerProbes() {
	op := huma.Operation{
		Metadata:      map[string]any{capsKey: s.caps(s.probe.MaxDuration)},
		OperationID:   "create-probe",
		Method:        http.MethodPost,
		Path:          "/v1/probes",
		Summary:       "Start a probe",
		DefaultStatus: http.StatusAccepted,
		Description: "Starts a bounded, polite load run against one OpenAI-compatible endpoint as a background job and " +
			"answers 202 with the probe and its Location. Before any request leaves, the target must pass the " +
			"server's allow-list (its host and port, and every address its host resolves to; default: loopback " +
			"only) and answer GET base_url/models without a redirect; the probe's own connections are checked " +
			"again as they are made, and redirects are never followed. The API key comes from a named credential " +
			"of the server's configuration or the X-Probe-Authorization header; it is never stored, logged, " +
			"echoed or put in events or reports. Concurrency, requests, tokens and duration are capped by the " +
			"server (a 422 names the limit), and at most probe.max_running probes and validations run at once: one " +
			"more gets a 429 with Retry-After before anything is sent, the preflight included. Follow it with " +
			"GET /v1/probes/{id} or its events.",
		Tags:   []string{tagProbes},
		Errors: slices.Concat([]int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusUnprocessableEntity, http.StatusTooManyRequests}, saveStatuses),
	}
	register(s, op, s.createProbe)
	withExamples(s.OpenAPI(), op.Path, examplesOf[Probe](op.OperationID))
	s.declareRetryAfter(op.Method, op.Path, http.StatusTooManyRequests, probeBusy)

	register(s, huma.Operation{
		OperationID: "list-probes",
		Method:      http.MethodGet,
		Path:        "/v1/probes",
		Summary:     "List the probes",
		Description: "Returns one page of probes, newest first, each with its status, target, counts, knee and stop " +
			"reason. Follow next_cursor for the next page.",
		Tags:   []string{tagProbes},
		Errors: []int{http.StatusUnauthorized, http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
	}, s.listProbes)

	register(s, huma.Operation{
		OperationID: "get-probe",
		Method:      http.MethodGet,
		Path:        "/v1/probes/{id}",
		Summary:     "Get a probe",
		Description: "Returns a probe: status, configuration without secrets, times, the rows written so far and, " +
			"at the top level, the steps finished so far with the knee, collapse point, quota_limited, USL fit, " +
			"announced rate limits, why it stopped, and the latency block for a scenario.",
		Tags:   []string{tagProbes},
		Errors: notFoundStatuses,
	}, s.getProbe)

	register(s, huma.Operation{
		OperationID: "cancel-probe",
		Method:      http.MethodDelete,
		Path:        "/v1/probes/{id}",
		Summary:     "Cancel a probe",
		Description: "Cancels a queued or running probe, on whichever replica runs it: requests in flight are cut " +
			"short, everything measured is kept, and the probe ends as cancelled. Answers with the probe once it has " +
			"ended (or after 15 s). A probe that has already ended gets a 409.",
		Tags:   []string{tagProbes},
		Errors: []int{http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
	}, s.cancelProbe)

	register(s, huma.Operation{
		OperationID: "get-probe-requests",
		Method:      http.MethodGet,
		Path:        "/v1/probes/{id}/requests.csv",
		Summary:     "Get a probe's request rows",
		Description: "Streams every request row the probe has written, as requests.csv (the columns that planner " +
			"probe writes and planner knee reads): step, index, timings, tokens, status, error class, attempts.",
		Tags:   []string{tagProbes},
		Errors: notFoundStatuses,
		Responses: map[string]*huma.Response{"200": {
			Description: "The rows as CSV with a header line.",
			Content:     map[string]*huma.MediaType{"text/csv": {Schema: &huma.Schema{Type: huma.TypeString}}},
			Headers: map[string]*huma.Param{"Content-Disposition": {
				Description: "attachment, with the file name requests.csv.",
				Schema:      &huma.Schema{Type: huma.TypeString},
			}},
		}},
	}, s.probeRequests)

	register(s, huma.Operation{
		OperationID: "get-probe-plot",
		Method:      http.MethodGet,
		Path:        "/v1/probes/{id}/plot.svg",
		Summary:     "Get a probe's curve as a chart",
		Description: "Returns an SVG chart of the steps measured so far: throughput (goodput, throughput and output " +
			"TPS, the knee marked) or latency (TTFT and E2E p95). A probe without a step measured in a steady state " +
			"(none finished yet, or only one cut short) gets a 404.",
		Tags:   []string{tagProbes},
		Errors: notFoundStatuses,
		Responses: map[string]*huma.Response{"200": {
			Description: "The chart.",
			Content:     map[string]*huma.MediaType{"image/svg+xml": {Schema: &huma.Schema{Type: huma.TypeString}}},
		}},
	}, s.probePlot)

	s.registerProbeEvents()
}

// errShuttingDown answers work refused or stopped because the service is
// shutting down.
var errShuttingDown = huma.Error503ServiceUnavailable("the server is shutting down")

// acquireSlot reserves one of the probe.max_running slots, answering 429
// with Retry-After when they are all taken, on any replica.
func (s *Server) acquireSlot(ctx context.Context) (*jobs.Slot, error) {
	slot, err := s.jobs.Acquire(ctx)
	var busy *jobs.BusyError
	switch {
	case errors.As(err, &busy):
		return nil, busyProblem(busy.Limit)
	case errors.Is(err, jobs.ErrClosed):
		return nil, errShuttingDown
	case err != nil:
		return nil, s.storeError(err, "running place", "")
	}
	return slot, nil
}

// admit takes a probe slot, then checks the target under the slot's
// context, which shutdown ends. The slot comes first, so work refused for
// want of one sends nothing, not even the preflight; it is released again
// when the target is refused.
func (s *Server) admit(ctx context.Context, baseURL string, k key) (*jobs.Slot, error) {
	slot, err := s.acquireSlot(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := s.checkTarget(slot.Context(), baseURL, k, "body.target"); err != nil {
		shutDown := slot.ShutDown()
		slot.Release()
		if shutDown {
			return nil, errShuttingDown
		}
		return nil, err
	}
	return slot, nil
}

// needJobs refuses probe work on a server that cannot run it.
func (s *Server) needJobs() error {
	if err := s.needStore(); err != nil {
		return err
	}
	if s.jobs == nil {
		return huma.Error503ServiceUnavailable("the server runs no probes")
	}
	return nil
}

func (s *Server) createProbe(ctx context.Context, in *createProbeInput) (*probeCreatedOutput, error) {
	if err := s.needJobs(); err != nil {
		return nil, err
	}
	req := in.Body
	k, problems := s.probeKey(req.Target.Credential, in.Authorization, "body.target")
	if len(problems) > 0 {
		return nil, huma.Error422UnprocessableEntity("the request is invalid", problems...)
	}
	cfg, _ := req.config(s.caps(s.probe.MaxDuration)) // its problems are the resolver's
	slot, err := s.admit(ctx, req.Target.BaseURL, k)
	if err != nil {
		return nil, err
	}
	defer slot.Release()
	k.apply(&cfg)
	s.guarded(&cfg)
	stored, err := json.Marshal(cfg.WithDefaults())
	if err != nil {
		return nil, fmt.Errorf("encode the probe configuration: %w", err)
	}
	run, err := slot.Start(jobs.Spec{Config: cfg, Run: store.ProbeRun{
		Label: req.Label, BaseURL: req.Target.BaseURL, Model: req.Target.Model, Config: stored,
	}})
	switch {
	case errors.Is(err, jobs.ErrClosed):
		return nil, errShuttingDown
	case errors.Is(err, store.ErrSecret):
		return nil, huma.Error422UnprocessableEntity("the request is invalid", &huma.ErrorDetail{Location: "body.target.base_url", Message: "the base URL carries a credential in its query; " + secretMessage})
	case err != nil:
		return nil, s.storeError(err, "probe", "")
	}
	s.watchProbe(run.ID)
	return &probeCreatedOutput{Location: "/v1/probes/" + run.ID, Body: probeResource(run)}, nil
}

func (s *Server) listProbes(ctx context.Context, in *PageQuery) (*probeListOutput, error) {
	if err := s.needStore(); err != nil {
		return nil, err
	}
	runs, next, err := s.store.ListProbes(ctx, in.options())
	if err != nil {
		return nil, s.storeError(err, "probe", "")
	}
	out := &ProbeList{Items: make([]ProbeSummary, 0, len(runs)), NextCursor: next}
	for _, r := range runs {
		p := probeResource(r)
		out.Items = append(out.Items, ProbeSummary{
			ID: p.ID, Status: p.Status, Label: p.Label, Target: p.Target, CreatedAt: p.CreatedAt,
			StartedAt: p.StartedAt, FinishedAt: p.FinishedAt, Error: p.Error, Counts: p.Counts, Knee: p.Knee, KneeLowerBound: p.KneeLowerBound, StopReason: p.StopReason,
		})
	}
	return &probeListOutput{Body: out}, nil
}

// storedProbe reads a probe, or answers 404.
func (s *Server) storedProbe(ctx context.Context, id string) (store.ProbeRun, error) {
	if err := s.needStore(); err != nil {
		return store.ProbeRun{}, err
	}
	run, err := s.store.GetProbe(ctx, id)
	if err != nil {
		return store.ProbeRun{}, s.storeError(err, "probe", id)
	}
	return run, nil
}

func (s *Server) getProbe(ctx context.Context, in *probeIDInput) (*probeOutput, error) {
	run, err := s.storedProbe(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	return &probeOutput{Body: probeResource(run)}, nil
}

func (s *Server) cancelProbe(ctx context.Context, in *probeIDInput) (*probeOutput, error) {
	run, err := s.storedProbe(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	if s.jobs == nil {
		return nil, huma.Error409Conflict(fmt.Sprintf("the probe has already ended (%s)", run.Status))
	}
	// The replica running the probe, this one or another, stops it.
	wait, cancel := context.WithTimeout(ctx, cancelWait)
	defer cancel()
	switch err := s.jobs.Cancel(wait, in.ID); {
	case errors.Is(err, jobs.ErrNotRunning):
		if run, err = s.storedProbe(ctx, in.ID); err != nil {
			return nil, err
		}
		return nil, huma.Error409Conflict(fmt.Sprintf("the probe has already ended (%s)", run.Status))
	case err != nil && wait.Err() == nil:
		return nil, s.storeError(err, "probe", in.ID)
	}
	if run, err = s.storedProbe(ctx, in.ID); err != nil {
		return nil, err
	}
	return &probeOutput{Body: probeResource(run)}, nil
}

func (s *Server) probeRequests(ctx context.Context, in *probeIDInput) (*huma.StreamResponse, error) {
	if _, err := s.storedProbe(ctx, in.ID); err != nil {
		return nil, err
	}
	return &huma.StreamResponse{Body: func(hctx huma.Context) {
		hctx.SetHeader("Content-Type", "text/csv; charset=utf-8")
		hctx.SetHeader("Content-Disposition", `attachment; filename="requests.csv"`)
		_, w := humago.Unwrap(hctx)
		if err := s.store.WriteRecordsCSV(hctx.Context(), w, in.ID); err != nil {
			s.log.Error("stream requests.csv", "probe", in.ID, "error", err)
		}
	}}, nil
}

func (s *Server) probePlot(ctx context.Context, in *plotInput) (*documentOutput, error) {
	run, err := s.storedProbe(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	var svg []byte
	if measured(run) {
		if in.Chart == "latency" {
			svg, err = report.LatencySVG(run.Result.Analysis, 0, 0)
		} else {
			svg, err = report.ThroughputSVG(run.Result.Analysis)
		}
	}
	switch {
	case !measured(run) || errors.Is(err, report.ErrNoData):
		return nil, huma.Error404NotFound("the probe has no step measured in a steady state to chart", &huma.ErrorDetail{Location: "path.id", Message: "no measured step yet", Value: in.ID})
	case err != nil:
		s.log.Error("render a chart", "probe", in.ID, "error", err)
		return nil, huma.Error500InternalServerError("the chart could not be rendered; the server log has the cause")
	}
	return &documentOutput{ContentType: "image/svg+xml", Body: svg}, nil
}

// measured reports whether a probe has a step measured in a steady state:
// a step cut short before it reached one (a cancel after a few requests)
// does not count, so it gets no chart and no record card.
func measured(run store.ProbeRun) bool {
	return run.Result != nil && slices.ContainsFunc(run.Result.Analysis.Steps, func(s measure.Step) bool { return !s.TooShort })
}

// probeResource is the API's view of a stored probe.
func probeResource(r store.ProbeRun) *Probe {
	p := &Probe{
		ID: r.ID, Status: string(r.Status), Label: r.Label, Target: ProbeEndpoint{BaseURL: r.BaseURL, Model: r.Model},
		Config: map[string]any{}, CreatedAt: r.CreatedAt, StartedAt: timePtr(r.StartedAt), FinishedAt: timePtr(r.FinishedAt),
		Error: r.Error, Counts: ProbeCounts(r.Counts),
	}
	_ = json.Unmarshal(r.Config, &p.Config) // stored by this service as a JSON object
	if res := r.Result; res != nil {
		p.Result = res.Analysis
		p.StopReason, p.StopDetail = res.StopReason, res.StopDetail
		if len(res.RateLimits) > 0 {
			var rl probe.RateLimits
			if json.Unmarshal(res.RateLimits, &rl) == nil {
				p.RateLimits = &rl
			}
		}
		if lat, err := analysis.Latency(p.Result); err == nil {
			p.Latency = &lat
		}
	}
	if p.Steps == nil {
		p.Steps = []measure.Step{}
	}
	return p
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
