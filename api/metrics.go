package api

import (
	"context"
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/plannerdev/planner/internal/plan"
)

// latencyBuckets are the histogram buckets of request and plan durations,
// in seconds: from a cached plan (about a millisecond) to a large what-if.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// metrics are the server's Prometheus collectors, on a registry of its own
// so that two servers in one process (tests) do not share counts.
type metrics struct {
	registry    *prometheus.Registry
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	planSeconds prometheus.Histogram
	whatIfCells prometheus.Counter
	panics      prometheus.Counter
	// computeRefused counts computations turned away with 503 because
	// every slot was busy: load shedding, which the request counts and
	// the access log keep apart from errors (status_class "shed").
	computeRefused prometheus.Counter
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
			Help: "HTTP requests answered, by operation and status class.",
		}, []string{"operation", "status_class"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "planner_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by operation and status class.",
			Buckets: latencyBuckets,
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
	}
	m.registry.MustRegister(m.requests, m.duration, m.planSeconds, m.whatIfCells, m.panics, m.computeRefused,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// statusClass is "2xx", "4xx", ... for a status code, and "shed" for a
// request shed by the computation limit: a 503 that is not a failure.
func statusClass(status int, shed bool) string {
	if shed {
		return "shed"
	}
	return strconv.Itoa(status/100) + "xx"
}
