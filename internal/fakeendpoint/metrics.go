package fakeendpoint

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics is the simulator's Prometheus /metrics, with vLLM's metric
// names (vllm/v1/metrics/loggers.py) for what it simulates, labelled
// model_name and engine as vLLM's are: the sequences decoding and waiting
// for a slot, each request's queue time, TTFT, inter-token latency and
// end-to-end latency (from its arrival, as the server sees it), its
// prompt and generation tokens, the requests finished by reason, and,
// with the prefix cache on, the prompt tokens it was asked for and those
// it served. KV-cache and preemption metrics are not simulated and not
// exported.
type metrics struct {
	registry       *prometheus.Registry
	queue          prometheus.Observer
	ttft, itl, e2e prometheus.Observer
	promptTokens   prometheus.Counter
	genTokens      prometheus.Counter
	reqPrompt      prometheus.Observer
	reqGen         prometheus.Observer
	success        *prometheus.CounterVec
	cacheQueries   prometheus.Counter // nil without a prefix cache
	cacheHits      prometheus.Counter
}

// Histogram buckets of vLLM's latency metrics, in seconds.
var (
	ttftBuckets    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	requestBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	tokenBuckets   = prometheus.ExponentialBuckets(1, 2, 20)
)

func newMetrics(model string, b *batcher, prefixCache bool) *metrics {
	labels := prometheus.Labels{"model_name": model, "engine": "0"}
	reg := prometheus.NewRegistry()
	hist := func(name, help string, buckets []float64) prometheus.Observer {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets, ConstLabels: labels})
		reg.MustRegister(h)
		return h
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
		reg.MustRegister(c)
		return c
	}
	m := &metrics{
		registry:     reg,
		queue:        hist("vllm:request_queue_time_seconds", "Time each request spent waiting for a slot of the batch.", requestBuckets),
		ttft:         hist("vllm:time_to_first_token_seconds", "Time from each request's arrival to its first token.", ttftBuckets),
		itl:          hist("vllm:inter_token_latency_seconds", "Time between two tokens of a request.", itlBuckets),
		e2e:          hist("vllm:e2e_request_latency_seconds", "Time from each request's arrival to its last token.", requestBuckets),
		promptTokens: counter("vllm:prompt_tokens_total", "Prompt tokens of the finished requests."),
		genTokens:    counter("vllm:generation_tokens_total", "Generated tokens of the finished requests."),
		reqPrompt:    hist("vllm:request_prompt_tokens", "Prompt tokens of each finished request.", tokenBuckets),
		reqGen:       hist("vllm:request_generation_tokens", "Generated tokens of each finished request.", tokenBuckets),
		success: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total",
			Help: "Finished requests, by finish reason.", ConstLabels: labels}, []string{"finished_reason"}),
	}
	reg.MustRegister(m.success,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "vllm:num_requests_running", Help: "Sequences decoding in the batch.", ConstLabels: labels},
			func() float64 { return float64(b.current()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "vllm:num_requests_waiting", Help: "Requests waiting for a slot of the batch.", ConstLabels: labels},
			func() float64 { return float64(b.waiting()) }))
	if prefixCache {
		m.cacheQueries = counter("vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.")
		m.cacheHits = counter("vllm:prefix_cache_hits_total", "Prompt tokens served from the prefix cache.")
	}
	return m
}

// prefixCache counts a lookup of the prefix cache: the prompt's tokens and
// those served.
func (m *metrics) prefixCache(queried, hits int) {
	m.cacheQueries.Add(float64(queried))
	m.cacheHits.Add(float64(hits))
}

// serve answers GET /metrics in Prometheus' text format.
func (m *metrics) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, methodNotAllowed(r))
		return
	}
	promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// admitted records a request's wait for its slot.
func (m *metrics) admitted(wait time.Duration) { m.queue.Observe(wait.Seconds()) }

// requestTiming follows one request's tokens for the latency histograms.
type requestTiming struct {
	m       *metrics
	arrived time.Time
	last    time.Time
}

// request starts following a request that arrived at arrived.
func (m *metrics) request(arrived time.Time) *requestTiming {
	return &requestTiming{m: m, arrived: arrived}
}

// token records that token i was produced at at.
func (t *requestTiming) token(i int, at time.Time) {
	if i == 0 {
		t.m.ttft.Observe(at.Sub(t.arrived).Seconds())
	} else {
		t.m.itl.Observe(at.Sub(t.last).Seconds())
	}
	t.last = at
}

// finished records a request that produced all its tokens.
func (t *requestTiming) finished(reason string, u usage) {
	t.m.e2e.Observe(t.last.Sub(t.arrived).Seconds())
	t.m.promptTokens.Add(float64(u.PromptTokens))
	t.m.genTokens.Add(float64(u.CompletionTokens))
	t.m.reqPrompt.Observe(float64(u.PromptTokens))
	t.m.reqGen.Observe(float64(u.CompletionTokens))
	t.m.success.WithLabelValues(reason).Inc()
}
