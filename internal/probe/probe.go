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
// Each answer's model field is recorded and checked against the model
// asked (measure.ModelMatches), and each request's connection set-up is
// timed (net/http/httptrace), with a warning when connections are not
// kept alive.
// The records are judged by package analysis (steady state, intervals,
// knee, collapse, quota_limited, USL fit) and written as requests.csv,
// steps.json and a curve.yaml that a scenario takes as it is.
//
// A run is described by one Config: its defaults are applied in one place
// (defaults.go), its rules are checked in one place (validate.go), each
// problem located at its field so that the command line and the service
// name it as a flag or a body location, and a service's caps apply on top
// (caps.go). The run modes, the ladder, the knee search, the open loop,
// and the modes that measure a prompt's cost (the prefill ladder, the
// cache comparison and the conversation), are one file each behind one
// interface (mode.go). Goodput may count only the requests that meet
// every target of an SLO (Config.SLO).
package probe

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/optional"
	"github.com/plannerdev/planner/internal/redact"
)

// Defaults of the settings a Config leaves unset (defaults.go applies
// them, in one place).
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
	// DefaultPrefillRequests is the requests per length of a prefill
	// ladder, DefaultCacheRequests those of each kind of a cache
	// comparison, warm-up included.
	DefaultPrefillRequests = 11
	DefaultCacheRequests   = 21
	// DefaultCacheInputTokens is the prompt length of a cache comparison:
	// long enough for the providers' caches, which serve prompts from
	// 1,024 tokens.
	DefaultCacheInputTokens = 2048
	// DefaultConversationTasks is the measured tasks of a conversation,
	// DefaultToolResultTokens the length of each tool result.
	DefaultConversationTasks = 10
	DefaultToolResultTokens  = 256
)

// Bounds on the prompt-cost modes.
const (
	// MinPrefillMeasured and MinCacheMeasured are the fewest measured
	// requests a prefill ladder may have at each length and a cache
	// comparison of each kind.
	MinPrefillMeasured = 2
	MinCacheMeasured   = 5
	// MinCacheInputTokens is the shortest prompt of a cache comparison:
	// its unique tail (at least 16 tokens) leaves a prefix to repeat.
	MinCacheInputTokens = 128
	// MaxCalls bounds a conversation's calls per task, MaxToolTime its
	// wait between calls.
	MaxCalls    = 100
	MaxToolTime = 10 * time.Minute
)

// Bounds on a probe's shape, so that a typo cannot start a flood. They are
// declared here once: Config.Validate enforces them, and the API's schema
// and the configuration's probe caps take them from here.
const (
	MaxConcurrency     = 10_000
	MaxSteps           = 64
	MaxRequestsPerStep = 1_000_000
	// MaxInputTokens bounds a synthetic prompt's length in tokens, and
	// MaxOutputTokens the max_tokens of a request: a probe (or a plan's
	// validation, whose prompts follow a class's input) never builds a
	// larger request, whatever a scenario says.
	MaxInputTokens  = 1_000_000
	MaxOutputTokens = 1_000_000
	// MaxAttemptsBound bounds the sends of one request, the first included.
	MaxAttemptsBound = 20
	// MaxRateRPS bounds an open-loop rate.
	MaxRateRPS = 1e6
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

// Config describes one probe run. A setting left unset takes its default
// (defaults.go), so a Config with only BaseURL and Model is a complete,
// bounded probe; a setting that is set is judged as given (Validate), zero
// included: a Pause of 0 is no pause, a Warmup of 0 no warm-up.
type Config struct {
	// BaseURL is the API root; requests go to BaseURL + "/chat/completions"
	// with BaseURL's query kept (Azure OpenAI's api-version).
	BaseURL string
	// Model is the model (or Azure deployment) name sent in each request.
	Model string
	// APIKey is sent only in the APIKeyHeader header; it never appears in
	// records, results, outputs, errors or logs.
	APIKey string
	// APIKeyHeader is "Authorization" (the default when empty; sent as
	// "Bearer KEY") or "api-key" (Azure OpenAI keys; sent as the bare key).
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
	// tlsConfig is the TLS settings of the run's connections; nil selects
	// the system's. Tests set it to trust their own TLS server.
	tlsConfig *tls.Config

	// Steps is the ladder of concurrencies, strictly ascending; nil selects
	// DefaultSteps. Only a ladder takes it.
	Steps []int
	// RequestsPerStep fixes N for every step of a ladder; unset selects
	// N = max(40, 3c) + c: the least a step may measure
	// (analysis.MinMeasured) plus its warm-up. A fixed N that leaves a
	// step fewer measured requests than analysis.MinMeasured is refused.
	RequestsPerStep optional.Value[int]
	// Warmup is the number of warm-up requests per step, recorded but left
	// out of the step's summary (0: none); unset selects min(c, N/2): one
	// full round of the semaphore, which absorbs connection set-up and the
	// batch filling up.
	Warmup optional.Value[int]

	// Search runs the knee search instead of the ladder (search.go):
	// concurrency doubles from 1 up to SearchMax, each step ends once its
	// goodput is known within ±5 % (never before 2c + 10 measured
	// requests, never beyond the ladder's N), no step runs past the first
	// that fails the knee rule, and the knee is then refined by bisection.
	Search bool
	// SearchMax is the highest concurrency a search tries (default 64);
	// only a search takes it.
	SearchMax optional.Value[int]
	// CollapseTolerancePct is how far goodput must fall, beyond its
	// noise, to count as falling (default 5; analysis.Options).
	CollapseTolerancePct optional.Value[float64]
	// Exact keeps every ladder step at its N: a step whose gain over the
	// one before is ambiguous is not measured twice as long. Plan
	// validation sets it, since its steps are compared with a model
	// rather than judged by the knee rule.
	Exact bool
	// Pause is the idle time between steps (default 2s; 0: none), which
	// lets the endpoint's queues drain.
	Pause optional.Value[time.Duration]

	// Deadline bounds each request, retries included (default 12s); a
	// response is good only when it ends within it.
	Deadline optional.Value[time.Duration]
	// MaxTokens is sent as max_tokens (default 128).
	MaxTokens optional.Value[int]
	// IgnoreEOS sends ignore_eos (a vLLM extension) so that every response
	// has exactly MaxTokens tokens.
	IgnoreEOS bool
	// InputTokens is the length of a synthetic prompt in tokens (default
	// 256), calibrated against usage.prompt_tokens; unused with Prompts.
	InputTokens optional.Value[int]
	// Prompts, when given, are sent in turn instead of synthetic text.
	Prompts []Prompt
	// PromptsSource names where Prompts came from, for the outputs.
	PromptsSource string

	// Max429Ratio stops the ramp after a step in which more than this
	// fraction of the answers were 429 (default 0.2).
	Max429Ratio optional.Value[float64]
	// MaxAttempts bounds the sends of one request, the first included
	// (default 3); only 429 answers are retried.
	MaxAttempts optional.Value[int]
	// BackoffBase and BackoffCap shape the full-jitter backoff used when a
	// 429 names no wait (defaults 500ms and 8s).
	BackoffBase, BackoffCap optional.Value[time.Duration]

	// Budget bounds the whole run.
	Budget Budget
	// Open, when set, runs open-loop steps, one per rate, instead of the
	// ramp (openloop.go).
	Open *OpenLoop
	// Prefill, Cache and Conversation, when one is set, measure a
	// prompt's cost instead of a concurrency ramp (docs/probe.md,
	// "Prefill and the prompt cache"): a ladder of input lengths
	// (prefill.go), a repeated prefix against fresh prompts (cache.go),
	// or multi-call tasks whose context grows (conversation.go).
	Prefill      *PrefillLadder
	Cache        *CacheComparison
	Conversation *Conversation
	// SLO, when it gives targets, narrows goodput to the requests that
	// met every one of them (docs/probe.md, "SLO goodput").
	SLO measure.Targets
	// Seed seeds the backoff jitter and the open-loop arrivals.
	Seed uint64
}

// PrefillLadder measures prefill per 1,000 input tokens: rounds of one
// request at each input length in turn, at concurrency 1, each prompt
// unique from its start so that no cache serves it, and the line TTFT =
// base + slope · uncached input / 1000 fitted to them
// (analysis.FitPrefill).
type PrefillLadder struct {
	// InputTokens are the lengths, strictly ascending, at least two.
	InputTokens []int `json:"input_tokens"`
	// Requests is the number of requests at each length, warm-up
	// included (default DefaultPrefillRequests: one round of warm-up, ten
	// measured).
	Requests optional.Value[int] `json:"requests"`
}

// CacheComparison measures the prompt cache's effect: at concurrency 1,
// requests alternate between prompts that repeat one long prefix (then a
// short unique tail) and fresh prompts of the same length, and the TTFTs
// and the cached tokens read back are compared (analysis.MeasureCache).
// The prompt's length is Config.InputTokens (default
// DefaultCacheInputTokens).
type CacheComparison struct {
	// Requests is the number of requests of each kind, warm-up included
	// (default DefaultCacheRequests: one of each kind of warm-up, the
	// first of which fills the cache, and twenty measured).
	Requests optional.Value[int] `json:"requests"`
}

// Conversation replays multi-call tasks (agent loops): each task makes
// Calls serial calls, call i's messages the first input (Config.InputTokens,
// unique to the task) and, for every earlier call, its answer (sent back as
// text of its output's length) and a tool result of ToolResultTokens, with
// ToolTime between calls; InFlight tasks run at once. Per call and per
// task times are measured (analysis.MeasureConversation).
type Conversation struct {
	Calls int `json:"calls"`
	// Tasks is the number of tasks, warm-up included (default
	// DefaultConversationTasks + InFlight: one round of warm-up).
	Tasks optional.Value[int] `json:"tasks"`
	// InFlight is the number of tasks at once (default 1).
	InFlight optional.Value[int] `json:"tasks_in_flight"`
	// ToolTime is the wait between a call's end and the next call's send
	// (default 0).
	ToolTime optional.Value[time.Duration] `json:"tool_time"`
	// ToolResultTokens is the length of each tool result (default
	// DefaultToolResultTokens).
	ToolResultTokens optional.Value[int] `json:"tool_result_tokens"`
	// Fresh sends every call without the task's earlier context: each
	// call's messages are a first input of their own, of
	// Config.InputTokens (a scenario's task context fresh); the tool
	// time still separates the calls.
	Fresh bool `json:"fresh,omitempty"`
}

// Budget bounds a run's spend. When a budget is spent the run stops: the
// request and token budgets stop new sends and let requests in flight
// finish (they were admitted within the budget); the time budget cancels
// requests in flight, which are recorded as cancelled.
type Budget struct {
	// MaxRequests bounds the HTTP requests sent, retries included (unset:
	// only the steps bound them).
	MaxRequests optional.Value[int]
	// MaxTokens bounds input plus output tokens. Each send reserves its
	// worst case (an upper estimate of its input, plus max_tokens) before
	// its prompt is built, and the reservation is settled to the usage
	// reported, so the budget is never exceeded (unset: only the steps
	// bound them).
	MaxTokens optional.Value[int]
	// MaxDuration bounds the run's wall time, pauses included (default 10m).
	MaxDuration optional.Value[time.Duration]
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
	Requests optional.Value[int] `json:"requests"`
}

// endpoint is the chat-completions URL: BaseURL's path plus
// "/chat/completions", its query kept. A BaseURL with a fragment is
// refused: it would be stored and shown but never sent.
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
	if strings.ContainsRune(c.BaseURL, '#') {
		// Not quoted: what follows # may be a token (#access_token=...).
		return "", errors.New("base url: a fragment (#...) is never sent to a server and has no place in an API root; remove it")
	}
	return u.JoinPath("chat/completions").String(), nil
}

// deployment reports whether Model names a deployment rather than a model
// (Azure OpenAI), whose answers name the model behind it: the base URL is
// an Azure OpenAI host or has a deployments/NAME path, or the key goes in
// api-key, the header of Azure OpenAI keys.
func (c Config) deployment() bool {
	if strings.EqualFold(c.APIKeyHeader, "api-key") {
		return true
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, suffix := range []string{".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"} {
		if strings.HasSuffix(host, suffix) {
			return true
		}
	}
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	i := slices.Index(segs, "deployments")
	return i >= 0 && i+1 < len(segs) && segs[i+1] != ""
}

// DisplayURL is the base URL as the outputs show it: without user
// information, and every query value but api-version redacted.
func (c Config) DisplayURL() string { return redact.URL(c.BaseURL) }

// MarshalJSON renders the configuration for the outputs under the names
// its problems are located by (Validate): durations as Go duration
// strings, the base URL without credentials, prompts counted, and never
// the API key. A setting left unset is left out, or shown as its zero.
func (c Config) MarshalJSON() ([]byte, error) {
	type budget struct {
		MaxRequests int    `json:"max_requests,omitempty"`
		MaxTokens   int    `json:"max_tokens_total,omitempty"`
		MaxDuration string `json:"max_duration"`
	}
	duration := func(d optional.Value[time.Duration]) string { return d.Or(0).String() }
	view := struct {
		BaseURL         string            `json:"base_url"`
		Model           string            `json:"model"`
		APIKeySet       bool              `json:"api_key_set"`
		Steps           []int             `json:"steps,omitempty"`
		Search          bool              `json:"search,omitempty"`
		SearchMax       int               `json:"search_max_concurrency,omitempty"`
		RequestsPerStep *int              `json:"requests_per_step,omitempty"`
		Warmup          *int              `json:"warmup,omitempty"`
		CollapseTol     float64           `json:"collapse_tolerance_pct"`
		Exact           bool              `json:"exact,omitempty"`
		Pause           string            `json:"pause"`
		Deadline        string            `json:"deadline"`
		MaxTokens       int               `json:"max_tokens"`
		IgnoreEOS       bool              `json:"ignore_eos"`
		InputTokens     int               `json:"input_tokens,omitempty"`
		Prompts         int               `json:"prompts,omitempty"`
		PromptsSource   string            `json:"prompts_source,omitempty"`
		Max429Ratio     float64           `json:"max_429_ratio"`
		MaxAttempts     int               `json:"max_attempts"`
		BackoffBase     string            `json:"backoff_base"`
		BackoffCap      string            `json:"backoff_cap"`
		Budget          budget            `json:"budget"`
		Open            *OpenLoop         `json:"open_loop,omitempty"`
		Prefill         *PrefillLadder    `json:"prefill,omitempty"`
		Cache           *CacheComparison  `json:"cache,omitempty"`
		Conversation    *conversationView `json:"conversation,omitempty"`
		SLO             *measure.Targets  `json:"slo,omitempty"`
		Seed            uint64            `json:"seed"`
	}{
		BaseURL: redact.URL(c.BaseURL), Model: c.Model, APIKeySet: c.APIKey != "",
		Steps: c.Steps, Search: c.Search, RequestsPerStep: pointer(c.RequestsPerStep), Warmup: pointer(c.Warmup),
		CollapseTol: c.CollapseTolerancePct.Or(0), Exact: c.Exact, Pause: duration(c.Pause), Deadline: duration(c.Deadline),
		MaxTokens: c.MaxTokens.Or(0), IgnoreEOS: c.IgnoreEOS, Prompts: len(c.Prompts), PromptsSource: c.PromptsSource,
		Max429Ratio: c.Max429Ratio.Or(0), MaxAttempts: c.MaxAttempts.Or(0),
		BackoffBase: duration(c.BackoffBase), BackoffCap: duration(c.BackoffCap),
		Budget: budget{c.Budget.MaxRequests.Or(0), c.Budget.MaxTokens.Or(0), duration(c.Budget.MaxDuration)},
		Open:   c.Open, Seed: c.Seed,
	}
	// A prompt-cost mode's size shows as the run takes it, default or not.
	if l := c.Prefill; l != nil {
		view.Prefill = &PrefillLadder{InputTokens: l.InputTokens, Requests: optional.Of(l.requests())}
	}
	if k := c.Cache; k != nil {
		view.Cache = &CacheComparison{Requests: optional.Of(k.requests())}
	}
	if cv := c.Conversation; cv != nil {
		tasks := cv.tasks()
		view.Conversation = &conversationView{Calls: cv.Calls, Tasks: &tasks, InFlight: pointer(cv.InFlight),
			ToolTime: duration(cv.ToolTime), ToolResultTokens: pointer(cv.ToolResultTokens)}
	}
	if !c.SLO.IsZero() {
		view.SLO = &c.SLO
	}
	if len(c.Prompts) == 0 {
		view.InputTokens = c.InputTokens.Or(0)
	}
	if c.Search {
		view.Steps, view.SearchMax = nil, c.SearchMax.Or(0)
	}
	if c.Open != nil || c.promptMode() != "" {
		view.Steps = nil
	}
	return json.Marshal(view)
}

// conversationView is a Conversation as the outputs show it, its tool
// time a Go duration string.
type conversationView struct {
	Calls            int    `json:"calls"`
	Tasks            *int   `json:"tasks,omitempty"`
	InFlight         *int   `json:"tasks_in_flight,omitempty"`
	ToolTime         string `json:"tool_time"`
	ToolResultTokens *int   `json:"tool_result_tokens,omitempty"`
}

// pointer is a set value's address, nil for an unset one.
func pointer[T any](v optional.Value[T]) *T {
	if x, ok := v.Get(); ok {
		return &x
	}
	return nil
}
