package importer

import (
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/analysis"
)

// Every number below was read by hand from the source file named in the
// case; the comment beside it names the key.

func checkVLLM1p1d(t *testing.T, imp *Imported) {
	s := oneStep(t, imp)
	near(t, "throughput", s.ThroughputRPS, 3.4924899488507317) // request_throughput
	near(t, "rate", s.RateRPS, 3.6)                            // request_rate
	near(t, "wall", s.WallS, 57.265733883017674)               // duration
	near(t, "output TPS", s.OutputTPS, 698.4979897701463)      // output_throughput
	near(t, "TTFT p50", s.TTFTP50Ms, 248.47486198996194)       // median_ttft_ms
	near(t, "TTFT p95", s.TTFTP95Ms, 261.13618802046403)       // p95_ttft_ms
	near(t, "TPOT p50", s.TPOTP50Ms, 17.295888123007717)       // median_tpot_ms
	near(t, "TPOT p95", s.TPOTP95Ms, 28.49777645053255)        // p95_tpot_ms
	eqInt(t, "ok", s.OK, 200)                                  // completed
	eqInt(t, "requests", s.Requests, 200)                      // num_prompts
	// No e2el in the file: E2E = TTFT + TPOT × (40000/200 − 1).
	near(t, "E2E p50", s.E2EP50Ms, 248.47486198996194+17.295888123007717*199)
	near(t, "E2E p95", s.E2EP95Ms, 261.13618802046403+28.49777645053255*199)
	// Open loop at 3.6 req/s: L = 3.4925 × (249.54 + 17.815 × 199) ms = 13.25.
	eqInt(t, "concurrency", s.Concurrency, 13)
	if !s.ConcurrencyEstimated {
		t.Error("concurrency of an open-loop run should be marked estimated")
	}
	if imp.Sources[0].Model != "meta-llama/Llama-3.1-8B-Instruct" || imp.Sources[0].Date != "2025-05-13T04:39:12" {
		t.Errorf("source = %+v", imp.Sources[0])
	}
	if imp.Latency == nil || len(imp.Latency.Curve) != 1 || imp.Latency.Knee != nil {
		t.Errorf("latency block = %+v, want one point and no knee", imp.Latency)
	}
}

func checkVLLM2Replicas(t *testing.T, imp *Imported) {
	s := oneStep(t, imp)
	near(t, "throughput", s.ThroughputRPS, 3.483002633829972) // request_throughput
	near(t, "wall", s.WallS, 57.42171942605637)               // duration
	near(t, "TTFT p50", s.TTFTP50Ms, 244.08852099440992)      // median_ttft_ms
	near(t, "TTFT p95", s.TTFTP95Ms, 257.0488001947524)       // p95_ttft_ms
	near(t, "TPOT p50", s.TPOTP50Ms, 15.191016650738794)      // median_tpot_ms
	near(t, "TPOT p95", s.TPOTP95Ms, 25.349744470367657)      // p95_tpot_ms
	eqInt(t, "concurrency", s.Concurrency, 12)                // 3.483 × 3.4616 s = 12.06
}

func checkGuideLLMStripped(t *testing.T, imp *Imported) {
	s := oneStep(t, imp)
	eqInt(t, "concurrency", s.Concurrency, 1) // args.strategy.type_ synchronous
	if s.ConcurrencyEstimated {
		t.Error("a synchronous benchmark has a known concurrency of 1")
	}
	eqInt(t, "ok", s.OK, 46)                                      // request_totals.successful
	eqInt(t, "errors", s.Errors, 0)                               // request_totals.errored
	near(t, "wall", s.WallS, 29.997201442718506)                  // duration
	near(t, "throughput", s.ThroughputRPS, 46/29.997201442718506) // successful / duration
	near(t, "TTFT p50", s.TTFTP50Ms, 16.38054847717285)           // time_to_first_token_ms.successful.median
	near(t, "TTFT p95", s.TTFTP95Ms, 19.00935173034668)           // ….percentiles.p95
	near(t, "TPOT p50", s.TPOTP50Ms, 4.9241227427805505)          // inter_token_latency_ms.successful.median
	near(t, "TPOT p95", s.TPOTP95Ms, 5.032650129062923)           // ….percentiles.p95
	near(t, "E2E p50", s.E2EP50Ms, 642.4565315246582)             // request_latency.successful.median, seconds
	near(t, "E2E p95", s.E2EP95Ms, 656.728982925415)              // ….percentiles.p95
	near(t, "output TPS", s.OutputTPS, 5888/29.997201442718506)   // output_token_count total_sum / duration
	if len(imp.Records) != 1 {
		t.Fatalf("%d sample rows, want 1", len(imp.Records))
	}
	r := imp.Records[0]
	near(t, "sample TTFT", r.TTFTMs, 21.281957626342773) // requests.successful[0].time_to_first_token_ms
	// last_token_time − start_time, to the last token as the planner's E2E.
	within(t, "sample E2E", r.E2EMs, (1749157168.8717923-1749157168.1827004)*1000, 1e-3)
	eqInt(t, "sample output tokens", r.OutputTokens, 128)
	eqInt(t, "sample input tokens", r.InputTokens, 257)
}

func checkGuideLLMV2(t *testing.T, imp *Imported) {
	if len(imp.Steps) != 2 {
		t.Fatalf("%d steps, want 2 (rates 2 and 4)", len(imp.Steps))
	}
	want := []struct{ rate, wall, ttft50, tpot50, e2e50 float64 }{
		{2, 5.01964807510376, 11.276006698608398, 1.0459763663155692, 19.269227981567383},
		{4, 2.5186119079589844, 9.419918060302734, 0.9067058563232422, 15.973806381225586},
	}
	for i, w := range want {
		s := imp.Steps[i]
		near(t, "rate", s.RateRPS, w.rate)                // config.strategy.rate
		near(t, "wall", s.WallS, w.wall)                  // duration
		near(t, "TTFT p50", s.TTFTP50Ms, w.ttft50)        // time_to_first_token_ms.successful.median
		near(t, "TPOT p50", s.TPOTP50Ms, w.tpot50)        // inter_token_latency_ms.successful.median
		near(t, "E2E p50", s.E2EP50Ms, w.e2e50)           // request_latency.successful.median × 1000
		eqInt(t, "ok", s.OK, 2)                           // metrics.request_totals.successful
		eqInt(t, "concurrency", s.Concurrency, 1)         // mean in flight 0.008 and 0.014, at least 1
		near(t, "throughput", s.ThroughputRPS, 2/w.wall)  // successful / duration
		near(t, "goodput", s.GoodputRPS, s.ThroughputRPS) // every E2E (max 20 ms) is within 12 s
		near(t, "output TPS", s.OutputTPS, 16/w.wall)     // output_token_count total_sum 16
		if !s.ConcurrencyEstimated || s.GoodputEstimated {
			t.Errorf("step %d flags: %+v", i, s)
		}
	}
	if imp.Sources[0].Version != "0.8.0.dev18 report v2" || imp.Sources[0].Model != "e2e-mock-model" {
		t.Errorf("source = %+v", imp.Sources[0])
	}
	if imp.Latency == nil || len(imp.Latency.Curve) != 1 || imp.Latency.Curve[0].TTFTP50Ms != 11.28 {
		t.Errorf("latency block = %+v, want the rate-2 step only", imp.Latency)
	}
}

func checkAIPerfRun1JSON(t *testing.T, imp *Imported) {
	s := oneStep(t, imp)
	eqInt(t, "concurrency", s.Concurrency, 100)               // input_config.loadgen.concurrency
	eqInt(t, "ok", s.OK, 89)                                  // records.request_count.avg
	eqInt(t, "errors", s.Errors, 11)                          // records.error_request_count.avg
	eqInt(t, "requests", s.Requests, 100)                     //
	near(t, "wall", s.WallS, 9.317788951)                     // benchmark_duration (sec)
	near(t, "throughput", s.ThroughputRPS, 9.551622221540914) // request_throughput
	near(t, "output TPS", s.OutputTPS, 2320.7222350404572)    // output_token_throughput
	near(t, "TTFT p50", s.TTFTP50Ms, 2369.317693)             // ttft.p50 (ms)
	near(t, "TTFT p95", s.TTFTP95Ms, 3825.2778412)            // ttft.p95
	near(t, "E2E p50", s.E2EP50Ms, 9097.345014999999)         // request_latency.p50
	near(t, "E2E p95", s.E2EP95Ms, 9288.605606)               // request_latency.p95
	near(t, "TPOT p50", s.TPOTP50Ms, 27.615130366666666)      // inter_token_latency.p50
	near(t, "TPOT p95", s.TPOTP95Ms, 33.34450986349594)       // inter_token_latency.p95
	near(t, "goodput", s.GoodputRPS, s.ThroughputRPS)         // max E2E 9300 ms < 12 s
	noKnee(t, imp)                                            // E2E p95 9.3 s > 0.6 × 12 s
	if imp.Sources[0].Model != "openai/gpt-oss-20b" {
		t.Errorf("model = %q", imp.Sources[0].Model)
	}
}

func checkAIPerfRun1CSV(t *testing.T, imp *Imported) {
	s := oneStep(t, imp)
	near(t, "throughput", s.ThroughputRPS, 9.55) // Request Throughput (requests/sec)
	near(t, "wall", s.WallS, 9.32)               // Benchmark Duration (sec)
	near(t, "TTFT p50", s.TTFTP50Ms, 2369.32)    // Time to First Token (ms), p50
	near(t, "TTFT p95", s.TTFTP95Ms, 3825.28)    // … p95
	near(t, "E2E p95", s.E2EP95Ms, 9288.61)      // Request Latency (ms), p95
	near(t, "TPOT p50", s.TPOTP50Ms, 27.62)      // Inter Token Latency (ms), p50
	eqInt(t, "ok", s.OK, 89)                     // Request Count
	eqInt(t, "errors", s.Errors, 11)             // Error Request Count
	// No concurrency in the CSV: 9.55 req/s × 9.05965 s = 86.5.
	eqInt(t, "concurrency", s.Concurrency, 87)
}

func checkAIPerfRun1JSONL(t *testing.T, imp *Imported) {
	s := oneStep(t, imp)
	eqInt(t, "rows", len(imp.Records), 100) // 100 lines
	eqInt(t, "ok", s.OK, 89)                // lines without "error"
	eqInt(t, "errors", s.Errors, 11)        // error.code 499
	// The rows give the same percentiles AIPerf wrote into its summary JSON.
	near(t, "TTFT p50", s.TTFTP50Ms, 2369.317693)
	near(t, "TTFT p95", s.TTFTP95Ms, 3825.2778412)
	near(t, "E2E p95", s.E2EP95Ms, 9288.605606)
	near(t, "TPOT p50", s.TPOTP50Ms, 27.615130366666666)
	within(t, "wall", s.WallS, 9.317788951, 1e-6) // first timestamp_ns to last end
	eqInt(t, "concurrency", s.Concurrency, 87)
	var cancelled int
	for _, r := range imp.Records {
		if r.Status == 499 {
			cancelled++
		}
	}
	eqInt(t, "499 rows", cancelled, 11)
}

func checkAIPerfRun1All(t *testing.T, imp *Imported) {
	s := oneStep(t, imp)
	eqInt(t, "concurrency", s.Concurrency, 100) // from the JSON summary
	eqInt(t, "rows", len(imp.Records), 100)     // from the JSONL
	near(t, "wall", s.WallS, 9.317788951)       // benchmark_duration of the JSON
	near(t, "TTFT p50", s.TTFTP50Ms, 2369.317693)
	if imp.Format != "aiperf-json+aiperf-csv+aiperf-jsonl" || len(imp.Sources) != 3 {
		t.Errorf("format %q, %d sources", imp.Format, len(imp.Sources))
	}
}

func checkAIPerfSmoke(t *testing.T, imp *Imported) {
	s := oneStep(t, imp)
	eqInt(t, "concurrency", s.Concurrency, 100000)             // input_config.phases[0].concurrency
	eqInt(t, "ok", s.OK, 481414)                               // request_count.avg
	eqInt(t, "errors", s.Errors, 18586)                        // error_request_count.avg
	near(t, "wall", s.WallS, 141.58332399600002)               // benchmark_duration
	near(t, "throughput", s.ThroughputRPS, 3400.2168222410205) // request_throughput
	near(t, "TTFT p50", s.TTFTP50Ms, 9539.0889685)             // time_to_first_token.p50
	near(t, "TTFT p95", s.TTFTP95Ms, 27490.63562579998)        // time_to_first_token.p95
	near(t, "E2E p50", s.E2EP50Ms, 16428.066493)               // request_latency.p50
	near(t, "E2E p95", s.E2EP95Ms, 36649.9410171)              // request_latency.p95
	near(t, "TPOT p50", s.TPOTP50Ms, 46.22239606)              // inter_token_latency.p50
	near(t, "TPOT p95", s.TPOTP95Ms, 189.26587306949992)       // inter_token_latency.p95
	// 12 s lies between p25 (10060.5 ms) and p50 (16428.1 ms) of request_latency.
	share := 0.25 + 0.25*(12000-10060.499107)/(16428.066493-10060.499107)
	near(t, "goodput", s.GoodputRPS, 3400.2168222410205*share)
	if !s.GoodputEstimated {
		t.Error("goodput read off percentiles should be flagged as derived")
	}
	noKnee(t, imp)
	if imp.Sources[0].Version != "0.8.0 (schema 1.0)" {
		t.Errorf("version = %q", imp.Sources[0].Version)
	}
}

func checkGenAIPerfCSV(t *testing.T, imp *Imported) {
	s := oneStep(t, imp)
	near(t, "TTFT p50", s.TTFTP50Ms, 5.806016)    // Time To First Token (ns) p50 5806016
	near(t, "TTFT p95", s.TTFTP95Ms, 6.783848)    // … p95 6783848
	near(t, "E2E p50", s.E2EP50Ms, 92.617648)     // Request Latency (ns) p50 92617648
	near(t, "E2E p95", s.E2EP95Ms, 132.646246)    // … p95 132646246
	near(t, "TPOT p50", s.TPOTP50Ms, 1.703449)    // Inter Token Latency (ns) p50 1703449
	near(t, "throughput", s.ThroughputRPS, 10.95) // Request Throughput (per sec)
	near(t, "output TPS", s.OutputTPS, 623.19)    // Output Token Throughput (per sec)
	eqInt(t, "concurrency", s.Concurrency, 1)     // 10.95 × 91.2 ms = 1.0
	if !s.CountsUnknown || !s.ConcurrencyEstimated {
		t.Errorf("flags: %+v", s)
	}
	if imp.Latency == nil || len(imp.Latency.Curve) != 1 {
		t.Errorf("latency block = %+v, want one point", imp.Latency)
	}
}

func checkLLMPerfYiSummary(t *testing.T, imp *Imported) {
	s := oneStep(t, imp)
	eqInt(t, "concurrency", s.Concurrency, 16)                                   // num_concurrent_requests
	eqInt(t, "ok", s.OK, 112)                                                    // results_num_completed_requests
	near(t, "throughput", s.ThroughputRPS, 46.821420363866935/60)                // results_num_completed_requests_per_min
	near(t, "wall", s.WallS, 112/(46.821420363866935/60))                        //
	near(t, "TTFT p50", s.TTFTP50Ms, 6561.932362000334)                          // results_ttft_s_quantiles_p50
	near(t, "TTFT p95", s.TTFTP95Ms, 7814.290068099763)                          // results_ttft_s_quantiles_p95
	near(t, "E2E p50", s.E2EP50Ms, 18014.698060000228)                           // results_end_to_end_latency_s_quantiles_p50
	near(t, "E2E p95", s.E2EP95Ms, 18900.48101350012)                            // results_end_to_end_latency_s_quantiles_p95
	near(t, "output TPS", s.OutputTPS, 124.29275563556878)                       // results_mean_output_throughput_token_per_s
	near(t, "TPOT p50", s.TPOTP50Ms, (18014.698060000228-6561.932362000334)/158) // output tokens p50 159
	// Every request took over 17 s (results_end_to_end_latency_s_min), past a 12 s deadline.
	near(t, "goodput", s.GoodputRPS, 0)
	noKnee(t, imp)
	if imp.Sources[0].Model != "01-ai/Yi-1.5-34B-Chat" || imp.Sources[0].Date != "2024-06-12T16:21:16Z" {
		t.Errorf("source = %+v", imp.Sources[0])
	}
}

func checkLLMPerfYiResponses(t *testing.T, imp *Imported) {
	s := oneStep(t, imp)
	eqInt(t, "rows", len(imp.Records), 112)
	eqInt(t, "ok", s.OK, 112)
	eqInt(t, "concurrency", s.Concurrency, 0) // only the summary names it
	// The rows give the quantiles llmperf wrote into the summary.
	near(t, "TTFT p50", s.TTFTP50Ms, 6561.932362000334)
	near(t, "E2E p95", s.E2EP95Ms, 18900.48101350012)
	r := imp.Records[0]
	near(t, "first TTFT", r.TTFTMs, 586.5403649986547)   // ttft_s 0.5865403649986547
	near(t, "first E2E", r.E2EMs, 18712.564567998925)    // end_to_end_latency_s
	eqInt(t, "first output tokens", r.OutputTokens, 157) // number_output_tokens
	if imp.Latency != nil {
		t.Errorf("latency block without a concurrency: %+v", imp.Latency)
	}
}

func checkLLMPerfYiPair(t *testing.T, imp *Imported) {
	s := oneStep(t, imp)
	eqInt(t, "concurrency", s.Concurrency, 16)
	eqInt(t, "rows", len(imp.Records), 112)
	near(t, "wall", s.WallS, 112/(46.821420363866935/60))
	near(t, "throughput", s.ThroughputRPS, 46.821420363866935/60)
	near(t, "TTFT p95", s.TTFTP95Ms, 7814.290068099763)
	for _, n := range imp.Notes {
		if strings.Contains(n, "TPOT estimated") {
			t.Errorf("the rows give exact TPOT, yet a note says: %s", n)
		}
	}
}

func checkLLMPerfFireworks(t *testing.T, imp *Imported) {
	s := oneStep(t, imp)
	eqInt(t, "concurrency", s.Concurrency, 5)                    // num_concurrent_requests
	eqInt(t, "ok", s.OK, 150)                                    // results_num_completed_requests
	near(t, "throughput", s.ThroughputRPS, 64.92561266104798/60) // results_num_completed_requests_per_min
	near(t, "TTFT p50", s.TTFTP50Ms, 516.5989695000235)          // results_ttft_s_quantiles_p50
	near(t, "TTFT p95", s.TTFTP95Ms, 786.8415615500112)          // results_ttft_s_quantiles_p95
	near(t, "E2E p50", s.E2EP50Ms, 3772.186518500007)            // results_end_to_end_latency_s_quantiles_p50
	near(t, "E2E p95", s.E2EP95Ms, 4210.630839049929)            // results_end_to_end_latency_s_quantiles_p95
	near(t, "TPOT p50", s.TPOTP50Ms, (3772.186518500007-516.5989695000235)/150)
	near(t, "goodput", s.GoodputRPS, s.ThroughputRPS) // max E2E 4.55 s
	src := imp.Sources[0]
	if src.Model != "accounts/fireworks/models/llama-v2-70b-chat" || src.Date != "2023-12-19T11:25:31Z" {
		t.Errorf("source = %+v", src)
	}
}

func checkVLLMSweep(t *testing.T, imp *Imported) {
	if len(imp.Steps) != 5 {
		t.Fatalf("%d steps, want 5", len(imp.Steps))
	}
	for i, c := range []int{1, 2, 4, 8, 16} {
		s := imp.Steps[i]
		eqInt(t, "concurrency", s.Concurrency, c) // max_concurrency
		if s.ConcurrencyEstimated {
			t.Errorf("step %d: max_concurrency is known", c)
		}
		wantTTFT := 202.0 // 200 ms prefill + up to 4 ms jitter
		if c == 16 {
			wantTTFT = 1393.3 // half the requests wait for one of 8 slots
		}
		within(t, "TTFT p50", s.TTFTP50Ms, wantTTFT, 1)
		within(t, "TPOT p50", s.TPOTP50Ms, 20.2, 0.01)
	}
	s8, s16 := imp.Steps[3], imp.Steps[4]
	within(t, "throughput at 8", s8.ThroughputRPS, 32/4.771, 1e-3) // 32 requests over duration 4.771 s
	eqInt(t, "429s at 16", s16.RateLimited, 1)                     // errors: "Too Many Requests"
	eqInt(t, "errors at 16", s16.Errors, 1)                        // errors: "Internal Server Error"
	eqInt(t, "ok at 16", s16.OK, 62)
	kneeIs(t, imp, 8) // goodput flat from 8 to 16
	// Goodput falls from 6.707 to 6.501 req/s at 16, 3.1 %: within the
	// default collapse tolerance of 5 %, outside a tolerance of 2 %.
	if c := imp.Analysis.Collapse; c != nil {
		t.Errorf("collapse = %s, want none within 5 %%", fmtPtr(c))
	}
	if c := analysis.Analyze(imp.Steps, analysis.Options{DeadlineMs: 12000, CollapseTolerancePct: 2}).Collapse; c == nil || *c != 16 {
		t.Errorf("collapse with a 2 %% tolerance = %s, want 16", fmtPtr(c))
	}
	if imp.Analysis.QuotaLimited {
		t.Error("the one 429 came past the knee: not quota-limited")
	}
	u := imp.Analysis.USL
	if u == nil || u.Peak == nil || *u.Peak < 8 || *u.Peak > 16 || u.R2 < 0.9 {
		t.Errorf("USL = %+v, want a good fit peaking between 8 and 16", u)
	}
	if imp.Latency == nil || len(imp.Latency.Curve) != 5 || imp.Latency.Knee == nil || *imp.Latency.Knee != 8 {
		t.Errorf("latency block = %+v, want 5 points and knee 8", imp.Latency)
	}
	eqInt(t, "rows", len(imp.Records), 8+8+16+32+64)
}

func checkWorkshop(t *testing.T, imp *Imported) {
	if len(imp.Steps) != 5 {
		t.Fatalf("%d steps, want 5", len(imp.Steps))
	}
	wantGoodput := []float64{8 / 8.0, 8 / 4.0, 16 / 4.0, 32 / 4.05, 61 / 8.3} // ok rows / wall_s
	for i, s := range imp.Steps {
		near(t, "goodput", s.GoodputRPS, wantGoodput[i])
		if s.TTFTP50Ms != 0 || s.TPOTP50Ms != 0 {
			t.Errorf("step %d: TTFT/TPOT should be unknown (0) in the workshop layout", s.Concurrency)
		}
	}
	near(t, "E2E p50 at 1", imp.Steps[0].E2EP50Ms, 1011.5) // ms of rows 1..8 of step 1
	eqInt(t, "429s at 16", imp.Steps[4].RateLimited, 3)    // code 429 rows
	kneeIs(t, imp, 8)
	if c := imp.Analysis.Collapse; c == nil || *c != 16 {
		t.Errorf("collapse = %s, want 16", fmtPtr(c))
	}
	if imp.Analysis.QuotaLimited {
		t.Error("429s only past the knee: not quota-limited")
	}
	if u := imp.Analysis.USL; u == nil || u.Peak == nil || *u.Peak < 8 || *u.Peak > 16 {
		t.Errorf("USL = %+v, want a peak between 8 and 16", u)
	}
	if imp.Latency == nil || len(imp.Latency.Curve) != 0 || imp.Latency.Knee == nil || *imp.Latency.Knee != 8 {
		t.Errorf("latency block = %+v, want the knee alone", imp.Latency)
	}
}
