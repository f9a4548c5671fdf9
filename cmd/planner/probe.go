package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/compare"
	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/optional"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/report"
)

// defaultAPIKeyEnv is the environment variable the key is read from unless
// --api-key-env names another.
const defaultAPIKeyEnv = "OPENAI_API_KEY"

// newProbeCmd builds `planner probe`, the bounded concurrency ramp.
func newProbeCmd(s streams) *cobra.Command {
	var (
		cfg         probe.Config
		steps       []int
		apiKeyEnv   string
		prompts     string
		out         string
		printAs     *output
		rates       []float64
		maxInFlight int
		maxRequests int
		maxTokens   int
		models      []string
		shape       promptShape
		slo         string
	)
	cmd := &cobra.Command{
		Use:   "probe --base-url URL --model MODEL",
		Short: "Measure an endpoint's latency curve and knee with a bounded concurrency ramp",
		Long: "probe sends streamed chat completions to an OpenAI-compatible endpoint at rising\n" +
			"concurrency (--steps), records every request, measures each step in its steady\n" +
			"state (all its slots busy, after warm-up, before the drain) with 95 % intervals,\n" +
			"and finds the knee: the last step whose goodput still grew by 10 % with E2E p95\n" +
			"under 60 % of the deadline. --search finds the same knee with far fewer requests:\n" +
			"doubling steps sized by their noise up to --max-concurrency, stopping at the first\n" +
			"that fails, then a bisection for knee_refined. --rates runs open-loop steps\n" +
			"instead (Poisson arrivals at each rate, --max-in-flight at most). A fixed step\n" +
			"needs at least max(40, 3c) measured requests; fewer is refused. The run stops by\n" +
			"itself when 429s pass --max-429-ratio in a step, when a step has no successful\n" +
			"response, when goodput falls beyond its noise for two steps, when a budget is\n" +
			"spent, or on Ctrl-C, and always writes what it measured into --out: requests.csv,\n" +
			"steps.json and curve.yaml (a scenario fragment holding the latency block: append\n" +
			"it to a scenario without one). It says when the answers name another model than\n" +
			"--model, and when connections are not reused. --model a,b runs the same ladder\n" +
			"on each model in turn, each into --out/MODEL, and prints them side by side as\n" +
			"planner compare does. --slo ttft:500ms,tpot:50ms,e2e:10s narrows goodput to the\n" +
			"requests that meet every target at once and reports each step's attainment.\n" +
			"Instead of a ramp, --prefill-ladder measures prefill per 1,000 input tokens,\n" +
			"--cache the prompt cache's effect on a repeated prefix, and --conversation-calls\n" +
			"tasks of serial calls whose context grows; they write prefill.yaml (the\n" +
			"latency keys prefill_ms_per_1k_tokens and cache) instead of curve.yaml. The API\n" +
			"key is read from the environment (--api-key-env), never from a flag.",
		Example: "  planner probe --base-url http://127.0.0.1:8000/v1 --model my-model --ignore-eos\n" +
			"  planner probe --base-url http://127.0.0.1:8000/v1 --model my-model --ignore-eos --search --max-concurrency 128\n" +
			"  planner probe --base-url http://127.0.0.1:8000/v1 --model llama-3-8b,llama-3-70b --steps 1,2,4,8 --out ladder\n" +
			"  planner probe --base-url http://127.0.0.1:8000/v1 --model my-model --ignore-eos --slo ttft:500ms,tpot:50ms\n" +
			"  planner probe --base-url http://127.0.0.1:8000/v1 --model my-model --ignore-eos --max-tokens 8 --prefill-ladder 512,2048,8192\n" +
			"  planner probe --base-url http://127.0.0.1:8000/v1 --model my-model --cache --input-tokens 4096\n" +
			"  planner probe --base-url http://127.0.0.1:8000/v1 --model my-model --conversation-calls 6 --tool-time 2s --tasks-in-flight 4\n" +
			"  planner probe --base-url https://api.openai.com/v1 --model gpt-4o-mini \\\n" +
			"      --api-key-env PROBE_OPENAI_KEY --steps 1,2,4,8 --max-requests 400 --max-tokens 64",
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := printAs.check(); err != nil {
				return err
			}
			format := printAs.format
			if err := budgetFlag("--max-requests", maxRequests, "requests", "the ladder bounds them"); err != nil {
				return err
			}
			if err := budgetFlag("--max-tokens-total", maxTokens, "tokens", "the ladder bounds them"); err != nil {
				return err
			}
			probeShape(cmd, &cfg, steps, rates, maxInFlight, maxRequests, maxTokens)
			shape.apply(cmd, &cfg)
			var err error
			if cfg.SLO, err = sloFlag(slo); err != nil {
				return err
			}
			if err := probeInputs(cmd, &cfg, apiKeyEnv, prompts); err != nil {
				return usageError{err}
			}
			cfgs, err := modelConfigs(cfg, models)
			if err != nil {
				return err
			}
			if out == "" {
				out = time.Now().Format("probe-20060102-150405")
			}
			if err := checkOutDir(out); err != nil {
				return err
			}
			if w := plainTextKeyWarning(cfg); w != "" {
				fmt.Fprintln(s.err, "warning:", w)
			}
			if len(cfgs) > 1 {
				return probeModels(cmd, s, cfgs, out, format)
			}
			cfg = cfgs[0]
			obs := newProgress(s.err)
			res, err := probe.Run(cmd.Context(), cfg, obs)
			if err != nil {
				return usageError{err}
			}
			perr := printProbe(s.out, res, format)
			files, werr := probe.WriteFiles(out, res)
			if len(files) > 0 {
				fmt.Fprintf(s.err, "wrote %s\n", strings.Join(files, ", "))
			}
			warnAbout(s.err, res)
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
	f.StringSliceVar(&models, "model", nil, "model (or Azure deployment) name; several, comma-separated, run the same ladder on each in turn, each into its own directory under --out, and compare them")
	f.IntSliceVar(&steps, "steps", probe.DefaultSteps, "concurrency ladder, strictly ascending")
	f.BoolVar(&cfg.Search, "search", false, "search for the knee instead of running the ladder: doubling steps sized by their noise, up to --max-concurrency, then a bisection")
	optionalInt(f, &cfg.SearchMax, "max-concurrency", probe.DefaultSearchMax, "with --search: the highest concurrency to try")
	f.Float64SliceVar(&rates, "rates", nil, "open loop instead of the ladder: Poisson arrivals at each of these rates (req/s), strictly ascending")
	f.IntVar(&maxInFlight, "max-in-flight", 0, "with --rates: the cap on requests in flight; arrivals beyond it are shed (required)")
	optionalInt(f, &cfg.RequestsPerStep, "requests-per-step", 0, "requests per step, warm-up included (default max(40, 3×concurrency) + concurrency; fewer than max(40, 3×concurrency) measured is refused)")
	optionalInt(f, &cfg.Warmup, "warmup", 0, "warm-up requests per step, left out of the summary (default min(concurrency, N/2); 0 for none)")
	optionalDuration(f, &cfg.Deadline, "deadline", probe.DefaultDeadline, "per-request deadline, retries included")
	optionalInt(f, &cfg.MaxTokens, "max-tokens", probe.DefaultMaxTokens, "max_tokens of each request")
	f.BoolVar(&cfg.IgnoreEOS, "ignore-eos", false, "send ignore_eos (vLLM) so every answer has exactly --max-tokens tokens")
	optionalInt(f, &cfg.InputTokens, "input-tokens", probe.DefaultInputTokens, "length of the synthetic prompt in tokens (calibrated on the first answers)")
	f.StringVar(&prompts, "prompts", "", `JSONL file of prompts, one {"prompt": "..."} or {"messages": [...]} per line, instead of synthetic text`)
	f.StringVar(&apiKeyEnv, "api-key-env", defaultAPIKeyEnv, "environment variable holding the API key (none is sent when it is unset)")
	f.StringVar(&cfg.APIKeyHeader, "api-key-header", probe.DefaultAPIKeyHeader, `header carrying the key: "Authorization" (Bearer) or "api-key" (Azure OpenAI)`)
	f.StringVar(&out, "out", "", "output directory for requests.csv, steps.json and curve.yaml (default probe-YYYYMMDD-HHMMSS); with several models, one directory per model under it")
	printAs = addFormatFlag(cmd, measurementFormats...)
	optionalFloat(f, &cfg.Max429Ratio, "max-429-ratio", probe.DefaultMax429Ratio, "stop after a step in which more than this fraction of answers were 429")
	optionalFloat(f, &cfg.CollapseTolerancePct, "collapse-tolerance-pct", analysis.DefaultCollapseTolerancePct, "goodput falls only when it drops by more than this many percent and beyond its noise (collapse, and the stop after two falls)")
	optionalInt(f, &cfg.MaxAttempts, "max-attempts", probe.DefaultMaxAttempts, "sends per request, the first included (only 429s are retried)")
	f.IntVar(&maxRequests, "max-requests", 0, "budget: HTTP requests sent, retries included (0: only the ladder bounds them)")
	f.IntVar(&maxTokens, "max-tokens-total", 0, "budget: input plus output tokens (0: only the ladder bounds them)")
	optionalDuration(f, &cfg.Budget.MaxDuration, "max-duration", probe.DefaultMaxDuration, "budget: wall time of the whole run")
	optionalDuration(f, &cfg.Pause, "pause", probe.DefaultPause, "pause between steps")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the retry jitter and the open-loop arrivals")
	f.StringVar(&slo, "slo", "", "goodput counts only the requests that meet every target, e.g. ttft:500ms,tpot:50ms,e2e:10s (each step reports its attainment; the knee's gain rule judges that goodput)")
	shape.addFlags(f)
	return cmd
}

// promptShape holds the flags of the modes that measure a prompt's cost
// (docs/probe.md, "Prefill and the prompt cache").
type promptShape struct {
	prefill     []int
	cache       bool
	calls       int
	tasks       optional.Value[int]
	inFlight    optional.Value[int]
	toolTime    optional.Value[time.Duration]
	toolResults optional.Value[int]
}

func (p *promptShape) addFlags(f *pflag.FlagSet) {
	f.IntSliceVar(&p.prefill, "prefill-ladder", nil, "measure prefill per 1,000 input tokens instead of the ramp: rounds of one request at each of these input lengths, at concurrency 1 (--requests-per-step per length, default 11)")
	f.BoolVar(&p.cache, "cache", false, "measure the prompt cache instead of the ramp: prompts of --input-tokens (default 2048) that repeat one prefix against fresh ones, at concurrency 1 (--requests-per-step of each kind, default 21)")
	f.IntVar(&p.calls, "conversation-calls", 0, "replay tasks of this many serial calls instead of the ramp, each call's input the first input and every earlier answer and tool result")
	optionalInt(f, &p.tasks, "tasks", 0, "with --conversation-calls: tasks to run, warm-up included (default 10 + --tasks-in-flight)")
	optionalInt(f, &p.inFlight, "tasks-in-flight", 1, "with --conversation-calls: tasks at once")
	optionalDuration(f, &p.toolTime, "tool-time", 0, "with --conversation-calls: the wait between a call's end and the next call")
	optionalInt(f, &p.toolResults, "tool-result-tokens", probe.DefaultToolResultTokens, "with --conversation-calls: the length of each tool result")
}

// apply sets the mode that the flags ask for: a prefill ladder, a cache
// comparison, or a conversation when any of its flags is given (its step
// size is --requests-per-step, or --tasks). Which of them go together is
// the configuration's rule (Validate).
func (p *promptShape) apply(cmd *cobra.Command, cfg *probe.Config) {
	changed := cmd.Flags().Changed
	if changed("prefill-ladder") {
		cfg.Prefill = &probe.PrefillLadder{InputTokens: p.prefill, Requests: cfg.RequestsPerStep}
	}
	if p.cache {
		cfg.Cache = &probe.CacheComparison{Requests: cfg.RequestsPerStep}
	}
	for _, name := range []string{"conversation-calls", "tasks", "tasks-in-flight", "tool-time", "tool-result-tokens"} {
		if changed(name) {
			cfg.Conversation = &probe.Conversation{Calls: p.calls, Tasks: p.tasks, InFlight: p.inFlight, ToolTime: p.toolTime, ToolResultTokens: p.toolResults}
			break
		}
	}
	if cfg.Prefill != nil || cfg.Cache != nil {
		cfg.RequestsPerStep = optional.Value[int]{}
	}
}

// probeFlags names the probe's settings as its flags, for its problems:
// a problem of the configuration (probe.Config.Validate) reads
// "--steps: the steps must be strictly ascending (2 after 4)".
var probeFlags = fieldpath.Names{Fields: map[string]string{
	"base_url":                        "--base-url",
	"model":                           "--model",
	"api_key_header":                  "--api-key-header",
	"steps":                           "--steps",
	"search":                          "--search",
	"search_max_concurrency":          "--max-concurrency",
	"requests_per_step":               "--requests-per-step",
	"warmup":                          "--warmup",
	"collapse_tolerance_pct":          "--collapse-tolerance-pct",
	"pause":                           "--pause",
	"deadline":                        "--deadline",
	"max_tokens":                      "--max-tokens",
	"input_tokens":                    "--input-tokens",
	"prompts":                         "--prompts",
	"max_429_ratio":                   "--max-429-ratio",
	"max_attempts":                    "--max-attempts",
	"budget.max_requests":             "--max-requests",
	"budget.max_tokens_total":         "--max-tokens-total",
	"budget.max_duration":             "--max-duration",
	"open_loop.rates_rps":             "--rates",
	"open_loop.max_in_flight":         "--max-in-flight",
	"open_loop.requests":              "--requests-per-step",
	"prefill":                         "--prefill-ladder",
	"prefill.requests":                "--requests-per-step",
	"cache":                           "--cache",
	"cache.requests":                  "--requests-per-step",
	"conversation":                    "--conversation-calls",
	"conversation.tasks":              "--tasks",
	"conversation.tasks_in_flight":    "--tasks-in-flight",
	"conversation.tool_time":          "--tool-time",
	"conversation.tool_result_tokens": "--tool-result-tokens",
	"slo":                             "--slo",
}}

// budgetFlag refuses a negative budget flag, whose 0 means no budget (the
// flag's help says what then bounds the run): a message of the probe's
// configuration would say "unset" of a flag that is set.
func budgetFlag(flag string, n int, unit, zero string) error {
	if n < 0 {
		return usageError{fmt.Errorf("%s: %d %s, must be at least 1, or 0: only %s", flag, n, unit, zero)}
	}
	return nil
}

// probeShape sets what the flags ask for beyond the settings they bind: the
// ladder when --steps is given (else the probe's default), an open loop
// when --rates or --max-in-flight is (its step size is
// --requests-per-step), and the budgets that are not 0 (0: none). Which
// of them go together is the configuration's rule (Validate).
func probeShape(cmd *cobra.Command, cfg *probe.Config, steps []int, rates []float64, maxInFlight, maxRequests, maxTokens int) {
	changed := cmd.Flags().Changed
	if changed("steps") {
		cfg.Steps = steps
	}
	if changed("rates") || changed("max-in-flight") {
		cfg.Open = &probe.OpenLoop{Rates: rates, MaxInFlight: maxInFlight, Requests: cfg.RequestsPerStep}
		cfg.RequestsPerStep = optional.Value[int]{}
	}
	if maxRequests != 0 {
		cfg.Budget.MaxRequests = optional.Of(maxRequests)
	}
	if maxTokens != 0 {
		cfg.Budget.MaxTokens = optional.Of(maxTokens)
	}
}

// probeInputs reads what the flags point at: the API key from the
// environment and the prompts file.
func probeInputs(cmd *cobra.Command, cfg *probe.Config, apiKeyEnv, prompts string) error {
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
func (p *progress) Record(measure.Record) {
	if p.bar != nil {
		_ = p.bar.Add(1)
	}
}

// StepDone closes the bar and prints the step's line.
func (p *progress) StepDone(s measure.Step) {
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
	ci := ""
	if s.GoodputCI != nil {
		ci = fmt.Sprintf(" ± %.2f", (s.GoodputCI.Hi-s.GoodputCI.Lo)/2)
	}
	what := fmt.Sprintf("concurrency %d", s.Concurrency)
	switch {
	case s.Refine:
		what = fmt.Sprintf("refining at %d", s.Concurrency)
	case s.RateRPS > 0:
		what = fmt.Sprintf("%g req/s (at most %d in flight)", s.RateRPS, s.Concurrency)
	}
	latency := "no latency: no request succeeded"
	if s.OK > 0 { // a latency is measured over requests that succeeded
		latency = fmt.Sprintf("TTFT p95 %.0f ms, E2E p95 %.0f ms", s.TTFTP95Ms, s.E2EP95Ms)
	}
	fmt.Fprintf(p.w, "%s: %d requests, %d ok, %d 429, %d errors, goodput %.2f%s/s, %s\n",
		what, s.Requests, s.OK, s.RateLimited, s.Errors, s.GoodputRPS, ci, latency)
}

// printProbe prints the run: as a table (the step table, the verdicts,
// why the run stopped, what it spent and the quota the endpoint
// announced), as the step table in CSV, or as the steps.json document.
func printProbe(w io.Writer, res *probe.Result, format string) error {
	if format == report.FormatCSV {
		return report.WriteStepCSV(w, res.Analysis.Steps)
	}
	if format != report.FormatTable {
		return report.WriteData(w, res.Summary(), format)
	}
	if err := report.WriteStepTable(w, res.Analysis.Steps); err != nil {
		return err
	}
	if err := report.WriteAnalysis(w, res.Analysis, res.Analysis.Notes); err != nil {
		return err
	}
	if err := writeSLO(w, res.Analysis); err != nil {
		return err
	}
	if err := writePromptCost(w, res.Analysis); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "stop: %s", res.StopReason)
	if res.StopDetail != "" {
		fmt.Fprintf(&b, " (%s)", res.StopDetail)
	}
	fmt.Fprintf(&b, "; %d requests sent, %d tokens\n", res.Sent, res.TokensUsed)
	parts := map[string]string{"ladder": "the ladder", "search": "the search", "refine": "the refinement", "open_loop": "the open loop",
		"prefill": "the prefill ladder", "cache": "the cache comparison", "conversation": "the conversation"}
	for _, sp := range res.Spent() {
		steps := "steps"
		if sp.Steps == 1 {
			steps = "step"
		}
		fmt.Fprintf(&b, "spent on %s: %d %s, %d requests, %d tokens, %.1f s\n", parts[sp.Part], sp.Steps, steps, sp.Requests, sp.Tokens, sp.WallS)
	}
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

// checkOutDir refuses, before anything is sent, an output directory that
// the run's files could not be written to: a path that is a file, or
// under one, or in a directory that refuses a new file. A run against a
// paid endpoint is not spent to find that out at its end. It creates
// nothing that it leaves behind.
func checkOutDir(dir string) error {
	refuse := func(why string) error {
		return fmt.Errorf("--out %s: %s: the run could not write %s, %s and %s there; nothing was sent", dir, why, probe.RequestsFile, probe.StepsFile, probe.CurveFile)
	}
	at := dir
	for {
		fi, err := os.Stat(at)
		if err == nil {
			if !fi.IsDir() {
				return refuse(at + " is a file, not a directory")
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return refuse(err.Error())
		}
		parent := filepath.Dir(at)
		if parent == at {
			break
		}
		at = parent
	}
	f, err := os.CreateTemp(at, ".planner-probe-*")
	if err != nil {
		return refuse(err.Error())
	}
	f.Close()
	return os.Remove(f.Name())
}

// modelConfigs is the run of each model of --model, in order, each
// configuration checked before any runs. No model leaves the
// configuration's own rule to name --model.
func modelConfigs(cfg probe.Config, models []string) ([]probe.Config, error) {
	if len(models) == 0 {
		models = []string{""}
	}
	if len(models) > 1 {
		for i, m := range models {
			if strings.TrimSpace(m) == "" {
				return nil, usageError{fmt.Errorf("--model %q: the %s name is empty; give each model's name, comma-separated", strings.Join(models, ","), ordinal(i+1))}
			}
		}
	}
	dirs := map[string]string{}
	cfgs := make([]probe.Config, 0, len(models))
	for _, m := range models {
		c := cfg
		c.Model = m
		if errs := c.Validate(); len(errs) > 0 {
			var err error = probeFlags.Rename(errs)
			if len(models) > 1 {
				err = fmt.Errorf("model %q: %w", m, err)
			}
			return nil, usageError{err}
		}
		d := modelDir(m)
		if other, ok := dirs[d]; ok && len(models) > 1 {
			return nil, usageError{fmt.Errorf("--model: %q and %q would share the output directory %s", other, m, d)}
		}
		dirs[d] = m
		cfgs = append(cfgs, c)
	}
	return cfgs, nil
}

// ordinal is n as "1st", "2nd", "3rd", "4th", ...
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}

// modelDir is the directory of a model's run under --out: the name with
// every character other than letters, digits, ".", "-" and "_" replaced
// by "_" (meta-llama/Llama-3-8B becomes meta-llama_Llama-3-8B).
func modelDir(model string) string {
	d := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, model)
	if strings.Trim(d, ".") == "" {
		return "model" + d
	}
	return d
}

// modelRuns is the document that planner probe --model a,b prints with
// -o json or yaml: each model's steps.json, and the comparison.
type modelRuns struct {
	Runs       []probe.Summary     `json:"runs"`
	Comparison *compare.Comparison `json:"comparison"`
}

// probeModels runs the same ladder on each model in turn, each into its
// own directory under out, and prints each run and then the comparison,
// the first model the baseline. A model whose run fails does not stop
// the others; Ctrl-C does. The error names every model that failed.
func probeModels(cmd *cobra.Command, s streams, cfgs []probe.Config, out, format string) error {
	var runs []compare.Run
	var doc modelRuns
	var failed []string
	interrupted := false
	for i, cfg := range cfgs {
		fmt.Fprintf(s.err, "model %s (%d of %d)\n", cfg.Model, i+1, len(cfgs))
		res, err := probe.Run(cmd.Context(), cfg, newProgress(s.err))
		if err != nil {
			return usageError{err}
		}
		if format == report.FormatTable {
			fmt.Fprintf(s.out, "== model %s ==\n", cfg.Model)
			if err := printProbe(s.out, res, format); err != nil {
				return fmt.Errorf("printing the results: %w", err)
			}
			fmt.Fprintln(s.out)
		}
		dir := filepath.Join(out, modelDir(cfg.Model))
		files, werr := probe.WriteFiles(dir, res)
		if len(files) > 0 {
			fmt.Fprintf(s.err, "wrote %s\n", strings.Join(files, ", "))
		}
		if werr != nil {
			return fmt.Errorf("writing the results of %s: %w", cfg.Model, werr)
		}
		warnAbout(s.err, res)
		if f := res.Failure(); f != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", cfg.Model, f))
		}
		doc.Runs = append(doc.Runs, res.Summary())
		runs = append(runs, compare.Run{Name: cfg.Model, Endpoint: cfg.DisplayURL(), Model: cfg.Model, Date: res.Started, Result: res.Analysis})
		if res.StopReason == probe.StopCancelled {
			interrupted = true
			break
		}
	}
	c, err := compare.New(runs, "")
	if err != nil {
		return err
	}
	doc.Comparison = &c
	if format == report.FormatTable {
		fmt.Fprintln(s.out, "== compared ==")
		err = report.WriteComparison(s.out, c, format)
	} else {
		err = report.WriteData(s.out, doc, format)
	}
	switch {
	case err != nil:
		return fmt.Errorf("printing the results: %w", err)
	case interrupted:
		return fmt.Errorf("interrupted; what was measured is in %s", out)
	case len(failed) > 0:
		return fmt.Errorf("%d of %d models measured nothing: %s", len(failed), len(cfgs), strings.Join(failed, "; "))
	}
	return nil
}

// warnAbout prints the run's warnings (probe.Result.Warnings) to w.
func warnAbout(w io.Writer, res *probe.Result) {
	for _, msg := range res.Warnings() {
		fmt.Fprintln(w, "warning:", strings.TrimPrefix(msg, "WARNING: "))
	}
}
