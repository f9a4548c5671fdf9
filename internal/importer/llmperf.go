package importer

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plannerdev/planner/internal/measure"
)

// ray-project/llmperf (token_benchmark_ray.py --results-dir DIR) writes, per
// run, NAME_summary.json (results_<metric>_quantiles_pNN, _mean, _min, _max,
// in seconds, over the requests without an error, plus
// num_concurrent_requests and the counts) and NAME_individual_responses.json
// (one object per request). Output tokens are counted by llmperf's own
// tokenizer.
//
// Metric mapping onto the planner's metrics (docs/concepts.md, "Metrics"):
//   - TTFT = ttft_s; E2E = end_to_end_latency_s.
//   - llmperf's inter_token_latency_s is E2E / output tokens (the sum of all
//     gaps, the first token's included, over the token count), not the planner's
//     TPOT. Per request TPOT = (E2E − TTFT)/(output tokens − 1); from a
//     summary alone it is estimated per percentile as (E2E_p − TTFT_p) /
//     (output tokens p50 − 1).
//   - Throughput = results_num_completed_requests_per_min / 60, and the wall
//     time completed / throughput.

func looksLLMPerfSummary(vals []any) bool {
	o, ok := singleObj(vals)
	if !ok {
		return false
	}
	if o.has("num_concurrent_requests") {
		return true
	}
	for k := range o {
		if strings.HasPrefix(k, "results_") && strings.Contains(k, "_s_") {
			return true
		}
	}
	return false
}

func parseLLMPerfSummary(name string, vals []any) (*part, error) {
	o, _ := singleObj(vals)
	conc, ok, err := o.optNum("num_concurrent_requests")
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, errors.New(`has no "num_concurrent_requests"`)
	case conc < 1 || conc > maxConcurrency || conc != math.Trunc(conc):
		return nil, fmt.Errorf(`"num_concurrent_requests" is %g: not a whole number of requests in flight from 1 to %d`, conc, maxConcurrency)
	}
	completed, ok, err := o.optCount("results_num_completed_requests")
	if err != nil {
		return nil, err
	} else if !ok {
		return nil, errors.New(`has no "results_num_completed_requests"`)
	}
	perMin, ok, err := o.optNum("results_num_completed_requests_per_min")
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, errors.New(`has no "results_num_completed_requests_per_min"`)
	case perMin < 0:
		return nil, fmt.Errorf(`"results_num_completed_requests_per_min" is %g: a throughput is not negative`, perMin)
	}
	r := &run{hasSummary: true, countsKnown: true, concurrency: int(conc), ok: completed, throughputRPS: perMin / 60}
	if r.throughputRPS > 0 {
		r.wallS = float64(completed) / r.throughputRPS
	}
	errs, _, err := o.optCount("results_number_errors")
	if err != nil {
		return nil, err
	}
	r.rateLimited = min(llmperfRateLimited(o), errs)
	r.errs = errs - r.rateLimited
	r.requests = completed + errs
	started, ok, err := o.optCount("results_num_requests_started")
	if err != nil {
		return nil, err
	}
	if ok && started > r.requests {
		r.requests = started
	}
	if r.outputTPS, _, err = o.optNum("results_mean_output_throughput_token_per_s"); err != nil {
		return nil, err
	} else if r.outputTPS < 0 {
		return nil, fmt.Errorf(`"results_mean_output_throughput_token_per_s" is %g tokens/s: a throughput is not negative`, r.outputTPS)
	}
	if r.ttft, err = llmperfSummary(o, "ttft_s"); err != nil {
		return nil, err
	}
	if r.e2e, err = llmperfSummary(o, "end_to_end_latency_s"); err != nil {
		return nil, err
	}
	if !r.ttft.known() || !r.e2e.known() {
		return nil, errors.New(`has no results_ttft_s or results_end_to_end_latency_s quantiles`)
	}
	out, err := llmperfSummary(o, "number_output_tokens")
	if err != nil {
		return nil, err
	}
	p := &part{source: Source{Tool: "llmperf"}, runs: []*run{r}, pairKey: llmperfKey(name)}
	p.source.Version, _ = o.str("version")
	p.source.Model, _ = o.str("model")
	p.source.Date = unixDate(o["timestamp"])
	p.notes = append(p.notes, "TTFT and E2E are llmperf's ttft_s and end_to_end_latency_s; output tokens are counted by llmperf's tokenizer")
	outP50, _, ok := out.quantile(0.5)
	if ok && outP50 > 1 {
		var note string
		r.tpot, note = estimateTPOT(r.ttft, r.e2e, outP50)
		r.tpotDerived = true
		p.summaryNotes = append(p.summaryNotes, fmt.Sprintf("TPOT estimated (marked) as (E2E − TTFT)/(output tokens − 1) per percentile with %.4g output tokens: llmperf's inter_token_latency_s is E2E / output tokens, which counts the first token (import the individual_responses file for exact values)", outP50))
		if note != "" {
			p.summaryNotes = append(p.summaryNotes, note)
		}
	}
	p.source.Settings = llmperfSettings(o)
	if api, ok := o.str("api"); ok {
		p.source.Endpoint = api
	}
	return p, nil
}

// llmperfSettings are the run's settings besides its load: the token
// lengths asked for and the serving framework, when recorded.
func llmperfSettings(o obj) map[string]string {
	settings := map[string]string{}
	for _, k := range []string{"mean_input_tokens", "stddev_input_tokens", "mean_output_tokens", "stddev_output_tokens"} {
		if v, ok := o.num(k); ok {
			settings[k] = strconv.FormatFloat(v, 'g', -1, 64)
		}
	}
	if fw, ok := o.str("framework"); ok {
		settings["framework"] = fw
	}
	return settings
}

// estimateTPOT derives the planner's TPOT from E2E and TTFT summaries,
// quantile by quantile. A difference of quantiles is not itself a
// quantile: when the p95 so derived falls below the median, it is set to
// the median, a lower bound, and the note says so.
func estimateTPOT(ttft, e2e summary, out float64) (summary, string) {
	var s summary
	if e2e.mean > ttft.mean && ttft.mean > 0 {
		s.mean = (e2e.mean - ttft.mean) / (out - 1)
	}
	for _, q := range []float64{0.5, 0.95} {
		a, _, ok1 := ttft.quantile(q)
		b, _, ok2 := e2e.quantile(q)
		if ok1 && ok2 && b > a {
			s.set(q, (b-a)/(out-1))
		}
	}
	if p50, ok := s.q[0.5]; ok {
		if p95, ok := s.q[0.95]; ok && p95 < p50 {
			s.set(0.95, p50)
			return s, fmt.Sprintf("TPOT p95 derived from the E2E and TTFT p95s is %.4g ms, below the p50's %.4g ms: the p95 is set to the p50, a lower bound (the per-request responses give the true value)", p95, p50)
		}
	}
	return s, ""
}

// llmperfSummary reads results_<metric>_mean, _min, _max and
// _quantiles_pNN; seconds become milliseconds, token counts stay as they are.
// A figure present but not a number, or negative, is an error that names
// its key.
func llmperfSummary(o obj, metric string) (summary, error) {
	prefix := "results_" + metric
	what := "a token count"
	if strings.HasSuffix(metric, "_s") {
		what = "a latency"
	}
	var s summary
	for _, k := range slices.Sorted(maps.Keys(o)) {
		var q float64
		switch rest, found := strings.CutPrefix(k, prefix+"_quantiles_p"); {
		case k == prefix+"_mean":
			q = -1
		case k == prefix+"_min":
			q = 0
		case k == prefix+"_max":
			q = 1
		case found:
			pct, err := strconv.ParseFloat(rest, 64)
			if err != nil || !(pct > 0 && pct < 100) {
				continue
			}
			q = pct / 100
		default:
			continue
		}
		v, ok, err := o.optNum(k)
		switch {
		case err != nil:
			return summary{}, err
		case !ok:
		case v < 0:
			return summary{}, fmt.Errorf("%q is %g: %s is not negative", k, v, what)
		case q == -1:
			s.mean = v
		default:
			s.set(q, v)
		}
	}
	if strings.HasSuffix(metric, "_s") {
		return s.scale(1000), nil
	}
	return s, nil
}

var errorCodeRE = regexp.MustCompile(`(\d{3})['"]?\s*:\s*(\d+)`)

// llmperfRateLimited counts 429s in results_error_code_frequency, a
// Python dict written as a string ("{429: 3}").
func llmperfRateLimited(o obj) int {
	freq, _ := o.str("results_error_code_frequency")
	n := 0
	for _, m := range errorCodeRE.FindAllStringSubmatch(freq, -1) {
		if m[1] == "429" {
			c, _ := strconv.Atoi(m[2])
			n += c
		}
	}
	return n
}

func unixDate(v any) string {
	t, ok := asNum(v)
	if !ok || t <= 0 || t > 1e11 {
		return ""
	}
	return time.Unix(int64(t), 0).UTC().Format(time.RFC3339)
}

// llmperfKey names the run a file belongs to: its directory and the name
// before _summary.json or _individual_responses.json.
func llmperfKey(name string) string {
	base := filepath.Base(name)
	for _, suffix := range []string{"_summary.json", "_individual_responses.json"} {
		if s, ok := strings.CutSuffix(base, suffix); ok {
			return filepath.Join(filepath.Dir(name), s)
		}
	}
	return ""
}

func looksLLMPerfResponses(vals []any) bool {
	if len(vals) != 1 {
		return false
	}
	list, ok := vals[0].([]any)
	if !ok || len(list) == 0 {
		return false
	}
	o, ok := asObj(list[0])
	return ok && o.has("end_to_end_latency_s") && o.has("ttft_s")
}

func parseLLMPerfResponses(name string, vals []any) (*part, error) {
	var list []any
	if len(vals) == 1 {
		list, _ = vals[0].([]any)
	}
	if len(list) == 0 {
		return nil, errors.New("holds no responses: the file is a JSON array of one object per request, with \"ttft_s\" and \"end_to_end_latency_s\"")
	}
	recs := make([]measure.Record, 0, len(list))
	for i, v := range list {
		o, ok := asObj(v)
		if !ok {
			return nil, fmt.Errorf("response %d is not an object", i+1)
		}
		ttft, ok1 := o.num("ttft_s")
		e2e, ok2 := o.num("end_to_end_latency_s")
		rec := measure.Record{Index: i, Attempts: 1, TTFTMs: ttft * 1000, E2EMs: e2e * 1000, OutputEstimated: true}
		rec.OutputTokens, _ = count(o["number_output_tokens"])
		rec.InputTokens, _ = count(o["number_input_tokens"])
		code, hasCode := o.num("error_code")
		switch {
		case hasCode:
			rec.Status = int(code)
			if code < 100 || code > 599 {
				rec.Status = 0
			}
			rec.ErrorClass = classForStatus(rec.Status)
		case !ok1 || !ok2:
			return nil, fmt.Errorf("response %d has no ttft_s or end_to_end_latency_s", i+1)
		default:
			rec.Status = 200
			rec.OK = rec.OutputTokens > 0
			if !rec.OK {
				rec.ErrorClass = measure.ErrBadStream
			}
		}
		if err := checkRow(&rec, fmt.Sprintf("response %d", i+1)); err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	r := &run{records: recs, recordsComplete: true}
	p := &part{source: Source{Tool: "llmperf"}, runs: []*run{r}, companion: true, pairKey: llmperfKey(name)}
	p.notes = append(p.notes, "per-request TTFT and E2E are llmperf's ttft_s and end_to_end_latency_s; TPOT is (E2E − TTFT)/(output tokens − 1) from llmperf's tokenizer count")
	p.aloneNotes = append(p.aloneNotes, "the concurrency and wall time of these rows are in the run's _summary.json: import both files together")
	return p, nil
}
