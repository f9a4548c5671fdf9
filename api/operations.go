package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// readyTimeout bounds the store's part of a readiness check.
const readyTimeout = 2 * time.Second

// Status is the body of the health and readiness probes.
type Status struct {
	Status string `json:"status" enum:"ok,ready" doc:"ok: the process serves; ready: its store can also take a write."`
}

type statusOutput struct {
	Body Status
}

func (s *Server) registerOperations() {
	register(s, huma.Operation{
		OperationID: "get-health",
		Method:      http.MethodGet,
		Path:        "/healthz",
		Summary:     "Liveness probe",
		Description: "Answers 200 while the process serves requests. It needs no token, so that a supervisor can probe it.",
		Tags:        []string{tagOperations},
		Security:    []map[string][]string{{}},
	}, func(context.Context, *struct{}) (*statusOutput, error) {
		return &statusOutput{Body: Status{Status: "ok"}}, nil
	})

	register(s, huma.Operation{
		OperationID: "get-readiness",
		Method:      http.MethodGet,
		Path:        "/readyz",
		Summary:     "Readiness probe",
		Description: "Answers 200 when the server's store can take a write now: its start-up has completed, its file is " +
			"the one it opened, it has room for twice the largest document it accepts (store.max_document_bytes), and a " +
			"small write commits. Otherwise 503, with the cause in general terms.",
		Tags:   []string{tagOperations},
		Errors: []int{http.StatusUnauthorized, http.StatusServiceUnavailable},
	}, s.ready)

	handler := promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{Registry: s.metrics.registry})
	register(s, huma.Operation{
		OperationID: "get-metrics",
		Method:      http.MethodGet,
		Path:        "/metrics",
		Summary:     "Prometheus metrics",
		Description: "Metrics in the Prometheus text format (docs/operations.md lists them): the build, requests and " +
			"their latency by operation and status class (\"shed\" for the 503s of the computation limit, which are " +
			"load shedding rather than errors), the durations of event streams apart, plan compute time, what-if " +
			"cells planned, computations running, waiting for a slot and refused, simulations, probes and " +
			"validations running and finished with their requests and 429s, the store's operations by result, " +
			"recovered panics, and the Go runtime and process.",
		Tags:   []string{tagOperations},
		Errors: []int{http.StatusUnauthorized},
		Responses: map[string]*huma.Response{
			"200": {
				Description: "Metrics in the Prometheus text exposition format.",
				Content:     map[string]*huma.MediaType{"text/plain": {Schema: &huma.Schema{Type: huma.TypeString}}},
			},
		},
	}, func(context.Context, *struct{}) (*huma.StreamResponse, error) {
		return &huma.StreamResponse{Body: func(ctx huma.Context) {
			r, w := humago.Unwrap(ctx)
			handler.ServeHTTP(w, r)
		}}, nil
	})
}

func (s *Server) ready(ctx context.Context, _ *struct{}) (*statusOutput, error) {
	if s.store == nil {
		return nil, huma.Error503ServiceUnavailable("the server has no store")
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := s.store.Ready(ctx); err != nil {
		s.log.Warn("readiness: the store cannot take a write", "error", err)
		if problem := storeProblem(err, true); problem != nil {
			return nil, problem
		}
		return nil, huma.Error503ServiceUnavailable("the store does not answer")
	}
	return &statusOutput{Body: Status{Status: "ready"}}, nil
}
