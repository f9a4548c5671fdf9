package fakeendpoint

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Defaults applied by New to zero-valued Config fields.
const (
	DefaultModel        = "sim-model"
	DefaultMaxNumSeqs   = 16
	DefaultTTFT         = 200 * time.Millisecond
	DefaultITL          = 20 * time.Millisecond
	DefaultITLGrowth    = 0.02
	DefaultOutputTokens = 128
	// DefaultMaxTokens is the max_tokens assumed for a request that sets
	// neither max_tokens nor max_completion_tokens, standing in for the
	// context limit a real model would stop at.
	DefaultMaxTokens = 4096
	// DefaultFailRetryAfter is the wait an injected 429 asks for.
	DefaultFailRetryAfter = 10 * time.Millisecond
)

// NoGrowth, set as Config.ITLGrowth, keeps the per-token interval constant
// whatever the batch size, since a zero ITLGrowth selects DefaultITLGrowth.
const NoGrowth = -1.0

// Token accounting modes for the TPM bucket.
const (
	// AccountingActual charges prompt tokens at admission and completion
	// tokens once they are known, as self-hosted gateways usually do.
	AccountingActual = "actual"
	// AccountingMaxTokens charges prompt tokens plus max_tokens at admission
	// and never refunds, as OpenAI and Azure OpenAI do.
	AccountingMaxTokens = "max_tokens"
)

// Errors returned by New for Config fields out of range, so that callers can
// tell which setting was wrong.
var (
	ErrMaxNumSeqs      = errors.New("max_num_seqs must not be negative")
	ErrTTFT            = errors.New("ttft must not be negative")
	ErrTTFTGrowth      = errors.New("ttft_growth must be a finite number, not negative")
	ErrPrefillPer1K    = errors.New("prefill_per_1k must not be negative")
	ErrITL             = errors.New("itl must not be negative")
	ErrITLGrowth       = errors.New("itl_growth must be a finite number, not negative (use NoGrowth for none)")
	ErrOutputTokens    = errors.New("output_tokens must not be negative")
	ErrRPM             = errors.New("rpm must not be negative")
	ErrTPM             = errors.New("tpm must not be negative")
	ErrTokenAccounting = errors.New(`token_accounting must be "actual" or "max_tokens"`)
	ErrFailRate        = errors.New("fail_rate must be between 0 and 1")
	ErrFailStatus      = errors.New("fail_status must be 429 or 500")
	ErrFailRetryAfter  = errors.New("fail_retry_after must not be negative")
	ErrPrefixCache     = errors.New("prefix_cache_tokens must not be negative")
	ErrPrefixCacheMin  = errors.New("prefix_cache_min_tokens must not be negative, and needs prefix_cache_tokens")
)

// Config describes the simulated endpoint: its batching, latency, output
// lengths, rate limits and authentication. Zero values select the defaults.
type Config struct {
	// Model is the model id served and echoed; default "sim-model".
	Model string
	// ServedModel, when set, is the name the answers carry in their model
	// field (and /v1/models as the model's root) instead of Model, which
	// requests must still name: it rehearses a provider that answers with
	// a versioned name (asked gpt-4o, served gpt-4o-2024-08-06), the
	// model behind a deployment, or a silent switch to another model.
	ServedModel string
	// MaxNumSeqs is how many sequences decode at once (default 16); the rest
	// wait FIFO, and that wait shows in TTFT.
	MaxNumSeqs int
	// TTFT is the base time to first token once a sequence is admitted to the
	// batch (default 200ms).
	TTFT time.Duration
	// TTFTGrowth is the fractional growth of TTFT per additional running
	// sequence (default 0): ttft = TTFT*(1+TTFTGrowth*(running-1)) +
	// PrefillPer1K*uncachedInputTokens/1000, the uncached input being the
	// prompt less what the prefix cache served.
	TTFTGrowth float64
	// PrefillPer1K is the TTFT added per 1,000 uncached input tokens
	// (default 0).
	PrefillPer1K time.Duration
	// ITL is the base per-output-token interval (default 20ms).
	ITL time.Duration
	// ITLGrowth is the fractional growth of the per-token interval per
	// additional running sequence, read at each token (default 0.02; NoGrowth
	// for none).
	ITLGrowth float64
	// OutputTokens is the median output length when ignore_eos is not set
	// (lognormal, sigma 0.5, seeded, clipped to [1, max_tokens]); default 128.
	OutputTokens int
	// RPM is the requests-per-minute bucket (0 = unlimited), refilled
	// continuously, with one minute's worth of capacity.
	RPM int
	// TPM is the tokens-per-minute bucket (0 = unlimited), refilled
	// continuously, with one minute's worth of capacity.
	TPM int
	// TokenAccounting is AccountingActual (default) or AccountingMaxTokens.
	TokenAccounting string
	// Seed seeds output lengths and ids: the same seed and the same request
	// order give the same lengths.
	Seed uint64
	// APIKey, when set, must arrive as "Authorization: Bearer <APIKey>",
	// otherwise the request gets 401.
	APIKey string
	// FailRate is the chance, independent of the load, that a request is
	// refused with FailStatus before it reaches the batch (default 0): a
	// gateway's random throttling or a flaky backend, for rehearsing how a
	// client and a probe judge them. The draws are seeded by Seed.
	FailRate float64
	// FailStatus is the status of the injected failures: 429 (default),
	// with a retry-after-ms of FailRetryAfter, or 500.
	FailStatus int
	// FailRetryAfter is the wait an injected 429 asks for (default 10ms).
	FailRetryAfter time.Duration
	// PrefixCacheTokens, when positive, turns on the prefix cache
	// (cache.go) and is its capacity in tokens; 0, the default, has none,
	// and usage carries no prompt_tokens_details. A request whose prompt
	// starts with blocks an earlier one computed is told how many of its
	// tokens were cached (usage.prompt_tokens_details.cached_tokens) and
	// skips their prefill: its TTFT counts PrefillPer1K for the uncached
	// tokens only.
	PrefixCacheTokens int
	// PrefixCacheMinTokens is the shortest cached prefix that counts: a
	// request served fewer cached tokens is served none (0, the default:
	// one block of 16 tokens; 1024 rehearses OpenAI's prompt cache).
	PrefixCacheMinTokens int
	// TimersOnly waits for every token on a timer, without the short busy
	// wait that otherwise makes the first and last tokens punctual to a
	// few microseconds on an idle machine. Tests under testing/synctest
	// need it: their clock moves only when every goroutine is blocked.
	TimersOnly bool
}

// finiteAtLeastZero reports whether a growth is a number, finite and not
// negative: NaN or +Inf would make every request wait forever.
func finiteAtLeastZero(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

// withDefaults validates c and returns it with zero values replaced by the
// defaults.
func (c Config) withDefaults() (Config, error) {
	checks := []struct {
		bad bool
		err error
		got any
	}{
		{c.MaxNumSeqs < 0, ErrMaxNumSeqs, c.MaxNumSeqs},
		{c.TTFT < 0, ErrTTFT, c.TTFT},
		{!finiteAtLeastZero(c.TTFTGrowth), ErrTTFTGrowth, c.TTFTGrowth},
		{c.PrefillPer1K < 0, ErrPrefillPer1K, c.PrefillPer1K},
		{c.ITL < 0, ErrITL, c.ITL},
		{!finiteAtLeastZero(c.ITLGrowth) && c.ITLGrowth != NoGrowth, ErrITLGrowth, c.ITLGrowth},
		{c.OutputTokens < 0, ErrOutputTokens, c.OutputTokens},
		{c.RPM < 0, ErrRPM, c.RPM},
		{c.TPM < 0, ErrTPM, c.TPM},
		{c.TokenAccounting != "" && c.TokenAccounting != AccountingActual &&
			c.TokenAccounting != AccountingMaxTokens, ErrTokenAccounting, c.TokenAccounting},
		{!(c.FailRate >= 0 && c.FailRate <= 1), ErrFailRate, c.FailRate},
		{c.FailStatus != 0 && c.FailStatus != 429 && c.FailStatus != 500, ErrFailStatus, c.FailStatus},
		{c.FailRetryAfter < 0, ErrFailRetryAfter, c.FailRetryAfter},
		{c.PrefixCacheTokens < 0, ErrPrefixCache, c.PrefixCacheTokens},
		{c.PrefixCacheMinTokens < 0 || c.PrefixCacheMinTokens > 0 && c.PrefixCacheTokens == 0, ErrPrefixCacheMin, c.PrefixCacheMinTokens},
	}
	for _, ch := range checks {
		if ch.bad {
			return c, fmt.Errorf("sim: %w (got %v)", ch.err, ch.got)
		}
	}
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.ServedModel == "" {
		c.ServedModel = c.Model
	}
	if c.MaxNumSeqs == 0 {
		c.MaxNumSeqs = DefaultMaxNumSeqs
	}
	if c.TTFT == 0 {
		c.TTFT = DefaultTTFT
	}
	if c.ITL == 0 {
		c.ITL = DefaultITL
	}
	switch c.ITLGrowth {
	case 0:
		c.ITLGrowth = DefaultITLGrowth
	case NoGrowth:
		c.ITLGrowth = 0
	}
	if c.OutputTokens == 0 {
		c.OutputTokens = DefaultOutputTokens
	}
	if c.TokenAccounting == "" {
		c.TokenAccounting = AccountingActual
	}
	if c.FailStatus == 0 {
		c.FailStatus = 429
	}
	if c.FailRetryAfter == 0 {
		c.FailRetryAfter = DefaultFailRetryAfter
	}
	return c, nil
}
