package importer

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/redact"
)

// NVIDIA AIPerf (`aiperf profile ...`) writes, per run, a summary
// profile_export_aiperf.json (and .csv) and one record per request in
// profile_export.jsonl. The summary comes in two schemas: the older one
// nests the metrics under "records" (each with tag, unit, avg, pNN); the
// newer one (schema_version, aiperf_version) puts them at the top level.
// Every metric carries its unit.
//
// Metric mapping onto the planner's metrics (docs/concepts.md, "Metrics"):
//   - TTFT = time_to_first_token (older tag "ttft"): the first token of any
//     kind, reasoning included. time_to_first_output_token, which skips
//     reasoning, is not used.
//   - TPOT = inter_token_latency = (request_latency − TTFT)/(output
//     sequence length − 1), where the output length counts reasoning tokens
//     as usage.completion_tokens does.
//   - E2E = request_latency.
//   - Counts: request_count is the successful requests, error_request_count
//     the failed ones; error_summary gives each error's code (429s are
//     counted as rate limited).

var aiperfSummaryNotes = []string{
	"TTFT is AIPerf's time_to_first_token (reasoning tokens count as output, as the planner's TTFT counts them); TPOT is its inter_token_latency, (request_latency − TTFT)/(output tokens − 1), the planner's TPOT; E2E is request_latency",
}

func looksAIPerfJSON(vals []any) bool {
	o, ok := singleObj(vals)
	if !ok {
		return false
	}
	if o.has("aiperf_version") {
		return true
	}
	if isGenAIPerfConfig(o) {
		return false
	}
	if rec, ok := o.obj("records"); ok {
		for _, v := range rec {
			if m, ok := asObj(v); ok && m.has("tag") && m.has("unit") {
				return true
			}
		}
	}
	ms := collectMetrics(o)
	if _, _, ok := ms.entry("benchmark_duration", "request_count", "error_request_count"); ok {
		return true
	}
	return hasAIPerfConfig(o) && len(ms) > 0
}

func hasAIPerfConfig(o obj) bool {
	ic, ok := o.obj("input_config")
	if !ok {
		return false
	}
	_, loadgen := ic.obj("loadgen")
	_, phases := ic.arr("phases")
	_, endpoint := ic.obj("endpoint")
	return loadgen || phases || endpoint
}

func singleObj(vals []any) (obj, bool) {
	if len(vals) != 1 {
		return nil, false
	}
	return asObj(vals[0])
}

func parseAIPerfJSON(name string, vals []any) (*part, error) {
	o, _ := singleObj(vals)
	ms := collectMetrics(o)
	r, notes, err := summaryRun(ms)
	if err != nil {
		return nil, err
	}
	if okF, has := ms.scalar("request_count"); has {
		okN, valid := count(okF)
		if !valid {
			return nil, fmt.Errorf("request_count %g is not a count", okF)
		}
		errF, _ := ms.scalar("error_request_count")
		errN, valid := count(errF)
		if !valid {
			return nil, fmt.Errorf("error_request_count %g is not a count", errF)
		}
		limited, cancelled := aiperfErrorCodes(o)
		r.countsKnown, r.ok = true, okN
		r.rateLimited = min(limited, errN)
		r.errs = errN - r.rateLimited
		r.requests = r.ok + r.rateLimited + r.errs
		if cancelled > 0 {
			notes = append(notes, fmt.Sprintf("%s cancelled on purpose (--request-cancellation-rate) count as errors", plural(cancelled, "request")))
		}
	}
	if dur, ok, err := ms.seconds("benchmark_duration"); err != nil {
		return nil, err
	} else if ok {
		r.wallS = dur
	}
	ic, _ := o.obj("input_config")
	notes = append(notes, aiperfLoad(ic, r)...)
	p := &part{source: Source{Tool: "aiperf"}, runs: []*run{r}, pairKey: filepath.Dir(name)}
	p.notes = append(append(p.notes, aiperfSummaryNotes...), notes...)
	p.source.Version, _ = o.str("aiperf_version")
	if sv, ok := o.str("schema_version"); ok {
		p.source.Version = strings.TrimSpace(p.source.Version + " (schema " + sv + ")")
	} else if o.has("records") {
		p.source.Version = "records schema"
	}
	p.source.Model = firstString(firstPresent(ic, [][]string{{"endpoint", "model_names"}, {"model_names"}}))
	if p.source.Model == "" {
		if items, ok := ic.objAt("models"); ok {
			if list, ok := items.arr("items"); ok && len(list) > 0 {
				if m, ok := asObj(list[0]); ok {
					p.source.Model, _ = m.str("name")
				}
			}
		}
	}
	p.source.Date, _ = o.str("start_time")
	p.source.Endpoint = configEndpoint(ic)
	return p, nil
}

// configEndpoint is the URL (or URLs, comma separated) an AIPerf or
// GenAI-Perf input_config measured: endpoint.url (AIPerf's records schema,
// GenAI-Perf 0.0.16), endpoint.urls (AIPerf's newer schema) or url,
// without the credentials a URL may carry (user information, query values).
func configEndpoint(ic obj) string {
	var urls []string
	switch v := firstPresent(ic, [][]string{{"endpoint", "url"}, {"endpoint", "urls"}, {"url"}}).(type) {
	case string:
		urls = append(urls, v)
	case []any:
		for _, u := range v {
			if s, ok := u.(string); ok {
				urls = append(urls, s)
			}
		}
	}
	var out []string
	for _, u := range urls {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, displayURL(u))
		}
	}
	return strings.Join(out, ",")
}

// displayURL is a URL as a report may show it: without user information
// and with every query value but api-version masked. A URL without a
// scheme (AIPerf's --url localhost:8000) stays without one.
func displayURL(raw string) string {
	if strings.Contains(raw, "://") {
		return redact.URL(raw)
	}
	return strings.TrimPrefix(redact.URL("http://"+raw), "http://")
}

func firstPresent(o obj, paths [][]string) any {
	for _, p := range paths {
		if v, ok := o.at(p...); ok {
			return v
		}
	}
	return nil
}

// summaryRun reads what AIPerf and GenAI-Perf summaries share: throughput,
// output TPS and the TTFT, TPOT and E2E distributions.
func summaryRun(ms metricSet) (*run, []string, error) {
	if err := ms.check(); err != nil {
		return nil, nil, err
	}
	thr, ok := ms.scalar("request_throughput")
	switch _, m, present := ms.entry("request_throughput"); {
	case !present:
		return nil, nil, errors.New(`has no "request_throughput"`)
	case !ok:
		return nil, nil, fmt.Errorf(`"request_throughput" has an avg of %s: not a finite number`, shownValue(m["avg"]))
	case thr < 0:
		return nil, nil, fmt.Errorf(`"request_throughput" is %g req/s: a throughput is not negative`, thr)
	}
	r := &run{hasSummary: true, throughputRPS: thr}
	var err error
	if r.e2e, err = ms.latency("request_latency"); err != nil {
		return nil, nil, err
	}
	if !r.e2e.known() {
		return nil, nil, errors.New(`has no "request_latency"`)
	}
	if r.ttft, err = ms.latency("time_to_first_token", "ttft"); err != nil {
		return nil, nil, err
	}
	if r.tpot, err = ms.latency("inter_token_latency"); err != nil {
		return nil, nil, err
	}
	r.outputTPS, _ = ms.scalar("output_token_throughput")
	if r.outputTPS < 0 {
		return nil, nil, fmt.Errorf(`"output_token_throughput" is %g tokens/s: a throughput is not negative`, r.outputTPS)
	}
	var notes []string
	if !r.ttft.known() {
		notes = append(notes, "no TTFT in the file (a run without streaming): TTFT and TPOT are unknown")
	}
	return r, notes, nil
}

// aiperfErrorCodes counts the 429s and the deliberate cancellations in
// error_summary.
func aiperfErrorCodes(o obj) (limited, cancelled int) {
	list, _ := o.arr("error_summary")
	for _, v := range list {
		e, ok := asObj(v)
		if !ok {
			continue
		}
		n, _ := count(e["count"])
		code, _ := e.numAt("error_details", "code")
		typ, _ := e.strAt("error_details", "type")
		switch {
		case code == 429:
			limited += n
		case typ == "RequestCancellationError":
			cancelled += n
		}
	}
	return limited, cancelled
}

// aiperfLoad reads how the run was driven: the older input_config.loadgen
// (concurrency, request_rate) or the newer input_config.phases (the
// profiling phase: type "concurrency" for a closed loop, a rate otherwise).
func aiperfLoad(ic obj, r *run) []string {
	var conc, rate float64
	closed := true
	if phases, ok := ic.arr("phases"); ok {
		for _, v := range phases {
			ph, ok := asObj(v)
			if !ok {
				continue
			}
			if ex, _ := ph["exclude_from_results"].(bool); ex {
				continue
			}
			typ, _ := ph.str("type")
			closed = typ == "concurrency"
			conc, _ = ph.num("concurrency")
			rate, _ = ph.num("rate")
			if rate == 0 {
				rate, _ = ph.num("request_rate")
			}
		}
	} else if lg, ok := ic.obj("loadgen"); ok {
		conc, _ = lg.num("concurrency")
		rate, _ = lg.num("request_rate")
		mode, _ := lg.str("request_rate_mode")
		closed = rate <= 0 || mode == "concurrency_burst"
	}
	switch {
	case closed && conc >= 1 && conc <= maxConcurrency && conc == math.Trunc(conc):
		r.concurrency = int(conc)
	case !closed && rate > 0:
		r.rateRPS = rate
		if conc > 0 {
			return []string{fmt.Sprintf("open loop at %g req/s with a cap of %g in flight: the concurrency is estimated", rate, conc)}
		}
	}
	return nil
}

func looksAIPerfJSONL(vals []any) bool {
	if len(vals) == 0 {
		return false
	}
	o, ok := asObj(vals[0])
	if !ok {
		return false
	}
	_, md := o.obj("metadata")
	_, mt := o.obj("metrics")
	return md && mt
}

// parseAIPerfJSONL reads profile_export.jsonl: one request per line with
// metadata (request_start_ns or timestamp_ns; benchmark_phase, or
// credit_phase in older versions, "warmup" or "profiling"), metrics
// ({value, unit} each) and error (code, type, message) for failed
// requests.
func parseAIPerfJSONL(name string, vals []any) (*part, error) {
	type line struct {
		rec   measure.Record
		start int64
		timed bool
	}
	lines := make([]line, 0, len(vals))
	var t0 int64 = math.MaxInt64
	for i, v := range vals {
		o, ok := asObj(v)
		if !ok {
			return nil, fmt.Errorf("line %d is not an object", i+1)
		}
		md, ok1 := o.obj("metadata")
		mt, ok2 := o.obj("metrics")
		if !ok1 || !ok2 {
			return nil, fmt.Errorf(`line %d has no "metadata" or "metrics"`, i+1)
		}
		rec, err := aiperfRecord(md, mt, o)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		rec.Index = i
		l := line{rec: rec}
		if l.start, l.timed = asInt64(md["timestamp_ns"]); !l.timed {
			l.start, l.timed = asInt64(md["request_start_ns"])
		}
		if l.timed {
			t0 = min(t0, l.start)
		}
		lines = append(lines, l)
	}
	timed := true
	recs := make([]measure.Record, len(lines))
	for i, l := range lines {
		timed = timed && l.timed
		if l.timed {
			l.rec.StartS = float64(l.start-t0) / 1e9
		}
		if err := checkRow(&l.rec, fmt.Sprintf("line %d", i+1)); err != nil {
			return nil, err
		}
		recs[i] = l.rec
	}
	r := &run{records: recs, recordsComplete: true, recordsTimed: timed}
	p := &part{source: Source{Tool: "aiperf", Version: "records"}, runs: []*run{r}, companion: true, pairKey: filepath.Dir(name)}
	p.notes = append(p.notes,
		"per-request TTFT is AIPerf's time_to_first_token and E2E its request_latency; TPOT is (E2E − TTFT)/(output_sequence_length − 1), which equals AIPerf's inter_token_latency")
	p.aloneNotes = append(p.aloneNotes, "the configured concurrency is in profile_export_aiperf.json of the same folder: import both files together")
	return p, nil
}

func aiperfRecord(md, mt, o obj) (measure.Record, error) {
	rec := measure.Record{Attempts: 1}
	var err error
	if rec.TTFTMs, err = aiperfValueMs(mt, "time_to_first_token", "ttft"); err != nil {
		return rec, err
	}
	if rec.E2EMs, err = aiperfValueMs(mt, "request_latency"); err != nil {
		return rec, err
	}
	rec.OutputTokens, _ = count(aiperfValue(mt, "output_sequence_length", "output_token_count"))
	rec.InputTokens, _ = count(aiperfValue(mt, "input_sequence_length"))
	// The phase is benchmark_phase in current versions, credit_phase in
	// older ones; warm-up rows take no part in the step.
	phase, _ := md.str("benchmark_phase")
	if phase == "" {
		phase, _ = md.str("credit_phase")
	}
	rec.Warmup = phase == "warmup"
	if e, failed := o.obj("error"); failed {
		code, _ := e.num("code")
		rec.Status = int(code)
		if code < 100 || code > 599 {
			rec.Status = 0
		}
		rec.ErrorClass = classForStatus(rec.Status)
		if rec.Status == 0 {
			msg, _ := e.str("message")
			rec.Status, rec.ErrorClass = classifyErrorText(msg)
		}
		return rec, nil
	}
	rec.Status = 200
	rec.OK = rec.OutputTokens > 0 || rec.TTFTMs > 0
	if !rec.OK {
		rec.ErrorClass = measure.ErrBadStream
	}
	return rec, nil
}

// aiperfValue returns metrics[name].value for the first name present.
func aiperfValue(mt obj, names ...string) any {
	for _, n := range names {
		if v, ok := mt.at(n, "value"); ok {
			return v
		}
	}
	return nil
}

// aiperfValueMs returns a time metric in milliseconds, 0 when absent.
func aiperfValueMs(mt obj, names ...string) (float64, error) {
	for _, n := range names {
		m, ok := mt.obj(n)
		if !ok {
			continue
		}
		v, ok := m.num("value")
		if !ok {
			return 0, fmt.Errorf("%s has no numeric value", n)
		}
		unit, _ := m.str("unit")
		f, err := msPerUnit(unit)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", n, err)
		}
		return v * f, nil
	}
	return 0, nil
}
