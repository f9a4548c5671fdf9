package importer

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/plannerdev/planner/internal/measure"
)

// GuideLLM (`guidellm run ... --output kind=json`, formerly `guidellm
// benchmark ... --output-path benchmarks.json`) writes {"benchmarks":
// [...]}, one benchmark per strategy of the profile (a sweep gives
// synchronous, throughput and several constant rates), as JSON or, with
// --output kind=yaml, the same document as YAML (benchmarks.yaml). Two layouts
// exist: the older one keeps each benchmark's strategy in args.strategy and
// its totals in request_totals; report version 2 (metadata.version 2) keeps
// them in config.strategy and metrics.request_totals. Both summarise every
// metric as {successful, errored, incomplete, total} distributions with
// mean, median, percentiles (p001 … p999), min, max and count, in the unit
// of the key's suffix: request_latency in seconds, *_ms in milliseconds.
//
// Metric mapping onto the planner's metrics (docs/concepts.md, "Metrics"):
//   - TTFT = time_to_first_token_ms (first token − request start).
//   - TPOT = inter_token_latency_ms = (last token − first token)/(output
//     tokens − 1). GuideLLM's own time_per_output_token_ms divides by all
//     output tokens and, in newer versions, starts the clock at the request
//     start, so it includes the first token; it is not used.
//   - E2E = request_latency (request end − start).
//   - Throughput = successful requests / benchmark duration, as the planner
//     defines it (GuideLLM's requests_per_second is a time-series mean).

func looksGuideLLM(vals []any) bool {
	if len(vals) != 1 {
		return false
	}
	o, ok := asObj(vals[0])
	if !ok {
		return false
	}
	if _, ok := o.strAt("metadata", "guidellm_version"); ok {
		return true
	}
	bs, ok := o.arr("benchmarks")
	if !ok || len(bs) == 0 {
		return false
	}
	b, ok := asObj(bs[0])
	if !ok {
		return false
	}
	t, _ := b.str("type_")
	return strings.HasSuffix(t, "_benchmark") || (b.has("metrics") && (b.has("args") || b.has("config")))
}

func parseGuideLLM(name string, vals []any) (*part, error) {
	o, _ := asObj(vals[0])
	bs, ok := o.arr("benchmarks")
	if !ok || len(bs) == 0 {
		return nil, errors.New(`has no "benchmarks"`)
	}
	p := &part{source: Source{Tool: "guidellm"}}
	if v, ok := o.numAt("metadata", "version"); ok {
		p.source.Version = fmt.Sprintf("report v%g", v)
	}
	if v, ok := o.strAt("metadata", "guidellm_version"); ok {
		p.source.Version = strings.TrimSpace(v + " " + p.source.Version)
	}
	if p.source.Model, ok = o.strAt("config", "spec", "backend", "model"); !ok {
		p.source.Model = ""
	}
	if t, ok := o.strAt("config", "spec", "backend", "target"); ok && strings.TrimSpace(t) != "" {
		p.source.Endpoint = displayURL(strings.TrimSpace(t))
	}
	p.notes = append(p.notes,
		"TPOT is GuideLLM's inter_token_latency_ms, (last token − first token)/(output tokens − 1), which is the planner's TPOT; GuideLLM's time_per_output_token_ms divides by every output token and is not used",
		"throughput is successful requests over the benchmark's duration; incomplete requests (cut off when the benchmark ended) are left out")
	for i, bv := range bs {
		b, ok := asObj(bv)
		if !ok {
			return nil, fmt.Errorf("benchmark %d is not an object", i+1)
		}
		r, notes, err := guidellmRun(b)
		if err != nil {
			return nil, fmt.Errorf("benchmark %d of %d: %w", i+1, len(bs), err)
		}
		r.label = fmt.Sprintf("%s benchmark %d (%s)", baseName(name), i+1, strategyLabel(r))
		for _, n := range notes {
			p.notes = append(p.notes, r.label+": "+n)
		}
		p.runs = append(p.runs, r)
		if p.source.Model == "" {
			p.source.Model = firstNonEmpty(b, [][]string{{"worker", "backend_model"}, {"config", "backend", "model"}})
		}
		if p.source.Endpoint == "" {
			if t := firstNonEmpty(b, [][]string{{"config", "backend", "target"}, {"worker", "backend_target"}}); strings.TrimSpace(t) != "" {
				p.source.Endpoint = displayURL(strings.TrimSpace(t))
			}
		}
		if p.source.Date == "" {
			if t, ok := b.num("start_time"); ok && t > 0 && t < 1e11 {
				p.source.Date = time.Unix(int64(t), 0).UTC().Format(time.RFC3339)
			}
		}
	}
	return p, nil
}

func firstNonEmpty(o obj, paths [][]string) string {
	for _, p := range paths {
		if s, ok := o.strAt(p...); ok && s != "" {
			return s
		}
	}
	return ""
}

func strategyLabel(r *run) string {
	switch {
	case r.concurrency > 0:
		return fmt.Sprintf("concurrency %d", r.concurrency)
	case r.rateRPS > 0:
		return fmt.Sprintf("%g req/s", r.rateRPS)
	}
	return "max throughput"
}

func guidellmRun(b obj) (*run, []string, error) {
	strategy, ok := b.objAt("config", "strategy")
	if !ok {
		if strategy, ok = b.objAt("args", "strategy"); !ok {
			return nil, nil, errors.New(`has no strategy (config.strategy or args.strategy)`)
		}
	}
	m, ok := b.obj("metrics")
	if !ok {
		return nil, nil, errors.New(`has no "metrics"`)
	}
	totals, ok := m.obj("request_totals")
	if !ok {
		if totals, ok = b.obj("request_totals"); !ok {
			return nil, nil, errors.New(`has no "request_totals"`)
		}
	}
	succ, ok1 := count(totals["successful"])
	errd, ok2 := count(totals["errored"])
	if !ok1 || !ok2 {
		return nil, nil, errors.New(`"request_totals" lacks successful or errored counts`)
	}
	dur, ok, err := b.optNum("duration")
	switch {
	case err != nil:
		return nil, nil, err
	case dur < 0:
		return nil, nil, fmt.Errorf(`"duration" is %g: not a positive number of seconds`, dur)
	}
	if !ok || dur == 0 {
		start, ok1 := b.num("start_time")
		end, ok2 := b.num("end_time")
		if !ok1 || !ok2 || end <= start {
			return nil, nil, errors.New(`has no "duration"`)
		}
		dur = end - start
	}
	r := &run{hasSummary: true, countsKnown: true, ok: succ, errs: errd, requests: succ + errd, wallS: dur}
	r.throughputRPS = float64(succ) / dur
	var notes []string
	if inc, ok := count(totals["incomplete"]); ok && inc > 0 {
		notes = append(notes, fmt.Sprintf("%s left out", plural(inc, "incomplete request")))
	}
	if errd > 0 {
		notes = append(notes, "errored requests count as errors: the summary does not give their status codes")
	}
	kind, _ := strategy.str("type_")
	switch kind {
	case "synchronous":
		r.concurrency = 1
	case "concurrent":
		streams, ok := strategy.num("streams")
		if !ok || streams < 1 || streams > maxConcurrency {
			return nil, nil, errors.New(`is a concurrent benchmark without "streams"`)
		}
		r.concurrency = int(streams)
	default:
		r.rateRPS, _ = strategy.num("rate")
		if cc, ok := m.objAt("request_concurrency", "successful"); ok {
			c, ok, err := cc.optNum("mean")
			switch {
			case err != nil:
				return nil, nil, fmt.Errorf("request_concurrency.successful: %w", err)
			case ok && c < 0:
				return nil, nil, fmt.Errorf(`request_concurrency.successful: "mean" is %g: requests in flight are not negative`, c)
			case ok && c > 0:
				r.meanInFlight = c
			}
		}
	}
	if r.ttft, _, err = guidellmDist(m, "time_to_first_token_ms", 1); err != nil {
		return nil, nil, err
	}
	tpot, weighted, err := guidellmDist(m, "inter_token_latency_ms", 1)
	if err != nil {
		return nil, nil, err
	}
	r.tpot = tpot
	if weighted != 0 && weighted != succ {
		notes = append(notes, "GuideLLM weights its inter-token latency distribution by tokens, so the TPOT percentiles are over tokens rather than requests")
	}
	if r.e2e, _, err = guidellmDist(m, "request_latency", 1000); err != nil {
		return nil, nil, err
	}
	if !r.ttft.known() || !r.e2e.known() {
		return nil, nil, errors.New(`has no time_to_first_token_ms or request_latency distribution`)
	}
	if out, ok := m.numAt("output_token_count", "successful", "total_sum"); ok {
		r.outputTPS = out / dur
	}
	recs, complete, timed, err := guidellmSamples(b, succ, errd)
	if err != nil {
		return nil, nil, err
	}
	r.records, r.recordsComplete, r.recordsTimed = recs, complete, timed
	return r, notes, nil
}

// guidellmDist reads metrics[key].successful, scaled into milliseconds, and
// the distribution's sample count. A figure present but not a number, or
// negative, is an error that names it, rather than a figure left out.
func guidellmDist(m obj, key string, scale float64) (summary, int, error) {
	d, ok := m.objAt(key, "successful")
	if !ok {
		return summary{}, 0, nil
	}
	var s summary
	read := func(o obj, k, at string, set func(float64)) error {
		v, ok, err := o.optNum(k)
		switch {
		case err != nil:
			return fmt.Errorf("%s.%s: %w", key, at, err)
		case ok && v < 0:
			return fmt.Errorf("%s.%s: %q is %g: a latency is not negative", key, at, k, v)
		case ok:
			set(v)
		}
		return nil
	}
	for _, f := range []struct {
		k   string
		set func(float64)
	}{{"mean", func(v float64) { s.mean = v }}, {"median", func(v float64) { s.set(0.5, v) }},
		{"min", func(v float64) { s.set(0, v) }}, {"max", func(v float64) { s.set(1, v) }}} {
		if err := read(d, f.k, "successful", f.set); err != nil {
			return summary{}, 0, err
		}
	}
	if ps, ok := d.obj("percentiles"); ok {
		for _, k := range slices.Sorted(maps.Keys(ps)) {
			if !strings.HasPrefix(k, "p") {
				continue
			}
			q := guidellmQuantile(k[1:])
			if !(q > 0 && q < 1) {
				continue
			}
			if err := read(ps, k, "successful.percentiles", func(v float64) { s.set(q, v) }); err != nil {
				return summary{}, 0, err
			}
		}
	}
	n, _ := count(d["count"])
	return s.scale(scale), n, nil
}

// guidellmQuantile reads GuideLLM's percentile names: the digits after
// "p" are a percentage with the decimal point after the second digit
// ("001" = 0.1 %, "01" = 1 %, "25" = 25 %, "999" = 99.9 %).
func guidellmQuantile(digits string) float64 {
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0
	}
	var v float64
	for _, c := range digits {
		v = v*10 + float64(c-'0')
	}
	if len(digits) > 2 {
		v /= math.Pow(10, float64(len(digits)-2))
	}
	return v / 100
}

// guidellmSamples reads the per-request entries GuideLLM keeps under
// "requests" (all of them, or a sample). complete is true when they cover
// every successful and errored request.
func guidellmSamples(b obj, succ, errd int) (recs []measure.Record, complete, timed bool, err error) {
	reqs, ok := b.obj("requests")
	if !ok {
		return nil, false, false, nil
	}
	good, _ := reqs.arr("successful")
	bad, _ := reqs.arr("errored")
	t0 := math.Inf(1)
	type sample struct {
		o     obj
		start float64
		ok    bool
		where string // the entry's request_id, else its place under requests
	}
	var samples []sample
	for _, set := range []struct {
		name string
		list []any
		ok   bool
	}{{"successful", good, true}, {"errored", bad, false}} {
		for i, v := range set.list {
			o, isObj := asObj(v)
			if !isObj {
				return nil, false, false, fmt.Errorf("request sample %d is not an object", i+1)
			}
			start, hasStart := o.num("start_time")
			if !hasStart {
				start, hasStart = o.numAt("info", "timings", "request_start")
			}
			if !hasStart {
				start = math.NaN()
			} else {
				t0 = math.Min(t0, start)
			}
			where := fmt.Sprintf("requests.%s[%d]", set.name, i)
			if id, has := o.str("request_id"); has && strings.TrimSpace(id) != "" {
				where = fmt.Sprintf("request_id %q", id)
			}
			samples = append(samples, sample{o, start, set.ok, where})
		}
	}
	timed = len(samples) > 0
	for i, s := range samples {
		rec, recTimed := guidellmRecord(s.o, s.ok, s.start, t0)
		rec.Index = i
		timed = timed && recTimed
		if err := checkRow(&rec, s.where); err != nil {
			return nil, false, false, err
		}
		recs = append(recs, rec)
	}
	return recs, len(good) == succ && len(bad) == errd && len(samples) > 0, timed, nil
}

// guidellmRecord maps one GuideLLM request entry. E2E runs to the last
// token when the entry records it (the planner's E2E), else to the request end.
func guidellmRecord(o obj, ok bool, start, t0 float64) (measure.Record, bool) {
	rec := measure.Record{Attempts: 1}
	timed := !math.IsNaN(start)
	if timed {
		rec.StartS = start - t0
	}
	rec.TTFTMs, _ = o.num("time_to_first_token_ms")
	// The last token's time: last_token_time in the older layout,
	// info.timings.last_iteration in report v2 until v0.7, whose entries
	// carry it as info.timings.last_token_iteration.
	last, hasLast := o.numAt("info", "timings", "last_token_iteration")
	if !hasLast {
		last, hasLast = o.num("last_token_time")
	}
	if !hasLast {
		last, hasLast = o.numAt("info", "timings", "last_iteration")
	}
	if hasLast && timed && last >= start {
		rec.E2EMs = (last - start) * 1000
	} else if lat, has := o.num("request_latency"); has {
		rec.E2EMs = lat * 1000
	}
	rec.OutputTokens, _ = count(o["output_tokens"])
	rec.InputTokens, _ = count(o["prompt_tokens"])
	rec.OK = ok && rec.OutputTokens > 0
	switch {
	case rec.OK:
		rec.Status = 200
	case ok:
		rec.Status, rec.ErrorClass = 200, measure.ErrBadStream
	default:
		msg, _ := o.str("error")
		if m, has := o.strAt("info", "error"); has {
			msg = m
		}
		rec.Status, rec.ErrorClass = classifyErrorText(msg)
	}
	return rec, timed
}
