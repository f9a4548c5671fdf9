// Package api is planner's HTTP API (README.md, "The planning service";
// docs/service-probes.md; docs/security.md for the rules every request
// passes; docs/simulate.md): huma v2 operations on net/http for plans
// (computed, stored, reported and validated), simulations of plans,
// what-if sweeps, the quota-tier catalogue, probes run as background jobs
// with their events, rows and charts, record cards, analyses of measured
// ramps, health and readiness probes, Prometheus metrics, the OpenAPI
// document, an offline docs page and the browser page of internal/ui. New
// builds the same API for `planner serve`, `planner openapi` and the
// tests.
package api

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path"
	"runtime"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/plannerdev/planner/internal/app"
	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/jobs"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/simulate"
	"github.com/plannerdev/planner/internal/target"
	"github.com/plannerdev/planner/internal/ui"
)

// Version is the version of the API that the OpenAPI document states.
const Version = "1.0.0"

// Readier is what readiness needs from the store: whether it can take a
// write now (package store's Ready).
type Readier interface {
	Ready(ctx context.Context) error
}

// Options configure an API.
type Options struct {
	// Tiers is the quota-tier catalogue served by GET /v1/tiers and used by
	// what-if variations that name tiers.
	Tiers []config.Tier
	// Tokens are the bearer tokens that clients must present; with none,
	// the API is open.
	Tokens []string
	// MaxBodyBytes caps request bodies; 0 means config.DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxAnalysisBodyBytes caps the body of POST /v1/analyses, which
	// carries a whole result file; 0 means
	// config.DefaultMaxAnalysisBodyBytes.
	MaxAnalysisBodyBytes int64
	// PlanTimeout bounds the computation of one plan, what-if grid or
	// simulation; 0 means config.DefaultPlanTimeout.
	PlanTimeout time.Duration
	// MaxComputations caps the computations running at once (a plan, a
	// simulation, or one cell of a what-if grid); twice as many may wait
	// for a slot, and more are answered 503. 0 means one per CPU.
	MaxComputations int
	// SimulationMaxEvents and SimulationMaxDuration bound one simulation;
	// 0 means config.DefaultSimulationMaxEvents and
	// config.DefaultSimulationMaxDuration.
	SimulationMaxEvents   int
	SimulationMaxDuration time.Duration
	// Store keeps plans and probes and answers readiness pings; nil means
	// the server is never ready and stores nothing.
	Store Store
	// Jobs runs probes in the background; nil means probes cannot start.
	Jobs *jobs.Manager
	// Probe is the probe section of the configuration: the target
	// allow-list, the named credentials and the caps. Zero fields select
	// config.DefaultProbe's.
	Probe config.Probe
	// Network is how probes resolve and reach targets; zero means the
	// system's resolver and dialer.
	Network target.Network
	// Logger receives access logs and errors; nil discards them.
	Logger *slog.Logger
	// Addr is the address the service's listener is bound to: its IP is
	// a name of the service that the Host header may give (any IP when
	// it is bound to every interface). Nil: only the loopback forms and
	// Hosts.
	Addr net.Addr
	// Hosts are the other names of the service that the Host header may
	// give, "host" for any port or "host:port": the listen address's own
	// name and the configured allowed_hosts. "localhost" and loopback IPs
	// are always allowed.
	Hosts []string
	// Origins are the web origins besides the service's own whose pages
	// may call the API (allowed_origins).
	Origins []string
}

// Server is the API as an http.Handler, with its OpenAPI document.
type Server struct {
	api     huma.API
	handler http.Handler
	mux     *http.ServeMux
	metrics *metrics
	log     *slog.Logger
	store   Store
	jobs    *jobs.Manager
	probe   config.Probe
	guard   *target.Guard
	tiers   []config.Tier
	tokens  [][32]byte
	hosts   hostPolicy
	origins originPolicy
	maxBody int64
	// maxAnalysisBody is the body limit of POST /v1/analyses alone.
	maxAnalysisBody int64
	timeout         time.Duration
	// engine bounds and runs every computation (its limits are
	// PlanTimeout and MaxComputations); app is what the handlers compute
	// with, internal/app's App on that engine.
	engine  *plan.Engine
	app     computer
	simCaps simulationCaps
	// labels maps a route pattern ("POST /v1/plans") to the operation
	// name used in logs and metrics.
	labels map[string]string
}

// New builds the API. It panics only on a programming error in the
// operation definitions, never on options.
func New(opts Options) *Server {
	s := &Server{
		mux:             http.NewServeMux(),
		metrics:         newMetrics(),
		log:             opts.Logger,
		store:           opts.Store,
		jobs:            opts.Jobs,
		probe:           withProbeDefaults(opts.Probe),
		tiers:           opts.Tiers,
		tokens:          hashTokens(opts.Tokens),
		hosts:           newHostPolicy(opts.Addr, opts.Hosts),
		maxBody:         opts.MaxBodyBytes,
		maxAnalysisBody: opts.MaxAnalysisBodyBytes,
		timeout:         opts.PlanTimeout,
		simCaps:         newSimulationCaps(opts.SimulationMaxEvents, opts.SimulationMaxDuration),
		labels:          map[string]string{},
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var err error
	if s.origins, err = newOriginPolicy(opts.Origins); err != nil {
		s.log.Error("allowed origins", "error", err)
	}
	if s.maxBody <= 0 {
		s.maxBody = config.DefaultMaxBodyBytes
	}
	if s.maxAnalysisBody <= 0 {
		s.maxAnalysisBody = config.DefaultMaxAnalysisBodyBytes
	}
	if s.timeout <= 0 {
		s.timeout = config.DefaultPlanTimeout
	}
	slots := opts.MaxComputations
	if slots <= 0 {
		slots = runtime.NumCPU()
	}
	s.engine = plan.New(plan.Options{Timeout: s.timeout, MaxConcurrent: slots, Tiers: s.tierQuotas()})
	s.app = app.New(s.engine)
	s.metrics.watchEngine(s.engine)
	if s.store != nil {
		s.store = countedStore{Store: s.store, ops: s.metrics.storeOps}
	}
	if s.tiers == nil {
		s.tiers = []config.Tier{}
	}
	s.guard = s.newGuard(opts.Network)
	s.api = jsonAnswers{humago.New(s.mux, s.humaConfig())}
	s.api.UseMiddleware(s.oneValueEach)
	s.registerPlans()
	s.registerSavedPlans()
	s.registerValidate()
	s.registerWhatIf()
	s.registerSimulations()
	s.registerTiers()
	s.registerProbes()
	s.registerRecords()
	s.registerCompare()
	s.registerAnalyses()
	s.registerOperations()
	s.registerDocs()
	s.declareAnswers()
	page := ui.Handler()
	s.handle("GET /{$}", "ui", page.ServeHTTP)
	s.handle("GET /ui/", "ui", page.ServeHTTP)
	s.handler = s.observe(s.secureHeaders(s.crossSite(s.authenticate(http.HandlerFunc(s.route)))))
	return s
}

// computer is what the handlers compute with: internal/app's App.
type computer interface {
	Plan(ctx context.Context, s scenario.Scenario) (*plan.Plan, error)
	WhatIf(ctx context.Context, s scenario.Scenario, vars []plan.Variation, check bool) (*plan.WhatIf, error)
	Simulate(ctx context.Context, s scenario.Scenario, o simulate.Options) (*simulate.Simulation, error)
}

// Close ends the computations that are running, which are answered 503,
// and refuses new ones the same way: a service calls it when it begins to
// shut down, so that no request waits for a long computation.
func (s *Server) Close() { s.engine.Close() }

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}

// OpenAPI returns the API's OpenAPI 3.1 document.
func (s *Server) OpenAPI() *huma.OpenAPI {
	return s.api.OpenAPI()
}

// register adds a huma operation and records its label for logs and metrics.
func register[I, O any](s *Server, op huma.Operation, handler func(context.Context, *I) (*O, error)) {
	if op.Method == http.MethodPost && op.MaxBodyBytes == 0 {
		// huma refuses a body of MaxBodyBytes or more; allow exactly the limit.
		op.MaxBodyBytes = s.maxBody + 1
	}
	huma.Register(s.api, op, handler)
	s.labels[op.Method+" "+op.Path] = op.OperationID
}

// handle adds a route outside huma (docs, spec) with its label.
func (s *Server) handle(pattern, label string, h http.HandlerFunc) {
	s.mux.HandleFunc(pattern, h)
	s.labels[pattern] = label
}

// route dispatches to the mux, answering unknown routes and methods with
// problem details instead of the mux's plain text.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	if clean := cleanPath(r.URL.Path); clean != r.URL.Path {
		s.notCanonical(w, r, clean)
		return
	}
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r) // which, unlike h, sets the path's wildcards
		return
	}
	// The mux's own answer says whether the path exists for another method.
	probe := &headerCapture{header: http.Header{}}
	h.ServeHTTP(probe, r)
	if probe.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", probe.header.Get("Allow"))
		writeProblem(w, http.StatusMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path)
		return
	}
	writeProblem(w, http.StatusNotFound, "no operation at "+r.URL.Path+"; the operations are listed at /openapi.yaml")
}

// notCanonical answers a path with an empty, . or .. segment
// (//v1//plans, /v1/plans/./id), which the mux would redirect with a 307
// and an HTML or empty body, with a 404 problem that names the path of
// the operation meant, when there is one.
func (s *Server) notCanonical(w http.ResponseWriter, r *http.Request, clean string) {
	u := *r.URL
	u.Path, u.RawPath = clean, ""
	if _, pattern := s.mux.Handler(&http.Request{Method: r.Method, Host: r.Host, URL: &u}); pattern != "" {
		writeProblem(w, http.StatusNotFound, "no operation at "+r.URL.Path+": a path has no empty, . or .. segment; did you mean "+clean+"?")
		return
	}
	writeProblem(w, http.StatusNotFound, "no operation at "+r.URL.Path+"; the operations are listed at /openapi.yaml")
}

// cleanPath is a request path as the mux matches it: rooted, without
// empty, . or .. segments, a trailing slash kept (net/http's cleanPath).
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	clean := path.Clean(p)
	if p[len(p)-1] == '/' && clean != "/" {
		clean += "/"
	}
	return clean
}

// label names the operation a request is for, "unmatched" when none (a
// path that is not in its canonical form included).
func (s *Server) label(r *http.Request) string {
	if cleanPath(r.URL.Path) != r.URL.Path {
		return "unmatched"
	}
	_, pattern := s.mux.Handler(r)
	if l, ok := s.labels[pattern]; ok {
		return l
	}
	return "unmatched"
}

// headerCapture records what the mux would answer for an unknown route.
type headerCapture struct {
	header http.Header
	status int
}

func (c *headerCapture) Header() http.Header         { return c.header }
func (c *headerCapture) Write(b []byte) (int, error) { return len(b), nil }
func (c *headerCapture) WriteHeader(status int)      { c.status = status }
