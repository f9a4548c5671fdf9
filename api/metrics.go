package api

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
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
	// every slot was busy.
	computeRefused prometheus.Counter
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
			Help: "Plan and what-if requests refused with 503 because every computation slot was busy.",
		}),
	}
	m.registry.MustRegister(m.requests, m.duration, m.planSeconds, m.whatIfCells, m.panics, m.computeRefused,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// statusClass is "2xx", "4xx", ... for a status code.
func statusClass(status int) string {
	return strconv.Itoa(status/100) + "xx"
}
