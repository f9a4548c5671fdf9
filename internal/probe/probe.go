// Package probe measures one OpenAI-compatible chat-completions endpoint
// with a bounded, polite load run (docs/probe.md): a closed-loop concurrency
// ramp (or an open-loop Poisson run for plan validation) of streamed
// requests, each timed to its first output token and its last one. Every
// request is recorded, failures too; 429s are retried only after the wait
// the endpoint asked for; the run stops by itself on too many 429s, on
// falling goodput, on a spent budget or on cancel, and keeps what it
// measured. The records are judged by package analysis (knee, collapse,
// quota_limited, USL fit) and written as requests.csv, steps.json and a
// curve.yaml that a scenario's latency block takes as it is.
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
	DefaultMinRequests  = 40 // per step: N = max(DefaultMinRequests, DefaultRounds·c)
	DefaultRounds       = 4
	DefaultAPIKeyHeader = "Authorization"
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

	// Steps is the ladder of concurrencies, strictly ascending.
	Steps []int
	// RequestsPerStep fixes N for every step; 0 selects
	// N = max(MinRequestsPerStep, RoundsPerStep·c).
	RequestsPerStep int
	// MinRequestsPerStep is the least N of a step (default 40).
	MinRequestsPerStep int
	// RoundsPerStep is N per unit of concurrency (default 4).
	RoundsPerStep int
	// Warmup is the number of warm-up requests per step, recorded but left
	// out of the step's summary; 0 selects min(c, N/2): one full round of
	// the semaphore, which absorbs connection set-up and the batch filling
	// up, and lets the step's throughput be measured over whole rounds. A
	// negative value means none.
	Warmup int
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
	// Open, when set, runs one open-loop step instead of the ramp.
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

// OpenLoop is an open-loop run: requests arrive as a Poisson process at
// RateRPS whatever the endpoint does, as real traffic does, and an arrival
// that finds MaxInFlight requests in flight is shed (counted, not sent).
type OpenLoop struct {
	RateRPS     float64 `json:"rate_rps"`
	MaxInFlight int     `json:"max_in_flight"`
	// Requests is the number of arrivals (default max(40, 4·MaxInFlight)).
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
	c.MinRequestsPerStep = orDefault(c.MinRequestsPerStep, DefaultMinRequests)
	c.RoundsPerStep = orDefault(c.RoundsPerStep, DefaultRounds)
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
			o.Requests = max(DefaultMinRequests, DefaultRounds*o.MaxInFlight)
		}
		c.Open = &o
	}
	return c
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
	for i, s := range c.Steps {
		if s < 1 || s > MaxConcurrency {
			bad("steps: concurrency %d is outside 1..%d", s, MaxConcurrency)
		}
		if i > 0 && s <= c.Steps[i-1] {
			bad("steps: must be strictly ascending (%d after %d)", s, c.Steps[i-1])
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"requests per step", c.RequestsPerStep}, {"min requests per step", c.MinRequestsPerStep}, {"rounds per step", c.RoundsPerStep}} {
		if f.v < 0 || f.v > MaxRequestsPerStep {
			bad("%s: %d is outside 0..%d", f.name, f.v, MaxRequestsPerStep)
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
		if !(o.RateRPS > 0 && o.RateRPS <= 1e6) {
			bad("open loop: rate %g rps is outside (0, 1e6]", o.RateRPS)
		}
		if o.MaxInFlight < 1 || o.MaxInFlight > MaxConcurrency {
			bad("open loop: max in flight %d is outside 1..%d", o.MaxInFlight, MaxConcurrency)
		}
		if o.Requests < 1 || o.Requests > MaxRequestsPerStep {
			bad("open loop: requests %d is outside 1..%d", o.Requests, MaxRequestsPerStep)
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
		return "", fmt.Errorf("base url %q: the scheme must be http or https", redactURL(c.BaseURL))
	}
	if u.Host == "" {
		return "", fmt.Errorf("base url %q: no host", redactURL(c.BaseURL))
	}
	return u.JoinPath("chat/completions").String(), nil
}

// redactURL drops what may carry credentials from a URL, for display: the
// user information and every query value except api-version.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable url)"
	}
	u.User = nil
	q := u.Query()
	for k := range q {
		if k != "api-version" {
			q[k] = []string{"redacted"}
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// requestsFor is N for a step of concurrency c.
func (c Config) requestsFor(conc int) int {
	if c.RequestsPerStep > 0 {
		return c.RequestsPerStep
	}
	return max(c.MinRequestsPerStep, c.RoundsPerStep*conc)
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
		Steps           []int     `json:"steps"`
		RequestsPerStep int       `json:"requests_per_step,omitempty"`
		MinRequests     int       `json:"min_requests_per_step"`
		Rounds          int       `json:"rounds_per_step"`
		Warmup          int       `json:"warmup,omitempty"`
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
		BaseURL: redactURL(c.BaseURL), Model: c.Model, APIKeySet: c.APIKey != "",
		Steps: c.Steps, RequestsPerStep: c.RequestsPerStep, MinRequests: c.MinRequestsPerStep,
		Rounds: c.RoundsPerStep, Warmup: c.Warmup, Pause: c.Pause.String(), Deadline: c.Deadline.String(),
		MaxTokens: c.MaxTokens, IgnoreEOS: c.IgnoreEOS, Prompts: len(c.Prompts), PromptsSource: c.PromptsSource,
		Max429Ratio: c.Max429Ratio, MaxAttempts: c.MaxAttempts,
		BackoffBase: c.BackoffBase.String(), BackoffCap: c.BackoffCap.String(),
		Budget: budget{c.Budget.MaxRequests, c.Budget.MaxTokens, c.Budget.MaxDuration.String()},
		Open:   c.Open, Seed: c.Seed,
	}
	if len(c.Prompts) == 0 {
		view.InputTokens = c.InputTokens
	}
	return json.Marshal(view)
}
