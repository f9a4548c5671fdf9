package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plannerdev/planner/internal/measure"
)

// vLLM's `vllm bench serve` (formerly benchmarks/benchmark_serving.py)
// writes one JSON object per run with --save-result, and appends one per
// run, newline separated, with --append-result. Times are in milliseconds
// in the summary keys (mean_/median_/std_/pNN_ + ttft, tpot, itl, e2el +
// _ms; which metrics appear follows --percentile-metrics, default
// ttft,tpot,itl, and which percentiles --metric-percentiles, default 99)
// and in seconds in the --save-detailed arrays (ttfts, itls, latencies,
// start_times). Its definitions match the planner's (docs/concepts.md, "Metrics"): TTFT is the first chunk
// with content, TPOT is (latency − TTFT)/(output tokens − 1) per request,
// e2el is the whole request. Its ITL is the gap between chunks pooled over
// all requests, not a per-request figure, and is not used.

var vllmMarkers = []string{"burstiness", "num_prompts", "mean_ttft_ms", "median_ttft_ms", "mean_e2el_ms", "ttfts"}

// vllmObjects returns the result objects of a vLLM file, one per run: a
// single result, the lines of --append-result, or the JSON array of
// `vllm bench sweep serve`'s summary.json (the runs of one combination).
func vllmObjects(vals []any) ([]obj, bool) {
	if len(vals) == 1 {
		if list, ok := vals[0].([]any); ok {
			vals = list
		}
	}
	if len(vals) == 0 {
		return nil, false
	}
	objs := make([]obj, 0, len(vals))
	for _, v := range vals {
		o, ok := asObj(v)
		if !ok || !hasAny(o, vllmMarkers) {
			return nil, false
		}
		objs = append(objs, o)
	}
	return objs, true
}

func looksVLLM(vals []any) bool {
	_, ok := vllmObjects(vals)
	return ok
}

func hasAny(o obj, keys []string) bool {
	for _, k := range keys {
		if o.has(k) {
			return true
		}
	}
	return false
}

func parseVLLM(name string, vals []any) (*part, error) {
	objs, ok := vllmObjects(vals)
	if !ok {
		return nil, fmt.Errorf("holds no vLLM result: a result is an object with any of %s", quotedList(vllmMarkers))
	}
	return vllmPart(name, objs)
}

// quotedList writes keys as "a", "b" or "c".
func quotedList(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = strconv.Quote(k)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// vllmPart reads the results of one file. Runs of one combination at one
// load (a sweep's repeats, --num-runs) are pooled into one step.
func vllmPart(name string, objs []obj) (*part, error) {
	p := &part{source: Source{Tool: "vllm bench serve"}}
	p.notes = append(p.notes, "vLLM's TTFT, TPOT (excluding the first token) and E2E match the planner's definitions and are taken as they are; vLLM's ITL (gaps between chunks over all requests) is not used")
	type group struct {
		key  string
		runs []*run
	}
	var groups []*group
	for i, o := range objs {
		label := baseName(name)
		if len(objs) > 1 {
			label = fmt.Sprintf("%s #%d", baseName(name), i+1)
		}
		if params := vllmSweepParams(o); params != "" {
			label += " (" + params + ")"
		}
		runs, notes, err := vllmRuns(o, label)
		if err != nil {
			if len(objs) > 1 {
				return nil, fmt.Errorf("result %d of %d: %w", i+1, len(objs), err)
			}
			return nil, err
		}
		for _, n := range notes {
			if len(objs) > 1 || len(runs) > 1 {
				n = label + ": " + n
			}
			p.notes = append(p.notes, n)
		}
		for _, r := range runs {
			// Only a sweep's runs (they carry run_number) are repeats; two
			// plain results at one load are refused as two measurements of
			// one step, and so is an unknown load.
			key := r.load() + " " + vllmSweepParams(o)
			if !o.has("run_number") || (r.concurrency == 0 && r.rateRPS == 0) {
				key = r.label
			}
			j := slices.IndexFunc(groups, func(g *group) bool { return g.key == key })
			if j < 0 {
				groups = append(groups, &group{key: key})
				j = len(groups) - 1
			}
			groups[j].runs = append(groups[j].runs, r)
		}
		if p.source.Model == "" {
			p.source.Model, _ = o.str("model_id")
			p.source.Settings = vllmSettings(o)
		}
		if p.source.Date == "" {
			p.source.Date = vllmDate(o)
		}
	}
	for _, g := range groups {
		if len(g.runs) == 1 {
			p.runs = append(p.runs, g.runs[0])
			continue
		}
		r, note := poolRepeats(g.runs)
		p.runs = append(p.runs, r)
		p.notes = append(p.notes, note)
	}
	return p, nil
}

// vllmResultKeys are the keys vLLM bench serve itself writes; any other
// key of a sweep's result is one of the sweep's parameters (a serve or
// bench override, or --metadata), which tells its combinations apart.
var vllmResultKeys = map[string]bool{
	"date": true, "endpoint_type": true, "backend": true, "label": true, "model_id": true, "tokenizer_id": true,
	"num_prompts": true, "request_rate": true, "burstiness": true, "max_concurrency": true,
	"ramp_up_strategy": true, "ramp_up_start_rps": true, "ramp_up_end_rps": true, "rps_change_events": true,
	"duration": true, "completed": true, "failed": true, "total_input_tokens": true, "total_output_tokens": true,
	"request_throughput": true, "request_goodput": true, "request_goodput:": true, "output_throughput": true,
	"total_token_throughput": true, "input_lens": true, "output_lens": true, "ttfts": true, "itls": true,
	"generated_texts": true, "errors": true, "start_times": true, "latencies": true, "queue_times": true,
	"max_output_tokens_per_s": true, "max_concurrent_requests": true, "rtfx": true, "timestamp": true,
	"run_number": true, "": true,
}

var vllmStatKey = regexp.MustCompile(`^(mean|median|std|p[0-9]+(\.[0-9]+)?)_.+_ms$`)

// vllmSweepParams writes the sweep parameters of a result ("max_num_seqs=64"),
// sorted, or "" for a plain bench serve result.
func vllmSweepParams(o obj) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(o)) {
		if vllmResultKeys[k] || vllmStatKey.MatchString(k) || strings.HasPrefix(k, "spec_decode_") {
			continue
		}
		if v, ok := o[k].(string); ok {
			parts = append(parts, k+"="+v)
		} else if v, ok := asNum(o[k]); ok {
			parts = append(parts, k+"="+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	return strings.Join(parts, ", ")
}

// vllmSettings are a run's settings besides its load: the backend, the
// tokenizer and the burstiness of the arrivals.
func vllmSettings(o obj) map[string]string {
	settings := map[string]string{}
	for _, k := range []string{"backend", "tokenizer_id"} {
		if v, ok := o.str(k); ok && v != "" {
			settings[k] = v
		}
	}
	if b, ok := o.num("burstiness"); ok {
		settings["burstiness"] = strconv.FormatFloat(b, 'g', -1, 64)
	}
	return settings
}

// vllmDate turns "20250513-043912" into "2025-05-13T04:39:12" (local time of
// the machine that ran the benchmark; the file has no zone).
func vllmDate(o obj) string {
	s, _ := o.str("date")
	if t, err := time.Parse("20060102-150405", s); err == nil {
		return t.Format("2006-01-02T15:04:05")
	}
	return s
}

// vllmRuns reads one result: one run, or the steps of a ramp-up run split
// at its rate changes.
func vllmRuns(o obj, label string) ([]*run, []string, error) {
	r, notes, err := vllmRun(o)
	if err != nil {
		return nil, nil, err
	}
	r.label = label
	if strategy, _ := o.str("ramp_up_strategy"); strategy != "" {
		return vllmRampUp(o, r, strategy, notes)
	}
	return []*run{r}, notes, nil
}

func vllmRun(o obj) (*run, []string, error) {
	thr, err := vllmNumber(o, "request_throughput")
	if err != nil {
		return nil, nil, err
	}
	if thr < 0 {
		return nil, nil, fmt.Errorf(`"request_throughput" is %g: a throughput is not negative`, thr)
	}
	completed, ok := count(o["completed"])
	if !ok {
		if !o.has("completed") {
			return nil, nil, errors.New(`has no "completed"`)
		}
		return nil, nil, fmt.Errorf(`"completed" is %v: not a whole number of requests`, o["completed"])
	}
	dur, err := vllmNumber(o, "duration")
	if err != nil {
		return nil, nil, err
	}
	if dur <= 0 {
		return nil, nil, fmt.Errorf(`"duration" is %g: not a positive number of seconds`, dur)
	}
	// vLLM writes request_throughput as completed / duration: a summary
	// whose counts contradict its throughput is corrupt, and planning
	// from either figure would be planning from a guess.
	switch {
	case completed == 0 && thr > 0:
		return nil, nil, fmt.Errorf(`"completed" is 0 but "request_throughput" is %.4g req/s: the counts contradict the throughput`, thr)
	case completed > 0 && thr == 0:
		return nil, nil, fmt.Errorf(`"request_throughput" is 0 but "completed" is %d: the throughput contradicts the counts`, completed)
	case completed > 0 && math.Abs(thr-float64(completed)/dur) > 0.1*thr: // room for a file edited or rounded by hand
		return nil, nil, fmt.Errorf(`"request_throughput" is %.4g req/s but "completed" / "duration" is %d / %.4g s = %.4g req/s: the throughput contradicts the counts`, thr, completed, dur, float64(completed)/dur)
	}
	var notes []string
	r := &run{hasSummary: true, countsKnown: true, wallS: dur, throughputRPS: thr, ok: completed}
	failed, hasFailed, err := o.optCount("failed")
	if err != nil {
		return nil, nil, err
	}
	prompts, hasPrompts, err := o.optCount("num_prompts")
	if err != nil {
		return nil, nil, err
	}
	if hasFailed {
		r.errs = failed
	} else if hasPrompts && prompts >= completed {
		r.errs = prompts - completed
		if r.errs > 0 {
			notes = append(notes, fmt.Sprintf("%s inferred as num_prompts − completed (the file has no \"failed\")", plural(r.errs, "failed request")))
		}
	}
	r.requests = completed + r.errs
	if r.outputTPS, _, err = o.optNum("output_throughput"); err != nil {
		return nil, nil, err
	} else if r.outputTPS < 0 {
		return nil, nil, fmt.Errorf(`"output_throughput" is %g tokens/s: a throughput is not negative`, r.outputTPS)
	}
	mc, hasMC, err := o.optNum("max_concurrency")
	if err != nil {
		return nil, nil, err
	}
	if hasMC {
		if mc < 1 || mc != math.Trunc(mc) || mc > maxConcurrency {
			return nil, nil, fmt.Errorf("max_concurrency %g is not a positive whole number", mc)
		}
		r.concurrency = int(mc)
	}
	rate, err := vllmRequestRate(o)
	if err != nil {
		return nil, nil, err
	}
	if rate > 0 {
		r.rateRPS = rate
		if r.concurrency > 0 {
			notes = append(notes, fmt.Sprintf("open loop at %g req/s with max_concurrency %d: the step is placed at the concurrency estimated from the load in flight, not at the cap", rate, r.concurrency))
			r.inFlightCap, r.concurrency = r.concurrency, 0
		}
	}
	for _, m := range []struct {
		s   *summary
		key string
	}{{&r.ttft, "ttft"}, {&r.tpot, "tpot"}, {&r.e2e, "e2el"}} {
		if *m.s, err = vllmSummary(o, m.key); err != nil {
			return nil, nil, err
		}
	}
	if o.has("queue_times") {
		notes = append(notes, "queue_times (the client's wait for a --max-concurrency slot before sending) are not part of E2E, which starts at the send as the planner's does")
	}
	if lats, ok := o.arr("latencies"); ok && !o.has("ttfts") {
		// The default save keeps each request's latency (0 for a failed
		// request, whose latency vLLM never sets): E2E comes from them.
		var xs []float64
		for _, v := range lats {
			if s, ok := asNum(v); ok && s > 0 {
				xs = append(xs, s*1000)
			}
		}
		if len(xs) == completed && completed > 0 {
			r.e2eSamples, r.e2e = xs, samplesSummary(xs)
			notes = append(notes, "E2E from the file's per-request latencies (the default save keeps them)")
		} else {
			notes = append(notes, fmt.Sprintf("the file's latencies hold %d successful requests where the summary says %d completed: E2E comes from the summary keys", len(xs), completed))
		}
	}
	if !o.has("ttfts") && !r.e2e.known() && r.ttft.known() && r.tpot.known() && completed > 0 {
		out, _, err := o.optCount("total_output_tokens")
		if err != nil {
			return nil, nil, err
		}
		if meanOut := float64(out) / float64(completed); meanOut >= 1 {
			r.e2e, r.e2eDerived = estimateE2E(r.ttft, r.tpot, meanOut), true
			notes = append(notes, fmt.Sprintf("E2E estimated (marked) as TTFT + TPOT × (mean output tokens − 1), with %.4g mean output tokens: the file has no e2el (add e2el to --percentile-metrics)", meanOut))
		}
	}
	if o.has("ttfts") {
		recs, timed, err := vllmRecords(o)
		if err != nil {
			return nil, nil, err
		}
		r.records, r.recordsComplete, r.recordsTimed = recs, true, timed
		if n := okCount(recs); n != completed {
			notes = append(notes, fmt.Sprintf("the per-request arrays hold %d successes where the summary says %d completed", n, completed))
		}
	} else if r.errs > 0 {
		notes = append(notes, "failed requests count as errors: the summary does not say which were 429s (--save-detailed keeps each error)")
	}
	return r, notes, nil
}

func okCount(recs []measure.Record) int {
	n := 0
	for _, r := range recs {
		if r.OK {
			n++
		}
	}
	return n
}

// vllmSummary collects mean_X_ms, median_X_ms and pNN_X_ms; a negative
// one is an error naming its key.
func vllmSummary(o obj, metric string) (summary, error) {
	var s summary
	suffix := "_" + metric + "_ms"
	for _, k := range slices.Sorted(maps.Keys(o)) {
		q := -1.0
		switch {
		case k == "mean"+suffix:
		case k == "median"+suffix:
			q = 0.5
		case strings.HasPrefix(k, "p") && strings.HasSuffix(k, suffix):
			pct, err := strconv.ParseFloat(strings.TrimSuffix(k[1:], suffix), 64)
			if err != nil || !(pct > 0 && pct < 100) {
				continue
			}
			q = pct / 100
		default:
			continue
		}
		v, ok, err := o.optNum(k)
		if err != nil {
			return summary{}, err
		}
		if !ok {
			continue
		}
		if v < 0 {
			return summary{}, fmt.Errorf("%q is %g: a latency is not negative", k, v)
		}
		if q < 0 {
			s.mean = v
		} else {
			s.set(q, v)
		}
	}
	return s, nil
}

// vllmRequestRate reads request_rate, the rate the run sent at: a positive
// number of requests a second, or "inf" (every request at once, a closed
// loop under max_concurrency), 0 for the latter or when the file has none.
func vllmRequestRate(o obj) (float64, error) {
	if s, ok := o.str("request_rate"); ok && strings.EqualFold(strings.TrimSpace(s), "inf") {
		return 0, nil
	}
	rate, ok, err := o.optNum("request_rate")
	if err == nil && ok && !(rate > 0) {
		err = fmt.Errorf(`"request_rate" is %g: a request rate is a positive number of requests a second, or "inf"`, rate)
	}
	return rate, err
}

// vllmNumber reads a summary figure, or says what is wrong with it:
// missing, or not a finite number (null, text, or beyond the range of a
// float64, which decodes as null).
func vllmNumber(o obj, key string) (float64, error) {
	v, present := o[key]
	if !present {
		return 0, fmt.Errorf("has no %q", key)
	}
	f, ok := asNum(v)
	if !ok {
		if v == nil {
			return 0, fmt.Errorf("%q is null or beyond the range of a number", key)
		}
		return 0, fmt.Errorf("%q is %v: not a finite number", key, v)
	}
	return f, nil
}

// estimateE2E composes E2E = TTFT + TPOT × (out − 1) from the mean and from
// each quantile both metrics report. For a quantile this adds the two
// quantiles, which bounds the E2E quantile from above when the two rise
// together (as they do under load).
func estimateE2E(ttft, tpot summary, meanOut float64) summary {
	e := summary{}
	if ttft.mean > 0 && tpot.mean > 0 {
		e.mean = ttft.mean + tpot.mean*(meanOut-1)
	}
	for q, a := range ttft.q {
		if b, ok := tpot.q[q]; ok {
			e.set(q, a+b*(meanOut-1))
		}
	}
	return e
}

// vllmRecords builds one record per request from the --save-detailed
// arrays. E2E is TTFT plus the chunk gaps (to the last chunk, as the planner
// defines it), else the stored latency.
func vllmRecords(o obj) ([]measure.Record, bool, error) {
	ttfts, ok := o.arr("ttfts")
	if !ok {
		return nil, false, errors.New(`has "ttfts" but it is not a list`)
	}
	n := len(ttfts)
	get := func(key string) ([]any, error) {
		a, ok := o.arr(key)
		if !ok {
			if o[key] != nil {
				return nil, fmt.Errorf("%q is not a list", key)
			}
			return nil, nil
		}
		if len(a) != n {
			return nil, fmt.Errorf("the per-request arrays differ in length: ttfts has %d, %s has %d", n, key, len(a))
		}
		return a, nil
	}
	arrays := map[string][]any{}
	for _, k := range []string{"input_lens", "output_lens", "itls", "errors", "start_times", "latencies"} {
		a, err := get(k)
		if err != nil {
			return nil, false, err
		}
		arrays[k] = a
	}
	starts := arrays["start_times"]
	t0 := math.Inf(1)
	for _, v := range starts {
		if s, ok := asNum(v); ok {
			t0 = math.Min(t0, s)
		}
	}
	recs := make([]measure.Record, n)
	for i := range n {
		ttft, _ := asNum(ttfts[i])
		rec := measure.Record{Index: i, Attempts: 1, TTFTMs: ttft * 1000}
		rec.E2EMs = rec.TTFTMs
		if itl, ok := at(arrays["itls"], i).([]any); ok && len(itl) > 0 {
			sum := ttft
			for _, g := range itl {
				v, _ := asNum(g)
				sum += v
			}
			rec.E2EMs = sum * 1000
		} else if lat, ok := asNum(at(arrays["latencies"], i)); ok {
			rec.E2EMs = lat * 1000
		}
		if s, ok := asNum(at(starts, i)); ok {
			rec.StartS = s - t0
		}
		rec.OutputTokens, _ = count(at(arrays["output_lens"], i))
		rec.InputTokens, _ = count(at(arrays["input_lens"], i))
		errText, _ := at(arrays["errors"], i).(string)
		rec.OK = strings.TrimSpace(errText) == "" && rec.OutputTokens > 0
		switch {
		case rec.OK:
			rec.Status = 200
		case strings.TrimSpace(errText) == "":
			rec.Status, rec.ErrorClass = 200, measure.ErrBadStream
		default:
			rec.Status, rec.ErrorClass = classifyErrorText(errText)
		}
		if err := checkRow(&rec, fmt.Sprintf("the request at index %d of the per-request arrays (ttfts[%d])", i, i)); err != nil {
			return nil, false, err
		}
		recs[i] = rec
	}
	return recs, len(starts) == n && n > 0, nil
}

// at returns a[i], or nil when a is shorter.
func at(a []any, i int) any {
	if i < len(a) {
		return a[i]
	}
	return nil
}

// `vllm bench sweep serve` writes, besides each combination's summary.json
// (a JSON array of its runs' results, read as any vLLM result), the whole
// sweep as summary.csv: pandas' DataFrame.to_csv of every run's result
// with its run_number and the combination's parameters, one row per run,
// an unnamed index column first, lists written as Python writes them.

func looksVLLMSweepCSV(header []string) bool {
	has := map[string]bool{}
	for _, h := range header {
		has[strings.TrimSpace(h)] = true
	}
	return has["request_throughput"] && has["completed"] && has["duration"] && (has["max_concurrency"] || has["request_rate"])
}

func parseVLLMSweepCSV(name string, data []byte) (*part, error) {
	rows, err := readCSV(data)
	if err != nil {
		return nil, err
	}
	if len(rows) < 2 {
		return nil, errors.New("has no result rows")
	}
	header := rows[0]
	objs := make([]obj, 0, len(rows)-1)
	for i, row := range rows[1:] {
		if len(row) != len(header) {
			return nil, fmt.Errorf("line %d has %d fields where the header has %d (truncated file?)", i+2, len(row), len(header))
		}
		o := obj{}
		for j, h := range header {
			h, cell := strings.TrimSpace(h), strings.TrimSpace(row[j])
			switch {
			case h == "" || cell == "":
				// pandas' index, or a value the run did not record (NaN).
			case strings.HasPrefix(cell, "["):
				// A list as Python writes it: numbers read as JSON; lists
				// of strings or dicts (errors, rps_change_events) do not
				// and are left out.
				var list []any
				if json.Unmarshal([]byte(cell), &list) == nil {
					o[h] = list
				}
			default:
				o[h] = cell
			}
		}
		objs = append(objs, o)
	}
	return vllmPart(name, objs)
}
