package measure

import (
	"math"
	"strings"
)

// Error classes of a failed request (docs/probe.md).
const (
	ErrTimeout     = "timeout"
	ErrRateLimited = "429"
	ErrServer      = "5xx"
	ErrClient      = "4xx"
	ErrTransport   = "transport"
	ErrBadStream   = "bad_stream"
	// ErrCancelled marks a request the client itself cut short (a cancelled
	// run or a spent time budget). Such rows are kept in the raw data but
	// left out of the summaries, since the endpoint did not fail them.
	ErrCancelled = "cancelled"
)

// Record is one request of a ramp, successful or not. Its times are
// measured from the send of the attempt that succeeded (the last one, for
// a request that failed), so that waiting before a retry never counts as
// latency; E2EWithRetriesMs keeps the whole time from the first send.
type Record struct {
	Step            int     `json:"step"`             // concurrency of the step (closed loop)
	Index           int     `json:"idx"`              // order within the step
	StartS          float64 `json:"start_s"`          // first send, seconds from the start of the run
	AckMs           float64 `json:"ack_ms"`           // to the first chunk of any kind
	TTFTMs          float64 `json:"ttft_ms"`          // to the first chunk carrying output
	E2EMs           float64 `json:"e2e_ms"`           // to the last output chunk; to the failure for failed requests
	OutputTokens    int     `json:"output_tokens"`    // usage.completion_tokens, else chunks counted
	InputTokens     int     `json:"input_tokens"`     // usage.prompt_tokens
	OutputEstimated bool    `json:"output_estimated"` // output tokens counted from chunks, not read from usage
	Status          int     `json:"status"`           // HTTP status; 0 when no response arrived
	ErrorClass      string  `json:"error"`            // "" on success, else one of the Err* classes
	Attempts        int     `json:"attempts"`         // sends, including retries
	RetryAfterMs    float64 `json:"retry_after_ms"`   // the longest retry-after seen
	OK              bool    `json:"ok"`               // HTTP 200 with non-empty output
	Warmup          bool    `json:"warmup"`           // excluded from the summaries
	// E2EWithRetriesMs is the time from the first send to the end, waits
	// and earlier attempts included; 0 when not recorded (rows written
	// before it existed), which means E2EMs.
	E2EWithRetriesMs float64 `json:"e2e_with_retries_ms,omitempty"`
	// RateRPS is the offered rate of an open-loop step; 0 in a closed loop.
	RateRPS float64 `json:"rate_rps,omitempty"`
	// Refine marks a request of a knee search's refinement step.
	Refine bool `json:"refine,omitempty"`

	// ServedModel is what the answer's chunks named in their model field:
	// one name, or the distinct names in the order they came, joined by
	// "|" when one stream named several (ServedModels splits them); ""
	// when no chunk named one.
	ServedModel string `json:"served_model,omitempty"`
	// Conn is how the attempt that the times are measured from got its
	// connection: ConnNew when it waited for a connection set up for it,
	// ConnReused when it took one kept alive in the pool (a connection
	// that another request's dial set up and pooled unused counts as
	// reused); "" when it got none (a failed dial) or the row predates
	// the column.
	Conn string `json:"conn,omitempty"`
	// ConnWaitMs is the time from asking the pool for a connection to
	// getting one: a new connection's whole set-up (DNS, connect, TLS), a
	// reused one's wait for an idle connection (about 0).
	ConnWaitMs float64 `json:"conn_wait_ms,omitempty"`
	// DNSMs, ConnectMs and TLSMs are the phases of a new connection's
	// set-up, each from its first start to its last end; 0 on a reused
	// connection, and when the dialer does not report the phase.
	DNSMs     float64 `json:"dns_ms,omitempty"`
	ConnectMs float64 `json:"connect_ms,omitempty"`
	TLSMs     float64 `json:"tls_ms,omitempty"`
	// TTFBMs is the time from the send to the first byte of the answer
	// (its status line), connection set-up included; 0 without an answer.
	TTFBMs float64 `json:"ttfb_ms,omitempty"`

	// CachedTokens is usage.prompt_tokens_details.cached_tokens: the
	// input tokens the endpoint served from its prompt cache; 0 when it
	// reported none.
	CachedTokens int `json:"cached_tokens,omitempty"`
	// PrefixTokens is how many tokens at the start of the prompt an
	// earlier request of the run had already sent, as the probe built it:
	// a repeated prefix of the cache comparison (its share of the prompt's
	// characters, in the prompt's tokens), or a conversation call's earlier
	// context (the input and output tokens of the call before). It is what
	// a prompt cache could serve; 0 for a prompt that starts uniquely.
	PrefixTokens int `json:"prefix_tokens,omitempty"`
	// Task and Call place a request of a conversation (docs/probe.md,
	// "Conversations"): the task's number and the call's within it, both
	// from 1; 0 outside a conversation.
	Task int `json:"task,omitempty"`
	Call int `json:"call,omitempty"`
}

// How a request got its connection (Record.Conn).
const (
	ConnNew    = "new"
	ConnReused = "reused"
)

// ServedModels are the model names a request's answer carried, in order.
func (r Record) ServedModels() []string {
	if r.ServedModel == "" {
		return nil
	}
	return strings.Split(r.ServedModel, ServedModelSep)
}

// ServedModelSep separates the names of a stream that named several
// models (Record.ServedModel).
const ServedModelSep = "|"

// TPOTMs is (E2E − TTFT)/(output tokens − 1), or false with fewer than two
// output tokens.
func (r Record) TPOTMs() (float64, bool) {
	if !r.OK || r.OutputTokens < 2 {
		return 0, false
	}
	return (r.E2EMs - r.TTFTMs) / float64(r.OutputTokens-1), true
}

// RateLimitedAnswers is the number of 429 answers the request got: only
// 429s are retried, so every send but the last was one, and the last was
// one when the request failed as rate limited.
func (r Record) RateLimitedAnswers() int {
	n := max(0, r.Attempts-1)
	if r.ErrorClass == ErrRateLimited || (r.Status == 429 && !r.OK) {
		n++
	}
	return n
}

// Answers is the number of HTTP answers (sends) of the request.
func (r Record) Answers() int { return max(1, r.Attempts) }

// SlotMs is how long the request held its client slot: from the first
// send to its end, waits before retries included.
func (r Record) SlotMs() float64 { return math.Max(r.E2EMs, r.E2EWithRetriesMs) }

// EndS is when the request ended, in seconds from the start of the run.
func (r Record) EndS() float64 { return r.StartS + r.SlotMs()/1000 }

// Good reports whether a successful request ended within the deadline
// (DeadlineMs ≤ 0: no deadline).
func (r Record) Good(deadlineMs float64) bool {
	return r.OK && (deadlineMs <= 0 || r.E2EMs <= deadlineMs)
}

// UncachedInputTokens is the input the endpoint had to prefill: the
// input tokens less those it served from its cache.
func (r Record) UncachedInputTokens() int { return max(0, r.InputTokens-r.CachedTokens) }
