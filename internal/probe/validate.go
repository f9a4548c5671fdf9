package probe

import (
	"fmt"
	"strings"
	"time"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/optional"
)

// Validate reports every problem with the configuration, each located at
// its field under the name the configuration's JSON gives it
// (MarshalJSON: "steps[2]", "search_max_concurrency",
// "budget.max_requests", "open_loop.rates_rps[0]"), in the order of the
// fields, as k6's executors validate their configurations. Every rule of a
// probe is here, once: the command line and the service rename the paths
// to their flags and body locations (fieldpath.Names), and add only the
// rules of their own inputs (the service's caps: WithinCaps). A setting
// left unset is judged by its default. Run refuses a configuration with
// problems before it sends anything.
func (c Config) Validate() []fieldpath.Error {
	var p problems
	if _, err := c.endpoint(); err != nil {
		p.add("base_url", "%v", err)
	}
	if strings.TrimSpace(c.Model) == "" {
		p.add("model", "required")
	}
	if h := c.apiKeyHeader(); h != "Authorization" && h != "api-key" {
		p.add("api_key_header", `%q is neither "Authorization" nor "api-key"`, h)
	}
	if ms := c.promptModes(); len(ms) > 1 || len(ms) == 1 && c.Open != nil {
		other := "open_loop"
		if len(ms) > 1 {
			other = ms[0]
		}
		p.add(ms[len(ms)-1], "is a mode of its own: give %s or %s, not both", other, ms[len(ms)-1])
	}
	c.mode().check(c, &p)
	if w, ok := c.Warmup.Get(); ok && (w < 0 || w > MaxRequestsPerStep) {
		p.add("warmup", "%d warm-up requests per step is outside 0..%d (0: none)", w, MaxRequestsPerStep)
	}
	if v := c.collapseTolerancePct(); !(v > 0 && v < 100) {
		p.add("collapse_tolerance_pct", "%g %% is outside (0, 100): goodput falls when it drops by more than this", v)
	}
	if d := c.pause(); d < 0 {
		p.add("pause", "%s is negative (0: no pause)", d)
	}
	positive(&p, "deadline", c.deadline())
	between(&p, "max_tokens", c.maxTokens(), 1, MaxOutputTokens, "tokens")
	between(&p, "input_tokens", c.inputTokens(), 1, MaxInputTokens, "tokens")
	for i, pr := range c.Prompts {
		if err := pr.check(); err != nil {
			p.add(fieldpath.Index("prompts", i), "%v", err)
		}
	}
	if v := c.max429Ratio(); !(v > 0 && v <= 1) {
		p.add("max_429_ratio", "%g is outside (0, 1]", v)
	}
	between(&p, "max_attempts", c.maxAttempts(), 1, MaxAttemptsBound, "sends")
	positive(&p, "backoff_base", c.backoffBase())
	positive(&p, "backoff_cap", c.backoffCap())
	p = append(p, c.SLO.Check("slo")...)
	atLeastOne(&p, "budget.max_requests", c.Budget.MaxRequests, "requests")
	atLeastOne(&p, "budget.max_tokens_total", c.Budget.MaxTokens, "tokens")
	positive(&p, "budget.max_duration", c.Budget.maxDuration())
	return p
}

// problems collects a configuration's problems.
type problems []fieldpath.Error

func (p *problems) add(path, format string, args ...any) {
	*p = append(*p, fieldpath.Error{Path: path, Message: fmt.Sprintf(format, args...)})
}

func positive(p *problems, path string, d time.Duration) {
	if d <= 0 {
		p.add(path, "%s, must be positive", d)
	}
}

func between(p *problems, path string, v, lo, hi int, unit string) {
	if v < lo || v > hi {
		p.add(path, "%d %s is outside %d..%d", v, unit, lo, hi)
	}
}

// atLeastOne checks a bound that is unbounded when unset.
func atLeastOne(p *problems, path string, v optional.Value[int], unit string) {
	if n, ok := v.Get(); ok && n < 1 {
		p.add(path, "%d %s, must be at least 1 (unset: no bound)", n, unit)
	}
}

// checkConcurrencies checks a list of concurrencies: 1 to MaxSteps of
// them, each within 1..MaxConcurrency, strictly ascending.
func checkConcurrencies(p *problems, path string, cs []int) {
	if len(cs) == 0 || len(cs) > MaxSteps {
		p.add(path, "%d steps, want 1 to %d", len(cs), MaxSteps)
	}
	for i, s := range cs {
		at := fieldpath.Index(path, i)
		switch {
		case s < 1 || s > MaxConcurrency:
			p.add(at, "concurrency %d is outside 1..%d", s, MaxConcurrency)
		case i > 0 && s <= cs[i-1]:
			p.add(at, "the steps must be strictly ascending (%d after %d)", s, cs[i-1])
		}
	}
}

// checkStepSize refuses a step size that leaves fewer measured requests
// than analysis.MinMeasured at any of the concurrencies: size(c) requests
// per step, of which the configuration's warm-up are warm-up. The problem
// is located at path, the size's field when it is set, else "warmup" (a
// default size leaves too few only after a fixed warm-up).
func (c Config) checkStepSize(p *problems, path string, set bool, concurrencies []int, size func(conc int) int) {
	if !set {
		path = "warmup"
	}
	for _, conc := range concurrencies {
		n := size(conc)
		w := c.warmupFor(conc, n)
		if n-w < analysis.MinMeasured(conc) {
			p.add(path, "%d requests with %d warm-up leave %d measured at concurrency %d, fewer than the minimum max(40, 3c) = %d (use at least %d, or leave it unset for max(40, 3c) + c)",
				n, w, n-w, conc, analysis.MinMeasured(conc), analysis.MinMeasured(conc)+w)
			return
		}
	}
}

// notSearch refuses the search's own setting in another mode.
func notSearch(c Config, p *problems) {
	if c.SearchMax.IsSet() {
		p.add("search_max_concurrency", "bounds a knee search, and this run is none (a ladder's top is its last step)")
	}
}

// notRamp refuses, in a mode that measures a prompt's cost (what, "a
// prefill ladder"), the settings of a concurrency ramp and prompts from a
// file: the mode runs at its own load and builds its own prompts.
func notRamp(c Config, p *problems, what, mode string) {
	notSearch(c, p)
	if c.Search {
		p.add("search", "%s runs at a load of its own: it cannot run with a knee search", what)
	}
	if c.Steps != nil {
		p.add("steps", "%s runs at a load of its own: give steps or %s, not both", what, mode)
	}
	if c.RequestsPerStep.IsSet() {
		p.add("requests_per_step", "%s's size is %s.requests (or %s.tasks): set that instead", what, mode, mode)
	}
	if len(c.Prompts) > 0 {
		p.add("prompts", "%s builds its own prompts, to shapes it controls: leave the prompts out", what)
	}
}

// checkMeasured refuses a prompt-cost mode's size of n, warm-up included,
// that leaves fewer than least measured (the warm-up being warmupFor(conc,
// n)), located at path when the size is set, else at warmup.
func (c Config) checkMeasured(p *problems, path string, set bool, conc, n, least int, unit string) {
	if n < 1 || n > MaxRequestsPerStep {
		p.add(path, "%d %s is outside 1..%d", n, unit, MaxRequestsPerStep)
		return
	}
	w := c.warmupFor(conc, n)
	if n-w >= least {
		return
	}
	if !set {
		path = "warmup"
	}
	p.add(path, "%d %s with %d of warm-up leave %d measured, fewer than the %d it needs", n, unit, w, n-w, least)
}
