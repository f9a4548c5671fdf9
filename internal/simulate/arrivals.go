package simulate

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/plannerdev/planner/internal/scenario"
)

// arrivals produces a class's arrival times in increasing order.
type arrivals interface {
	// next returns the next arrival time, or false when there is none
	// before end.
	next() (float64, bool)
}

// segment is a span of simulated time with a constant arrival rate.
type segment struct {
	start, end, rate float64
}

// renewal is a renewal process of unit rate, mapped onto a time-varying
// rate by inverting the cumulative rate Λ(t) = ∫₀ᵗ λ(s) ds (Çinlar,
// Introduction to Stochastic Processes, 1975, §4.7): with inter-arrival
// gaps Eₖ of mean 1 and squared coefficient of variation ca², the k-th
// arrival is at Λ⁻¹(E₁ + … + Eₖ). With ca² = 1 the gaps are exponential and
// the process is Poisson (non-homogeneous under a profile); with ca² = 0
// they are 1 (evenly spaced); otherwise they are gamma with shape 1/ca² and
// mean 1.
type renewal struct {
	segs  []segment
	i     int     // current segment
	cum   float64 // Λ at segs[i].start
	tau   float64 // Λ of the last arrival
	end   float64
	gap   func() float64
	ended bool
}

func newRenewal(rate, ca2 float64, profile []scenario.DemandWindow, on []span, end float64, src rand.Source) *renewal {
	r := &renewal{segs: gate(segments(rate, profile, end), on), end: end}
	rng := rand.New(src)
	switch {
	case ca2 == 1:
		r.gap = rng.ExpFloat64
	case ca2 == 0:
		r.gap = func() float64 { return 1 }
	default:
		g := distuv.Gamma{Alpha: 1 / ca2, Beta: 1 / ca2, Src: src}
		r.gap = g.Rand
	}
	return r
}

// segments cuts [0, end] into spans of constant rate: the demand times
// each window's factor inside the windows, the demand outside them.
func segments(rate float64, profile []scenario.DemandWindow, end float64) []segment {
	var out []segment
	t := 0.0
	for _, w := range profile {
		if w.StartS >= end {
			break
		}
		if w.StartS > t {
			out = append(out, segment{t, w.StartS, rate})
		}
		e := math.Min(end, w.StartS+w.DurationS)
		out = append(out, segment{w.StartS, e, rate * w.Factor})
		t = e
	}
	if t < end {
		out = append(out, segment{t, end, rate})
	}
	return out
}

func (r *renewal) next() (float64, bool) {
	if r.ended {
		return 0, false
	}
	r.tau += r.gap()
	for r.i < len(r.segs) {
		s := r.segs[r.i]
		span := s.rate * (s.end - s.start)
		if r.tau <= r.cum+span && s.rate > 0 {
			return s.start + (r.tau-r.cum)/s.rate, true
		}
		r.cum += span
		r.i++
	}
	r.ended = true
	return 0, false
}

// expected is the mean number of arrivals before end, ∫₀ᵉⁿᵈ λ(t) dt.
func (r *renewal) expected() float64 {
	var n float64
	for _, s := range r.segs {
		n += s.rate * (s.end - s.start)
	}
	return n
}

// replay returns given times in order: those before the run's end, of
// the given (which the warnings count).
type replay struct {
	times []float64
	i     int
	given int
}

func newReplay(times []float64, end float64) *replay {
	t := slices.Clone(times)
	slices.Sort(t)
	n, _ := slices.BinarySearchFunc(t, end, func(a, b float64) int {
		if a <= b {
			return -1
		}
		return 1
	})
	return &replay{times: t[:n], given: len(t)}
}

func (r *replay) next() (float64, bool) {
	if r.i >= len(r.times) {
		return 0, false
	}
	r.i++
	return r.times[r.i-1], true
}
