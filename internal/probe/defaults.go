package probe

import (
	"cmp"
	"slices"
	"time"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/optional"
)

// The defaults of a Config, applied here and nowhere else: each setting
// has one accessor that returns its value, or its default when it is
// unset. The run, its validation and its record read the settings through
// them.

func (c Config) apiKeyHeader() string { return cmp.Or(c.APIKeyHeader, DefaultAPIKeyHeader) }

// steps is the ladder: Steps, or DefaultSteps when unset.
func (c Config) steps() []int {
	if c.Steps == nil {
		return DefaultSteps
	}
	return c.Steps
}

func (c Config) searchMax() int { return c.SearchMax.Or(DefaultSearchMax) }

func (c Config) collapseTolerancePct() float64 {
	return c.CollapseTolerancePct.Or(analysis.DefaultCollapseTolerancePct)
}

func (c Config) pause() time.Duration    { return c.Pause.Or(DefaultPause) }
func (c Config) deadline() time.Duration { return c.Deadline.Or(DefaultDeadline) }
func (c Config) maxTokens() int          { return c.MaxTokens.Or(DefaultMaxTokens) }
func (c Config) inputTokens() int {
	if c.Cache != nil && c.Open == nil {
		return c.InputTokens.Or(DefaultCacheInputTokens)
	}
	return c.InputTokens.Or(DefaultInputTokens)
}
func (c Config) max429Ratio() float64       { return c.Max429Ratio.Or(DefaultMax429Ratio) }
func (c Config) maxAttempts() int           { return c.MaxAttempts.Or(DefaultMaxAttempts) }
func (c Config) backoffBase() time.Duration { return c.BackoffBase.Or(DefaultBackoffBase) }
func (c Config) backoffCap() time.Duration  { return c.BackoffCap.Or(DefaultBackoffCap) }
func (b Budget) maxDuration() time.Duration { return b.MaxDuration.Or(DefaultMaxDuration) }

func (l PrefillLadder) requests() int          { return l.Requests.Or(DefaultPrefillRequests) }
func (k CacheComparison) requests() int        { return k.Requests.Or(DefaultCacheRequests) }
func (v Conversation) inFlight() int           { return v.InFlight.Or(1) }
func (v Conversation) toolTime() time.Duration { return v.ToolTime.Or(0) }
func (v Conversation) toolResultTokens() int   { return v.ToolResultTokens.Or(DefaultToolResultTokens) }

// tasks is the number of a conversation's tasks: ten measured and one
// round of warm-up unless set.
func (v Conversation) tasks() int { return v.Tasks.Or(DefaultConversationTasks + v.inFlight()) }

// requests is the number of arrivals per rate.
func (o OpenLoop) requests() int {
	return o.Requests.Or(analysis.MinMeasured(o.MaxInFlight) + o.MaxInFlight)
}

// requestsFor is N for a step of concurrency conc: the fixed size, or the
// least a step may measure plus one round of warm-up.
func (c Config) requestsFor(conc int) int {
	if n, ok := c.RequestsPerStep.Get(); ok {
		return n
	}
	return analysis.MinMeasured(conc) + c.warmupFor(conc, analysis.MinMeasured(conc)+conc)
}

// warmupFor is the number of warm-up requests of a step of concurrency
// conc and n requests: the fixed number (at most n), or one round of the
// semaphore, at most half the step.
func (c Config) warmupFor(conc, n int) int {
	if w, ok := c.Warmup.Get(); ok {
		return max(0, min(w, n))
	}
	return min(conc, n/2)
}

// WithDefaults returns c with every unset setting that has a fixed
// default set to it, as the run uses it: what a record of the run should
// show. The step size and the warm-up, whose defaults follow each step's
// concurrency (requestsFor, warmupFor), stay unset, and so do the request
// and token budgets, which are unbounded unless set. The ladder is set
// only for a ladder and the search's top only for a search, so that c and
// its defaults validate alike; so is a prompt-cost mode's own shape, but
// not its size (requests, tasks), whose default leaves a warm-up's
// problem at warmup, as a step's does, and a prefill ladder takes no
// input_tokens.
func (c Config) WithDefaults() Config {
	c.APIKeyHeader = c.apiKeyHeader()
	prefill := c.Prefill != nil && c.Open == nil
	switch {
	case c.Open != nil:
		o := *c.Open
		o.Requests = optional.Of(o.requests())
		o.Rates = slices.Clone(o.Rates)
		c.Open = &o
	case c.Prefill != nil:
		l := *c.Prefill
		l.InputTokens = slices.Clone(l.InputTokens)
		c.Prefill = &l
	case c.Cache != nil:
		k := *c.Cache
		c.Cache = &k
	case c.Conversation != nil:
		v := *c.Conversation
		v.InFlight = optional.Of(v.inFlight())
		v.ToolTime, v.ToolResultTokens = optional.Of(v.toolTime()), optional.Of(v.toolResultTokens())
		c.Conversation = &v
	case c.Search:
		c.SearchMax = optional.Of(c.searchMax())
	default:
		c.Steps = slices.Clone(c.steps())
	}
	c.CollapseTolerancePct = optional.Of(c.collapseTolerancePct())
	c.Pause = optional.Of(c.pause())
	c.Deadline = optional.Of(c.deadline())
	c.MaxTokens = optional.Of(c.maxTokens())
	if !prefill {
		c.InputTokens = optional.Of(c.inputTokens()) // a prefill ladder's lengths are its own
	}
	c.Max429Ratio = optional.Of(c.max429Ratio())
	c.MaxAttempts = optional.Of(c.maxAttempts())
	c.BackoffBase = optional.Of(c.backoffBase())
	c.BackoffCap = optional.Of(c.backoffCap())
	c.Budget.MaxDuration = optional.Of(c.Budget.maxDuration())
	return c
}

// AnalysisOptions are the judgement settings of the run: its deadline and
// its SLO define goodput, and the collapse tolerance.
func (c Config) AnalysisOptions() analysis.Options {
	return analysis.Options{DeadlineMs: ms(c.deadline()), CollapseTolerancePct: c.collapseTolerancePct(), SLO: c.SLO}
}
