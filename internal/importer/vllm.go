package importer

import (
	"errors"
	"fmt"
	"math"
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

func looksVLLM(vals []any) bool {
	for _, v := range vals {
		o, ok := asObj(v)
		if !ok || !hasAny(o, vllmMarkers) {
			return false
		}
	}
	return true
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
	p := &part{source: Source{Tool: "vllm bench serve"}}
	p.notes = append(p.notes, "vLLM's TTFT, TPOT (excluding the first token) and E2E match the planner's definitions and are taken as they are; vLLM's ITL (gaps between chunks over all requests) is not used")
	for i, v := range vals {
		o, _ := asObj(v)
		r, notes, err := vllmRun(o)
		if err != nil {
			if len(vals) > 1 {
				return nil, fmt.Errorf("result %d of %d: %w", i+1, len(vals), err)
			}
			return nil, err
		}
		if len(vals) > 1 {
			r.label = fmt.Sprintf("%s #%d", baseName(name), i+1)
			for j, n := range notes {
				notes[j] = r.label + ": " + n
			}
		}
		p.notes = append(p.notes, notes...)
		p.runs = append(p.runs, r)
		if p.source.Model == "" {
			p.source.Model, _ = o.str("model_id")
			p.source.Settings = vllmSettings(o)
		}
		if p.source.Date == "" {
			p.source.Date = vllmDate(o)
		}
	}
	return p, nil
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

func vllmRun(o obj) (*run, []string, error) {
	thr, ok := o.num("request_throughput")
	if !ok || thr < 0 {
		return nil, nil, errors.New(`has no "request_throughput"`)
	}
	completed, ok := count(o["completed"])
	if !ok {
		return nil, nil, errors.New(`has no "completed"`)
	}
	dur, ok := o.num("duration")
	if !ok || dur <= 0 {
		return nil, nil, errors.New(`has no "duration"`)
	}
	var notes []string
	r := &run{hasSummary: true, countsKnown: true, wallS: dur, throughputRPS: thr, ok: completed}
	if failed, ok := count(o["failed"]); ok {
		r.errs = failed
	} else if n, ok := count(o["num_prompts"]); ok && n >= completed {
		r.errs = n - completed
		if r.errs > 0 {
			notes = append(notes, fmt.Sprintf("%s inferred as num_prompts − completed (the file has no \"failed\")", plural(r.errs, "failed request")))
		}
	}
	r.requests = completed + r.errs
	r.outputTPS, _ = o.num("output_throughput")
	if mc, ok := o.num("max_concurrency"); ok {
		if mc < 1 || mc != math.Trunc(mc) || mc > maxConcurrency {
			return nil, nil, fmt.Errorf("max_concurrency %g is not a positive whole number", mc)
		}
		r.concurrency = int(mc)
	}
	if rate, ok := o.num("request_rate"); ok && rate > 0 {
		r.rateRPS = rate
		if r.concurrency > 0 {
			notes = append(notes, fmt.Sprintf("open loop at %g req/s with max_concurrency %d: the step is placed at the concurrency estimated from the load in flight, not at the cap", rate, r.concurrency))
			r.concurrency = 0
		}
	}
	r.ttft, r.tpot, r.e2e = vllmSummary(o, "ttft"), vllmSummary(o, "tpot"), vllmSummary(o, "e2el")
	if !o.has("ttfts") && !r.e2e.known() && r.ttft.known() && r.tpot.known() && completed > 0 {
		out, _ := o.num("total_output_tokens")
		if meanOut := out / float64(completed); meanOut >= 1 {
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

// vllmSummary collects mean_X_ms, median_X_ms and pNN_X_ms.
func vllmSummary(o obj, metric string) summary {
	var s summary
	s.mean, _ = o.num("mean_" + metric + "_ms")
	if v, ok := o.num("median_" + metric + "_ms"); ok {
		s.set(0.5, v)
	}
	suffix := "_" + metric + "_ms"
	for k := range o {
		if !strings.HasPrefix(k, "p") || !strings.HasSuffix(k, suffix) {
			continue
		}
		pct, err := strconv.ParseFloat(strings.TrimSuffix(k[1:], suffix), 64)
		if err != nil || !(pct > 0 && pct < 100) {
			continue
		}
		if v, ok := o.num(k); ok {
			s.set(pct/100, v)
		}
	}
	return s
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
