package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/simulate"
)

// SimulationRequest is the body of POST /v1/simulations.
type SimulationRequest struct {
	Scenario   scenario.Scenario `json:"scenario" doc:"The scenario whose plan to simulate (the same document POST /v1/plans takes); a class's demand.profile varies its rate over the run."`
	DurationS  float64           `json:"duration_s,omitempty" minimum:"1" maximum:"604800" doc:"Simulated time in seconds, at least 1; default 3,600. At most the server's limits.simulation_max_duration."`
	StartHour  float64           `json:"start_hour,omitempty" minimum:"0" exclusiveMaximum:"24" doc:"Time of day the run starts at, hours after midnight UTC, for classes with a schedule; default 0, midnight."`
	Seed       *uint64           `json:"seed,omitempty" maximum:"9007199254740991" doc:"Seed of every random stream, below 2⁵³; default the scenario's policy.seed, else 1. The same request gives the same answer."`
	Pacing     *bool             `json:"pacing,omitempty" doc:"Clients pace their sends with the plan's token bucket; default true."`
	AIMD       bool              `json:"aimd,omitempty" doc:"Clients resize their pools with the plan's AIMD settings."`
	Refill     string            `json:"refill,omitempty" enum:"continuous,window" doc:"How the provider refills per-minute limits: continuous (default), a bucket holding one burst window's allowance and refilled at the limit's rate; or window, a counter reset every burst_window_s."`
	RetryAfter *bool             `json:"retry_after,omitempty" doc:"The provider's 429s carry Retry-After; default true. Without it clients back off with full jitter."`
	IntervalS  float64           `json:"interval_s,omitempty" exclusiveMinimum:"0" maximum:"604800" doc:"Width of one point of the time series, seconds, at most duration_s; default duration_s / 240 rounded up to a whole second, and at most 2,000 points."`
	MaxEvents  int               `json:"max_events,omitempty" minimum:"1" maximum:"100000000" doc:"Stop and refuse a run that needs more events; default and at most the server's limits.simulation_max_events."`
	Replay     []simulate.Replay `json:"replay,omitempty" maxItems:"32" doc:"Arrival times that replace a class's demand, such as the start_s column of a probe's requests.csv."`
}

// SimulationResponse is a simulated run of the plan beside its
// predictions: the engine's simulation, as `planner simulate -o json`
// writes it.
type SimulationResponse struct {
	simulate.Simulation
}

type simulationInput struct {
	RawBody []byte
	Body    SimulationRequest
}

var simulationSchema = sync.OnceValue(schemaOf[SimulationRequest])

// simulationCaps are the server's bounds on one simulation.
type simulationCaps struct {
	maxEvents   int
	maxDuration time.Duration
}

// Resolve adds the scenario's cross-field rules and the rules of the
// options (replayed classes that exist, few enough time-series points) to
// huma's schema validation, so that they are reported together.
func (in *simulationInput) Resolve(huma.Context) []error {
	rules := scenarioRules(in.Body.Scenario, "body.scenario")
	if len(in.Body.Scenario.Check()) == 0 {
		for _, e := range simulate.CheckOptions(in.Body.Scenario, in.Body.options()) {
			rules = append(rules, rule{location: joinPath("body", e.Path), message: e.Message})
		}
	}
	return uncoveredRules(in.RawBody, simulationSchema(), rules)
}

// options are the request's simulation options, before the server's caps.
func (r SimulationRequest) options() simulate.Options {
	return simulate.Options{
		DurationS: r.DurationS, StartHour: r.StartHour, Seed: r.Seed, NoPacing: r.Pacing != nil && !*r.Pacing, AIMD: r.AIMD, Refill: r.Refill,
		NoRetryAfter: r.RetryAfter != nil && !*r.RetryAfter, IntervalS: r.IntervalS, MaxEvents: r.MaxEvents, Replay: r.Replay,
	}
}

type simulationOutput struct {
	Body *SimulationResponse
}

func (s *Server) registerSimulations() {
	op := huma.Operation{
		OperationID: "create-simulation",
		Method:      http.MethodPost,
		Path:        "/v1/simulations",
		Summary:     "Simulate a scenario's plan against its quotas",
		Description: "Plans the scenario and runs the plan, while the client waits, as a seeded discrete-event " +
			"simulation (docs/simulate.md): per class its arrivals (Poisson at the demand, its demand profile, or " +
			"replayed start times), the pool and its FIFO queue, the plan's pacing, admission shedding after the " +
			"max queue wait, retries honouring Retry-After with full-jitter backoff, and optionally AIMD; a provider " +
			"that enforces every quota limit per burst window and daily limits per day; endpoints whose latency " +
			"follows their load. The answer gives, per class beside the plan's predictions, the simulated " +
			"throughput, goodput, 429s, retries, shedding, queue wait and TTFT and E2E percentiles, time series " +
			"of in-flight requests, queue and 429s, each key's use over time, and a verdict with its reasons. " +
			"The same request gives the same answer. A run is bounded by the server's limits on simulated time " +
			"and events (limits.simulation_max_duration, limits.simulation_max_events), stops at the " +
			"server's plan_timeout, and takes one of the service's computation slots while it runs (a 503 with " +
			"Retry-After when they are all busy).",
		Tags:   []string{tagSimulations},
		Errors: slices.Concat(errorStatuses, []int{http.StatusServiceUnavailable}),
	}
	register(s, op, s.createSimulation)
	withExamples(s.OpenAPI(), op.Path, examplesOf[SimulationResponse](op.OperationID))
	s.declareRetryAfter(op.Method, op.Path, http.StatusServiceUnavailable, computeBusy)
}

func (s *Server) createSimulation(ctx context.Context, in *simulationInput) (*simulationOutput, error) {
	o := in.Body.options()
	var problems []error
	if o.DurationS > s.simCaps.maxDuration.Seconds() {
		problems = append(problems, &huma.ErrorDetail{Location: "body.duration_s", Value: o.DurationS,
			Message: fmt.Sprintf("at most %g s, the server's limits.simulation_max_duration", s.simCaps.maxDuration.Seconds())})
	}
	if o.MaxEvents > s.simCaps.maxEvents {
		problems = append(problems, &huma.ErrorDetail{Location: "body.max_events", Value: o.MaxEvents,
			Message: "at most " + strconv.Itoa(s.simCaps.maxEvents) + ", the server's limits.simulation_max_events"})
	}
	if len(problems) > 0 {
		return nil, huma.Error422UnprocessableEntity("the request is invalid", problems...)
	}
	if o.MaxEvents == 0 {
		o.MaxEvents = s.simCaps.maxEvents
	}
	r, err := s.simulate(ctx, in.Body.Scenario, o)
	if err != nil {
		return nil, s.simulationError(ctx, err, inBody, "body.scenario")
	}
	return &simulationOutput{Body: &SimulationResponse{Simulation: *r}}, nil
}

// simulate plans and simulates sc, counting the run in the metrics.
func (s *Server) simulate(ctx context.Context, sc scenario.Scenario, o simulate.Options) (*simulate.Simulation, error) {
	start := time.Now()
	r, err := s.app.Simulate(ctx, sc, o)
	s.metrics.simulation(r, err, time.Since(start).Seconds())
	return r, err
}

// simulationError turns what stopped a simulation into a problem: its
// options' problems and the deadline at the request's field that at names
// for an option (body.duration_s for POST /v1/simulations), and the rest
// as computeError answers them, the scenario's problems under scenarioAt.
func (s *Server) simulationError(ctx context.Context, err error, at func(option string) string, scenarioAt string) error {
	var optionErrs simulate.OptionErrors
	switch {
	case errors.As(err, &optionErrs):
		details := make([]error, len(optionErrs))
		for i, e := range optionErrs {
			details[i] = &huma.ErrorDetail{Location: at(e.Path), Message: e.Message}
		}
		return huma.Error422UnprocessableEntity("the request is invalid", details...)
	case errors.Is(err, context.DeadlineExceeded):
		return huma.Error422UnprocessableEntity(fmt.Sprintf("the simulation stopped after %s, the server's limit", s.timeout), &huma.ErrorDetail{
			Location: at("duration_s"),
			Message:  "too long to simulate in time: shorten the simulated run",
		})
	}
	return s.computeError(ctx, err, scenarioAt)
}

// inBody locates an option of POST /v1/simulations in its body.
func inBody(option string) string { return joinPath("body", option) }

// newSimulationCaps fills in the defaults of the simulation caps.
func newSimulationCaps(maxEvents int, maxDuration time.Duration) simulationCaps {
	c := simulationCaps{maxEvents: maxEvents, maxDuration: maxDuration}
	if c.maxEvents <= 0 {
		c.maxEvents = config.DefaultSimulationMaxEvents
	}
	if c.maxDuration <= 0 {
		c.maxDuration = config.DefaultSimulationMaxDuration
	}
	return c
}
