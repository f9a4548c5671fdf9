package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/probe"
)

// defaultAPIKeyEnv is the environment variable the key is read from unless
// --api-key-env names another.
const defaultAPIKeyEnv = "OPENAI_API_KEY"

// newProbeCmd builds `planner probe`, the bounded concurrency ramp.
func newProbeCmd(s streams) *cobra.Command {
	var (
		cfg       probe.Config
		apiKeyEnv string
		prompts   string
		out       string
	)
	cmd := &cobra.Command{
		Use:   "probe --base-url URL --model MODEL",
		Short: "Measure an endpoint's latency curve and knee with a bounded concurrency ramp",
		Long: "probe sends streamed chat completions to an OpenAI-compatible endpoint at rising\n" +
			"concurrency (--steps), records every request, and finds the knee: the last step\n" +
			"whose goodput still grew by 10 % with E2E p95 under 60 % of the deadline. It stops\n" +
			"by itself when 429s pass --max-429-ratio in a step, when goodput falls for two\n" +
			"steps, when a budget is spent, or on Ctrl-C, and always writes what it measured:\n" +
			"requests.csv, steps.json and curve.yaml (a latency block for a scenario).\n" +
			"The API key is read from the environment (--api-key-env), never from a flag.",
		Example: "  planner probe --base-url http://127.0.0.1:8000/v1 --model my-model --ignore-eos\n" +
			"  planner probe --base-url https://api.openai.com/v1 --model gpt-4o-mini \\\n" +
			"      --api-key-env PROBE_OPENAI_KEY --steps 1,2,4,8 --max-requests 200 --max-tokens 64",
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := probeInputs(cmd, &cfg, apiKeyEnv, prompts); err != nil {
				return usageError{err}
			}
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			if out == "" {
				out = time.Now().Format("probe-20060102-150405")
			}
			if w := plainTextKeyWarning(cfg); w != "" {
				fmt.Fprintln(s.err, "warning:", w)
			}
			obs := newProgress(s.err)
			res, err := probe.Run(cmd.Context(), cfg, obs)
			if err != nil {
				return usageError{err}
			}
			perr := printProbe(s.out, res)
			files, werr := probe.WriteFiles(out, res)
			if len(files) > 0 {
				fmt.Fprintf(s.out, "wrote %s\n", strings.Join(files, ", "))
			}
			switch {
			case perr != nil:
				return fmt.Errorf("printing the results: %w", perr)
			case werr != nil:
				return fmt.Errorf("writing the results: %w", werr)
			case res.Failure() != nil:
				return res.Failure()
			case res.StopReason == probe.StopCancelled:
				return fmt.Errorf("interrupted; what was measured is in %s", out)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.BaseURL, "base-url", "", "API root, e.g. http://127.0.0.1:8000/v1 (requests go to BASE/chat/completions)")
	f.StringVar(&cfg.Model, "model", "", "model (or Azure deployment) name")
	f.IntSliceVar(&cfg.Steps, "steps", probe.DefaultSteps, "concurrency ladder, strictly ascending")
	f.IntVar(&cfg.RequestsPerStep, "requests-per-step", 0, "requests per step (default max(40, 4×concurrency))")
	f.IntVar(&cfg.Warmup, "warmup", 0, "warm-up requests per step, left out of the summary (default min(concurrency, N/2); -1 for none)")
	f.DurationVar(&cfg.Deadline, "deadline", probe.DefaultDeadline, "per-request deadline, retries included")
	f.IntVar(&cfg.MaxTokens, "max-tokens", probe.DefaultMaxTokens, "max_tokens of each request")
	f.BoolVar(&cfg.IgnoreEOS, "ignore-eos", false, "send ignore_eos (vLLM) so every answer has exactly --max-tokens tokens")
	f.IntVar(&cfg.InputTokens, "input-tokens", probe.DefaultInputTokens, "length of the synthetic prompt in tokens (calibrated on the first answers)")
	f.StringVar(&prompts, "prompts", "", `JSONL file of prompts, one {"prompt": "..."} or {"messages": [...]} per line, instead of synthetic text`)
	f.StringVar(&apiKeyEnv, "api-key-env", defaultAPIKeyEnv, "environment variable holding the API key (none is sent when it is unset)")
	f.StringVar(&cfg.APIKeyHeader, "api-key-header", probe.DefaultAPIKeyHeader, `header carrying the key: "Authorization" (Bearer) or "api-key" (Azure OpenAI)`)
	f.StringVar(&out, "out", "", "output directory (default probe-YYYYMMDD-HHMMSS)")
	f.Float64Var(&cfg.Max429Ratio, "max-429-ratio", probe.DefaultMax429Ratio, "stop after a step in which more than this fraction of answers were 429")
	f.IntVar(&cfg.MaxAttempts, "max-attempts", probe.DefaultMaxAttempts, "sends per request, the first included (only 429s are retried)")
	f.IntVar(&cfg.Budget.MaxRequests, "max-requests", 0, "budget: HTTP requests sent, retries included (0: only the ladder bounds them)")
	f.IntVar(&cfg.Budget.MaxTokens, "max-tokens-total", 0, "budget: input plus output tokens (0: only the ladder bounds them)")
	f.DurationVar(&cfg.Budget.MaxDuration, "max-duration", probe.DefaultMaxDuration, "budget: wall time of the whole run")
	f.DurationVar(&cfg.Pause, "pause", probe.DefaultPause, "pause between steps")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the retry jitter")
	return cmd
}

// probeInputs reads what the flags point at: the API key from the
// environment and the prompts file. It also turns values that would select
// a default silently into errors.
func probeInputs(cmd *cobra.Command, cfg *probe.Config, apiKeyEnv, prompts string) error {
	for _, c := range []struct {
		bad  bool
		flag string
		want string
	}{
		{cfg.Deadline <= 0, "deadline", "positive"},
		{cfg.Pause < 0, "pause", "zero or more"},
		{cfg.Budget.MaxDuration <= 0, "max-duration", "positive"},
		{cfg.Max429Ratio <= 0, "max-429-ratio", "positive"},
		{cfg.MaxTokens <= 0, "max-tokens", "positive"},
		{cfg.InputTokens <= 0, "input-tokens", "positive"},
		{cfg.MaxAttempts <= 0, "max-attempts", "positive"},
		{cfg.Budget.MaxRequests < 0, "max-requests", "zero or more"},
		{cfg.Budget.MaxTokens < 0, "max-tokens-total", "zero or more"},
	} {
		if c.bad {
			return fmt.Errorf("--%s must be %s, got %s", c.flag, c.want, cmd.Flags().Lookup(c.flag).Value)
		}
	}
	if cfg.Pause == 0 {
		cfg.Pause = -1 // no pause; zero would select the default
	}
	if cfg.BaseURL == "" || cfg.Model == "" {
		return errors.New("--base-url and --model are required")
	}
	cfg.APIKey = os.Getenv(apiKeyEnv)
	if cfg.APIKey == "" && cmd.Flags().Changed("api-key-env") {
		return fmt.Errorf("--api-key-env: environment variable %s is empty or unset", apiKeyEnv)
	}
	if prompts != "" {
		f, err := os.Open(prompts)
		if err != nil {
			return fmt.Errorf("--prompts: %w", err)
		}
		defer f.Close()
		if cfg.Prompts, err = probe.LoadPrompts(f); err != nil {
			return fmt.Errorf("--prompts %s: %w", prompts, err)
		}
		cfg.PromptsSource = prompts
	}
	return nil
}

// plainTextKeyWarning warns when a key would cross the network unencrypted.
func plainTextKeyWarning(cfg probe.Config) string {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || cfg.APIKey == "" || u.Scheme != "http" {
		return ""
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
		return ""
	}
	return fmt.Sprintf("the API key is sent to %s over plain http", host)
}

// progress shows a run: a progress bar per step on a terminal, and one line
// per finished step either way.
type progress struct {
	w   io.Writer
	tty bool
	bar *progressbar.ProgressBar
}

func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	tty := ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
	return &progress{w: w, tty: tty}
}

// StepStarted opens the step's progress bar on a terminal.
func (p *progress) StepStarted(concurrency, requests int) {
	if !p.tty {
		return
	}
	p.bar = progressbar.NewOptions(requests,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(fmt.Sprintf("concurrency %-4d", concurrency)),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
}

// Record advances the bar.
func (p *progress) Record(analysis.Record) {
	if p.bar != nil {
		_ = p.bar.Add(1)
	}
}

// StepDone closes the bar and prints the step's line.
func (p *progress) StepDone(s analysis.Step) {
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
	fmt.Fprintf(p.w, "concurrency %d: %d requests, %d ok, %d 429, %d errors, goodput %.2f/s, TTFT p95 %.0f ms, E2E p95 %.0f ms\n",
		s.Concurrency, s.Requests, s.OK, s.RateLimited, s.Errors, s.GoodputRPS, s.TTFTP95Ms, s.E2EP95Ms)
}

// printProbe prints the step table, the knee summary, why the run stopped
// and the quota the endpoint announced.
func printProbe(w io.Writer, res *probe.Result) error {
	if err := writeStepTable(w, res.Analysis.Steps); err != nil {
		return err
	}
	if err := writeAnalysis(w, res.Analysis, res.Analysis.Notes); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "stop: %s", res.StopReason)
	if res.StopDetail != "" {
		fmt.Fprintf(&b, " (%s)", res.StopDetail)
	}
	fmt.Fprintf(&b, "; %d requests sent, %d tokens\n", res.Sent, res.TokensUsed)
	if rl := rateLimitLine(res.RateLimits); rl != "" {
		fmt.Fprintf(&b, "rate limits announced: %s\n", rl)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// rateLimitLine renders the announced quota in one line.
func rateLimitLine(r probe.RateLimits) string {
	var parts []string
	for _, d := range []struct {
		name string
		l    *probe.Limit
	}{{"requests", r.Requests}, {"tokens", r.Tokens}, {"input tokens", r.InputTokens}, {"output tokens", r.OutputTokens}} {
		if d.l == nil {
			continue
		}
		var p []string
		if d.l.Limit != nil {
			p = append(p, fmt.Sprintf("limit %d", *d.l.Limit))
		}
		if d.l.MinRemaining != nil {
			p = append(p, fmt.Sprintf("lowest remaining %d", *d.l.MinRemaining))
		}
		if d.l.ResetS != nil {
			p = append(p, fmt.Sprintf("reset %.3gs", *d.l.ResetS))
		}
		parts = append(parts, d.name+" "+strings.Join(p, ", "))
	}
	return strings.Join(parts, "; ")
}
