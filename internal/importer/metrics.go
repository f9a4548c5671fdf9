package importer

import (
	"fmt"
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
	return statsSummary(m).scale(f), nil
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
