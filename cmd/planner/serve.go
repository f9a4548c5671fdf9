package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/plannerdev/planner/api"
	"github.com/plannerdev/planner/internal/config"
	"github.com/plannerdev/planner/internal/jobs"
	"github.com/plannerdev/planner/internal/store"
)

// Timeouts of the HTTP server. Writes allow for the largest what-if grid;
// shutdown waits that long for requests in flight.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 5 * time.Minute
	idleTimeout       = 2 * time.Minute
	shutdownTimeout   = 30 * time.Second
)

func newServeCmd(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the planning API (the default command)",
		Long: "Serve runs the planning API: plans, what-if sweeps, quota tiers, health and\n" +
			"readiness, Prometheus metrics, the OpenAPI document and its docs page at /docs,\n" +
			"stored plans and their reports, and probes run as background jobs.\n\n" +
			"Settings come from defaults, then the YAML file of --config (or PLANNER_CONFIG),\n" +
			"then PLANNER_* environment variables (PLANNER_LISTEN, PLANNER_DB,\n" +
			"PLANNER_AUTH_TOKENS, PLANNER_ALLOWED_HOSTS, PLANNER_ALLOWED_ORIGINS,\n" +
			"PLANNER_LIMITS_MAX_BODY_BYTES, PLANNER_PROBE_ALLOW), then the flags; see\n" +
			"configs/planner.example.yaml, whose probe section holds the probe allow-list,\n" +
			"credentials and caps, and docs/security.md. Without auth tokens the address\n" +
			"bound must be a loopback one (a name such as localhost is judged by the address\n" +
			"it resolved to). Requests must name the service in their Host header (its\n" +
			"addresses, localhost, or allowed_hosts) and come from its own page or one of\n" +
			"allowed_origins. One service writes one store file: a second one on the same\n" +
			"file exits at once, naming the first. Several replicas share a PostgreSQL\n" +
			"database instead: --db postgres://... (docs/deploy.md).\n" +
			"SIGINT or SIGTERM stops it after the requests in flight have finished, and it\n" +
			"exits 0: running plans, what-if grids and simulations are stopped and answered\n" +
			"with a 503, running probes are stopped, keep what they measured, and are marked\n" +
			"interrupted, and running plan validations are stopped and answered with a 503.",
		Example: "  planner serve\n  planner serve --listen 127.0.0.1:9000 --db /var/lib/planner/planner.db\n" +
			"  PLANNER_AUTH_TOKENS=$(cat token) planner serve --listen 0.0.0.0:8080",
		Args: usageArgs(cobra.NoArgs),
	}
	out := addOutputFlags(cmd, startFormats...)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := out.check(); err != nil {
			return err
		}
		return serve(cmd.Context(), s, cmd.Flags(), out)
	}
	cmd.Flags().String("listen", config.DefaultListen, "address to listen on, host:port; port 0 picks a free one (PLANNER_LISTEN)")
	cmd.Flags().String("db", config.DefaultDB, "SQLite file for stored plans and probes, or a postgres:// URL of a database that replicas share (PLANNER_DB)")
	cmd.Flags().String("config", "", "YAML configuration file (PLANNER_CONFIG)")
	return cmd
}

// serveByDefault is what `planner` does with no command: serve, with
// serve's flags, which the root command takes too.
func serveByDefault(cmd *cobra.Command, s streams, out *output) error {
	return serve(cmd.Context(), s, cmd.Flags(), out)
}

// serve runs the API until ctx ends, then shuts down gracefully. flags may
// be nil; out is how to say where it listens.
func serve(ctx context.Context, s streams, flags *pflag.FlagSet, out *output) error {
	return serveOn(ctx, s, flags, out, net.Listen)
}

// listenFunc opens the service's listener; net.Listen but in tests.
type listenFunc func(network, address string) (net.Listener, error)

// serveOn is serve with the listener opened by listen.
func serveOn(ctx context.Context, s streams, flags *pflag.FlagSet, out *output, listen listenFunc) error {
	cfg, err := config.Load(flags)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(s.err, nil))
	// The store's lock comes first: a second service on the same file
	// stops here, before it listens or touches the first one's probes. A
	// damaged file stops it too; a full disk does not: the store starts
	// degraded, logs so, and readiness fails until it has room. A
	// PostgreSQL database that does not answer stops it, the cause named.
	st, err := store.Open(ctx, cfg.DB, store.WithMaxDocumentBytes(cfg.Store.MaxDocumentBytes),
		store.WithMaxBytes(cfg.Store.MaxBytes), store.WithLogger(logger))
	if err != nil {
		var locked *store.LockedError
		if errors.As(err, &locked) {
			return fmt.Errorf("the store %w", err)
		}
		return err
	}
	ln, err := listen("tcp", cfg.Listen)
	if err != nil {
		return errors.Join(fmt.Errorf("listen on %s: %w", cfg.Listen, err), closeStore(st))
	}
	// Loopback is decided on the address bound, not on the name asked
	// for: "localhost" may resolve anywhere.
	if len(cfg.Auth.Tokens) == 0 && !isLoopback(ln.Addr()) {
		return errors.Join(fmt.Errorf("auth.tokens: required: listen address %s is bound to %s, which is not a loopback address, so the API must ask for a bearer token (set auth.tokens or PLANNER_AUTH_TOKENS)", cfg.Listen, ln.Addr()),
			ln.Close(), closeStore(st))
	}
	probes := jobs.New(st, jobs.Options{MaxRunning: cfg.Probe.MaxRunning, Lease: cfg.Probe.Lease, Logger: logger})
	handler := api.New(api.Options{
		Tiers:                 cfg.Tiers,
		Tokens:                cfg.Auth.Tokens,
		MaxBodyBytes:          cfg.Limits.MaxBodyBytes,
		MaxAnalysisBodyBytes:  cfg.Limits.MaxAnalysisBodyBytes,
		PlanTimeout:           cfg.Limits.PlanTimeout,
		MaxComputations:       cfg.Limits.MaxComputations,
		SimulationMaxEvents:   cfg.Limits.SimulationMaxEvents,
		SimulationMaxDuration: cfg.Limits.SimulationMaxDuration,
		Store:                 st,
		Jobs:                  probes,
		Probe:                 cfg.Probe,
		Logger:                logger,
		Addr:                  ln.Addr(),
		Hosts:                 serviceHosts(cfg),
		Origins:               cfg.AllowedOrigins,
	})
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	if err := announce(s, out, "http://"+ln.Addr().String()); err != nil {
		return errors.Join(err, ln.Close(), closeStore(st))
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return errors.Join(fmt.Errorf("serve: %w", err), closeStore(st))
	case <-ctx.Done():
	}
	fmt.Fprintln(s.out, "planner: stopping; waiting for requests in flight")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	var errs []error
	// Running computations (plans, what-if grids, simulations) end at once
	// and are answered 503, so that none holds the shutdown up to its
	// plan_timeout. Running probes stop next, saving what they measured,
	// and end as interrupted; their event streams end with them, so that
	// the server's shutdown does not wait on those streams.
	handler.Close()
	if err := probes.Shutdown(shutdownCtx); err != nil {
		errs = append(errs, err)
	}
	if err := srv.Shutdown(shutdownCtx); err != nil {
		errs = append(errs, fmt.Errorf("shut down: %w", err), srv.Close())
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("serve: %w", err))
	}
	errs = append(errs, closeStore(st))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintln(s.out, "planner: stopped")
	return nil
}

// isLoopback reports whether a bound address accepts connections from
// this machine only.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// serviceHosts are the names that a request's Host header may give besides
// the bound address and the loopback forms: the listen address's own host
// name and allowed_hosts.
func serviceHosts(cfg config.Config) []string {
	hosts := slices.Clone(cfg.AllowedHosts)
	if host, _, err := net.SplitHostPort(cfg.Listen); err == nil && host != "" {
		hosts = append(hosts, host)
	}
	return hosts
}

func closeStore(st *store.Store) error {
	if err := st.Close(); err != nil {
		return fmt.Errorf("close the store: %w", err)
	}
	return nil
}
