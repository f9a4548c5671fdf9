package probe

import (
	"context"

	"github.com/plannerdev/planner/internal/measure"
)

// A mode is how a run chooses and paces its steps, as a vegeta Pacer paces
// its hits and a k6 executor schedules its iterations: the ladder
// (ladder.go), the knee search (search.go), the open loop (openloop.go),
// or one of the modes that measure a prompt's cost at a fixed load: the
// prefill ladder (prefill.go), the cache comparison (cache.go) and the
// conversation (conversation.go). The runner (runner.go) sends, records and summarises the
// requests of each step and applies the stop rules; the mode decides which
// steps run, how many requests each may send, and when the run has
// finished.
type mode interface {
	// check adds the problems of the mode's own settings, and of the
	// settings of another mode that c gives, to p.
	check(c Config, p *problems)
	// concurrencies are the concurrencies the run may reach; the largest
	// sizes the transport's pool of connections.
	concurrencies() []int
	// run runs the steps until they end or a stop rule fires, and says
	// why the run ended.
	run(ctx context.Context, r *runner) (reason, detail string)
}

// mode is the run mode that c asks for: the open loop when it gives
// rates, a prompt-cost mode when it gives one, the knee search when it
// asks for one, else the ladder.
func (c Config) mode() mode {
	switch {
	case c.Open != nil:
		return openLoop{*c.Open}
	case c.Prefill != nil:
		return prefillLadder{*c.Prefill}
	case c.Cache != nil:
		return cacheComparison{*c.Cache}
	case c.Conversation != nil:
		return conversation{*c.Conversation}
	case c.Search:
		return search{top: c.searchMax()}
	}
	return ladder{steps: c.steps()}
}

// Names of the prompt-cost modes, as measure.Result.Mode and the
// configuration's JSON give them.
const (
	ModePrefill      = "prefill"
	ModeCache        = "cache"
	ModeConversation = "conversation"
)

// promptModes are the prompt-cost modes that c gives, in the order of
// the fields.
func (c Config) promptModes() []string {
	var out []string
	for _, m := range []struct {
		on   bool
		name string
	}{{c.Prefill != nil, ModePrefill}, {c.Cache != nil, ModeCache}, {c.Conversation != nil, ModeConversation}} {
		if m.on {
			out = append(out, m.name)
		}
	}
	return out
}

// promptMode is the prompt-cost mode that c runs, "" for a concurrency
// ramp (or an open loop).
func (c Config) promptMode() string {
	if c.Open != nil {
		return ""
	}
	if ms := c.promptModes(); len(ms) > 0 {
		return ms[0]
	}
	return ""
}

// A judge is a mode that judges its run's rows into the result beyond the
// steps: the prefill line, the cache's effect, a conversation's times.
type judge interface {
	judge(recs []measure.Record, an *measure.Result)
}
