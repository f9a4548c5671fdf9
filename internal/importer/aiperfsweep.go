package importer

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// AIPerf's one-invocation sweep (`aiperf profile --concurrency 1,2,4,...`)
// writes sweep_aggregate/profile_export_aiperf_sweep.json beside one folder
// per value: {"aggregation_type": "sweep", "metadata": {"sweep_parameters":
// [...]}, "per_combination_metrics": [{"parameters": {"concurrency": 4},
// "metrics": {"<tag>_<stat>": {"mean": …, "unit": …}, …}}, …]}, where a
// metric key is a metric tag (time_to_first_token, request_latency, …)
// and one of its statistics (avg, p50, p95, …), and mean is that
// statistic's mean over the trials (--num-profile-runs; its value itself
// for a single trial). The concurrency (or request rate) of each
// combination is read from its parameters.

func looksAIPerfSweep(vals []any) bool {
	o, ok := singleObj(vals)
	if !ok {
		return false
	}
	typ, _ := o.str("aggregation_type")
	_, list := o.arr("per_combination_metrics")
	return typ == "sweep" && list
}

func parseAIPerfSweep(name string, vals []any) (*part, error) {
	o, _ := singleObj(vals)
	combos, _ := o.arr("per_combination_metrics")
	if len(combos) == 0 {
		return nil, errors.New(`has no "per_combination_metrics"`)
	}
	p := &part{source: Source{Tool: "aiperf", Version: "sweep aggregate"}}
	p.notes = append(p.notes, aiperfSummaryNotes...)
	if runs, _ := count(o["num_profile_runs"]); runs > len(combos) {
		p.notes = append(p.notes, fmt.Sprintf("each figure is the mean over the trials (%d profile runs for %d combinations) of that trial's statistic, not a statistic of the pooled requests; the per-trial files give exact steps", runs, len(combos)))
	}
	for i, v := range combos {
		c, ok := asObj(v)
		if !ok {
			return nil, fmt.Errorf("combination %d is not an object", i+1)
		}
		r, notes, err := aiperfSweepRun(c)
		if err != nil {
			return nil, fmt.Errorf("combination %d of %d: %w", i+1, len(combos), err)
		}
		r.label = fmt.Sprintf("%s %s", baseName(name), sweepLabel(c))
		for _, n := range notes {
			p.notes = append(p.notes, r.label+": "+n)
		}
		p.runs = append(p.runs, r)
	}
	return p, nil
}

// sweepLabel writes a combination's parameters as "concurrency=4".
func sweepLabel(c obj) string {
	params, _ := c.obj("parameters")
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(params)) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, params[k]))
	}
	return strings.Join(parts, ", ")
}

// aiperfSweepRun reads one combination into a run.
func aiperfSweepRun(c obj) (*run, []string, error) {
	params, _ := c.obj("parameters")
	m, ok := c.obj("metrics")
	if !ok {
		return nil, nil, errors.New(`has no "metrics"`)
	}
	ms := sweepMetrics(m)
	r, notes, err := summaryRun(ms)
	if err != nil {
		return nil, nil, err
	}
	if okF, has := ms.scalar("request_count"); has {
		okN, valid := count(math.Round(okF))
		errF, _ := ms.scalar("error_request_count")
		errN, validErr := count(math.Round(errF))
		if valid && validErr {
			r.countsKnown, r.ok, r.errs, r.requests = true, okN, errN, okN+errN
		}
	}
	if dur, ok, err := ms.seconds("benchmark_duration"); err != nil {
		return nil, nil, err
	} else if ok {
		r.wallS = dur
	}
	if conc, ok := params.num("concurrency"); ok {
		if conc < 1 || conc > maxConcurrency || conc != math.Trunc(conc) {
			return nil, nil, fmt.Errorf("concurrency %g is not a positive whole number", conc)
		}
		r.concurrency = int(conc)
	}
	if rate, ok := params.num("request_rate"); ok && rate > 0 {
		r.rateRPS = rate
		if r.concurrency > 0 {
			notes = append(notes, fmt.Sprintf("open loop at %g req/s with a cap of %d in flight: the concurrency is estimated", rate, r.concurrency))
		}
		r.inFlightCap, r.concurrency = r.concurrency, 0
	}
	return r, notes, nil
}

// sweepMetrics regroups the flattened "<tag>_<stat>" entries into a
// metricSet of {unit, avg, min, max, pNN} per tag, each statistic's mean
// over the trials.
func sweepMetrics(m obj) metricSet {
	ms := metricSet{}
	for key, v := range m {
		e, ok := asObj(v)
		if !ok {
			continue
		}
		i := strings.LastIndex(key, "_")
		if i <= 0 {
			continue
		}
		tag, stat := key[:i], key[i+1:]
		if !isSweepStat(stat) {
			continue
		}
		val, ok := e.num("mean")
		if !ok {
			continue
		}
		set := ms[tag]
		if set == nil {
			set = obj{}
			ms[tag] = set
		}
		set[stat] = val
		if u, ok := e.str("unit"); ok {
			set["unit"] = u
		}
	}
	return ms
}

// isSweepStat reports whether s names a statistic AIPerf flattens into a
// sweep metric key: avg, min, max, std or a percentile pNN.
func isSweepStat(s string) bool {
	switch s {
	case "avg", "min", "max", "std":
		return true
	}
	if rest, ok := strings.CutPrefix(s, "p"); ok {
		_, err := strconv.ParseFloat(rest, 64)
		return err == nil
	}
	return false
}
