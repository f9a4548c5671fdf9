package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/jobs"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/redact"
	"github.com/plannerdev/planner/internal/report"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/store"
)

// ProbeRequest is the body of POST /v1/probes. Its bounds and defaults
// come from their owners (bounds.go).
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
// at the top level, its analysis so far (the steps finished while it
// runs, everything once it has ended).
type Probe struct {
	ID             string            `json:"id"`
	Status         string            `json:"status" enum:"queued,running,succeeded,failed,cancelled,interrupted" doc:"interrupted: the service stopped (shut down, crashed or was killed) before the run ended; cancelled: a client cancelled it."`
	Label          string            `json:"label"`
	Target         ProbeEndpoint     `json:"target"`
	Config         map[string]any    `json:"config" doc:"The run's configuration as the probe ran it, defaults applied, without any key (api_key_set says whether one was sent)."`
	CreatedAt      time.Time         `json:"created_at"`
	StartedAt      *time.Time        `json:"started_at,omitempty"`
	FinishedAt     *time.Time        `json:"finished_at,omitempty"`
	Error          string            `json:"error" doc:"Why the run failed or stopped early; empty otherwise."`
	Counts         ProbeCounts       `json:"counts"`
	Steps          []measure.Step    `json:"steps" doc:"Summaries of the steps finished so far, in ascending concurrency."`
	Knee           *int              `json:"knee" doc:"Knee concurrency of the steps so far; null when the first step failed the knee rule or no step has been measured in a steady state."`
	KneeRefined    *int              `json:"knee_refined,omitempty" doc:"The smallest measured concurrency whose throughput reaches the plateau of the first failing step; a search narrows it down by bisection."`
	KneeResolution *int              `json:"knee_refined_resolution,omitempty" doc:"The knee lies in (knee_refined − resolution, knee_refined]."`
	Collapse       *int              `json:"collapse" doc:"First concurrency whose goodput fell beyond its noise and the collapse tolerance; null when none did."`
	QuotaLimited   bool              `json:"quota_limited" doc:"The share of 429 answers rises with concurrency, or the rate-limit headers showed the key exhausted: the quota binds before the model does."`
	USL            *measure.USLFit   `json:"usl,omitempty" doc:"Universal Scalability Law fit to the throughput, when the steps allow one."`
	Notes          []string          `json:"notes,omitempty"`
	RateLimits     *probe.RateLimits `json:"rate_limits,omitempty" doc:"The quota the endpoint announced in its rate-limit headers."`
	StopReason     string            `json:"stop_reason" doc:"Why the run stopped (completed, max_429_ratio, goodput_falling, no_success, budget_requests, budget_tokens, budget_duration, cancelled); empty while it runs."`
	StopDetail     string            `json:"stop_detail,omitempty"`
	Latency        *scenario.Latency `json:"latency,omitempty" doc:"The measured curve and knee as a scenario latency block, when a step had successful answers."`
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
	StopReason string        `json:"stop_reason"`
}

// ProbeList is one page of probes, newest first.
type ProbeList struct {
	Items      []ProbeSummary `json:"items"`
	NextCursor string         `json:"next_cursor,omitempty" doc:"Cursor of the next page; absent on the last page."`
}

type createProbeInput struct {
	Authorization string `header:"X-Probe-Authorization" doc:"The API key for the target, as the whole Authorization header value to send (\"Bearer sk-...\"), instead of a named credential. It is sent only to the target, and never stored, logged or echoed."`
	Body          ProbeRequest
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
		Errors: []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity, http.StatusTooManyRequests, http.StatusServiceUnavailable},
	}
	register(s, op, s.createProbe)
	withExamples(s.OpenAPI(), op.Path, examplesOf[Probe](op.OperationID))

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
		Description: "Cancels a queued or running probe: requests in flight are cut short, everything measured is " +
			"kept, and the probe ends as cancelled. Answers with the probe once it has ended (or after 15 s). A " +
			"probe that has already ended gets a 409.",
		Tags:   []string{tagProbes},
		Errors: []int{http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity},
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
// with Retry-After when they are all taken.
func (s *Server) acquireSlot(ctx context.Context) (*jobs.Slot, error) {
	slot, err := s.jobs.Acquire(ctx)
	var busy *jobs.BusyError
	switch {
	case errors.As(err, &busy):
		return nil, busyProblem(busy.Limit)
	case err != nil:
		return nil, errShuttingDown
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
	cfg, more := s.probeConfig(req)
	problems = append(problems, more...)
	if len(problems) > 0 {
		return nil, huma.Error422UnprocessableEntity("the request is invalid", problems...)
	}
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
		s.log.Error("start a probe", "error", err)
		return nil, huma.Error500InternalServerError("the probe could not be started; the server log has the cause")
	}
	return &probeCreatedOutput{Location: "/v1/probes/" + run.ID, Body: probeResource(run)}, nil
}

// probeConfig builds the probe a request asks for, within the caps; the
// problems are located in the body and name the cap they pass.
func (s *Server) probeConfig(req ProbeRequest) (probe.Config, []error) {
	var problems []error
	cfg := probe.Config{
		BaseURL: req.Target.BaseURL, Model: req.Target.Model, Steps: req.Steps, Search: req.Search,
		RequestsPerStep: req.RequestsPerStep, MaxTokens: req.MaxTokens, IgnoreEOS: req.IgnoreEOS,
		InputTokens: req.InputTokens, Deadline: time.Duration(req.DeadlineMs) * time.Millisecond,
		Seed: uint64(time.Now().UnixNano()),
	}
	if req.PauseMs != nil {
		cfg.Pause = time.Duration(*req.PauseMs) * time.Millisecond
		if *req.PauseMs == 0 {
			cfg.Pause = -1 // none; zero selects the default
		}
	}
	if req.Stop != nil {
		cfg.Max429Ratio, cfg.CollapseTolerancePct = req.Stop.Max429Ratio, req.Stop.CollapseTolerancePct
	}
	switch {
	case req.Search && len(req.Steps) > 0:
		problems = append(problems, &huma.ErrorDetail{Location: "body.steps", Message: "a search chooses its own steps: give steps or search, not both"})
	case !req.Search && req.MaxConcurrency > 0:
		problems = append(problems, &huma.ErrorDetail{Location: "body.max_concurrency", Value: req.MaxConcurrency, Message: "max_concurrency bounds a search: set search too, or give steps"})
	case req.Search:
		cfg.SearchMax = cmp.Or(req.MaxConcurrency, min(probe.DefaultSearchMax, s.probe.MaxConcurrency))
		if cfg.SearchMax > s.probe.MaxConcurrency {
			problems = append(problems, capProblem("body.max_concurrency", cfg.SearchMax, "max_concurrency", s.probe.MaxConcurrency))
		}
	}
	if len(cfg.Steps) == 0 && !req.Search {
		for _, c := range probe.DefaultSteps {
			if c <= s.probe.MaxConcurrency {
				cfg.Steps = append(cfg.Steps, c)
			}
		}
	}
	for i, c := range req.Steps {
		loc := fmt.Sprintf("body.steps[%d]", i)
		switch {
		case c < 1:
			problems = append(problems, &huma.ErrorDetail{Location: loc, Value: c, Message: "a concurrency is at least 1"})
		case c > s.probe.MaxConcurrency:
			problems = append(problems, capProblem(loc, c, "max_concurrency", s.probe.MaxConcurrency))
		case i > 0 && c <= req.Steps[i-1]:
			problems = append(problems, &huma.ErrorDetail{Location: loc, Value: c, Message: fmt.Sprintf("the steps must be strictly ascending (%d after %d)", c, req.Steps[i-1])})
		}
	}
	if req.RequestsPerStep > s.probe.MaxRequests {
		problems = append(problems, capProblem("body.requests_per_step", req.RequestsPerStep, "max_requests", s.probe.MaxRequests))
	} else if req.Search && req.RequestsPerStep > 0 {
		problems = append(problems, &huma.ErrorDetail{Location: "body.requests_per_step", Value: req.RequestsPerStep, Message: "a search sizes its steps itself: leave requests_per_step out"})
	} else if err := probe.CheckStepSize(cfg.Concurrencies(), req.RequestsPerStep, 0); err != nil {
		problems = append(problems, &huma.ErrorDetail{Location: "body.requests_per_step", Value: req.RequestsPerStep, Message: err.Error()})
	}
	budget, more := s.budget(req.Budgets, "body.budgets", s.probe.MaxDuration)
	cfg.Budget = budget
	if req.MaxTokens > s.probe.MaxTokens {
		problems = append(problems, capProblem("body.max_tokens", req.MaxTokens, "max_tokens", s.probe.MaxTokens))
	}
	if redact.LooksLikeSecret(req.Label) {
		problems = append(problems, &huma.ErrorDetail{Location: "body.label", Message: secretMessage})
	}
	return cfg, append(problems, more...)
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
			StartedAt: p.StartedAt, FinishedAt: p.FinishedAt, Error: p.Error, Counts: p.Counts, Knee: p.Knee, StopReason: p.StopReason,
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
	var done <-chan struct{}
	if s.jobs != nil {
		done, err = s.jobs.Cancel(in.ID)
	}
	if s.jobs == nil || errors.Is(err, jobs.ErrNotRunning) {
		return nil, huma.Error409Conflict(fmt.Sprintf("the probe has already ended (%s)", run.Status))
	}
	select {
	case <-done:
	case <-time.After(cancelWait):
	case <-ctx.Done():
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
		Error: r.Error, Counts: ProbeCounts(r.Counts), Steps: []measure.Step{},
	}
	_ = json.Unmarshal(r.Config, &p.Config) // stored by this service as a JSON object
	if res := r.Result; res != nil {
		a := res.Analysis
		if a.Steps != nil {
			p.Steps = a.Steps
		}
		p.Knee, p.Collapse, p.QuotaLimited, p.USL, p.Notes = a.Knee, a.Collapse, a.QuotaLimited, a.USL, a.Notes
		p.KneeRefined, p.KneeResolution = a.KneeRefined, a.KneeResolution
		p.StopReason, p.StopDetail = res.StopReason, res.StopDetail
		if len(res.RateLimits) > 0 {
			var rl probe.RateLimits
			if json.Unmarshal(res.RateLimits, &rl) == nil {
				p.RateLimits = &rl
			}
		}
		if lat, err := analysis.Latency(a); err == nil {
			p.Latency = &lat
		}
	}
	return p
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
