package probe

import (
	"cmp"
	"time"

	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/optional"
)

// Caps are a service's limits on the probes it runs: its probe.max_*
// settings (docs/service-probes.md, "Caps"), which lie within the bounds
// above. The command line has none.
type Caps struct {
	MaxConcurrency int // each step's concurrency, a search's top
	MaxRequests    int // the request budget, and a step's size
	MaxTokens      int // the token budget, and max_tokens per request
	MaxDuration    time.Duration
	// DurationSetting names where MaxDuration comes from in a problem:
	// "probe.max_duration" unless told.
	DurationSetting string
}

// WithinCaps returns c as a service runs it under caps, with the problems
// of the values that pass a cap, located as Validate locates them. A
// budget that c leaves unset is the cap of the same name; a default ladder
// keeps the default steps within the concurrency cap, and a default search
// stops at it.
func (c Config) WithinCaps(caps Caps) (Config, []fieldpath.Error) {
	var p problems
	above := func(path string, v any, setting string, limit int) {
		p.add(path, "%v is above the server's limit probe.%s of %d", v, setting, limit)
	}
	switch {
	case c.Open != nil:
		if c.Open.MaxInFlight > caps.MaxConcurrency {
			above("open_loop.max_in_flight", c.Open.MaxInFlight, "max_concurrency", caps.MaxConcurrency)
		}
	case c.Search:
		if top, ok := c.SearchMax.Get(); !ok {
			c.SearchMax = optional.Of(min(DefaultSearchMax, caps.MaxConcurrency))
		} else if top > caps.MaxConcurrency {
			above("search_max_concurrency", top, "max_concurrency", caps.MaxConcurrency)
		}
	case c.Conversation != nil:
		if n := c.Conversation.inFlight(); n > caps.MaxConcurrency {
			above("conversation.tasks_in_flight", n, "max_concurrency", caps.MaxConcurrency)
		}
	case c.Prefill != nil || c.Cache != nil:
		// One request at a time, within any cap.
	case c.Steps == nil:
		for _, s := range DefaultSteps {
			if s <= caps.MaxConcurrency {
				c.Steps = append(c.Steps, s)
			}
		}
	default:
		for i, s := range c.Steps {
			if s > caps.MaxConcurrency {
				above(fieldpath.Index("steps", i), s, "max_concurrency", caps.MaxConcurrency)
			}
		}
	}
	if n, ok := c.RequestsPerStep.Get(); ok && n > caps.MaxRequests {
		above("requests_per_step", n, "max_requests", caps.MaxRequests)
	}
	if n, ok := c.MaxTokens.Get(); ok && n > caps.MaxTokens {
		above("max_tokens", n, "max_tokens", caps.MaxTokens)
	}
	for _, b := range []struct {
		path, setting string
		v             *optional.Value[int]
		limit         int
	}{
		{"budget.max_requests", "max_requests", &c.Budget.MaxRequests, caps.MaxRequests},
		{"budget.max_tokens_total", "max_tokens", &c.Budget.MaxTokens, caps.MaxTokens},
	} {
		if n, ok := b.v.Get(); !ok {
			*b.v = optional.Of(b.limit)
		} else if n > b.limit {
			above(b.path, n, b.setting, b.limit)
		}
	}
	if d, ok := c.Budget.MaxDuration.Get(); !ok {
		c.Budget.MaxDuration = optional.Of(caps.MaxDuration)
	} else if d > caps.MaxDuration {
		p.add("budget.max_duration", "%s is above the server's limit of %g s (%s)", d, caps.MaxDuration.Seconds(),
			cmp.Or(caps.DurationSetting, "probe.max_duration"))
	}
	return c, p
}
