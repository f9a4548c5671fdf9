package importer

import (
	"math"
)

// NVIDIA GenAI-Perf (`genai-perf profile ...`) writes
// profile_export_genai_perf.json: each metric as {unit, avg, min, max, p25
// … p99, std} at the top level, and the command's arguments under
// input_config. Its definitions match the planner's (docs/concepts.md, "Metrics"): TTFT is the first
// response, request_latency runs to the last response, and
// inter_token_latency is (request_latency − TTFT)/(output tokens − 1) per
// request. It records no request counts and no duration; request_throughput
// is requests over the span from the first send to the last response.

func looksGenAIPerfJSON(vals []any) bool {
	o, ok := singleObj(vals)
	if !ok || (!isGenAIPerfConfig(o) && looksAIPerfJSON(vals)) {
		return false
	}
	ms := collectMetrics(o)
	_, _, hasLatency := ms.entry("time_to_first_token", "request_latency", "inter_token_latency")
	_, _, hasThroughput := ms.entry("request_throughput")
	return hasLatency && hasThroughput
}

func parseGenAIPerfJSON(_ string, vals []any) (*part, error) {
	o, _ := singleObj(vals)
	r, notes, err := summaryRun(collectMetrics(o))
	if err != nil {
		return nil, err
	}
	ic, _ := o.obj("input_config")
	conc := firstNum(ic, [][]string{{"concurrency"}, {"perf_analyzer", "stimulus", "concurrency"}})
	rate := firstNum(ic, [][]string{{"request_rate"}, {"perf_analyzer", "stimulus", "request_rate"}})
	switch {
	case conc >= 1 && conc <= maxConcurrency && conc == math.Trunc(conc):
		r.concurrency = int(conc)
	case rate > 0:
		r.rateRPS = rate
	}
	p := &part{source: Source{Tool: "genai-perf"}, runs: []*run{r}}
	if r.concurrency == 0 && r.rateRPS == 0 {
		notes = append(notes, "the file's input_config gives no concurrency or request rate (perf_analyzer.stimulus): it is estimated")
	}
	p.source.Model = firstString(firstPresent(ic, [][]string{{"model"}, {"model_names"}}))
	p.source.Endpoint = configEndpoint(ic)
	if s, ok := ic.strAt("endpoint", "type"); ok && s != "" {
		p.source.Settings = map[string]string{"endpoint_type": s}
	}
	p.notes = append([]string{
		"TTFT, TPOT (GenAI-Perf's inter_token_latency, (request_latency − TTFT)/(output tokens − 1)) and E2E (request_latency) match the planner's definitions",
	}, notes...)
	return p, nil
}

// isGenAIPerfConfig reports whether the document's input_config is
// GenAI-Perf's: its arguments in sections (perf_analyzer with the stimulus,
// endpoint, input, tokenizer), where AIPerf's has loadgen or phases.
// GenAI-Perf 0.0.16 also writes an endpoint section and a request_count
// metric, which AIPerf's summary has too.
func isGenAIPerfConfig(o obj) bool {
	ic, ok := o.obj("input_config")
	if !ok {
		return false
	}
	_, pa := ic.obj("perf_analyzer")
	return pa
}

func firstNum(o obj, paths [][]string) float64 {
	for _, p := range paths {
		if v, ok := o.numAt(p...); ok {
			return v
		}
	}
	return 0
}
