package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// GuideLLM's CSV export (`guidellm run ... --output kind=csv`,
// benchmarks.csv) has three header rows — a group ("Request Latency"), a
// field ("Successful Sec") and a unit or statistic ("Median") per column —
// and one row per benchmark. A distribution has the columns Mean, Median,
// Std Dev and Percentiles, the last a list [min, p0.1, p1, p5, p10, p25,
// p75, p90, p95, p99, max]; one status of a distribution (successful,
// errored, incomplete) is left out when it sums to zero. The benchmark's
// load is in its strategy column and the profile's JSON (the streams of a
// concurrent profile, the rates of a constant or poisson one, indexed by
// the run index).

// guidellmCSVPercentiles are the quantiles of the Percentiles list, in order.
var guidellmCSVPercentiles = []float64{0, 0.001, 0.01, 0.05, 0.10, 0.25, 0.75, 0.90, 0.95, 0.99, 1}

func looksGuideLLMCSV(header []string) bool {
	has := func(g string) bool {
		for _, h := range header {
			if strings.TrimSpace(h) == g {
				return true
			}
		}
		return false
	}
	return has("Run Info") && has("Request Counts") && has("Timings")
}

func parseGuideLLMCSV(name string, data []byte) (*part, error) {
	rows, err := readCSV(data)
	if err != nil {
		return nil, err
	}
	if len(rows) < 4 {
		return nil, errors.New("has no benchmark rows under its three header rows")
	}
	cols := map[string]int{}
	for j := range rows[0] {
		key := make([]string, 3)
		for i := range 3 {
			if j < len(rows[i]) {
				key[i] = strings.TrimSpace(rows[i][j])
			}
		}
		cols[strings.Join(key, "|")] = j
	}
	p := &part{source: Source{Tool: "guidellm", Version: "csv export"}}
	p.notes = append(p.notes,
		"TPOT is GuideLLM's inter_token_latency_ms, (last token − first token)/(output tokens − 1), which is the planner's TPOT; GuideLLM's time_per_output_token_ms divides by every output token and is not used",
		"throughput is successful requests over the benchmark's duration; incomplete requests (cut off when the benchmark ended) are left out")
	for i, row := range rows[3:] {
		if len(row) == 1 && strings.TrimSpace(row[0]) == "" {
			continue
		}
		cell := func(key string) string {
			if j, ok := cols[key]; ok && j < len(row) {
				return strings.TrimSpace(row[j])
			}
			return ""
		}
		r, notes, err := guidellmCSVRun(cell)
		if err != nil {
			return nil, fmt.Errorf("benchmark %d of %d: %w", i+1, len(rows)-3, err)
		}
		r.label = fmt.Sprintf("%s benchmark %d (%s)", baseName(name), i+1, strategyLabel(r))
		for _, n := range notes {
			p.notes = append(p.notes, r.label+": "+n)
		}
		p.runs = append(p.runs, r)
		if p.source.Model == "" || p.source.Endpoint == "" {
			var backend map[string]any
			if json.Unmarshal([]byte(cell("Run Info|Backend|")), &backend) == nil {
				if p.source.Model == "" {
					p.source.Model, _ = backend["model"].(string)
				}
				if t, _ := backend["target"].(string); strings.TrimSpace(t) != "" && p.source.Endpoint == "" {
					p.source.Endpoint = displayURL(strings.TrimSpace(t))
				}
			}
		}
	}
	if len(p.runs) == 0 {
		return nil, errors.New("has no benchmark rows under its three header rows")
	}
	return p, nil
}

func guidellmCSVRun(cell func(string) string) (*run, []string, error) {
	num := func(key string) (float64, bool) { return asNum(cell(key)) }
	succ, ok1 := count(cell("Request Counts|Successful|"))
	errd, ok2 := count(cell("Request Counts|Errored|"))
	if !ok1 || !ok2 {
		return nil, nil, errors.New(`has no "Request Counts" Successful and Errored`)
	}
	dur, ok := num("Timings|Duration|Sec")
	if !ok || dur <= 0 {
		return nil, nil, errors.New(`has no "Timings" Duration`)
	}
	r := &run{hasSummary: true, countsKnown: true, ok: succ, errs: errd, requests: succ + errd, wallS: dur,
		throughputRPS: float64(succ) / dur}
	var notes []string
	if inc, ok := count(cell("Request Counts|Incomplete|")); ok && inc > 0 {
		notes = append(notes, fmt.Sprintf("%s left out", plural(inc, "incomplete request")))
	}
	if errd > 0 {
		notes = append(notes, "errored requests count as errors: the summary does not give their status codes")
	}
	var err error
	if r.ttft, err = guidellmCSVDist(cell, "Time to First Token|Successful ms", 1); err != nil {
		return nil, nil, err
	}
	if r.tpot, err = guidellmCSVDist(cell, "Inter Token Latency|Successful ms", 1); err != nil {
		return nil, nil, err
	}
	if r.e2e, err = guidellmCSVDist(cell, "Request Latency|Successful Sec", 1000); err != nil {
		return nil, nil, err
	}
	if !r.ttft.known() || !r.e2e.known() {
		return nil, nil, errors.New(`has no "Time to First Token" or "Request Latency" columns`)
	}
	if out, ok := num("Token Metrics|Successful Output Tokens|Mean"); ok {
		r.outputTPS = out * float64(succ) / dur
	}
	var profile map[string]any
	_ = json.Unmarshal([]byte(cell("Run Info|Profile|")), &profile)
	index, _ := count(cell("Run Info|Run Index|"))
	switch cell("Benchmark|Strategy|") {
	case "synchronous":
		r.concurrency = 1
	case "concurrent":
		streams, ok := profileValue(profile, "streams", index)
		if !ok || streams < 1 || streams > maxConcurrency || streams != math.Trunc(streams) {
			return nil, nil, fmt.Errorf("is a concurrent benchmark whose streams the profile (run index %d) does not give", index)
		}
		r.concurrency = int(streams)
	default:
		if rate, ok := profileValue(profile, "rate", index); ok && rate > 0 {
			r.rateRPS = rate
		}
		if c, ok := num("Server Throughput|Successful Concurrency|Mean"); ok && c > 0 {
			r.meanInFlight = c
		}
	}
	return r, notes, nil
}

// profileValue returns the profile's key (a number, or a list indexed by
// the run index) as a number.
func profileValue(profile map[string]any, key string, index int) (float64, bool) {
	switch v := profile[key].(type) {
	case float64:
		return v, true
	case []any:
		if index < len(v) {
			return asNum(v[index])
		}
	}
	return 0, false
}

// guidellmCSVDist reads the Mean, Median and Percentiles columns of one
// distribution, scaled into milliseconds.
func guidellmCSVDist(cell func(string) string, prefix string, scale float64) (summary, error) {
	var s summary
	s.mean, _ = asNum(cell(prefix + "|Mean"))
	if v, ok := asNum(cell(prefix + "|Median")); ok {
		s.set(0.5, v)
	}
	if text := cell(prefix + "|Percentiles"); text != "" {
		var list []float64
		if err := json.Unmarshal([]byte(text), &list); err != nil || len(list) != len(guidellmCSVPercentiles) {
			return summary{}, fmt.Errorf("%s Percentiles %q is not a list of %d numbers", strings.ReplaceAll(prefix, "|", " "), text, len(guidellmCSVPercentiles))
		}
		for i, q := range guidellmCSVPercentiles {
			s.set(q, list[i])
		}
	}
	return s.scale(scale), nil
}
