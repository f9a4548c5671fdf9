package importer

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// summary is a tool's summary of one latency metric over a step's
// successful requests, in milliseconds: the mean and whichever quantiles
// the tool reported (0 stands for the minimum and 1 for the maximum).
type summary struct {
	mean float64
	q    map[float64]float64
}

// set records the q-quantile (0 ≤ q ≤ 1).
func (s *summary) set(q, ms float64) {
	if s.q == nil {
		s.q = map[float64]float64{}
	}
	s.q[q] = ms
}

// known reports whether the tool reported the metric at all.
func (s summary) known() bool { return s.mean > 0 || len(s.q) > 0 }

// scale multiplies every value, for unit conversion.
func (s summary) scale(f float64) summary {
	out := summary{mean: s.mean * f}
	for q, v := range s.q {
		out.set(q, v*f)
	}
	return out
}

// quantile returns the q-quantile as reported, or the nearest reported one
// above it (an upper bound) with from set to the quantile used. The median
// falls back to the mean when the tool gave no median.
func (s summary) quantile(q float64) (v, from float64, ok bool) {
	if v, ok := s.q[q]; ok {
		return v, q, true
	}
	keys := slices.Sorted(maps.Keys(s.q))
	for _, k := range keys {
		if k > q {
			return s.q[k], k, true
		}
	}
	if q == 0.5 && s.mean > 0 {
		return s.mean, -1, true
	}
	return 0, 0, false
}

// p50p95 returns the median and the 95th percentile for a step, whether
// either is a stand-in (the mean for the median, a higher percentile for
// the 95th, or the median when nothing above it was reported), with a note
// saying which, and an error when the tool's own p95 lies below its median:
// a swapped or corrupt pair is refused, never clamped.
func (s summary) p50p95(metric string) (p50, p95 float64, estimated bool, notes []string, err error) {
	if err := s.ordered(metric); err != nil {
		return 0, 0, false, nil, err
	}
	p50, from50, ok := s.quantile(0.5)
	switch {
	case !ok:
		return 0, 0, false, nil, nil
	case from50 == -1:
		estimated = true
		notes = append(notes, fmt.Sprintf("%s p50 is the mean (marked estimated): the file gives no median", metric))
	case from50 != 0.5:
		estimated = true
		notes = append(notes, fmt.Sprintf("%s p50 is the reported %s (marked estimated): the file gives no median", metric, quantileName(from50)))
	}
	p95, from95, ok := s.quantile(0.95)
	switch {
	case !ok:
		p95, estimated = p50, true
		notes = append(notes, fmt.Sprintf("%s p95 is the p50 (marked estimated): the file gives nothing above the median", metric))
	case from95 != 0.95:
		estimated = true
		notes = append(notes, fmt.Sprintf("%s p95 is the reported %s, an upper bound (marked estimated): the file gives no p95", metric, quantileName(from95)))
	}
	if p95 < p50 {
		if from50 == 0.5 && from95 == 0.95 {
			return 0, 0, false, nil, fmt.Errorf("%s p95 (%.4g ms) is below its p50 (%.4g ms): the file's percentiles are inconsistent", metric, p95, p50)
		}
		notes = append(notes, fmt.Sprintf("%s p95 stand-in (%.4g ms) is below the p50 (%.4g ms): the p95 is set to the p50, a lower bound", metric, p95, p50))
		p95 = p50
	}
	return p50, p95, estimated, notes, nil
}

// maxQuantileMs is the largest latency a file may report, as a scenario's
// latency fields allow: 10⁹ ms, eleven days.
const maxQuantileMs = 1e9

// ordered is an error when the reported quantiles are not a distribution's:
// one above maxQuantileMs, or a higher quantile below a lower one (the p95
// above the p99); a corrupt file is refused, never planned from.
func (s summary) ordered(metric string) error {
	keys := slices.Sorted(maps.Keys(s.q))
	for i, k := range keys {
		if v := s.q[k]; !(v <= maxQuantileMs) {
			return fmt.Errorf("%s %s (%.4g ms) is beyond the %.0g ms a latency may be", metric, quantileName(k), v, float64(maxQuantileMs))
		}
		if i > 0 && s.q[k] < s.q[keys[i-1]] {
			return fmt.Errorf("%s %s (%.4g ms) is below its %s (%.4g ms): the file's percentiles are inconsistent", metric, quantileName(k), s.q[k], quantileName(keys[i-1]), s.q[keys[i-1]])
		}
	}
	return nil
}

// fractionWithin estimates the share of requests at or under x by linear
// interpolation between the reported quantiles. exact is true when x lies
// outside the reported minimum and maximum, where the share is 0 or 1.
// Outside the reported quantiles without a minimum or maximum to bound
// them, the estimate is the conservative end: the highest reported
// quantile above the range, 0 below it.
func (s summary) fractionWithin(x float64) (frac float64, exact, ok bool) {
	if hi, has := s.q[1]; has && x >= hi {
		return 1, true, true
	}
	if lo, has := s.q[0]; has && x < lo {
		return 0, true, true
	}
	keys := slices.Sorted(maps.Keys(s.q))
	if len(keys) == 0 {
		return 0, false, false
	}
	if x < s.q[keys[0]] {
		return 0, false, true
	}
	for i := 1; i < len(keys); i++ {
		q0, q1 := keys[i-1], keys[i]
		v0, v1 := s.q[q0], s.q[q1]
		if x < v0 || x > v1 {
			continue
		}
		if v1 == v0 {
			return q1, false, true
		}
		return q0 + (q1-q0)*(x-v0)/(v1-v0), false, true
	}
	return keys[len(keys)-1], false, true
}

// quantileName writes 0.95 as "p95", 0.999 as "p99.9", 0 as "min", 1 as "max".
func quantileName(q float64) string {
	switch q {
	case 0:
		return "min"
	case 1:
		return "max"
	}
	s := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", q*100), "0"), ".")
	return "p" + s
}

// msPerUnit converts a tool's time unit into milliseconds.
func msPerUnit(unit string) (float64, error) {
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "ms", "msec", "milliseconds":
		return 1, nil
	case "s", "sec", "secs", "second", "seconds":
		return 1000, nil
	case "us", "µs", "usec", "microseconds":
		return 1e-3, nil
	case "ns", "nsec", "nanoseconds":
		return 1e-6, nil
	}
	return 0, fmt.Errorf("unknown time unit %q", unit)
}
