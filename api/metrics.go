package api

import (
	"context"
	"errors"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/plannerdev/planner/internal/app"
	"github.com/plannerdev/planner/internal/jobs"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/simulate"
	"github.com/plannerdev/planner/internal/store"
)

// latencyBuckets are the histogram buckets of request and plan durations,
// in seconds: from a cached plan (about a millisecond) to a large what-if.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// streamBuckets are the buckets of the streams' durations, in seconds:
// a probe's events stream for as long as the probe runs.
var streamBuckets = []float64{1, 5, 15, 60, 300, 900, 1800, 3600, 7200}

// streamOperations are the operations whose answers stream for as long as
// the work they follow (a probe's events): their durations say how long a
// client followed, not how fast the service answered, so they go to their
// own histogram rather than the request latency's.
var streamOperations = map[string]bool{"get-probe-events": true}

// Kinds of background work, the kind label of the job metrics.
const (
	kindProbe      = "probe"
	kindValidation = "validation"
)

// metrics are the server's Prometheus collectors, on a registry of its own
// so that two servers in one process (tests) do not share counts. Their
// names, labels and meaning are listed in docs/operations.md.
type metrics struct {
	registry    *prometheus.Registry
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	streams     *prometheus.HistogramVec
	planSeconds prometheus.Histogram
	whatIfCells prometheus.Counter
	panics      prometheus.Counter
	// computeRefused counts computations turned away with 503 because
	// every slot was busy: load shedding, which the request counts and
	// the access log keep apart from errors (status_class "shed").
	computeRefused prometheus.Counter
	// Probe jobs and validations, by kind: running now, finished by
	// outcome, the requests they sent to endpoints and the 429 answers
	// they got.
	jobsRunning     *prometheus.GaugeVec
	jobsFinished    *prometheus.CounterVec
	jobRequests     *prometheus.CounterVec
	jobRateLimited  *prometheus.CounterVec
	simulations     *prometheus.CounterVec
	simulationTime  prometheus.Histogram
	simulatedEvents prometheus.Counter
	storeOps        *prometheus.CounterVec
}

// watchEngine adds the engine's computations running and waiting for a
// slot, and the size of its caches, to the metrics.
func (m *metrics) watchEngine(e *plan.Engine) {
	m.registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "planner_compute_running",
			Help: "Computations (plans, what-if grids and their borrowed workers, simulations) holding a slot.",
		}, func() float64 { return float64(e.Running()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "planner_compute_waiting",
			Help: "Computations waiting for a slot.",
		}, func() float64 { return float64(e.Waiting()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "planner_engine_cache_bytes",
			Help: "Estimated bytes held by the planning engine's caches of draws, samples, tails and plans.",
		}, func() float64 { return float64(e.CacheBytes()) }),
	)
}

// shedKey holds, in a request's context, the mark that the request was
// shed: answered 503 because every computation slot was busy.
type shedKey struct{}

// withShedMark gives a request's context a mark that markShed sets.
func withShedMark(ctx context.Context) (context.Context, *atomic.Bool) {
	mark := new(atomic.Bool)
	return context.WithValue(ctx, shedKey{}, mark), mark
}

// markShed marks the request of ctx as shed.
func markShed(ctx context.Context) {
	if mark, ok := ctx.Value(shedKey{}).(*atomic.Bool); ok {
		mark.Store(true)
	}
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "planner_http_requests_total",
			Help: "HTTP requests answered, by operation and status class (shed: the 503s of the computation limit).",
		}, []string{"operation", "status_class"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "planner_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by operation and status class; streams are in planner_http_stream_duration_seconds.",
			Buckets: latencyBuckets,
		}, []string{"operation", "status_class"}),
		streams: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "planner_http_stream_duration_seconds",
			Help:    "How long a streamed answer (a probe's events) stayed open, by operation and status class.",
			Buckets: streamBuckets,
		}, []string{"operation", "status_class"}),
		planSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "planner_plan_compute_seconds",
			Help:    "Time to compute one plan for POST /v1/plans.",
			Buckets: latencyBuckets,
		}),
		whatIfCells: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "planner_whatif_cells_total",
			Help: "What-if grid cells planned.",
		}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "planner_http_panics_total",
			Help: "Requests whose handler panicked and got a 500.",
		}),
		computeRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "planner_compute_refused_total",
			Help: "Plan, what-if and simulation requests refused with 503 because every computation slot was busy (load shedding).",
		}),
		jobsRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "planner_jobs_running",
			Help: "Probes and plan validations running now, by kind (probe, validation).",
		}, []string{"kind"}),
		jobsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "planner_jobs_finished_total",
			Help: "Probes and plan validations finished, by kind and outcome (a probe's final status; a validation's verdict, or error or stopped).",
		}, []string{"kind", "outcome"}),
		jobRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "planner_job_requests_total",
			Help: "Requests that finished probes and validations sent to endpoints, by kind: a probe's every request, warm-up included; a validation's measured ones.",
		}, []string{"kind"}),
		jobRateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "planner_job_rate_limited_total",
			Help: "429 answers that finished probes and validations got from endpoints, retried ones included, by kind.",
		}, []string{"kind"}),
		simulations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "planner_simulations_total",
			Help: "Simulations run for POST /v1/simulations and reports, by outcome (completed, invalid, stopped, shed, error).",
		}, []string{"outcome"}),
		simulationTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "planner_simulation_duration_seconds",
			Help:    "Time to plan and simulate one run, whatever its outcome but shed.",
			Buckets: latencyBuckets,
		}),
		simulatedEvents: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "planner_simulation_events_total",
			Help: "Events that completed simulations processed.",
		}),
		storeOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "planner_store_operations_total",
			Help: "Operations of the API on the store, by operation and result (ok, not_found, invalid, too_large, full, unavailable, cancelled, error).",
		}, []string{"operation", "result"}),
	}
	m.registry.MustRegister(m.requests, m.duration, m.streams, m.planSeconds, m.whatIfCells, m.panics, m.computeRefused,
		m.jobsRunning, m.jobsFinished, m.jobRequests, m.jobRateLimited, m.simulations, m.simulationTime, m.simulatedEvents, m.storeOps,
		buildInfoGauge(), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, kind := range []string{kindProbe, kindValidation} {
		m.jobsRunning.WithLabelValues(kind)
		m.jobRequests.WithLabelValues(kind)
		m.jobRateLimited.WithLabelValues(kind)
	}
	return m
}

// buildInfoGauge is planner_build_info: 1, labelled with the module
// version, the VCS revision and the Go version that the toolchain
// recorded in the binary (as planner version prints them).
func buildInfoGauge() prometheus.Collector {
	version, revision, goVersion := "(devel)", "", runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		for _, st := range bi.Settings {
			if st.Key == "vcs.revision" {
				revision = st.Value
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "planner_build_info",
		Help:        "Always 1; the labels name the build: module version, VCS revision and Go version.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": goVersion},
	})
	g.Set(1)
	return g
}

// observeRequest counts one answered request and its duration, a
// stream's in the streams' histogram.
func (m *metrics) observeRequest(op, class string, seconds float64) {
	m.requests.WithLabelValues(op, class).Inc()
	if streamOperations[op] {
		m.streams.WithLabelValues(op, class).Observe(seconds)
		return
	}
	m.duration.WithLabelValues(op, class).Observe(seconds)
}

// jobFinished counts a finished probe or validation: its outcome, the
// requests it sent and the 429 answers it got.
func (m *metrics) jobFinished(kind, outcome string, requests, rateLimited int) {
	m.jobsFinished.WithLabelValues(kind, outcome).Inc()
	m.jobRequests.WithLabelValues(kind).Add(float64(requests))
	m.jobRateLimited.WithLabelValues(kind).Add(float64(rateLimited))
}

// simulation counts one simulation: its outcome, its time unless it was
// shed (it never ran), and the events of one that completed.
func (m *metrics) simulation(r *simulate.Simulation, err error, seconds float64) {
	outcome := simulationOutcome(err)
	m.simulations.WithLabelValues(outcome).Inc()
	if outcome != "shed" {
		m.simulationTime.Observe(seconds)
	}
	if r != nil {
		m.simulatedEvents.Add(float64(r.Settings.Events))
	}
}

// simulationOutcome names how a simulation ended: completed; invalid (its
// scenario or options refused); stopped (the deadline, the client gone,
// the server stopping); shed (no slot); error (anything else, a panic).
func simulationOutcome(err error) string {
	var scenarioErrs scenario.Errors
	var optionErrs simulate.OptionErrors
	var nonFinite *app.NonFiniteError
	switch {
	case err == nil:
		return "completed"
	case errors.Is(err, plan.ErrBusy):
		return "shed"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.Is(err, plan.ErrClosed):
		return "stopped"
	case errors.As(err, &scenarioErrs), errors.As(err, &optionErrs), errors.As(err, &nonFinite):
		return "invalid"
	}
	return "error"
}

// storeResult names the result of a store operation for
// planner_store_operations_total.
func storeResult(err error) string {
	var tooLarge *store.TooLargeError
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, store.ErrNotFound):
		return "not_found"
	case errors.Is(err, store.ErrBadCursor), errors.Is(err, store.ErrSecret):
		return "invalid"
	case errors.As(err, &tooLarge):
		return "too_large"
	case errors.Is(err, store.ErrFull):
		return "full"
	case errors.Is(err, store.ErrGone), errors.Is(err, store.ErrStarting), errors.Is(err, store.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	}
	return "error"
}

// statusClass is "2xx", "4xx", ... for a status code, and "shed" for a
// request shed by the computation limit: a 503 that is not a failure.
func statusClass(status int, shed bool) string {
	if shed {
		return "shed"
	}
	return strconv.Itoa(status/100) + "xx"
}

// countedStore counts every operation of the API on its store, by
// operation and result (planner_store_operations_total).
type countedStore struct {
	Store
	ops *prometheus.CounterVec
}

func (c countedStore) count(op string, err error) error {
	c.ops.WithLabelValues(op, storeResult(err)).Inc()
	return err
}

func (c countedStore) Ready(ctx context.Context) error {
	return c.count("ready", c.Store.Ready(ctx))
}

func (c countedStore) SavePlan(ctx context.Context, p store.StoredPlan) (string, error) {
	id, err := c.Store.SavePlan(ctx, p)
	return id, c.count("save_plan", err)
}

func (c countedStore) GetPlan(ctx context.Context, id string) (store.StoredPlan, error) {
	p, err := c.Store.GetPlan(ctx, id)
	return p, c.count("get_plan", err)
}

func (c countedStore) ListPlans(ctx context.Context, opts store.ListOptions) ([]store.StoredPlan, string, error) {
	ps, next, err := c.Store.ListPlans(ctx, opts)
	return ps, next, c.count("list_plans", err)
}

func (c countedStore) PlansForProbe(ctx context.Context, probeID string) ([]store.StoredPlan, error) {
	ps, err := c.Store.PlansForProbe(ctx, probeID)
	return ps, c.count("plans_for_probe", err)
}

func (c countedStore) GetProbe(ctx context.Context, id string) (store.ProbeRun, error) {
	r, err := c.Store.GetProbe(ctx, id)
	return r, c.count("get_probe", err)
}

func (c countedStore) ListProbes(ctx context.Context, opts store.ListOptions) ([]store.ProbeRun, string, error) {
	rs, next, err := c.Store.ListProbes(ctx, opts)
	return rs, next, c.count("list_probes", err)
}

func (c countedStore) WriteRecordsCSV(ctx context.Context, w io.Writer, probeID string) error {
	return c.count("write_records_csv", c.Store.WriteRecordsCSV(ctx, w, probeID))
}

// watchProbe follows a probe job that the API started until it ends:
// planner_jobs_running while it runs, then its outcome (its final status),
// its requests and its 429 answers as the store counted its rows.
func (s *Server) watchProbe(id string) {
	running := s.metrics.jobsRunning.WithLabelValues(kindProbe)
	running.Inc()
	go func() {
		defer running.Dec()
		// Follow returns once the run has ended (its done event), or when
		// the store cannot be read; either way the outcome is read below.
		if err := s.jobs.Follow(context.Background(), id, func(jobs.Event) error { return nil }); err != nil {
			s.log.Warn("metrics: follow a probe", "probe", id, "error", err)
		}
		// The job wrote its end before it was done; a bounded read, as
		// the job's own store writes are.
		ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
		defer cancel()
		run, err := s.store.GetProbe(ctx, id)
		if err != nil {
			s.log.Warn("metrics: read a finished probe", "probe", id, "error", err)
			s.metrics.jobFinished(kindProbe, "unknown", 0, 0)
			return
		}
		s.metrics.jobFinished(kindProbe, string(run.Status), run.Counts.Records, run.Counts.RateLimited)
	}()
}
