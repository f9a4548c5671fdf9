package simulate

import (
	"fmt"
	"math"

	"github.com/plannerdev/planner/internal/scenario"
)

// Refill modes of the provider's per-minute limits (docs/simulate.md,
// "Provider").
const (
	// RefillContinuous is a bucket that holds one enforcement window's
	// allowance and refills continuously at the limit's rate.
	RefillContinuous = "continuous"
	// RefillWindow is a counter of one window's allowance, reset at every
	// multiple of burst_window_s (OpenAI's per-second quantisation).
	RefillWindow = "window"
)

// Defaults and bounds of the options.
const (
	DefaultDurationS = 3600.0
	// DefaultMaxEvents bounds the events of one run, and with them its
	// memory: every event holds or creates at most one request.
	DefaultMaxEvents = 2_000_000
	// DefaultSamples is how many latency samples a class keeps for its
	// percentiles (a uniform reservoir); below it they are exact.
	DefaultSamples = 100_000
	// defaultIntervals is the number of time-series points chosen when
	// no interval is given.
	defaultIntervals = 240
	// MaxIntervals bounds the points of every time series.
	MaxIntervals = 2000
	// MinDurationS is the shortest run: one time-series point of the
	// default whole-second width.
	MinDurationS = 1.0
	// MaxDurationS is the longest run any caller may ask for: a week.
	MaxDurationS = 7 * 24 * 3600.0
	// MaxReplayStarts bounds the start times replayed for one class.
	MaxReplayStarts = 1_000_000
)

// Options select what a run simulates. The zero value simulates an hour
// of the plan as planned, with the scenario's seed.
type Options struct {
	// DurationS is the simulated time in seconds; 0 means DefaultDurationS.
	DurationS float64
	// StartHour is the time of day the run starts at, hours after
	// midnight UTC, for the classes' schedules; 0 is midnight.
	StartHour float64
	// Seed seeds every random stream; nil means the scenario's
	// policy.seed (default 1).
	Seed *uint64
	// NoPacing turns the plan's pacing token bucket off.
	NoPacing bool
	// AIMD lets each client resize its pool with the plan's adaptive
	// settings.
	AIMD bool
	// Refill is RefillContinuous (the default when empty) or RefillWindow.
	Refill string
	// NoRetryAfter makes the provider's 429s carry no Retry-After, so that
	// clients fall back on their backoff.
	NoRetryAfter bool
	// IntervalS is the width of a time-series point; 0 chooses
	// DurationS/240 rounded up to a whole second.
	IntervalS float64
	// MaxEvents caps the events of the run; 0 means DefaultMaxEvents.
	MaxEvents int
	// Samples caps the latency samples kept per class; 0 means
	// DefaultSamples.
	Samples int
	// Replay gives classes explicit arrival times instead of their demand.
	Replay []Replay
}

// Replay is a list of arrival times for one class, in seconds from the
// start of the run, such as the start_s column of a probe's requests.csv.
type Replay struct {
	Class  string    `json:"class" minLength:"1" maxLength:"64" doc:"The class whose arrivals these are; its demand is then ignored."`
	StartS []float64 `json:"start_s" nullable:"false" minItems:"1" maxItems:"20000" doc:"Arrival times, seconds from the start of the run (any order; times beyond duration_s are ignored)."`
}

// OptionErrors are problems with the options, each located by the option's
// JSON name ("duration_s", "replay[0].class").
type OptionErrors scenario.Errors

func (e OptionErrors) Error() string { return scenario.Errors(e).Error() }

// CheckOptions returns the problems of options for a valid scenario, with
// the defaults filled in as Run fills them, without running anything: a
// caller can report them with the scenario's own problems. Run checks
// them again.
func CheckOptions(sc scenario.Scenario, o Options) OptionErrors {
	return o.withDefaults(sc).check(sc)
}

// withDefaults fills in the options that were left zero.
func (o Options) withDefaults(sc scenario.Scenario) Options {
	if o.DurationS == 0 {
		o.DurationS = DefaultDurationS
	}
	if o.Seed == nil {
		seed := scenario.DefaultSeed
		if sc.Policy.Seed != nil {
			seed = *sc.Policy.Seed
		}
		o.Seed = &seed
	}
	if o.Refill == "" {
		o.Refill = RefillContinuous
	}
	if o.IntervalS == 0 {
		// From a duration that is no positive finite number, a second:
		// the default is never a problem of its own, only the duration is.
		o.IntervalS = 1
		if o.DurationS > 0 && !math.IsInf(o.DurationS, 1) {
			o.IntervalS = max(1, math.Ceil(o.DurationS/defaultIntervals))
		}
	}
	if o.MaxEvents == 0 {
		o.MaxEvents = DefaultMaxEvents
	}
	if o.Samples == 0 {
		o.Samples = DefaultSamples
	}
	return o
}

// check returns the problems of options with their defaults filled in.
func (o Options) check(sc scenario.Scenario) OptionErrors {
	var errs OptionErrors
	add := func(path, format string, args ...any) {
		errs = append(errs, scenario.FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	durationOK := o.DurationS >= MinDurationS && o.DurationS <= MaxDurationS
	if !durationOK {
		add("duration_s", "must be at least %g s and at most %g s (a week)", MinDurationS, MaxDurationS)
	}
	if !(o.StartHour >= 0 && o.StartHour < 24) {
		add("start_hour", "must be at least 0 and less than 24")
	}
	if o.Refill != RefillContinuous && o.Refill != RefillWindow {
		add("refill", "must be %s or %s", RefillContinuous, RefillWindow)
	}
	switch {
	case !(o.IntervalS > 0) || math.IsInf(o.IntervalS, 0):
		add("interval_s", "must be more than 0")
	case durationOK && o.IntervalS > o.DurationS:
		add("interval_s", "%g s is longer than the run (duration_s %g s): its one point would not be a mean over an interval", o.IntervalS, o.DurationS)
	case durationOK && o.DurationS/o.IntervalS > MaxIntervals: // else the duration is the problem
		add("interval_s", "gives more than %d points over %g s: use at least %g s", MaxIntervals, o.DurationS, math.Ceil(o.DurationS/MaxIntervals))
	}
	if o.MaxEvents < 1 {
		add("max_events", "must be at least 1")
	}
	if o.Samples < 1 {
		add("samples", "must be at least 1")
	}
	seen := map[string]bool{}
	for i, r := range o.Replay {
		p := fmt.Sprintf("replay[%d]", i)
		if !hasClass(sc, r.Class) {
			add(p+".class", "no class named %q", r.Class)
		} else if seen[r.Class] {
			add(p+".class", "class %q is replayed twice", r.Class)
		}
		seen[r.Class] = true
		if len(r.StartS) == 0 || len(r.StartS) > MaxReplayStarts {
			add(p+".start_s", "give between 1 and %d start times", MaxReplayStarts)
		}
		for j, t := range r.StartS {
			if !(t >= 0) || math.IsInf(t, 0) {
				add(fmt.Sprintf("%s.start_s[%d]", p, j), "must be a finite number of seconds, at least 0")
				break
			}
		}
	}
	return errs
}

func hasClass(sc scenario.Scenario, name string) bool {
	for _, c := range sc.Classes {
		if c.Name == name {
			return true
		}
	}
	return false
}
