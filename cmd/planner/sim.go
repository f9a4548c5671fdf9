package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner/internal/fakeendpoint"
)

// simShutdownGrace is how long in-flight streams may run on after the
// command is cancelled before their connections are closed.
const simShutdownGrace = 5 * time.Second

// simFlagErrors names the flag behind each configuration error of sim.New.
var simFlagErrors = []struct {
	err  error
	flag string
}{
	{fakeendpoint.ErrTTFTGrowth, "ttft-growth"},
	{fakeendpoint.ErrITLGrowth, "itl-growth"},
	{fakeendpoint.ErrPrefillPer1K, "prefill-per-1k"},
	{fakeendpoint.ErrRPM, "rpm"},
	{fakeendpoint.ErrTPM, "tpm"},
	{fakeendpoint.ErrTokenAccounting, "token-accounting"},
	{fakeendpoint.ErrFailRate, "fail-rate"},
	{fakeendpoint.ErrFailStatus, "fail-status"},
	{fakeendpoint.ErrFailRetryAfter, "fail-retry-after"},
	{fakeendpoint.ErrPrefixCache, "prefix-cache-tokens"},
	{fakeendpoint.ErrPrefixCacheMin, "prefix-cache-min-tokens"},
}

// simFlagMessage words a configuration error of sim.New by the flag
// behind it: "sim: ttft_growth must be ... (got +Inf)" is "--ttft-growth
// must be ... (got +Inf)", and a setting it names besides is named by its
// flag too.
func simFlagMessage(flag string, err error) string {
	msg := strings.TrimPrefix(err.Error(), "sim: ")
	if _, rest, ok := strings.Cut(msg, " "); ok && strings.HasPrefix(msg, strings.ReplaceAll(flag, "-", "_")+" ") {
		msg = rest
	}
	for _, fe := range simFlagErrors {
		if name := strings.ReplaceAll(fe.flag, "-", "_"); strings.Contains(name, "_") {
			msg = strings.ReplaceAll(msg, name, "--"+fe.flag)
		}
	}
	return "--" + flag + " " + msg
}

// simFormats are the -o/--output formats of `planner sim`: its base URL
// as a line, or a JSON object with the base URL and the configuration.
var simFormats = []string{"table", "json"}

// newSimCmd builds `planner sim`, the simulated OpenAI-compatible endpoint.
func newSimCmd(s streams) *cobra.Command {
	var (
		listen    string
		apiKeyEnv string
		printAs   *output
		cfg       fakeendpoint.Config
	)
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Serve a simulated OpenAI-compatible endpoint shaped like vLLM's",
		Long: "sim serves /v1/chat/completions, /v1/completions, /v1/models, /health and a\n" +
			"/metrics with vLLM's metric names, like a continuously batching model server\n" +
			"(docs/probe.md, \"planner sim\", lists the options a request may use; any other\n" +
			"is refused with a 400 naming it): at most --max-num-seqs sequences decode at\n" +
			"once, the rest queue FIFO; TTFT and the per-token interval grow with the\n" +
			"batch; optional RPM/TPM buckets\n" +
			"answer 429 with retry-after and x-ratelimit-* headers; --fail-rate refuses that\n" +
			"share of the requests at random, whatever the load, with --fail-status (429 or\n" +
			"500), for rehearsing how a client or a probe judges them. --prefill-per-1k adds\n" +
			"TTFT per 1,000 uncached prompt tokens, and --prefix-cache-tokens turns on a prefix\n" +
			"cache that serves the leading blocks a prompt shares with earlier ones, reports\n" +
			"them in usage.prompt_tokens_details.cached_tokens and skips their prefill. It prints its base\n" +
			"URL (-o json: a JSON object with the URL and the configuration) and runs until\n" +
			"interrupted.",
		Example: "  planner sim --max-num-seqs 8 --ttft 200ms --itl 10ms\n" +
			"  planner sim --fail-rate 0.1 --fail-status 429 -o json\n" +
			"  planner sim --prefill-per-1k 20ms --prefix-cache-tokens 1000000 --prefix-cache-min-tokens 1024",
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := printAs.check(); err != nil {
				return err
			}
			for _, c := range []struct {
				bad  bool
				flag string
				want string
			}{
				// Zero selects a default in fakeendpoint.Config; on the command line it
				// is a mistake, and a zero --itl-growth means no growth.
				{cfg.MaxNumSeqs < 1, "max-num-seqs", "at least 1"},
				{cfg.TTFT <= 0, "ttft", "positive"},
				{cfg.ITL <= 0, "itl", "positive"},
				{cfg.OutputTokens < 1, "output-tokens", "at least 1"},
				{!(cfg.ITLGrowth >= 0) || math.IsInf(cfg.ITLGrowth, 1), "itl-growth", "a finite number, zero or more"},
			} {
				if c.bad {
					v := cmd.Flags().Lookup(c.flag).Value
					return usageError{fmt.Errorf("--%s must be %s, got %s", c.flag, c.want, v)}
				}
			}
			for _, name := range []string{"model", "served-model"} {
				f := cmd.Flags().Lookup(name)
				if f.Changed && strings.TrimSpace(f.Value.String()) == "" {
					return usageError{fmt.Errorf("--%s must be a model id, got %q", name, f.Value.String())}
				}
			}
			if cfg.ITLGrowth == 0 {
				cfg.ITLGrowth = fakeendpoint.NoGrowth
			}
			if apiKeyEnv != "" {
				cfg.APIKey = os.Getenv(apiKeyEnv)
				if cfg.APIKey == "" {
					return usageError{fmt.Errorf("--api-key-env: environment variable %s is empty or unset", apiKeyEnv)}
				}
			}
			srv, err := fakeendpoint.New(cfg)
			if err != nil {
				for _, fe := range simFlagErrors {
					if errors.Is(err, fe.err) {
						return usageError{errors.New(simFlagMessage(fe.flag, err))}
					}
				}
				return fmt.Errorf("configuring the simulator: %w", err)
			}
			return serveSim(cmd.Context(), s, listen, srv, cfg, printAs)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8000", "address to listen on (port 0 picks a free port)")
	f.StringVar(&cfg.Model, "model", fakeendpoint.DefaultModel, "model id served and echoed")
	f.StringVar(&cfg.ServedModel, "served-model", "", "name the answers carry in their model field instead of --model (a versioned name, or another model to rehearse a silent switch)")
	f.IntVar(&cfg.MaxNumSeqs, "max-num-seqs", fakeendpoint.DefaultMaxNumSeqs, "sequences decoding at once; the rest wait FIFO")
	f.DurationVar(&cfg.TTFT, "ttft", fakeendpoint.DefaultTTFT, "base time to first token once admitted")
	f.Float64Var(&cfg.TTFTGrowth, "ttft-growth", 0, "fractional TTFT growth per additional running sequence")
	f.DurationVar(&cfg.ITL, "itl", fakeendpoint.DefaultITL, "base interval between output tokens")
	f.Float64Var(&cfg.ITLGrowth, "itl-growth", fakeendpoint.DefaultITLGrowth, "fractional per-token interval growth per additional running sequence (0 for none)")
	f.DurationVar(&cfg.PrefillPer1K, "prefill-per-1k", 0, "TTFT added per 1,000 prompt tokens not served from the prefix cache")
	f.IntVar(&cfg.PrefixCacheTokens, "prefix-cache-tokens", 0, "capacity of the prefix cache in tokens (0: no cache, and usage has no prompt_tokens_details)")
	f.IntVar(&cfg.PrefixCacheMinTokens, "prefix-cache-min-tokens", 0, "the shortest cached prefix served (0: one block of 16 tokens; 1024 as OpenAI's cache)")
	f.IntVar(&cfg.OutputTokens, "output-tokens", fakeendpoint.DefaultOutputTokens, "median output length without ignore_eos")
	f.IntVar(&cfg.RPM, "rpm", 0, "requests per minute (0 = unlimited)")
	f.IntVar(&cfg.TPM, "tpm", 0, "tokens per minute (0 = unlimited)")
	f.StringVar(&cfg.TokenAccounting, "token-accounting", fakeendpoint.AccountingActual, `TPM accounting: "actual" or "max_tokens"`)
	f.Uint64Var(&cfg.Seed, "seed", 0, "seed for output lengths and ids")
	f.StringVar(&apiKeyEnv, "api-key-env", "", "name of an environment variable holding the API key to require")
	f.Float64Var(&cfg.FailRate, "fail-rate", 0, "share of the requests refused at random, whatever the load (0 to 1)")
	f.IntVar(&cfg.FailStatus, "fail-status", 429, "status of the random refusals: 429 (with retry-after-ms) or 500")
	f.DurationVar(&cfg.FailRetryAfter, "fail-retry-after", fakeendpoint.DefaultFailRetryAfter, "the wait a random 429 asks for")
	printAs = addOutputFlags(cmd, simFormats...)
	return cmd
}

// serveSim listens, prints the base URL, and serves until ctx is cancelled,
// then shuts down gracefully.
func serveSim(ctx context.Context, s streams, listen string, srv *fakeendpoint.Server, cfg fakeendpoint.Config, printAs *output) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", listen, err)
	}
	url := "http://" + ln.Addr().String() + "/v1"
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	perr := printAs.write(s, func(w io.Writer) error {
		if printAs.format == "json" {
			// One line, so that a script reads it as it reads the URL.
			return json.NewEncoder(w).Encode(simInfo{BaseURL: url, Model: cfg.Model, ServedModel: cfg.ServedModel, MaxNumSeqs: cfg.MaxNumSeqs, RPM: cfg.RPM, TPM: cfg.TPM,
				FailRate: cfg.FailRate, FailStatus: cfg.FailStatus, Auth: cfg.APIKey != "", PrefixCacheTokens: cfg.PrefixCacheTokens})
		}
		_, err := fmt.Fprintln(w, url)
		return err
	})
	if perr != nil {
		_ = hs.Close()
		return fmt.Errorf("printing the base URL: %w", perr)
	}
	slog.New(slog.NewTextHandler(s.err, nil)).Info("sim listening",
		"url", url, "model", cfg.Model, "served_model", cmp.Or(cfg.ServedModel, cfg.Model), "max_num_seqs", cfg.MaxNumSeqs,
		"rpm", cfg.RPM, "tpm", cfg.TPM, "fail_rate", cfg.FailRate, "auth", cfg.APIKey != "")

	select {
	case err := <-served:
		return fmt.Errorf("serving on %s: %w", listen, err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), simShutdownGrace)
	defer cancel()
	if err := hs.Shutdown(shutCtx); err != nil {
		_ = hs.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving on %s: %w", listen, err)
	}
	return nil
}

// simInfo is what `planner sim -o json` prints, on one line, once it
// listens.
type simInfo struct {
	BaseURL string `json:"base_url"`
	Model   string `json:"model"`
	// ServedModel is the name the answers carry, when --served-model
	// gives one other than the model's.
	ServedModel string  `json:"served_model,omitempty"`
	MaxNumSeqs  int     `json:"max_num_seqs"`
	RPM         int     `json:"rpm"`
	TPM         int     `json:"tpm"`
	FailRate    float64 `json:"fail_rate"`
	FailStatus  int     `json:"fail_status"`
	Auth        bool    `json:"auth"`
	// PrefixCacheTokens is the prefix cache's capacity, when it has one.
	PrefixCacheTokens int `json:"prefix_cache_tokens,omitempty"`
}
