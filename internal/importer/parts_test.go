package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/measure"
)

func TestWorkshopVariants(t *testing.T) {
	cases := []struct {
		name, csv         string
		ok, limited, errs int
	}{
		{"0/1 flags", "step,idx,ok,code,ms,wall_s\n2,0,1,200,900,2\n2,1,0,429,5,2\n2,2,0,500,30,2\n", 1, 1, 1},
		{"pandas index and bools", ",step,idx,ok,code,ms,wall_s\n0,2,0,True,200,900.5,2.0\n1,2,1,False,429,,2.0\n", 1, 1, 0},
		{"float columns", "step,idx,ok,code,ms,wall_s\n2.0,0.0,1.0,200.0,900,2\n2.0,1.0,0.0,0.0,,2\n", 1, 0, 1},
		{"column order and extras", "wall_s,ms,code,ok,idx,step,note\n2,900,200,true,0,2,x\n", 1, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			imp, err := Import("ramp.csv", []byte(tc.csv), deadline12s)
			if err != nil {
				t.Fatal(err)
			}
			s := oneStep(t, imp)
			eqInt(t, "concurrency", s.Concurrency, 2)
			eqInt(t, "ok", s.OK, tc.ok)
			eqInt(t, "429s", s.RateLimited, tc.limited)
			eqInt(t, "errors", s.Errors, tc.errs)
			near(t, "wall", s.WallS, 2)
		})
	}
	for name, bad := range map[string]string{
		"ok word":      "step,idx,ok,code,ms,wall_s\n2,0,maybe,200,900,2\n",
		"no wall":      "step,idx,ok,code,ms,wall_s\n2,0,1,200,900,0\n",
		"step zero":    "step,idx,ok,code,ms,wall_s\n0,0,1,200,900,2\n",
		"nan latency":  "step,idx,ok,code,ms,wall_s\n2,0,1,200,NaN,2\n",
		"ok, no ms":    "step,idx,ok,code,ms,wall_s\n2,0,1,200,,2\n",
		"header only":  "step,idx,ok,code,ms,wall_s\n",
		"short row":    "step,idx,ok,code,ms,wall_s\n2,0,1\n",
		"infinite ms":  "step,idx,ok,code,ms,wall_s\n2,0,1,200,+Inf,2\n",
		"huge step":    "step,idx,ok,code,ms,wall_s\n1e15,0,1,200,900,2\n",
		"http code 1k": "step,idx,ok,code,ms,wall_s\n2,0,1,1000,900,2\n",
	} {
		if _, err := Import("ramp.csv", []byte(bad), deadline12s); err == nil {
			t.Errorf("%s: imported without error", name)
		}
	}
}

func TestProbeCSV(t *testing.T) {
	var recs []measure.Record
	for _, c := range []int{1, 2} {
		for i := range 4 {
			recs = append(recs, measure.Record{
				Step: c, Index: i, StartS: float64(i), TTFTMs: 100, E2EMs: 1000, OutputTokens: 10,
				Status: 200, OK: true, Attempts: 1,
			})
		}
	}
	var buf bytes.Buffer
	if err := measure.WriteCSV(&buf, recs); err != nil {
		t.Fatal(err)
	}
	imp, err := Import("requests.csv", buf.Bytes(), deadline12s)
	if err != nil {
		t.Fatal(err)
	}
	if imp.Format != FormatProbeCSV || len(imp.Steps) != 2 || len(imp.Records) != 8 {
		t.Fatalf("format %s, %d steps, %d rows", imp.Format, len(imp.Steps), len(imp.Records))
	}
	near(t, "TPOT", imp.Steps[0].TPOTP50Ms, 100) // (1000 − 100)/(10 − 1)
	near(t, "wall", imp.Steps[0].WallS, 4)       // first send at 0 s, last end at 3 s + 1 s
}

// TestVLLMAppendResult reads --append-result files: runs at two rates are
// two steps; the same rate twice is refused, as the two fixtures (two
// deployments measured at 3.6 req/s) are.
func TestVLLMAppendResult(t *testing.T) {
	a := readTestdata(t, "vllm/benchmark_2025-05-13_04-37-51.json")
	b := readTestdata(t, "vllm/benchmark_2025-05-13_04-55-27.json")
	if _, err := Import("appended.json", append(append(a, '\n'), b...), deadline12s); err == nil ||
		!strings.Contains(err.Error(), "both measure a request rate of 3.6 req/s") {
		t.Errorf("two runs at the same rate: err = %v", err)
	}
	b = bytes.Replace(b, []byte(`"request_rate": 3.6`), []byte(`"request_rate": 7.2`), 1)
	imp, err := Import("appended.json", append(append(a, '\n'), b...), deadline12s)
	if err != nil {
		t.Fatal(err)
	}
	if len(imp.Steps) != 2 || imp.Steps[0].Concurrency != 12 || imp.Steps[1].Concurrency != 13 ||
		imp.Steps[0].RateRPS != 7.2 || imp.Steps[1].RateRPS != 3.6 {
		t.Fatalf("steps = %+v, want estimated 12 and 13 at 7.2 and 3.6 req/s", imp.Steps)
	}
}

func TestVLLMWithoutP95UsesTheNextPercentileUp(t *testing.T) {
	data := string(readTestdata(t, "vllm/benchmark_2025-05-13_04-37-51.json"))
	for _, k := range []string{`"p95_ttft_ms": 261.13618802046403, `, `"p95_tpot_ms": 28.49777645053255, `, `"p95_itl_ms": 16.377485776320103, `} {
		data = strings.Replace(data, k, "", 1)
	}
	imp, err := Import("p99.json", []byte(data), deadline12s)
	if err != nil {
		t.Fatal(err)
	}
	s := oneStep(t, imp)
	near(t, "TTFT p95", s.TTFTP95Ms, 267.2010898106964)  // p99_ttft_ms
	near(t, "TPOT p95", s.TPOTP95Ms, 31.261335455978653) // p99_tpot_ms
	if !strings.Contains(strings.Join(imp.Notes, "\n"), "TTFT p95 is the reported p99, an upper bound") {
		t.Errorf("no note on the stand-in: %q", imp.Notes)
	}
}

func TestGenAIPerfJSON(t *testing.T) {
	doc := `{
  "request_throughput": {"unit": "requests/sec", "avg": 4.5},
  "request_latency": {"unit": "ms", "avg": 880, "p25": 850, "p50": 870, "p75": 900, "p90": 930, "p95": 950, "p99": 990, "min": 800, "max": 1000, "std": 40},
  "time_to_first_token": {"unit": "ms", "avg": 110, "p50": 105, "p95": 150, "p99": 170, "min": 90, "max": 180},
  "inter_token_latency": {"unit": "ms", "avg": 9.1, "p50": 9, "p95": 10.5, "p99": 11},
  "output_token_throughput": {"unit": "tokens/sec", "avg": 380},
  "input_config": {"model": ["demo-model"], "concurrency": 4, "request_rate": null, "service_kind": "openai"}
}`
	imp, err := Import("profile_export_genai_perf.json", []byte(doc), deadline12s)
	if err != nil {
		t.Fatal(err)
	}
	s := oneStep(t, imp)
	if imp.Format != FormatGenAIPerfJSON || s.Concurrency != 4 || s.ConcurrencyEstimated || !s.CountsUnknown {
		t.Fatalf("format %s, step %+v", imp.Format, s)
	}
	near(t, "TTFT p95", s.TTFTP95Ms, 150)
	near(t, "TPOT p50", s.TPOTP50Ms, 9)
	near(t, "goodput", s.GoodputRPS, 4.5) // max 1000 ms < 12 s
	if imp.Sources[0].Model != "demo-model" || imp.Latency == nil {
		t.Errorf("source %+v, latency %+v", imp.Sources[0], imp.Latency)
	}
}

func TestGenAIPerfCSVThousandsSeparators(t *testing.T) {
	doc := "Metric,avg,min,max,p99,p95,p90,p75,p50,p25\n" +
		"Time To First Token (ms),\"1,204.50\",900.00,\"1,500.00\",\"1,490.00\",\"1,450.00\",\"1,400.00\",\"1,300.00\",\"1,200.00\",\"1,100.00\"\n" +
		"Inter Token Latency (ms),20.00,18.00,25.00,24.00,23.00,22.00,21.00,20.00,19.00\n" +
		"Request Latency (ms),\"3,204.50\",\"2,900.00\",\"3,500.00\",\"3,490.00\",\"3,450.00\",\"3,400.00\",\"3,300.00\",\"3,200.00\",\"3,100.00\"\n" +
		"\nMetric,Value\nOutput Token Throughput (per sec),\"1,000.00\"\nRequest Throughput (per sec),10.00\n"
	imp, err := Import("profile_export_genai_perf.csv", []byte(doc), deadline12s)
	if err != nil {
		t.Fatal(err)
	}
	s := oneStep(t, imp)
	near(t, "TTFT p95", s.TTFTP95Ms, 1450)
	near(t, "output TPS", s.OutputTPS, 1000)
	eqInt(t, "concurrency", s.Concurrency, 32) // 10 req/s × 3.2045 s
}

func TestGuideLLMQuantileNames(t *testing.T) {
	for name, want := range map[string]float64{"001": 0.001, "01": 0.01, "05": 0.05, "25": 0.25, "50": 0.5, "95": 0.95, "999": 0.999, "x": 0, "": 0} {
		near(t, "p"+name, guidellmQuantile(name), want)
	}
}

func TestFractionWithin(t *testing.T) {
	var s summary
	s.set(0, 100)
	s.set(0.5, 200)
	s.set(0.95, 400)
	s.set(1, 500)
	cases := []struct {
		x, frac float64
		exact   bool
	}{
		{50, 0, true}, {100, 0, false}, {150, 0.25, false}, {200, 0.5, false},
		{300, 0.725, false}, {450, 0.975, false}, {500, 1, true}, {900, 1, true},
	}
	for _, tc := range cases {
		frac, exact, ok := s.fractionWithin(tc.x)
		if !ok || exact != tc.exact {
			t.Errorf("fractionWithin(%g): ok %v exact %v", tc.x, ok, exact)
		}
		near(t, "fraction", frac, tc.frac)
	}
	var open summary // no min or max: conservative ends
	open.set(0.5, 200)
	open.set(0.99, 400)
	if f, exact, ok := open.fractionWithin(1000); !ok || exact || f != 0.99 {
		t.Errorf("above the reported range: %g %v %v", f, exact, ok)
	}
	if f, _, ok := open.fractionWithin(10); !ok || f != 0 {
		t.Errorf("below the reported range: %g %v", f, ok)
	}
	if _, _, ok := (summary{}).fractionWithin(10); ok {
		t.Error("an empty summary gave a fraction")
	}
}

func TestClassifyErrorText(t *testing.T) {
	cases := []struct {
		text   string
		status int
		class  string
	}{
		{"Too Many Requests", 429, measure.ErrRateLimited},
		{"HTTP 429: rate limit exceeded", 429, measure.ErrRateLimited},
		{"Internal Server Error", 500, measure.ErrServer},
		{"Service Unavailable", 503, measure.ErrServer},
		{"Bad Request", 400, measure.ErrClient},
		{"asyncio.exceptions.TimeoutError", 0, measure.ErrTimeout},
		{"ClientConnectorError(ConnectionRefusedError(111))", 0, measure.ErrTransport},
		{"", 0, measure.ErrTransport},
	}
	for _, tc := range cases {
		status, class := classifyErrorText(tc.text)
		if status != tc.status || class != tc.class {
			t.Errorf("classifyErrorText(%q) = %d %s, want %d %s", tc.text, status, class, tc.status, tc.class)
		}
	}
}

func TestSplitUnit(t *testing.T) {
	cases := map[string][2]string{
		"Time To First Token (ns)":                {"time_to_first_token", "ns"},
		"Request Throughput (requests/sec)":       {"request_throughput", "requests/sec"},
		"Num Output Token":                        {"num_output_token", ""},
		" Output Token Throughput  (tokens/sec) ": {"output_token_throughput", "tokens/sec"},
	}
	for in, want := range cases {
		name, unit := splitUnit(in)
		if name != want[0] || unit != want[1] {
			t.Errorf("splitUnit(%q) = %q %q, want %q", in, name, unit, want)
		}
	}
}

func TestMsPerUnit(t *testing.T) {
	for unit, want := range map[string]float64{"ms": 1, "sec": 1000, "s": 1000, "ns": 1e-6, "us": 1e-3} {
		got, err := msPerUnit(unit)
		if err != nil || got != want {
			t.Errorf("msPerUnit(%q) = %g, %v", unit, got, err)
		}
	}
	if _, err := msPerUnit("fortnights"); err == nil {
		t.Error("an unknown unit was accepted")
	}
}

func TestLLMPerfRateLimited(t *testing.T) {
	for freq, want := range map[string]int{"{}": 0, "{429: 3, 500: 1}": 3, "{'429': 2}": 2, `{"503": 4}`: 0} {
		eqInt(t, freq, llmperfRateLimited(obj{"results_error_code_frequency": freq}), want)
	}
}

func TestQuantileName(t *testing.T) {
	for q, want := range map[float64]string{0: "min", 1: "max", 0.95: "p95", 0.999: "p99.9", 0.5: "p50"} {
		if got := quantileName(q); got != want {
			t.Errorf("quantileName(%g) = %q, want %q", q, got, want)
		}
	}
}

func TestVLLMRateWithACapIsPlacedAtTheLoadInFlight(t *testing.T) {
	data := strings.Replace(string(readTestdata(t, vllmSweep[3])), `"request_rate": "inf"`, `"request_rate": 5.0`, 1)
	imp, err := Import("rate.json", []byte(data), deadline12s)
	if err != nil {
		t.Fatal(err)
	}
	s := oneStep(t, imp)
	near(t, "rate", s.RateRPS, 5)
	if !s.ConcurrencyEstimated || s.Concurrency != 8 {
		t.Errorf("step = %+v, want concurrency 8 estimated from the rows", s)
	}
	if !strings.Contains(strings.Join(imp.Notes, "\n"), "not at the cap") {
		t.Errorf("notes = %q", imp.Notes)
	}
}

func TestPairingNeedsTheSameRun(t *testing.T) {
	imp := importFiles(t, "llmperf/leaderboard/fireworks_70b.json", "llmperf/01-ai-Yi-1-5-34B-Chat_550_150_individual_responses.json")
	if len(imp.Steps) != 2 || imp.Steps[0].Concurrency != 0 || imp.Steps[1].Concurrency != 5 {
		t.Errorf("rows of another run were paired with a summary: %+v", imp.Steps)
	}
}

// TestOldProbeCSVStillImports reads a requests.csv written before the
// retry columns existed.
func TestOldProbeCSVStillImports(t *testing.T) {
	var b strings.Builder
	b.WriteString("step,idx,start_s,ack_ms,ttft_ms,e2e_ms,output_tokens,input_tokens,output_estimated,status,error,attempts,retry_after_ms,ok,warmup\n")
	for i := range 20 {
		fmt.Fprintf(&b, "1,%d,%d.000000,90.000,100.000,1000.000,10,32,false,200,,1,0.000,true,%t\n", i, i, i == 0)
	}
	imp, err := Import("old/requests.csv", []byte(b.String()), deadline12s)
	if err != nil {
		t.Fatal(err)
	}
	s := oneStep(t, imp)
	// Window: from the warm-up's end (1 s) to the first completion after
	// the last send (20 s): 19 requests in 19 s.
	if imp.Format != FormatProbeCSV || s.Requests != 19 || s.WallS != 19 || s.ThroughputRPS != 1 || s.TooShort {
		t.Errorf("format %s, step %+v", imp.Format, s)
	}
}

// TestImpossibleRowsAreRefused: a row whose latency is beyond what a
// summary's may be (1e308 ms), or that ended before its first token, was
// imported as measured; POST /v1/analyses refuses such rows, and the
// import now does too, naming the column.
func TestImpossibleRowsAreRefused(t *testing.T) {
	probe := func(ttft, e2e float64) []byte {
		var recs []measure.Record
		for i := range 4 {
			recs = append(recs, measure.Record{Step: 1, Index: i, StartS: float64(i), TTFTMs: 100, E2EMs: 1000, OutputTokens: 10, Status: 200, OK: true, Attempts: 1})
		}
		recs[2].TTFTMs, recs[2].E2EMs = ttft, e2e
		var buf bytes.Buffer
		if err := measure.WriteCSV(&buf, recs); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, tc := range []struct {
		name string
		data []byte
		says string
	}{
		{"probe row ending before its first token", probe(900, 500), "line 4: e2e_ms 500 is below its ttft_ms 900: a request ends after its first token"},
		{"probe row of 1e308 ms", probe(100, 1e308), "line 4: e2e_ms 1e+308 is beyond the 1e+09 ms a latency may be"},
		{"workshop row of 1e308 ms", []byte("step,idx,ok,code,ms,wall_s\n1,0,1,200,1e308,10\n"), "line 2: e2e_ms 1e+308 is beyond the 1e+09 ms a latency may be"},
		// The first row of step 2 is on line 3 of the file, whatever
		// its place among its step's rows.
		{"workshop row of 1e308 ms among steps", []byte("step,idx,ok,code,ms,wall_s\n1,0,1,200,100,10\n2,0,1,200,1e308,10\n1,1,1,200,100,10\n"), "line 3: e2e_ms 1e+308 is beyond the 1e+09 ms a latency may be"},
		{"llmperf response ending before its first token", []byte(`[{"ttft_s": 0.1, "end_to_end_latency_s": 1, "number_output_tokens": 5, "number_input_tokens": 9}, {"ttft_s": 2, "end_to_end_latency_s": 1, "number_output_tokens": 5, "number_input_tokens": 9}]`), "response 2: e2e_ms 1000 is below its ttft_ms 2000"},
		{"AIPerf line ending before its first token", []byte(`{"metadata":{"x_request_id":"a","timestamp_ns":1000000000,"benchmark_phase":"profiling"},"metrics":{"time_to_first_token":{"value":100,"unit":"ms"},"request_latency":{"value":900,"unit":"ms"},"output_sequence_length":{"value":9,"unit":"tokens"}}}
{"metadata":{"x_request_id":"b","timestamp_ns":2000000000,"benchmark_phase":"profiling"},"metrics":{"time_to_first_token":{"value":800,"unit":"ms"},"request_latency":{"value":500,"unit":"ms"},"output_sequence_length":{"value":9,"unit":"tokens"}}}
`), "line 2: e2e_ms 500 is below its ttft_ms 800"},
	} {
		if _, err := Import("f", tc.data, deadline12s); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.says)
		}
	}
}

// TestAStepsProblemNamesItsFile: a problem with one step of a ramp CSV
// named the step alone ("step 1: looks like a workshop ramp CSV but ..."),
// not the file, among several.
func TestAStepsProblemNamesItsFile(t *testing.T) {
	files := []File{
		{"morning/ramp.csv", []byte("step,idx,ok,code,ms,wall_s\n1,0,1,200,5,10\n")},
		{"evening/ramp.csv", []byte("step,idx,ok,code,ms,wall_s\n2,0,1,200,5,1e-12\n")},
	}
	_, err := ImportMany(files, deadline12s)
	if want := "step 2 of evening/ramp.csv: looks like a workshop ramp CSV"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// TestRampCSVsMissingAColumnSayWhich: a workshop CSV without wall_s, or a
// probe requests.csv with a column dropped or added by hand, was "not a
// result file of a supported tool" (its header matching none).
func TestRampCSVsMissingAColumnSayWhich(t *testing.T) {
	var buf bytes.Buffer
	if err := measure.WriteCSV(&buf, []measure.Record{{Step: 1, E2EMs: 5, Status: 200, OK: true, Attempts: 1}}); err != nil {
		t.Fatal(err)
	}
	probe := strings.SplitN(buf.String(), "\n", 2)
	for _, tc := range []struct{ name, data, say string }{
		{"workshop without wall_s", "step,idx,ok,code,ms\n1,0,1,200,5\n", `looks like a workshop ramp CSV (step, idx, ok, code, ms, wall_s) but has no "wall_s" column`},
		{"workshop without code and wall_s", "step,idx,ok,ms\n1,0,1,5\n", `but has no "code" or "wall_s" column`},
		{"probe without call", strings.TrimSuffix(probe[0], ",call") + "\n", "looks like a planner requests.csv but it has no column call"},
		{"probe with a column more", probe[0] + ",note\n", "looks like a planner requests.csv but it has column note, which the probe does not write"},
	} {
		_, err := Import("r.csv", []byte(tc.data), deadline12s)
		if err == nil || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.say)
		}
	}
}

// TestRefusedRowIsNamedByItsID: a GuideLLM request entry that cannot be
// imported is named by its request_id, which the user can search the
// file for, not by its place in the list the import built.
func TestRefusedRowIsNamedByItsID(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(readTestdata(t, "guidellm/benchmarks_stripped.json"), &doc); err != nil {
		t.Fatal(err)
	}
	reqs := doc["benchmarks"].([]any)[0].(map[string]any)["requests"].(map[string]any)
	entry := reqs["successful"].([]any)[0].(map[string]any)
	entry["time_to_first_token_ms"] = 2e9
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("request_id %q: ttft_ms 2e+09 is beyond the 1e+09 ms a latency may be", entry["request_id"])
	if _, err := Import("benchmarks.json", data, deadline12s); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}
