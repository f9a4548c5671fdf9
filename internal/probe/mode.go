package probe

import "context"

// A mode is how a run chooses and paces its steps, as a vegeta Pacer paces
// its hits and a k6 executor schedules its iterations: the ladder
// (ladder.go), the knee search (search.go) or the open loop
// (openloop.go). The runner (runner.go) sends, records and summarises the
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
// rates, the knee search when it asks for one, else the ladder.
func (c Config) mode() mode {
	switch {
	case c.Open != nil:
		return openLoop{*c.Open}
	case c.Search:
		return search{top: c.searchMax()}
	}
	return ladder{steps: c.steps()}
}
