package importer

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The files of these tests are written here in the layouts the newest
// versions of the tools write, built from the tools' own source (the
// upstream file of each layout is named beside its generator and in
// testdata/PROVENANCE.md). Key names and nesting follow upstream; key
// order and the figures not read are not reproduced. Every expected
// number is worked out by hand in the comment beside it.

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func importOne(t *testing.T, name string, data []byte) *Imported {
	t.Helper()
	imp, err := Import(name, data, deadline12s)
	if err != nil {
		t.Fatalf("import %s: %v", name, err)
	}
	return imp
}

func hasNote(imp *Imported, sub string) bool {
	for _, n := range imp.Notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

// vllmDefaultSave is `vllm bench serve --save-result` without
// --save-detailed in the newest layout (vllm/benchmarks/serve.py:
// result_json of main_async, with the per-request latencies and
// queue_times that the client-queue change keeps in the default save):
// 10 requests at --max-concurrency 2, the default --percentile-metrics
// (ttft, tpot, itl) and --metric-percentiles (99). Request 5 failed (its
// latency stays 0). The 9 successes took 1.0, 1.1, … 1.8 s.
func vllmDefaultSave() map[string]any {
	lat := []any{1.0, 1.1, 1.2, 1.3, 1.4, 0.0, 1.5, 1.6, 1.7, 1.8}
	return map[string]any{
		"date": "20260901-101500", "endpoint_type": "openai-chat", "backend": "openai-chat", "label": nil,
		"model_id": "meta-llama/Llama-3.1-8B-Instruct", "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct",
		"num_prompts": 10, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 2,
		"duration": 7.5, "completed": 9, "failed": 1, "total_input_tokens": 9216, "total_output_tokens": 1152,
		"request_throughput": 1.2, "request_goodput": nil, "output_throughput": 153.6, "total_token_throughput": 1382.4,
		"max_output_tokens_per_s": 260.0, "max_concurrent_requests": 2,
		"mean_ttft_ms": 210.0, "median_ttft_ms": 205.0, "std_ttft_ms": 8.0, "p99_ttft_ms": 229.0,
		"mean_tpot_ms": 9.4, "median_tpot_ms": 9.4, "std_tpot_ms": 0.5, "p99_tpot_ms": 10.6,
		"mean_itl_ms": 9.4, "median_itl_ms": 9.3, "std_itl_ms": 0.6, "p99_itl_ms": 11.0,
		"mean_client_queue_time_ms": 700.0, "median_client_queue_time_ms": 720.0, "p99_client_queue_time_ms": 1390.0,
		"latencies":   lat,
		"queue_times": []any{0.0, 0.0, 1.0, 1.1, 1.2, 1.3, 1.4, 1.2, 1.5, 1.6},
	}
}

// TestVLLMDefaultSaveUsesItsLatencies: E2E comes from the real latencies,
// not from TTFT + TPOT × (tokens − 1) or from p99 standing in for p95.
func TestVLLMDefaultSaveUsesItsLatencies(t *testing.T) {
	imp := importOne(t, "c2.json", mustJSON(t, vllmDefaultSave()))
	s := oneStep(t, imp)
	eqInt(t, "concurrency", s.Concurrency, 2) // max_concurrency
	if s.ConcurrencyEstimated || s.E2EEstimated || s.GoodputEstimated {
		t.Errorf("estimated: concurrency %v, E2E %v, goodput %v", s.ConcurrencyEstimated, s.E2EEstimated, s.GoodputEstimated)
	}
	eqInt(t, "ok", s.OK, 9)
	eqInt(t, "errors", s.Errors, 1)
	// Sorted successes 1000 … 1800 ms; numpy's linear p50 is x[4], p95
	// x[7] + 0.6 (x[8] − x[7]) = 1700 + 60.
	near(t, "E2E p50", s.E2EP50Ms, 1400)
	near(t, "E2E p95", s.E2EP95Ms, 1760)
	near(t, "E2E p99", s.E2EP99Ms, 1792)  // x[7] + 0.92 × 100
	near(t, "TTFT p95", s.TTFTP95Ms, 229) // p99_ttft_ms, the upper bound the file gives
	near(t, "throughput", s.ThroughputRPS, 1.2)
	if !hasNote(imp, "E2E from the file's per-request latencies") || !hasNote(imp, "queue_times") {
		t.Errorf("notes %q", imp.Notes)
	}
	// All 9 within the 12 s deadline; with a 1.45 s deadline 5 of 9.
	near(t, "goodput", s.GoodputRPS, 1.2)
	tight := deadline12s
	tight.DeadlineMs = 1450
	imp, err := Import("c2.json", mustJSON(t, vllmDefaultSave()), tight)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "goodput within 1.45 s", oneStep(t, imp).GoodputRPS, 1.2*5/9)
}

// vllmRampUpFile is a `--ramp-up-strategy linear --ramp-up-start-rps 1
// --ramp-up-end-rps 3` run of 21 requests (serve.py: request i is sent at
// the rate 1 + 2·i/20, and rps_change_events records 1, 2 and 3 as they
// are reached). Requests 0–9 go at 1.x req/s, 10–19 at 2.x, 20 at 3.
// Each request's latency is 0.5 s; start_times step by 1/rate.
func vllmRampUpFile(withStarts bool) map[string]any {
	var lat, starts []any
	t := 100.0
	for i := range 21 {
		lat = append(lat, 0.5)
		starts = append(starts, t)
		t += 1 / (1 + 2*float64(i)/20)
	}
	o := map[string]any{
		"date": "20260901-110000", "backend": "openai-chat", "model_id": "m", "tokenizer_id": "m",
		"num_prompts": 21, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": nil,
		"ramp_up_strategy": "linear", "ramp_up_start_rps": 1, "ramp_up_end_rps": 3,
		"duration": t - 100 + 0.5, "completed": 21, "failed": 0, "total_output_tokens": 2100,
		"request_throughput": 21 / (t - 100 + 0.5), "output_throughput": 100.0,
		"mean_ttft_ms": 100.0, "median_ttft_ms": 100.0, "p99_ttft_ms": 120.0,
		"mean_tpot_ms": 4.0, "median_tpot_ms": 4.0, "p99_tpot_ms": 4.5,
		"rps_change_events": []any{
			map[string]any{"rps": 1, "timestamp": "2026-09-01T11:00:00.000000"},
			map[string]any{"rps": 2, "timestamp": "2026-09-01T11:00:07.300000"},
			map[string]any{"rps": 3, "timestamp": "2026-09-01T11:00:11.700000"},
		},
		"latencies": lat,
	}
	if withStarts {
		o["start_times"] = starts
	}
	return o
}

func TestVLLMRampUpIsSplitAtItsRateChanges(t *testing.T) {
	imp := importOne(t, "ramp.json", mustJSON(t, vllmRampUpFile(true)))
	if len(imp.Steps) != 3 {
		t.Fatalf("%d steps, want 3 (1, 2 and 3 req/s): %q", len(imp.Steps), imp.Notes)
	}
	for i, want := range []struct {
		rate float64
		ok   int
	}{{1, 10}, {2, 10}, {3, 1}} {
		s := imp.Steps[i]
		near(t, fmt.Sprintf("step %d rate", i), s.RateRPS, want.rate)
		eqInt(t, fmt.Sprintf("step %d ok", i), s.OK, want.ok)
		near(t, fmt.Sprintf("step %d E2E p50", i), s.E2EP50Ms, 500)
		if !s.ConcurrencyEstimated {
			t.Errorf("step %d: the concurrency of an open-loop step is estimated", i)
		}
	}
	if !hasNote(imp, "split at its rate changes into 3 open-loop steps") {
		t.Errorf("notes %q", imp.Notes)
	}
	// Without send times the run cannot be split: one step, with a warning.
	imp = importOne(t, "ramp.json", mustJSON(t, vllmRampUpFile(false)))
	if len(imp.Steps) != 1 || !hasNote(imp, "warning: a linear ramp-up from 1 to 3 req/s, imported as one step over the whole ramp") {
		t.Errorf("%d steps, notes %q", len(imp.Steps), imp.Notes)
	}
}

// vllmSweepRun is one run of `vllm bench sweep serve`
// (vllm/benchmarks/sweep/serve.py, run_benchmark: the bench serve result
// with --percentile-metrics ttft,tpot,itl,e2el, plus run_number and the
// combination's serve and bench overrides).
func vllmSweepRun(run, conc int, dur, p99ttft float64) map[string]any {
	o := vllmDefaultSave()
	delete(o, "latencies")
	delete(o, "queue_times")
	o["run_number"], o["max_num_seqs"], o["max_concurrency"] = run, 64, conc
	o["completed"], o["failed"], o["duration"], o["request_throughput"] = 20, 0, dur, 20/dur
	o["p99_ttft_ms"] = p99ttft
	o["mean_e2el_ms"], o["median_e2el_ms"], o["p99_e2el_ms"] = 1300.0, 1280.0, 1500.0+float64(run)
	return o
}

// TestVLLMSweepSummaryJSON: summary.json holds the 3 runs (--num-runs
// default) of one combination, pooled into one step.
func TestVLLMSweepSummaryJSON(t *testing.T) {
	runs := []any{vllmSweepRun(0, 4, 10, 230), vllmSweepRun(1, 4, 8, 250), vllmSweepRun(2, 4, 12, 240)}
	imp := importOne(t, "SERVE--max_num_seqs-64-BENCH--max_concurrency-4/summary.json", mustJSON(t, runs))
	s := oneStep(t, imp)
	eqInt(t, "concurrency", s.Concurrency, 4)
	eqInt(t, "ok", s.OK, 60)
	near(t, "wall", s.WallS, 30)              // 10 + 8 + 12 s
	near(t, "throughput", s.ThroughputRPS, 2) // 60 / 30
	near(t, "TTFT p95", s.TTFTP95Ms, 250)     // the highest p99_ttft_ms, an upper bound
	near(t, "E2E p95", s.E2EP95Ms, 1502)      // the highest p99_e2el_ms
	if !s.TTFTEstimated || !s.E2EEstimated || !hasNote(imp, "3 runs at concurrency 4, the repeats of one combination, pooled") {
		t.Errorf("TTFT estimated %v, E2E estimated %v, notes %q", s.TTFTEstimated, s.E2EEstimated, imp.Notes)
	}
}

// TestVLLMSweepSummaryCSV: summary.csv (pandas' to_csv of every run:
// an unnamed index column, then the result's keys) of two combinations of
// two runs each.
func TestVLLMSweepSummaryCSV(t *testing.T) {
	cols := []string{"", "date", "backend", "model_id", "num_prompts", "request_rate", "burstiness", "max_concurrency",
		"duration", "completed", "failed", "total_output_tokens", "request_throughput", "output_throughput",
		"mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms",
		"mean_e2el_ms", "median_e2el_ms", "p99_e2el_ms", "rps_change_events", "run_number", "max_num_seqs"}
	rows := [][]string{
		{"0", "20260901-120000", "openai-chat", "m", "20", "inf", "1.0", "1", "20.0", "20", "0", "2000", "1.0", "100.0", "100", "100", "110", "9", "9", "9.5", "1000", "990", "1100", "", "0", "64"},
		{"1", "20260901-120100", "openai-chat", "m", "20", "inf", "1.0", "1", "20.0", "20", "0", "2000", "1.0", "100.0", "101", "101", "112", "9", "9", "9.6", "1001", "991", "1105", "", "1", "64"},
		{"2", "20260901-120200", "openai-chat", "m", "80", "inf", "1.0", "4", "20.0", "80", "0", "8000", "4.0", "400.0", "120", "118", "150", "10", "10", "11", "1200", "1190", "1400", "", "0", "64"},
		{"3", "20260901-120300", "openai-chat", "m", "80", "inf", "1.0", "4", "25.0", "80", "0", "8000", "3.2", "320.0", "125", "119", "160", "10", "10", "12", "1250", "1195", "1450", "", "1", "64"},
	}
	var b strings.Builder
	b.WriteString(strings.Join(cols, ",") + "\n")
	for _, r := range rows {
		b.WriteString(strings.Join(r, ",") + "\n")
	}
	imp := importOne(t, "summary.csv", []byte(b.String()))
	if imp.Format != FormatVLLMSweepCSV || len(imp.Steps) != 2 {
		t.Fatalf("format %s, %d steps", imp.Format, len(imp.Steps))
	}
	s1, s4 := imp.Steps[0], imp.Steps[1]
	eqInt(t, "concurrency", s1.Concurrency, 1)
	eqInt(t, "concurrency", s4.Concurrency, 4)
	if s1.ConcurrencyEstimated || s4.ConcurrencyEstimated {
		t.Error("the sweep's max_concurrency is read, not estimated")
	}
	eqInt(t, "ok at 4", s4.OK, 160)
	near(t, "throughput at 4", s4.ThroughputRPS, 160.0/45) // 80 + 80 over 20 + 25 s
	near(t, "TTFT p50 at 1", s1.TTFTP50Ms, 101)            // the higher median_ttft_ms
}

// guidellmReport is a GuideLLM v0.7 report (src/guidellm/benchmark/schemas/
// report.py: metadata version 2, config, benchmarks; benchmark.py:
// config.strategy, metrics, requests by status; schemas/request_stats.py
// and info.py: each request's info.timings) of a concurrent profile at
// streams 2, with 3 requests kept. Each request's last token came 100 ms
// before its request_end, so E2E to the last token is request_latency −
// 0.1 s.
func guidellmReport() map[string]any {
	dist := func(mean, median, p95 float64) map[string]any {
		return map[string]any{"successful": map[string]any{"mean": mean, "median": median, "min": median * 0.9, "max": p95 * 1.05,
			"count": 3, "total_sum": mean * 3, "percentiles": map[string]any{"p50": median, "p90": p95 * 0.98, "p95": p95, "p99": p95 * 1.02}}}
	}
	var reqs []any
	for i, e2e := range []float64{1.2, 1.4, 1.6} {
		start := 1000.0 + float64(i)
		reqs = append(reqs, map[string]any{
			"type_": "generative_request_stats", "request_id": fmt.Sprint(i),
			"info": map[string]any{"timings": map[string]any{
				"request_start": start, "first_token_iteration": start + 0.2,
				"last_token_iteration": start + e2e - 0.1, "request_end": start + e2e,
				"token_iterations": 11,
			}},
			"input_metrics": map[string]any{"total_tokens": 128}, "output_metrics": map[string]any{"total_tokens": 11},
			"request_latency": e2e, "time_to_first_token_ms": 200.0, "output_tokens": 11, "prompt_tokens": 128,
		})
	}
	return map[string]any{
		"metadata": map[string]any{"version": 2, "guidellm_version": "0.7.3"},
		"config":   map[string]any{"profile": map[string]any{"kind": "concurrent", "streams": []any{2}}},
		"benchmarks": []any{map[string]any{
			"type_":      "generative_benchmark",
			"config":     map[string]any{"run_index": 0, "strategy": map[string]any{"type_": "concurrent", "streams": 2}},
			"start_time": 1000.0, "end_time": 1003.0, "duration": 3.0,
			"metrics": map[string]any{
				"request_totals":         map[string]any{"successful": 3, "errored": 0, "incomplete": 0, "total": 3},
				"request_latency":        dist(1.4, 1.4, 1.58),
				"time_to_first_token_ms": dist(200, 200, 200),
				"inter_token_latency_ms": dist(100, 100, 130),
				"output_token_count":     map[string]any{"successful": map[string]any{"total_sum": 33.0}},
			},
			"requests": map[string]any{"successful": reqs, "errored": []any{}, "incomplete": []any{}},
		}},
	}
}

func TestGuideLLMV07(t *testing.T) {
	doc := guidellmReport()
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"benchmarks.json", mustJSON(t, doc)},
		{"benchmarks.yaml", func() []byte {
			// report.py save_file: yaml.dump of the same dict.
			y, err := yaml.JSONToYAML(mustJSON(t, doc))
			if err != nil {
				t.Fatal(err)
			}
			return y
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			imp := importOne(t, tc.name, tc.data)
			s := oneStep(t, imp)
			eqInt(t, "concurrency", s.Concurrency, 2) // strategy streams
			if s.ConcurrencyEstimated || imp.Format != FormatGuideLLM {
				t.Errorf("format %s, concurrency estimated %v", imp.Format, s.ConcurrencyEstimated)
			}
			// E2E to the last token: 1.1, 1.3, 1.5 s (not 1.2, 1.4, 1.6).
			near(t, "E2E p50", s.E2EP50Ms, 1300)
			within(t, "E2E p95", s.E2EP95Ms, 1480, 1e-6) // 1300 + 0.9 × 200
			near(t, "TTFT p50", s.TTFTP50Ms, 200)
		})
	}
}

// guidellmCSV writes GuideLLM v0.7's benchmarks.csv (src/guidellm/
// benchmark/outputs/csv.py: three header rows of group, field and unit or
// statistic; a distribution as Mean, Median, Std Dev and Percentiles
// [min, p001, p01, p05, p10, p25, p75, p90, p95, p99, max]) of a
// concurrent profile at streams 1 and 4.
func guidellmCSV() string {
	header := [][3]string{
		{"Run Info", "Run ID", ""}, {"Run Info", "Run Index", ""}, {"Run Info", "Profile", ""}, {"Run Info", "Backend", ""},
		{"Benchmark", "Type", ""}, {"Benchmark", "Strategy", ""},
		{"Timings", "Duration", "Sec"},
		{"Request Counts", "Successful", ""}, {"Request Counts", "Incomplete", ""}, {"Request Counts", "Errored", ""}, {"Request Counts", "Total", ""},
		{"Request Latency", "Successful Sec", "Mean"}, {"Request Latency", "Successful Sec", "Median"}, {"Request Latency", "Successful Sec", "Std Dev"}, {"Request Latency", "Successful Sec", "Percentiles"},
		{"Time to First Token", "Successful ms", "Mean"}, {"Time to First Token", "Successful ms", "Median"}, {"Time to First Token", "Successful ms", "Std Dev"}, {"Time to First Token", "Successful ms", "Percentiles"},
		{"Inter Token Latency", "Successful ms", "Mean"}, {"Inter Token Latency", "Successful ms", "Median"}, {"Inter Token Latency", "Successful ms", "Std Dev"}, {"Inter Token Latency", "Successful ms", "Percentiles"},
		{"Server Throughput", "Successful Concurrency", "Mean"},
		{"Token Metrics", "Successful Output Tokens", "Mean"},
	}
	profile := `"{""kind"": ""concurrent"", ""streams"": [1, 4]}"`
	backend := `"{""model"": ""meta-llama/Llama-3.1-8B-Instruct""}"`
	bench := func(index int, dur, succ, e2eMedian, e2eP95, ttftP95 float64, inFlight float64) string {
		return strings.Join([]string{"run-1", fmt.Sprint(index), profile, backend, "generative_benchmark", "concurrent",
			fmt.Sprint(dur), fmt.Sprint(succ), "0", "0", fmt.Sprint(succ),
			fmt.Sprint(e2eMedian), fmt.Sprint(e2eMedian), "0.1", fmt.Sprintf(`"[%g, %g, %g, %g, %g, %g, %g, %g, %g, %g, %g]"`, e2eMedian*0.8, e2eMedian*0.8, e2eMedian*0.8, e2eMedian*0.85, e2eMedian*0.9, e2eMedian*0.95, e2eMedian*1.05, e2eP95*0.98, e2eP95, e2eP95*1.01, e2eP95*1.02),
			"210", "200", "5", fmt.Sprintf(`"[150, 150, 151, 160, 170, 190, 215, 230, %g, %g, %g]"`, ttftP95, ttftP95+5, ttftP95+10),
			"20", "20", "1", `"[18, 18, 18, 18.5, 19, 19.5, 20.5, 21, 21.5, 22, 23]"`,
			fmt.Sprint(inFlight), "256"}, ",")
	}
	var b strings.Builder
	for row := range 3 {
		cells := make([]string, len(header))
		for i, h := range header {
			cells[i] = h[row]
		}
		b.WriteString(strings.Join(cells, ",") + "\n")
	}
	b.WriteString(bench(0, 60, 40, 1.5, 1.7, 240, 0.99) + "\n")
	b.WriteString(bench(1, 60, 150, 1.6, 1.9, 300, 3.9) + "\n")
	return b.String()
}

func TestGuideLLMCSV(t *testing.T) {
	imp := importOne(t, "benchmarks.csv", []byte(guidellmCSV()))
	if imp.Format != FormatGuideLLMCSV || len(imp.Steps) != 2 {
		t.Fatalf("format %s, %d steps", imp.Format, len(imp.Steps))
	}
	s1, s4 := imp.Steps[0], imp.Steps[1]
	eqInt(t, "concurrency", s1.Concurrency, 1) // streams[run index 0]
	eqInt(t, "concurrency", s4.Concurrency, 4) // streams[run index 1]
	if s1.ConcurrencyEstimated || s4.ConcurrencyEstimated {
		t.Error("a concurrent benchmark's streams are read, not estimated")
	}
	near(t, "throughput at 4", s4.ThroughputRPS, 2.5) // 150 / 60 s
	near(t, "E2E p95 at 4", s4.E2EP95Ms, 1900)        // Percentiles[8] s
	near(t, "TTFT p95 at 4", s4.TTFTP95Ms, 300)       // Percentiles[8]
	near(t, "TPOT p50", s4.TPOTP50Ms, 20)             // Inter Token Latency Median
	near(t, "output TPS at 4", s4.OutputTPS, 640)     // 256 × 150 / 60
	if imp.Sources[0].Model != "meta-llama/Llama-3.1-8B-Instruct" {
		t.Errorf("model %q", imp.Sources[0].Model)
	}
}

// aiperfRecordLine is one line of AIPerf's profile_export.jsonl
// (aiperf/common/models/record_models.py: MetricRecordInfo with
// metadata.benchmark_phase "warmup" or "profiling", request_start_ns and
// request_end_ns, and metrics of {value, unit}).
func aiperfRecordLine(i int, phase string, ttftMs, latencyMs float64) map[string]any {
	start := int64(1_760_000_000_000_000_000) + int64(i)*250_000_000
	return map[string]any{
		"metadata": map[string]any{
			"session_num": i, "x_request_id": fmt.Sprintf("r-%d", i), "benchmark_phase": phase,
			"request_start_ns": start, "request_end_ns": start + int64(latencyMs*1e6), "worker_id": "w0", "record_processor_id": "p0",
			"was_cancelled": false,
		},
		"metrics": map[string]any{
			"time_to_first_token":    map[string]any{"value": ttftMs, "unit": "ms"},
			"request_latency":        map[string]any{"value": latencyMs, "unit": "ms"},
			"output_sequence_length": map[string]any{"value": 11, "unit": "tokens"},
			"input_sequence_length":  map[string]any{"value": 100, "unit": "tokens"},
		},
		"error": nil,
	}
}

// TestAIPerfWarmupRowsAreLeftOut: 2 warm-up rows and 4 profiling rows;
// the summary beside them counts the 4, and the two pair.
func TestAIPerfWarmupRowsAreLeftOut(t *testing.T) {
	var jsonl strings.Builder
	for i, r := range []struct {
		phase     string
		ttft, lat float64
	}{{"warmup", 900, 3000}, {"warmup", 800, 2800}, {"profiling", 100, 1000}, {"profiling", 110, 1100}, {"profiling", 120, 1200}, {"profiling", 130, 1300}} {
		jsonl.Write(mustJSON(t, aiperfRecordLine(i, r.phase, r.ttft, r.lat)))
		jsonl.WriteByte('\n')
	}
	stats := func(unit string, avg float64) map[string]any { return map[string]any{"unit": unit, "avg": avg} }
	summary := map[string]any{
		"schema_version": "1.0", "aiperf_version": "0.9.0",
		"request_throughput":  stats("requests/sec", 4/1.05),
		"request_latency":     map[string]any{"unit": "ms", "avg": 1150.0, "p50": 1150.0, "p95": 1285.0},
		"time_to_first_token": map[string]any{"unit": "ms", "avg": 115.0, "p50": 115.0, "p95": 128.5},
		"request_count":       stats("requests", 4), "error_request_count": stats("requests", 0),
		"benchmark_duration": stats("sec", 1.05),
		"input_config":       map[string]any{"loadgen": map[string]any{"concurrency": 1}, "endpoint": map[string]any{"model_names": []any{"m"}}},
	}
	imp, err := ImportMany([]File{
		{Name: "run/profile_export.jsonl", Data: []byte(jsonl.String())},
		{Name: "run/profile_export_aiperf.json", Data: mustJSON(t, summary)},
	}, deadline12s)
	if err != nil {
		t.Fatal(err)
	}
	s := oneStep(t, imp)
	eqInt(t, "requests", s.Requests, 4)
	eqInt(t, "concurrency", s.Concurrency, 1) // the summary's input_config
	near(t, "TTFT p50", s.TTFTP50Ms, 115)     // of 100 … 130, warm-up left out
	near(t, "E2E p50", s.E2EP50Ms, 1150)
	if !hasNote(imp, "supplies the per-request rows") {
		t.Errorf("not paired: %q", imp.Notes)
	}
}

// TestAIPerfSweep reads profile_export_aiperf_sweep.json (AIPerf's
// docs/api/sweep-aggregates.md and src/aiperf/orchestrator/aggregation/
// sweep.py: per_combination_metrics of parameters and "<tag>_<stat>"
// metrics with the mean over trials) of a single-trial concurrency sweep.
func TestAIPerfSweep(t *testing.T) {
	m := func(mean float64, unit string) map[string]any {
		return map[string]any{"mean": mean, "std": 0, "min": mean, "max": mean, "cv": 0, "ci_low": mean, "ci_high": mean, "unit": unit}
	}
	combo := func(c int, thr, ttft50, ttft95, lat50, lat95 float64) map[string]any {
		return map[string]any{"parameters": map[string]any{"concurrency": c}, "metrics": map[string]any{
			"request_throughput_avg":  m(thr, "requests/sec"),
			"time_to_first_token_avg": m(ttft50, "ms"), "time_to_first_token_p50": m(ttft50, "ms"), "time_to_first_token_p95": m(ttft95, "ms"), "time_to_first_token_p99": m(ttft95+5, "ms"),
			"request_latency_avg": m(lat50, "ms"), "request_latency_p50": m(lat50, "ms"), "request_latency_p95": m(lat95, "ms"),
			"inter_token_latency_p50": m(10, "ms"), "inter_token_latency_p95": m(12, "ms"), "inter_token_latency_avg": m(10, "ms"),
			"request_count_avg": m(float64(20*c), "requests"), "error_request_count_avg": m(0, "requests"),
			"benchmark_duration_avg": m(float64(20*c)/thr, "sec"),
		}}
	}
	doc := map[string]any{
		"aggregation_type": "sweep", "num_profile_runs": 2, "num_successful_runs": 2, "failed_runs": []any{},
		"metadata":                map[string]any{"sweep_parameters": []any{map[string]any{"name": "concurrency", "values": []any{1, 8}}}, "num_combinations": 2},
		"per_combination_metrics": []any{combo(1, 0.9, 100, 120, 1100, 1200), combo(8, 6.4, 180, 260, 1250, 1500)},
		"best_configurations":     map[string]any{}, "pareto_optimal": []any{map[string]any{"concurrency": 8}},
	}
	imp := importOne(t, "sweep_aggregate/profile_export_aiperf_sweep.json", mustJSON(t, doc))
	if imp.Format != FormatAIPerfSweep || len(imp.Steps) != 2 {
		t.Fatalf("format %s, %d steps", imp.Format, len(imp.Steps))
	}
	s1, s8 := imp.Steps[0], imp.Steps[1]
	eqInt(t, "concurrency", s1.Concurrency, 1)
	eqInt(t, "concurrency", s8.Concurrency, 8)
	if s1.ConcurrencyEstimated || s8.ConcurrencyEstimated {
		t.Error("the sweep's concurrency is read, not estimated")
	}
	near(t, "TTFT p95 at 8", s8.TTFTP95Ms, 260)
	near(t, "E2E p95 at 8", s8.E2EP95Ms, 1500)
	near(t, "throughput at 8", s8.ThroughputRPS, 6.4)
	eqInt(t, "ok at 8", s8.OK, 160)
	near(t, "wall at 8", s8.WallS, 25) // 160 / 6.4
}

// TestGenAIPerf0016IsItself: GenAI-Perf 0.0.16's JSON
// (genai_perf/export_data/json_exporter.py: the stats with input_config,
// ConfigCommand.to_json_dict, holding endpoint and perf_analyzer.stimulus,
// and a request_count metric) is read as GenAI-Perf, its concurrency read.
func TestGenAIPerf0016IsItself(t *testing.T) {
	stat := func(unit string, avg, p50, p95 float64) map[string]any {
		return map[string]any{"unit": unit, "avg": avg, "p50": p50, "p95": p95, "p99": p95 * 1.05, "min": p50 * 0.8, "max": p95 * 1.1, "std": 1}
	}
	doc := map[string]any{
		"request_throughput":      map[string]any{"unit": "requests/sec", "avg": 12.5},
		"request_latency":         stat("ms", 1250, 1240, 1400),
		"time_to_first_token":     stat("ms", 210, 200, 260),
		"inter_token_latency":     stat("ms", 8, 8, 9),
		"output_token_throughput": map[string]any{"unit": "tokens/sec", "avg": 1600},
		"request_count":           map[string]any{"unit": "count", "avg": 200},
		"input_config": map[string]any{
			"model_names": []any{"meta-llama/Llama-3.1-8B-Instruct"}, "subcommand": "profile",
			"endpoint":      map[string]any{"type": "chat", "streaming": true, "url": "localhost:8000", "service_kind": "openai"},
			"perf_analyzer": map[string]any{"stimulus": map[string]any{"concurrency": 16}, "warmup_request_count": 0},
			"input":         map[string]any{"num_dataset_entries": 100},
		},
	}
	imp := importOne(t, "profile_export_genai_perf.json", mustJSON(t, doc))
	s := oneStep(t, imp)
	if imp.Format != FormatGenAIPerfJSON {
		t.Errorf("format %s, want %s", imp.Format, FormatGenAIPerfJSON)
	}
	eqInt(t, "concurrency", s.Concurrency, 16) // perf_analyzer.stimulus.concurrency
	if s.ConcurrencyEstimated {
		t.Error("concurrency estimated; the file states 16")
	}
	near(t, "TTFT p95", s.TTFTP95Ms, 260)
	if imp.Sources[0].Model != "meta-llama/Llama-3.1-8B-Instruct" {
		t.Errorf("model %q", imp.Sources[0].Model)
	}
}
