// Package probe measures one OpenAI-compatible chat-completions endpoint
// with a bounded, polite load run (docs/probe.md): a closed-loop
// concurrency ramp, either a fixed ladder or a knee search that sizes its
// steps by their noise and stops at the first failing one, then refines
// the knee by bisection (or open-loop Poisson steps at given rates), of
// streamed requests, each timed to its first output token and its last
// one. Every request is recorded, failures too; 429s are retried only
// after the wait the endpoint asked for, and timed from the attempt that
// succeeded; the run stops by itself on too many 429s, on falling
// goodput, on a spent budget or on cancel, and keeps what it measured.
// The records are judged by package analysis (steady state, intervals,
// knee, collapse, quota_limited, USL fit) and written as requests.csv,
// steps.json and a curve.yaml that a scenario takes as it is.
package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/redact"
)

// Defaults applied to zero-valued Config fields.
const (
	DefaultDeadline     = 12 * time.Second
	DefaultMaxTokens    = 128
	DefaultInputTokens  = 256
	DefaultPause        = 2 * time.Second
	DefaultMax429Ratio  = 0.2
	DefaultMaxAttempts  = 3
	DefaultBackoffBase  = 500 * time.Millisecond
	DefaultBackoffCap   = 8 * time.Second
	DefaultMaxDuration  = 10 * time.Minute
	DefaultAPIKeyHeader = "Authorization"
	// DefaultSearchMax is the highest concurrency a knee search tries
	// unless told.
	DefaultSearchMax = 64
)

// Bounds on a probe's shape, so that a typo cannot start a flood. They are
// declared here once: the API's schema and the configuration's probe caps
// take them from here.
const (
	MaxConcurrency     = 10_000
	MaxSteps           = 64
	MaxRequestsPerStep = 1_000_000
)

// Bounds on a probe's budget: the most any server lets one probe (or one
// validation) spend. A server's configured caps lie within them, and a
// request's budgets within the server's caps.
const (
	MaxBudgetRequests = 10_000_000
	MaxBudgetTokens   = 100_000_000_000
	MaxBudgetDuration = 24 * time.Hour
)

// DefaultSteps is the default concurrency ladder.
var DefaultSteps = []int{1, 2, 4, 8, 16, 32}

// Config describes one probe run. Zero values select the defaults, so a
// Config with only BaseURL and Model is a complete, bounded probe.
type Config struct {
	// BaseURL is the API root; requests go to BaseURL + "/chat/completions"
	// with BaseURL's query kept (Azure OpenAI's api-version).
	BaseURL string
	// Model is the model (or Azure deployment) name sent in each request.
	Model string
	// APIKey is sent only in the APIKeyHeader header; it never appears in
	// records, results, outputs, errors or logs.
	APIKey string
	// APIKeyHeader is "Authorization" (the default; sent as "Bearer KEY") or
	// "api-key" (Azure OpenAI keys; sent as the bare key).
	APIKeyHeader string
	// APIKeyAsIs sends APIKey as the whole value of APIKeyHeader, without
	// the "Bearer " that Authorization otherwise gets: for a complete
	// header value passed through by the service ("Bearer sk-...").
	APIKeyAsIs bool

	// DialContext, when set, opens every connection of the run, and no
	// proxy is used (a proxy would connect on the run's behalf, unchecked):
	// the service passes a dialer that checks each address it connects to
	// against its allow-list.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// CheckRedirect, when set, is the run's redirect policy, as
	// http.Client's; the service refuses every redirect with it, so that an
	// endpoint cannot send the probe and its key elsewhere.
	CheckRedirect func(req *http.Request, via []*http.Request) error

	// Steps is the ladder of concurrencies, strictly ascending; unused by
	// a search.
	Steps []int
	// RequestsPerStep fixes N for every step; 0 selects
	// N = max(40, 3c) + c: the least a step may measure
	// (analysis.MinMeasured) plus its warm-up. A fixed N that leaves a
	// step fewer measured requests than analysis.MinMeasured is refused.
	RequestsPerStep int
	// Warmup is the number of warm-up requests per step, recorded but left
	// out of the step's summary; 0 selects min(c, N/2): one full round of
	// the semaphore, which absorbs connection set-up and the batch filling
	// up. A negative value means none.
	Warmup int

	// Search runs the knee search instead of the ladder: concurrency
	// doubles from 1 up to SearchMax, each step ends once its goodput is
	// known within ±5 % (never before 2c + 10 measured requests, never
	// beyond the ladder's N), no step runs past the first that fails the
	// knee rule, and the knee is then refined by bisection.
	Search bool
	// SearchMax is the highest concurrency a search tries (default 64).
	SearchMax int
	// CollapseTolerancePct is how far goodput must fall, beyond its
	// noise, to count as falling (default 5; analysis.Options).
	CollapseTolerancePct float64
	// Exact keeps every ladder step at its N: a step whose gain over the
	// one before is ambiguous is not measured twice as long. Plan
	// validation sets it, since its steps are compared with a model
	// rather than judged by the knee rule.
	Exact bool
	// Pause is the idle time between steps (default 2s), which lets the
	// endpoint's queues drain; a negative value means none.
	Pause time.Duration

	// Deadline bounds each request, retries included (default 12s); a
	// response is good only when it ends within it.
	Deadline time.Duration
	// MaxTokens is sent as max_tokens (default 128).
	MaxTokens int
	// IgnoreEOS sends ignore_eos (a vLLM extension) so that every response
	// has exactly MaxTokens tokens.
	IgnoreEOS bool
	// InputTokens is the length of a synthetic prompt in tokens (default
	// 256), calibrated against usage.prompt_tokens; unused with Prompts.
	InputTokens int
	// Prompts, when given, are sent in turn instead of synthetic text.
	Prompts []Prompt
	// PromptsSource names where Prompts came from, for the outputs.
	PromptsSource string

	// Max429Ratio stops the ramp after a step in which more than this
	// fraction of the answers were 429 (default 0.2).
	Max429Ratio float64
	// MaxAttempts bounds the sends of one request, the first included
	// (default 3); only 429 answers are retried.
	MaxAttempts int
	// BackoffBase and BackoffCap shape the full-jitter backoff used when a
	// 429 names no wait (defaults 500ms and 8s).
	BackoffBase, BackoffCap time.Duration

	// Budget bounds the whole run.
	Budget Budget
	// Open, when set, runs open-loop steps, one per rate, instead of the
	// ramp.
	Open *OpenLoop
	// Seed seeds the backoff jitter and the open-loop arrivals.
	Seed uint64
}

// Budget bounds a run's spend. When a budget is spent the run stops: the
// request and token budgets stop new sends and let requests in flight
// finish (they were admitted within the budget); the time budget cancels
// requests in flight, which are recorded as cancelled.
type Budget struct {
	// MaxRequests bounds the HTTP requests sent, retries included
	// (0: only the ladder bounds them).
	MaxRequests int
	// MaxTokens bounds input plus output tokens. Each send reserves its
	// worst case (an upper estimate of its input, plus max_tokens) and the
	// reservation is settled to the usage reported, so the budget is never
	// exceeded (0: only the ladder bounds them).
	MaxTokens int
	// MaxDuration bounds the run's wall time, pauses included (default 10m).
	MaxDuration time.Duration
}

// OpenLoop is an open-loop run: at each rate in turn, requests arrive as
// a Poisson process whatever the endpoint does, as real traffic does, and
// an arrival that finds MaxInFlight requests in flight is shed (counted,
// not sent).
type OpenLoop struct {
	Rates       []float64 `json:"rates_rps"`
	MaxInFlight int       `json:"max_in_flight"`
	// Requests is the number of arrivals per rate (default
	// max(40, 3c) + c, c = MaxInFlight).
	Requests int `json:"requests"`
}

// WithDefaults returns c with zero values replaced by the defaults, as a
// run uses it: what a record of the run should show.
func (c Config) WithDefaults() Config { return c.withDefaults() }

// withDefaults returns c with zero values replaced by the defaults.
func (c Config) withDefaults() Config {
	if c.APIKeyHeader == "" {
		c.APIKeyHeader = DefaultAPIKeyHeader
	}
	if len(c.Steps) == 0 {
		c.Steps = slices.Clone(DefaultSteps)
	}
	c.SearchMax = orDefault(c.SearchMax, DefaultSearchMax)
	c.CollapseTolerancePct = orDefault(c.CollapseTolerancePct, analysis.DefaultCollapseTolerancePct)
	c.Pause = orDefault(c.Pause, DefaultPause)
	c.Deadline = orDefault(c.Deadline, DefaultDeadline)
	c.MaxTokens = orDefault(c.MaxTokens, DefaultMaxTokens)
	c.InputTokens = orDefault(c.InputTokens, DefaultInputTokens)
	c.Max429Ratio = orDefault(c.Max429Ratio, DefaultMax429Ratio)
	c.MaxAttempts = orDefault(c.MaxAttempts, DefaultMaxAttempts)
	c.BackoffBase = orDefault(c.BackoffBase, DefaultBackoffBase)
	c.BackoffCap = orDefault(c.BackoffCap, DefaultBackoffCap)
	c.Budget.MaxDuration = orDefault(c.Budget.MaxDuration, DefaultMaxDuration)
	if c.Open != nil {
		o := *c.Open
		if o.Requests == 0 {
			o.Requests = analysis.MinMeasured(o.MaxInFlight) + o.MaxInFlight
		}
		o.Rates = slices.Clone(o.Rates)
		c.Open = &o
	}
	return c
}

// AnalysisOptions are the judgement settings of the run: its deadline
// defines goodput, and the collapse tolerance.
func (c Config) AnalysisOptions() analysis.Options {
	c = c.withDefaults()
	return analysis.Options{DeadlineMs: ms(c.Deadline), CollapseTolerancePct: c.CollapseTolerancePct}
}

// Concurrencies are the concurrencies the run may reach: the ladder, the
// doubling steps of a search up to SearchMax, or the open loop's cap.
func (c Config) Concurrencies() []int {
	c = c.withDefaults()
	switch {
	case c.Open != nil:
		return []int{c.Open.MaxInFlight}
	case c.Search:
		return doubling(c.SearchMax)
	}
	return c.Steps
}

// doubling is 1, 2, 4, … up to top, and top itself when it is not a power
// of two.
func doubling(top int) []int {
	var out []int
	for c := 1; c <= top; c *= 2 {
		out = append(out, c)
	}
	if len(out) == 0 || out[len(out)-1] != top {
		out = append(out, top)
	}
	return out
}

// StepSizeError is a fixed step size that leaves a step fewer measured
// requests than analysis.MinMeasured.
type StepSizeError struct {
	Concurrency, Requests, Warmup int
}

func (e *StepSizeError) Error() string {
	return fmt.Sprintf("requests per step: %d requests with %d warm-up leave %d measured at concurrency %d, fewer than the minimum max(40, 3c) = %d (use at least %d, or leave it unset for max(40, 3c) + c)",
		e.Requests, e.Warmup, e.Requests-e.Warmup, e.Concurrency, analysis.MinMeasured(e.Concurrency), analysis.MinMeasured(e.Concurrency)+e.Warmup)
}

// CheckStepSize returns a *StepSizeError when n requests per step, of
// which warmup (0: the default) are warm-up, measure fewer than
// analysis.MinMeasured at any of the concurrencies.
func CheckStepSize(concurrencies []int, n, warmup int) error {
	if n <= 0 {
		return nil
	}
	cfg := Config{Warmup: warmup}
	for _, c := range concurrencies {
		w := cfg.warmupFor(c, n)
		if n-w < analysis.MinMeasured(c) {
			return &StepSizeError{Concurrency: c, Requests: n, Warmup: w}
		}
	}
	return nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Validate reports every problem with the configuration, after defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if _, err := c.endpoint(); err != nil {
		errs = append(errs, err)
	}
	if c.Model == "" {
		bad("model: required")
	}
	if c.APIKeyHeader != "Authorization" && c.APIKeyHeader != "api-key" {
		bad(`api key header: %q is neither "Authorization" nor "api-key"`, c.APIKeyHeader)
	}
	if len(c.Steps) > MaxSteps {
		bad("steps: %d steps, at most %d", len(c.Steps), MaxSteps)
	}
	if c.SearchMax < 1 || c.SearchMax > MaxConcurrency {
		bad("search max: concurrency %d is outside 1..%d", c.SearchMax, MaxConcurrency)
	}
	if !(c.CollapseTolerancePct > 0 && c.CollapseTolerancePct < 100) {
		bad("collapse tolerance: %g %% is outside (0, 100)", c.CollapseTolerancePct)
	}
	if c.Search && c.Open != nil {
		bad("search: a knee search is a closed loop; it cannot run with open-loop rates")
	}
	if c.Search && c.RequestsPerStep > 0 {
		bad("requests per step: a search sizes its steps itself (2c + 10 measured requests at least, max(40, 3c) at most)")
	}
	for i, s := range c.Steps {
		if s < 1 || s > MaxConcurrency {
			bad("steps: concurrency %d is outside 1..%d", s, MaxConcurrency)
		}
		if i > 0 && s <= c.Steps[i-1] {
			bad("steps: must be strictly ascending (%d after %d)", s, c.Steps[i-1])
		}
	}
	if c.RequestsPerStep < 0 || c.RequestsPerStep > MaxRequestsPerStep {
		bad("requests per step: %d is outside 0..%d", c.RequestsPerStep, MaxRequestsPerStep)
	} else if c.Open == nil && !c.Search {
		if err := CheckStepSize(c.Steps, c.RequestsPerStep, c.Warmup); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"deadline", c.Deadline}, {"backoff base", c.BackoffBase}, {"backoff cap", c.BackoffCap}, {"max duration", c.Budget.MaxDuration}} {
		if f.v < 0 {
			bad("%s: %s is negative", f.name, f.v)
		}
	}
	if c.MaxTokens < 1 {
		bad("max tokens: %d, must be at least 1", c.MaxTokens)
	}
	if c.InputTokens < 1 {
		bad("input tokens: %d, must be at least 1", c.InputTokens)
	}
	if !(c.Max429Ratio >= 0 && c.Max429Ratio <= 1) {
		bad("max 429 ratio: %g is outside 0..1", c.Max429Ratio)
	}
	if c.MaxAttempts < 1 || c.MaxAttempts > 20 {
		bad("max attempts: %d is outside 1..20", c.MaxAttempts)
	}
	if c.Budget.MaxRequests < 0 || c.Budget.MaxTokens < 0 {
		bad("budget: request and token limits must not be negative")
	}
	for i, p := range c.Prompts {
		if err := p.check(); err != nil {
			bad("prompt %d: %w", i, err)
		}
	}
	if o := c.Open; o != nil {
		if len(o.Rates) == 0 || len(o.Rates) > MaxSteps {
			bad("open loop: %d rates, want 1 to %d", len(o.Rates), MaxSteps)
		}
		for i, rate := range o.Rates {
			if !(rate > 0 && rate <= 1e6) {
				bad("open loop: rate %g rps is outside (0, 1e6]", rate)
			}
			if i > 0 && rate <= o.Rates[i-1] {
				bad("open loop: rates must be strictly ascending (%g after %g)", rate, o.Rates[i-1])
			}
		}
		if o.MaxInFlight < 1 || o.MaxInFlight > MaxConcurrency {
			bad("open loop: max in flight %d is outside 1..%d", o.MaxInFlight, MaxConcurrency)
		} else if o.Requests < 1 || o.Requests > MaxRequestsPerStep {
			bad("open loop: requests %d is outside 1..%d", o.Requests, MaxRequestsPerStep)
		} else if err := CheckStepSize([]int{o.MaxInFlight}, o.Requests, c.Warmup); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// endpoint is the chat-completions URL: BaseURL's path plus
// "/chat/completions", its query kept.
func (c Config) endpoint() (string, error) {
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		return "", fmt.Errorf("base url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("base url %q: the scheme must be http or https", redact.URL(c.BaseURL))
	}
	if u.Host == "" {
		return "", fmt.Errorf("base url %q: no host", redact.URL(c.BaseURL))
	}
	return u.JoinPath("chat/completions").String(), nil
}

// requestsFor is N for a step of concurrency c: the fixed size, or the
// least a step may measure plus one round of warm-up.
func (c Config) requestsFor(conc int) int {
	if c.RequestsPerStep > 0 {
		return c.RequestsPerStep
	}
	return analysis.MinMeasured(conc) + c.warmupFor(conc, analysis.MinMeasured(conc)+conc)
}

// warmupFor is the number of warm-up requests of a step of concurrency conc
// and n requests.
func (c Config) warmupFor(conc, n int) int {
	switch {
	case c.Warmup < 0:
		return 0
	case c.Warmup > 0:
		return min(c.Warmup, n)
	}
	return min(conc, n/2)
}

// MarshalJSON renders the configuration for the outputs: durations as Go
// duration strings, the base URL without credentials, prompts counted, and
// never the API key.
func (c Config) MarshalJSON() ([]byte, error) {
	type budget struct {
		MaxRequests int    `json:"max_requests,omitempty"`
		MaxTokens   int    `json:"max_tokens_total,omitempty"`
		MaxDuration string `json:"max_duration"`
	}
	view := struct {
		BaseURL         string    `json:"base_url"`
		Model           string    `json:"model"`
		APIKeySet       bool      `json:"api_key_set"`
		Steps           []int     `json:"steps,omitempty"`
		Search          bool      `json:"search,omitempty"`
		SearchMax       int       `json:"search_max_concurrency,omitempty"`
		RequestsPerStep int       `json:"requests_per_step,omitempty"`
		Warmup          int       `json:"warmup,omitempty"`
		CollapseTol     float64   `json:"collapse_tolerance_pct"`
		Exact           bool      `json:"exact,omitempty"`
		Pause           string    `json:"pause"`
		Deadline        string    `json:"deadline"`
		MaxTokens       int       `json:"max_tokens"`
		IgnoreEOS       bool      `json:"ignore_eos"`
		InputTokens     int       `json:"input_tokens,omitempty"`
		Prompts         int       `json:"prompts,omitempty"`
		PromptsSource   string    `json:"prompts_source,omitempty"`
		Max429Ratio     float64   `json:"max_429_ratio"`
		MaxAttempts     int       `json:"max_attempts"`
		BackoffBase     string    `json:"backoff_base"`
		BackoffCap      string    `json:"backoff_cap"`
		Budget          budget    `json:"budget"`
		Open            *OpenLoop `json:"open_loop,omitempty"`
		Seed            uint64    `json:"seed"`
	}{
		BaseURL: redact.URL(c.BaseURL), Model: c.Model, APIKeySet: c.APIKey != "",
		Steps: c.Steps, Search: c.Search, RequestsPerStep: c.RequestsPerStep,
		Warmup: c.Warmup, CollapseTol: c.CollapseTolerancePct, Exact: c.Exact, Pause: c.Pause.String(), Deadline: c.Deadline.String(),
		MaxTokens: c.MaxTokens, IgnoreEOS: c.IgnoreEOS, Prompts: len(c.Prompts), PromptsSource: c.PromptsSource,
		Max429Ratio: c.Max429Ratio, MaxAttempts: c.MaxAttempts,
		BackoffBase: c.BackoffBase.String(), BackoffCap: c.BackoffCap.String(),
		Budget: budget{c.Budget.MaxRequests, c.Budget.MaxTokens, c.Budget.MaxDuration.String()},
		Open:   c.Open, Seed: c.Seed,
	}
	if len(c.Prompts) == 0 {
		view.InputTokens = c.InputTokens
	}
	if c.Search {
		view.Steps, view.SearchMax = nil, c.SearchMax
	}
	if c.Open != nil {
		view.Steps = nil
	}
	return json.Marshal(view)
}
