package measure

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/plannerdev/planner/internal/fieldpath"
)

// Targets are the SLO targets one request must meet to count towards goodput, as
// vLLM's and AIPerf's --goodput take them (docs/probe.md, "SLO
// goodput"): a TTFT, a TPOT and an E2E, each in milliseconds, 0 for a
// target not given. A request meets them when it succeeded and met every
// target given at once; a request with fewer than two output tokens has
// no TPOT and meets a TPOT target, as vLLM counts it.
type Targets struct {
	TTFTMs float64 `json:"ttft_ms,omitempty" minimum:"0" maximum:"3600000" doc:"Time to first token at most this, milliseconds."`
	TPOTMs float64 `json:"tpot_ms,omitempty" minimum:"0" maximum:"3600000" doc:"Time per output token after the first at most this, milliseconds."`
	E2EMs  float64 `json:"e2e_ms,omitempty" minimum:"0" maximum:"3600000" doc:"End-to-end time at most this, milliseconds."`
}

// MaxSLOMs bounds every target of an SLO: an hour.
const MaxSLOMs = 3_600_000

// IsZero reports whether no target is given.
func (s Targets) IsZero() bool { return s.TTFTMs == 0 && s.TPOTMs == 0 && s.E2EMs == 0 }

// Met reports whether r succeeded and met every target given.
func (s Targets) Met(r Record) bool {
	if !r.OK {
		return false
	}
	if s.TTFTMs > 0 && r.TTFTMs > s.TTFTMs {
		return false
	}
	if s.E2EMs > 0 && r.E2EMs > s.E2EMs {
		return false
	}
	if tpot, ok := r.TPOTMs(); ok && s.TPOTMs > 0 && tpot > s.TPOTMs {
		return false
	}
	return true
}

// sloTargets names the targets in the order an SLO is written.
var sloTargets = []struct {
	name, field string
	get         func(*Targets) *float64
}{
	{"ttft", "ttft_ms", func(s *Targets) *float64 { return &s.TTFTMs }},
	{"tpot", "tpot_ms", func(s *Targets) *float64 { return &s.TPOTMs }},
	{"e2e", "e2e_ms", func(s *Targets) *float64 { return &s.E2EMs }},
}

// ParseTargets reads an SLO as the command line gives it: comma-separated
// NAME:VALUE targets, NAME one of ttft, tpot and e2e, VALUE a duration
// ("500ms", "10s") or a bare number of milliseconds, as vLLM's --goodput
// takes it ("ttft:500"): "ttft:500ms,tpot:50ms,e2e:10s". Each target is
// given at most once, positive and at most MaxSLOMs, as Check bounds it.
func ParseTargets(text string) (Targets, error) {
	var s Targets
	if strings.TrimSpace(text) == "" {
		return s, errors.New("no targets: give NAME:VALUE pairs such as ttft:500ms,tpot:50ms,e2e:10s")
	}
	seen := map[string]bool{}
	for _, item := range strings.Split(text, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(item), ":")
		name = strings.ToLower(strings.TrimSpace(name))
		if !ok {
			return Targets{}, fmt.Errorf("%q is not NAME:VALUE (ttft:500ms)", item)
		}
		i := -1
		for k, t := range sloTargets {
			if t.name == name {
				i = k
			}
		}
		if i < 0 {
			return Targets{}, fmt.Errorf("unknown target %q: the targets are ttft, tpot and e2e", name)
		}
		if seen[name] {
			return Targets{}, fmt.Errorf("%s is given twice", name)
		}
		seen[name] = true
		ms, err := parseMs(strings.TrimSpace(value))
		if err != nil {
			return Targets{}, fmt.Errorf("%s: %w", name, err)
		}
		if !(ms > 0) {
			return Targets{}, fmt.Errorf("%s: %s is not a positive time", name, value)
		}
		if !(ms <= MaxSLOMs) {
			return Targets{}, fmt.Errorf("%s: %s is beyond the longest target, %s", name, value, time.Duration(MaxSLOMs)*time.Millisecond)
		}
		*sloTargets[i].get(&s) = ms
	}
	return s, nil
}

// parseMs reads a duration, or a bare number of milliseconds.
func parseMs(v string) (float64, error) {
	if ms, err := strconv.ParseFloat(v, 64); err == nil {
		return ms, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q is neither a duration (500ms, 10s) nor a number of milliseconds", v)
	}
	return float64(d) / float64(time.Millisecond), nil
}

// String writes the SLO as ParseTargets reads it, in milliseconds:
// "ttft:500ms,tpot:50ms,e2e:10000ms"; "" without targets.
func (s Targets) String() string {
	var parts []string
	for _, t := range sloTargets {
		if v := *t.get(&s); v != 0 {
			parts = append(parts, t.name+":"+strconv.FormatFloat(v, 'f', -1, 64)+"ms")
		}
	}
	return strings.Join(parts, ",")
}

// Check reports the targets outside (0, MaxSLOMs] (0: not given), each
// located under path ("slo.ttft_ms").
func (s Targets) Check(path string) []fieldpath.Error {
	var errs []fieldpath.Error
	for _, t := range sloTargets {
		v := *t.get(&s)
		if v == 0 {
			continue
		}
		if !(v > 0 && v <= MaxSLOMs) {
			errs = append(errs, fieldpath.Error{Path: fieldpath.Join(path, t.field),
				Message: fmt.Sprintf("%g ms is outside (0, %d] (0: no %s target)", v, MaxSLOMs, t.name)})
		}
	}
	return errs
}

// Goal is what makes a request good, so that it counts towards goodput:
// success within the deadline (DeadlineMs ≤ 0: none) and, when the SLO
// gives targets, every one of them met at once.
type Goal struct {
	DeadlineMs float64
	SLO        Targets
}

// Good reports whether r meets the goal.
func (g Goal) Good(r Record) bool { return r.Good(g.DeadlineMs) && g.SLO.Met(r) }

// SLOStats is how a step's measured requests met the SLO of the analysis:
// the requests that succeeded within the deadline and met every target at
// once, and their share of the step's measured requests (its attainment),
// with the share's 95 % interval.
type SLOStats struct {
	Met          int       `json:"met" doc:"Measured requests that succeeded within the deadline and met every target at once."`
	Attainment   float64   `json:"attainment" doc:"met / requests: the share of the step's measured requests that met every target."`
	AttainmentCI *Interval `json:"attainment_ci,omitempty" doc:"95 % interval of the attainment (Wilson score)."`
	// Estimated marks an attainment read off a summary's percentiles, not
	// counted over rows (an imported file without per-request rows): an
	// upper bound, met being attainment × ok, rounded.
	Estimated bool `json:"estimated,omitempty" doc:"The attainment was read off a summary's percentiles, not counted over per-request rows: an upper bound (met is then the share of the successful requests, rounded)."`
}
