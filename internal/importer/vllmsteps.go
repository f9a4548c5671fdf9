package importer

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/model"
)

// vllmRampUp splits a ramp-up run (--ramp-up-strategy linear or
// exponential, from --ramp-up-start-rps to --ramp-up-end-rps) into one
// open-loop step per whole request rate. vLLM sends request i of n at the
// rate
//
//	linear:      start + (end − start) · i/(n − 1)
//	exponential: start · (end/start)^(i/(n − 1))
//
// (vllm/benchmarks/serve.py, _get_current_request_rate) and records in
// rps_change_events each whole rate as it is reached, so the requests at
// one whole rate are the step between two change events. Splitting needs
// each request's row with its send time (the default save's latencies and
// start_times, or --save-detailed); without them the run is one step over
// the whole ramp, and a warning says so.
func vllmRampUp(o obj, whole *run, strategy string, notes []string) ([]*run, []string, error) {
	start, _ := o.num("ramp_up_start_rps")
	end, _ := o.num("ramp_up_end_rps")
	desc := fmt.Sprintf("a %s ramp-up from %g to %g req/s", strategy, start, end)
	rows, timed := whole.records, whole.recordsTimed
	if len(rows) == 0 {
		rows, timed = vllmLatencyRows(o)
	}
	rate := func(i, n int) float64 {
		progress := float64(i) / float64(max(n-1, 1))
		if strategy == "exponential" && start > 0 {
			return start * math.Pow(end/start, progress)
		}
		return start + (end-start)*progress
	}
	events := map[int]bool{}
	list, _ := o.arr("rps_change_events")
	for _, v := range list {
		if e, ok := asObj(v); ok {
			if k, ok := count(e["rps"]); ok {
				events[k] = true
			}
		}
	}
	byRate := map[int][]measure.Record{}
	consistent := (strategy == "linear" || strategy == "exponential") && end >= start && start >= 0
	for i, rec := range rows {
		k := int(math.Floor(rate(i, len(rows))))
		if len(events) > 0 && !events[k] {
			consistent = false
		}
		rec.Index = len(byRate[k])
		byRate[k] = append(byRate[k], rec)
	}
	if len(rows) == 0 || !timed || !consistent {
		whole.concurrency, whole.rateRPS = 0, 0
		why := "the file keeps no per-request send times (save with a current vLLM, which keeps latencies and start_times, or with --save-detailed)"
		if len(rows) > 0 && timed {
			why = "its requests' rates do not match its rps_change_events"
		}
		return []*run{whole}, append(notes, fmt.Sprintf("warning: %s, imported as one step over the whole ramp, not a steady load, because %s: its concurrency is estimated from the whole run and the knee cannot be read from it", desc, why)), nil
	}
	var runs []*run
	for _, k := range slices.Sorted(maps.Keys(byRate)) {
		step := &run{label: fmt.Sprintf("%s at %d req/s", whole.label, k), rateRPS: float64(k),
			records: byRate[k], recordsComplete: true, recordsTimed: true}
		if k < 1 {
			step.rateRPS = rate(0, len(rows))
		}
		runs = append(runs, step)
	}
	notes = append(notes, fmt.Sprintf("%s, split at its rate changes into %s of the requests sent at each whole rate (the rate of request i is vLLM's own schedule); each step's concurrency is estimated from its rows", desc, plural(len(runs), "open-loop step")))
	if !o.has("ttfts") {
		notes = append(notes, "the ramp's steps have no TTFT (the default save keeps no per-request TTFT; --save-detailed does): their E2E and counts come from the rows, the latency curve cannot")
	}
	return runs, notes, nil
}

// vllmLatencyRows builds one row per request from the default save's
// latencies (seconds; 0 for a failed request) and start_times, and
// reports whether the rows carry their send times.
func vllmLatencyRows(o obj) ([]measure.Record, bool) {
	lats, _ := o.arr("latencies")
	starts, _ := o.arr("start_times")
	timed := len(starts) == len(lats) && len(lats) > 0
	t0 := math.Inf(1)
	for _, v := range starts {
		if s, ok := asNum(v); ok {
			t0 = math.Min(t0, s)
		}
	}
	rows := make([]measure.Record, len(lats))
	for i, v := range lats {
		lat, _ := asNum(v)
		rec := measure.Record{Index: i, Attempts: 1, E2EMs: lat * 1000, OK: lat > 0}
		if rec.OK {
			rec.Status = 200
		} else {
			// The default save keeps no error texts.
			rec.Status, rec.ErrorClass = classifyErrorText("")
		}
		if s, ok := asNum(at(starts, i)); ok && timed {
			rec.StartS = s - t0
		}
		rows[i] = rec
	}
	return rows, timed
}

// poolRepeats pools the runs of one combination at one load — the
// repeats of `vllm bench sweep serve` (--num-runs, 3 by default) — into
// one step: counts and wall times add up, the rows are laid end to end,
// E2E comes from the pooled per-request latencies when every run has
// them, and a percentile that only the runs' summaries give is the
// highest of the runs' (an upper bound, marked estimated).
func poolRepeats(runs []*run) (*run, string) {
	first := runs[0]
	label, _, _ := strings.Cut(first.label, " #")
	r := &run{label: label + " (" + plural(len(runs), "run") + ")", concurrency: first.concurrency, rateRPS: first.rateRPS,
		hasSummary: true, countsKnown: true, recordsComplete: true, recordsTimed: true, pooledRuns: len(runs)}
	var outTokens float64
	samples := true
	var ttfts, tpots, e2es []summary
	for _, x := range runs {
		r.requests += x.requests
		r.ok += x.ok
		r.rateLimited += x.rateLimited
		r.errs += x.errs
		r.countsKnown = r.countsKnown && x.countsKnown
		r.hasSummary = r.hasSummary && x.hasSummary
		r.recordsComplete = r.recordsComplete && x.recordsComplete && len(x.records) > 0
		r.recordsTimed = r.recordsTimed && x.recordsTimed
		offset := r.wallS
		for _, rec := range x.records {
			rec.StartS += offset
			rec.Index = len(r.records)
			r.records = append(r.records, rec)
		}
		r.wallS += x.recordsWall()
		outTokens += x.outputTPS * x.wallS
		samples = samples && len(x.e2eSamples) > 0
		r.e2eSamples = append(r.e2eSamples, x.e2eSamples...)
		r.tpotDerived = r.tpotDerived || x.tpotDerived
		r.e2eDerived = r.e2eDerived || x.e2eDerived
		ttfts, tpots, e2es = append(ttfts, x.ttft), append(tpots, x.tpot), append(e2es, x.e2e)
	}
	if !r.recordsComplete {
		r.recordsTimed = false
	}
	if r.wallS > 0 {
		r.throughputRPS = float64(r.ok) / r.wallS
		r.outputTPS = outTokens / r.wallS
	}
	r.ttft, r.tpot = highest(ttfts), highest(tpots)
	if samples {
		r.e2e, r.e2eDerived = samplesSummary(r.e2eSamples), false
	} else {
		r.e2eSamples, r.e2e = nil, highest(e2es)
	}
	note := fmt.Sprintf("%s: %s at %s, the repeats of one combination, pooled into one step: counts and wall times add up", r.label, plural(len(runs), "run"), first.load())
	switch {
	case r.recordsComplete:
		note += "; every figure comes from the pooled rows"
	case samples:
		note += "; E2E from the pooled per-request latencies, TTFT and TPOT percentiles the highest of the runs' (upper bounds, marked estimated)"
	default:
		note += "; each percentile is the highest of the runs' (an upper bound, marked estimated)"
	}
	return r, note
}

// highest combines summaries of the same metric from several runs: each
// quantile that every run reports, at its highest (an upper bound of the
// pooled quantile), and the largest mean.
func highest(ss []summary) summary {
	var out summary
	for q := range ss[0].q {
		v, all := 0.0, true
		for _, s := range ss {
			x, ok := s.q[q]
			all = all && ok
			v = math.Max(v, x)
		}
		if all {
			out.set(q, v)
		}
	}
	for _, s := range ss {
		out.mean = math.Max(out.mean, s.mean)
	}
	return out
}

// samplesSummary summarises per-request values (milliseconds) exactly: the
// mean, the minimum and maximum, and p50, p90, p95 and p99 as the probe
// computes them (model.QuantileSorted, numpy's default, which vLLM uses).
func samplesSummary(xs []float64) summary {
	sorted := slices.Sorted(slices.Values(xs))
	var s summary
	for _, x := range sorted {
		s.mean += x
	}
	s.mean /= float64(len(sorted))
	for _, q := range []float64{0, 0.5, 0.9, 0.95, 0.99, 1} {
		s.set(q, model.QuantileSorted(sorted, q))
	}
	return s
}
