package importer

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// metricSet is a summary in the AIPerf and GenAI-Perf style: metric name →
// {unit, avg, min, max, pNN, std}. AIPerf's older schema nests it under
// "records" (each entry also carries its tag); its newer schema and
// GenAI-Perf put the metrics at the top level of the document.
type metricSet map[string]obj

// collectMetrics gathers the metric entries of a summary document.
func collectMetrics(o obj) metricSet {
	ms := metricSet{}
	src := o
	if rec, ok := o.obj("records"); ok {
		src = rec
	}
	for k, v := range src {
		if m, ok := asObj(v); ok && m.has("unit") && m.has("avg") {
			ms[k] = m
		}
	}
	return ms
}

// entry returns the first of the named metrics that is present.
func (ms metricSet) entry(names ...string) (string, obj, bool) {
	for _, n := range names {
		if m, ok := ms[n]; ok {
			return n, m, true
		}
	}
	return "", nil, false
}

// check refuses a statistic of any metric (avg, min, max, median, std,
// pNN) that is present but not a number: a reader would otherwise take
// it as one the tool did not record (an error count of "x" as none).
// null, which the tools write for a statistic that does not apply, is
// not one.
func (ms metricSet) check() error {
	for _, name := range slices.Sorted(maps.Keys(ms)) {
		m := ms[name]
		for _, k := range slices.Sorted(maps.Keys(m)) {
			switch {
			case k == "avg", k == "min", k == "max", k == "median", k == "std":
			case strings.HasPrefix(k, "p") && strings.Trim(k[1:], "0123456789.") == "" && len(k) > 1:
			default:
				continue
			}
			if _, _, err := m.optNum(k); err != nil {
				article := "a"
				if k == "avg" {
					article = "an"
				}
				return fmt.Errorf("%q has %s %s of %s: not a finite number", name, article, k, shownValue(m[k]))
			}
		}
	}
	return nil
}

// scalar returns a metric's avg, the field a single-valued metric uses.
func (ms metricSet) scalar(names ...string) (float64, bool) {
	_, m, ok := ms.entry(names...)
	if !ok {
		return 0, false
	}
	return m.num("avg")
}

// seconds returns a duration metric in seconds.
func (ms metricSet) seconds(names ...string) (float64, bool, error) {
	name, m, ok := ms.entry(names...)
	if !ok {
		return 0, false, nil
	}
	v, ok := m.num("avg")
	if !ok {
		return 0, false, nil
	}
	unit, _ := m.str("unit")
	f, err := msPerUnit(unit)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", name, err)
	}
	return v * f / 1000, true, nil
}

// latency returns a time metric's distribution in milliseconds.
func (ms metricSet) latency(names ...string) (summary, error) {
	name, m, ok := ms.entry(names...)
	if !ok {
		return summary{}, nil
	}
	unit, _ := m.str("unit")
	f, err := msPerUnit(unit)
	if err != nil {
		return summary{}, fmt.Errorf("%s: %w", name, err)
	}
	s := statsSummary(m)
	if s.mean < 0 {
		return summary{}, fmt.Errorf("%q has an avg of %g: a latency is not negative", name, s.mean)
	}
	for _, q := range slices.Sorted(maps.Keys(s.q)) {
		if v := s.q[q]; v < 0 {
			return summary{}, fmt.Errorf("%q has a %s of %g: a latency is not negative", name, quantileName(q), v)
		}
	}
	return s.scale(f), nil
}

// statsSummary reads avg, min, max, median and pNN (a percentage) from a
// stats object.
func statsSummary(m obj) summary {
	var s summary
	s.mean, _ = m.num("avg")
	if v, ok := m.num("min"); ok {
		s.set(0, v)
	}
	if v, ok := m.num("max"); ok {
		s.set(1, v)
	}
	if v, ok := m.num("median"); ok {
		s.set(0.5, v)
	}
	for k := range m {
		if !strings.HasPrefix(k, "p") {
			continue
		}
		pct, err := strconv.ParseFloat(k[1:], 64)
		if err != nil || !(pct > 0 && pct < 100) {
			continue
		}
		if v, ok := m.num(k); ok {
			s.set(pct/100, v)
		}
	}
	return s
}
