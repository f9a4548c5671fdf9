package importer

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/measure"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestTruncatedFilesNameTheirFormat cuts each real file short and expects
// an error that names the format it looked like.
func TestTruncatedFilesNameTheirFormat(t *testing.T) {
	cases := []struct {
		file   string
		keep   float64 // fraction of the bytes kept
		format string
		says   string
	}{
		{"vllm/benchmark_2025-05-13_04-37-51.json", 0.5, FormatVLLM, "looks like a vLLM bench serve result but the JSON ends early"},
		{"guidellm/benchmarks_stripped.json", 0.5, FormatGuideLLM, "looks like a GuideLLM benchmarks.json but the JSON ends early"},
		{"guidellm/guidellm_report_v2.json", 0.3, FormatGuideLLM, "looks like a GuideLLM benchmarks.json"},
		{"aiperf/examples-run1/profile_export_aiperf.json", 0.5, FormatAIPerfJSON, "looks like an AIPerf profile_export_aiperf.json"},
		{"aiperf/dev-smoke-100k-conc/profile_export_aiperf.json", 0.5, FormatAIPerfJSON, "looks like an AIPerf profile_export_aiperf.json"},
		{"aiperf/examples-run1/profile_export.jsonl", 0.5, FormatAIPerfJSONL, "looks like an AIPerf profile_export.jsonl"},
		{"llmperf/01-ai-Yi-1-5-34B-Chat_550_150_summary.json", 0.5, FormatLLMPerfSummary, "looks like an llmperf summary"},
		{"llmperf/01-ai-Yi-1-5-34B-Chat_550_150_individual_responses.json", 0.5, FormatLLMPerfResponses, "looks like an llmperf individual_responses file"},
		{"llmperf/leaderboard/fireworks_70b.json", 0.2, FormatLLMPerfSummary, "looks like an llmperf summary"},
		{"aiperf/examples-run1/profile_export_aiperf.csv", 0.3, FormatAIPerfCSV, "looks like an AIPerf profile_export_aiperf.csv but line"},
		{"genai-perf/profile_export_genai_perf.csv", 0.4, FormatGenAIPerfCSV, "looks like a GenAI-Perf profile_export_genai_perf.csv but line"},
		{"handmade/workshop_ramp.csv", 0.5, FormatWorkshopCSV, "looks like a workshop ramp CSV"},
		{"handmade/vllm-detailed/openai-chat-infqps-concurrency8-handmade.json", 0.5, FormatVLLM, "looks like a vLLM bench serve result"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			data := readTestdata(t, tc.file)
			cut := data[:int(float64(len(data))*tc.keep)]
			_, err := Import(tc.file, cut, deadline12s)
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Format != tc.format {
				t.Fatalf("err = %v, want a FormatError for %s", err, tc.format)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("err = %q, want it to say %q", err, tc.says)
			}
		})
	}
}

// TestMissingFields strips a required key from a real file.
func TestMissingFields(t *testing.T) {
	cases := []struct {
		file, drop, says string
	}{
		{"vllm/benchmark_2025-05-13_04-37-51.json", `"request_throughput": 3.4924899488507317, `,
			`looks like a vLLM bench serve result but has no "request_throughput"`},
		{"vllm/benchmark_2025-05-13_04-37-51.json", `"duration": 57.265733883017674, `,
			`looks like a vLLM bench serve result but has no "duration"`},
		{"llmperf/leaderboard/fireworks_70b.json", `"num_concurrent_requests": 5,`,
			`looks like an llmperf summary but has no "num_concurrent_requests"`},
	}
	for _, tc := range cases {
		t.Run(tc.drop, func(t *testing.T) {
			data := string(readTestdata(t, tc.file))
			if !strings.Contains(data, tc.drop) {
				t.Fatalf("%s does not contain %q", tc.file, tc.drop)
			}
			_, err := Import(tc.file, []byte(strings.Replace(data, tc.drop, "", 1)), deadline12s)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("err = %v, want %q", err, tc.says)
			}
		})
	}
}

func TestUnknownContent(t *testing.T) {
	cases := map[string]string{
		"text":          "hello world\n",
		"json object":   `{"foo": 1, "bar": [1, 2]}`,
		"json list":     `[1, 2, 3]`,
		"csv":           "a,b,c\n1,2,3\n",
		"broken json":   `{"foo": `,
		"html":          "<html><body>502 Bad Gateway</body></html>",
		"empty metrics": "Metric,Value\n",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Import("x", []byte(content), deadline12s)
			if err == nil {
				t.Fatal("imported nonsense without error")
			}
			var fe *FormatError
			if !errors.Is(err, ErrUnknownFormat) && !errors.As(err, &fe) {
				t.Errorf("err = %v, want ErrUnknownFormat or a FormatError", err)
			}
		})
	}
	if _, err := Import("x", []byte("  \n"), deadline12s); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty file: err = %v", err)
	}
}

// TestForcedFormatOfAnotherTool asks every format of every fixture that
// another format recognises: each is refused with what the file looks
// like, never with a key of the asked format found missing, and never
// imported as nothing (vLLM's reader took any JSON as a result without runs).
func TestForcedFormatOfAnotherTool(t *testing.T) {
	fixtures := map[string]string{
		"vllm/benchmark_2025-05-13_04-37-51.json":                         FormatVLLM,
		"guidellm/guidellm_report_v2.json":                                FormatGuideLLM,
		"aiperf/examples-run1/profile_export_aiperf.json":                 FormatAIPerfJSON,
		"aiperf/examples-run1/profile_export.jsonl":                       FormatAIPerfJSONL,
		"aiperf/examples-run1/profile_export_aiperf.csv":                  FormatAIPerfCSV,
		"genai-perf/profile_export_genai_perf.csv":                        FormatGenAIPerfCSV,
		"llmperf/01-ai-Yi-1-5-34B-Chat_550_150_summary.json":              FormatLLMPerfSummary,
		"llmperf/01-ai-Yi-1-5-34B-Chat_550_150_individual_responses.json": FormatLLMPerfResponses,
		"handmade/workshop_ramp.csv":                                      FormatWorkshopCSV,
	}
	for file, own := range fixtures {
		data := readTestdata(t, file)
		for _, id := range Formats() {
			if id == own {
				continue
			}
			_, err := Import(file, data, Options{Format: id})
			want := "looks like " + describe(own) + " but was asked to be read as " + describe(id) + " (format " + id + ")"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s as %s: err = %v, want %q", file, id, err, want)
			}
		}
	}
	for _, tc := range []struct{ data, format, says string }{
		{`{}`, FormatVLLM, `read as a vLLM bench serve result, as asked, but holds no vLLM result`},
		{`[{"model": "m"}]`, FormatVLLM, `read as a vLLM bench serve result, as asked, but holds no vLLM result`},
		{`{}`, FormatLLMPerfResponses, `read as an llmperf individual_responses file, as asked, but holds no responses`},
		{"a,b\n1,2\n", FormatWorkshopCSV, `read as a workshop ramp CSV (step, idx, ok, code, ms, wall_s), as asked, but has no "step" column`},
	} {
		_, err := Import("f", []byte(tc.data), Options{Format: tc.format})
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s as %s: err = %v, want %q", tc.data, tc.format, err, tc.says)
		}
	}
}

func TestForcedFormat(t *testing.T) {
	data := readTestdata(t, "vllm/benchmark_2025-05-13_04-37-51.json")
	if _, err := Import("f.json", data, Options{Format: FormatVLLM}); err != nil {
		t.Errorf("forced vLLM on a vLLM file: %v", err)
	}
	_, err := Import("f.json", data, Options{Format: FormatGuideLLM})
	if err == nil || !strings.Contains(err.Error(), `looks like a vLLM bench serve result but was asked to be read as a GuideLLM benchmarks.json (format guidellm-benchmarks)`) {
		t.Errorf("forced GuideLLM on a vLLM file: err = %v", err)
	}
	if _, err := Import("f.json", data, Options{Format: "nope"}); err == nil || !strings.Contains(err.Error(), "unknown format") {
		t.Errorf("unknown format id: err = %v", err)
	}
	for _, id := range Formats() {
		if !KnownFormat(id) {
			t.Errorf("KnownFormat(%q) = false", id)
		}
	}
	if KnownFormat("csv") || !KnownFormat("auto") {
		t.Error("KnownFormat accepts a non-id or refuses auto")
	}
}

func TestImportManyRefusesMixedToolsAndRepeatedSteps(t *testing.T) {
	vllm := File{"a.json", readTestdata(t, vllmSweep[3])}
	again := File{"b.json", readTestdata(t, vllmSweep[3])}
	if _, err := ImportMany([]File{vllm, again}, deadline12s); err == nil || !strings.Contains(err.Error(), "both measure concurrency 8") {
		t.Errorf("same step twice: err = %v", err)
	}
	guide := File{"g.json", readTestdata(t, "guidellm/benchmarks_stripped.json")}
	if _, err := ImportMany([]File{vllm, guide}, deadline12s); err == nil || !strings.Contains(err.Error(), "one tool at a time") {
		t.Errorf("mixed tools: err = %v", err)
	}
	if _, err := ImportMany(nil, deadline12s); err == nil {
		t.Error("no files: no error")
	}
}

// TestVLLMSummaryContradictions changes one figure of a real vLLM summary
// and expects it refused with the key named: counts that contradict the
// throughput, a negative mean, and a throughput that is negative or
// beyond the range of a number.
func TestVLLMSummaryContradictions(t *testing.T) {
	const file = "vllm/benchmark_2025-05-13_04-37-51.json"
	cases := []struct{ from, to, says string }{
		{`"completed": 200,`, `"completed": 0,`, `"completed" is 0 but "request_throughput" is 3.492 req/s: the counts contradict the throughput`},
		{`"request_throughput": 3.4924899488507317,`, `"request_throughput": 0,`, `"request_throughput" is 0 but "completed" is 200`},
		{`"request_throughput": 3.4924899488507317,`, `"request_throughput": 7,`, `"request_throughput" is 7 req/s but "completed" / "duration" is 200 / 57.27 s = 3.492 req/s`},
		{`"request_throughput": 3.4924899488507317,`, `"request_throughput": -5,`, `"request_throughput" is -5: a throughput is not negative`},
		{`"request_throughput": 3.4924899488507317,`, `"request_throughput": 1e999,`, `"request_throughput" is null or beyond the range of a number`},
		{`"mean_ttft_ms": 249.5401489152573,`, `"mean_ttft_ms": -5,`, `"mean_ttft_ms" is -5: a latency is not negative`},
		{`"median_tpot_ms": 17.295888123007717,`, `"median_tpot_ms": -1,`, `"median_tpot_ms" is -1: a latency is not negative`},
		{`"duration": 57.265733883017674,`, `"duration": 0,`, `"duration" is 0: not a positive number of seconds`},
	}
	for _, tc := range cases {
		t.Run(tc.to, func(t *testing.T) {
			data := string(readTestdata(t, file))
			if !strings.Contains(data, tc.from) {
				t.Fatalf("%s does not contain %q", file, tc.from)
			}
			_, err := Import(file, []byte(strings.Replace(data, tc.from, tc.to, 1)), deadline12s)
			if err == nil || !strings.Contains(err.Error(), "looks like a vLLM bench serve result but "+tc.says) {
				t.Errorf("err = %v, want %q", err, tc.says)
			}
		})
	}
}

// TestRepeatedStepsOfRampCSVsNameTheirFiles: two ramp CSVs that both
// measure concurrency 1 are refused with both files named, as two vLLM
// results at one load are.
func TestRepeatedStepsOfRampCSVsNameTheirFiles(t *testing.T) {
	files := []File{{"run1/requests.csv", workshopRows(3)}, {"run2/requests.csv", workshopRows(3)}}
	_, err := ImportMany(files, deadline12s)
	want := "step 1 of run1/requests.csv and step 1 of run2/requests.csv both measure concurrency 1"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// TestRepeatedRequestRows: a ramp CSV that holds a run twice (its rows
// appended to themselves, or a batch a store wrote twice) counts each
// request once, with a note, rather than summarising steps of twice the
// requests and twice the goodput; two runs in one file (a request named
// again with other figures) are refused with both lines named. The
// probe's requests.csv and the workshop layout alike.
func TestRepeatedRequestRows(t *testing.T) {
	probeRows := func(shift float64) [][]string {
		var rows [][]string
		for c := 1; c <= 2; c++ {
			for i := range 20 {
				rec := measure.Record{Step: c, Index: i, StartS: shift + float64(c*100+i), TTFTMs: 5, E2EMs: 10, OutputTokens: 3, Status: 200, Attempts: 1, OK: true}
				rows = append(rows, rec.CSVRow())
			}
		}
		return rows
	}
	probe := func(runs ...[][]string) []byte {
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		w.Write(measure.CSVHeader)
		for _, r := range runs {
			w.WriteAll(r)
		}
		w.Flush()
		return b.Bytes()
	}
	workshop := readTestdata(t, "handmade/workshop_ramp.csv")
	_, body, _ := bytes.Cut(workshop, []byte("\n"))
	other := bytes.Replace(body, []byte("1,0,True,200,1001.0,8.00"), []byte("1,0,True,200,1500.0,8.00"), 1)
	for _, tc := range []struct {
		name        string
		once, twice []byte
	}{
		{"requests.csv", probe(probeRows(0)), probe(probeRows(0), probeRows(0))},
		{"ramp.csv", workshop, append(bytes.Clone(workshop), body...)},
	} {
		once, err := Import(tc.name, tc.once, deadline12s)
		if err != nil {
			t.Fatal(err)
		}
		twice, err := Import(tc.name, tc.twice, deadline12s)
		if err != nil {
			t.Fatalf("%s twice: %v", tc.name, err)
		}
		if len(twice.Steps) != len(once.Steps) || twice.Steps[0].Requests != once.Steps[0].Requests || twice.Steps[0].GoodputRPS != once.Steps[0].GoodputRPS ||
			!strings.Contains(strings.Join(twice.Notes, "\n"), "rows repeat an earlier row exactly (the same request written twice): each request is counted once") {
			t.Errorf("%s twice: steps %+v, notes %q; want the steps of the run once, and a note", tc.name, twice.Steps, twice.Notes)
		}
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"requests.csv", probe(probeRows(0), probeRows(1000)), "line 42: step 1, idx 0 is the request of line 2 again, with other figures"},
		{"ramp.csv", append(bytes.Clone(workshop), other...), "line 130: step 1, idx 0 is the request of line 2 again, with other figures"},
	} {
		_, err := Import(tc.name, tc.data, deadline12s)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s, two runs: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestCompressedFileIsNamed: a compressed or archived result file is
// refused as what it is, without its bytes echoed as a CSV header.
func TestCompressedFileIsNamed(t *testing.T) {
	for data, want := range map[string]string{
		"\x1f\x8b\x08\x08\xc2p\x11k\x00\x03ws.csv": "gzip-compressed",
		"PK\x03\x04\x14\x00\x00\x00":               "a zip archive",
		"BZh91AY&SY":                               "bzip2-compressed",
		"\xfd7zXZ\x00\x00":                         "xz-compressed",
		"\x28\xb5\x2f\xfd\x00":                     "zstd-compressed",
	} {
		_, err := Import("run.csv", []byte(data), Options{})
		if err == nil || !strings.Contains(err.Error(), "the file is "+want+": decompress it first") || strings.Contains(err.Error(), "header") {
			t.Errorf("%q: %v, want it named %s", data[:4], err, want)
		}
	}
}

// TestPythonLiteralsAreNamed: NaN and Infinity, which Python's json module
// writes for a missing figure, are refused with where they are.
func TestPythonLiteralsAreNamed(t *testing.T) {
	for data, want := range map[string]string{
		"{\"a\": 1,\n \"b\": NaN}":         "line 2, column 7: NaN is not a JSON number",
		"{\"a\": 1,\n \"b\": -Infinity}\n": "line 2, column 7: -Infinity is not a JSON number",
		"[Infinity]":                       "line 1, column 2: Infinity is not a JSON number",
	} {
		_, err := Import("run.json", []byte(data), Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", data, err, want)
		}
	}
}

// TestRateRunsWithDifferentCapsAreTwoSteps: two vLLM runs at one request
// rate with different --max-concurrency caps measure two loads, not one
// step twice, and each step's estimated concurrency is held to its cap
// (the file's throughput × mean E2E gives 13).
func TestRateRunsWithDifferentCapsAreTwoSteps(t *testing.T) {
	data, err := os.ReadFile("testdata/vllm/benchmark_2025-05-13_04-37-51.json")
	if err != nil {
		t.Fatal(err)
	}
	var files []File
	for _, c := range []string{"4", "8"} {
		files = append(files, File{Name: "cap" + c + ".json", Data: bytes.Replace(data, []byte(`"max_concurrency": null`), []byte(`"max_concurrency": `+c), 1)})
	}
	imp, err := ImportMany(files, Options{})
	if err != nil {
		t.Fatalf("two caps at one rate: %v", err)
	}
	if len(imp.Steps) != 2 || imp.Steps[0].Concurrency != 4 || imp.Steps[1].Concurrency != 8 {
		t.Errorf("steps %+v: want concurrencies 4 and 8, each at its cap", imp.Steps)
	}
}

// TestImplausibleRatesAreRefused: a rate, throughput or output TPS beyond
// what a scenario's curve point may carry was imported (exit 0) and its
// curve then refused, or printed as a number of three hundred digits.
func TestImplausibleRatesAreRefused(t *testing.T) {
	llmperf := bytes.Replace(readTestdata(t, "llmperf/01-ai-Yi-1-5-34B-Chat_550_150_summary.json"),
		[]byte(`"results_num_completed_requests_per_min": `), []byte(`"results_num_completed_requests_per_min": 1e13, "x": `), 1)
	vllm := bytes.Replace(readTestdata(t, "vllm/benchmark_2025-05-13_04-37-51.json"), []byte(`"request_rate": 3.6`), []byte(`"request_rate": 1e300`), 1)
	for _, tc := range []struct {
		name string
		data []byte
		says string
	}{
		{"llmperf throughput", llmperf, "throughput is 1.667e+11 req/s, beyond the 1e+09 req/s a measured step may have"},
		{"vLLM request rate", vllm, "rate is 1e+300 req/s, beyond the 1e+09 req/s a measured step may have"},
		{"workshop wall time", []byte("step,idx,ok,code,ms,wall_s\n1,0,1,200,5,1e-12\n"), "throughput is 1e+12 req/s, beyond the 1e+09 req/s"},
	} {
		_, err := Import("f", tc.data, deadline12s)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.says)
		}
	}
}

// TestFiguresOfTheWrongKindAreNamed: a figure that a vLLM or llmperf
// summary holds but that is not one (text, a list, a negative count, a
// fractional concurrency) was taken as missing: the run was then planned
// without it (a p95 of "abc" gone, max_concurrency "8x" estimated instead,
// 2.5 requests in flight read as 2) or refused as if the key were absent.
func TestFiguresOfTheWrongKindAreNamed(t *testing.T) {
	vllm := readTestdata(t, "vllm/benchmark_2025-05-13_04-37-51.json")
	llmperf := readTestdata(t, "llmperf/01-ai-Yi-1-5-34B-Chat_550_150_summary.json")
	for _, tc := range []struct {
		name       string
		data       []byte
		key, value string
		says       string
	}{
		{"vLLM p95 as text", vllm, "p95_ttft_ms", `"abc"`, `"p95_ttft_ms" is "abc": not a finite number`},
		{"vLLM mean as a list", vllm, "mean_tpot_ms", `[]`, `"mean_tpot_ms" is []: not a finite number`},
		{"vLLM max_concurrency as text", vllm, "max_concurrency", `"8x"`, `"max_concurrency" is "8x": not a finite number`},
		{"vLLM negative request_rate", vllm, "request_rate", `-1`, `"request_rate" is -1: a request rate is a positive number of requests a second, or "inf"`},
		{"vLLM request_rate as text", vllm, "request_rate", `"fast"`, `"request_rate" is "fast": not a finite number`},
		{"vLLM negative output tokens", vllm, "total_output_tokens", `-1`, `"total_output_tokens" is -1: not a whole number of at least 0`},
		{"vLLM output throughput as an object", vllm, "output_throughput", `{}`, `"output_throughput" is {}: not a finite number`},
		{"llmperf fractional concurrency", llmperf, "num_concurrent_requests", `2.5`, `"num_concurrent_requests" is 2.5: not a whole number of requests in flight`},
		{"llmperf concurrency as text", llmperf, "num_concurrent_requests", `"many"`, `"num_concurrent_requests" is "many": not a finite number`},
		{"llmperf negative completed", llmperf, "results_num_completed_requests", `-1`, `"results_num_completed_requests" is -1: not a whole number of at least 0`},
		{"llmperf negative throughput", llmperf, "results_num_completed_requests_per_min", `-1`, `"results_num_completed_requests_per_min" is -1: a throughput is not negative`},
		{"llmperf errors as text", llmperf, "results_number_errors", `"x"`, `"results_number_errors" is "x": not a finite number`},
		{"llmperf p50 as text", llmperf, "results_ttft_s_quantiles_p50", `"abc"`, `"results_ttft_s_quantiles_p50" is "abc": not a finite number`},
		{"llmperf negative min", llmperf, "results_ttft_s_min", `-1`, `"results_ttft_s_min" is -1: a latency is not negative`},
		{"llmperf negative mean", llmperf, "results_end_to_end_latency_s_mean", `-1`, `"results_end_to_end_latency_s_mean" is -1: a latency is not negative`},
		{"vLLM negative output throughput", vllm, "output_throughput", `-1`, `"output_throughput" is -1 tokens/s: a throughput is not negative`},
		{"llmperf negative output throughput", llmperf, "results_mean_output_throughput_token_per_s", `-1`, `"results_mean_output_throughput_token_per_s" is -1 tokens/s: a throughput is not negative`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc map[string]json.RawMessage
			if err := json.Unmarshal(tc.data, &doc); err != nil {
				t.Fatal(err)
			}
			if _, ok := doc[tc.key]; !ok {
				t.Fatalf("the fixture has no %q", tc.key)
			}
			doc[tc.key] = json.RawMessage(tc.value)
			data, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Import("f.json", data, deadline12s)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("err = %v, want %q", err, tc.says)
			}
		})
	}
	// What a tool writes for a figure it has not is not one of them.
	for _, tc := range []struct{ key, value string }{{"max_concurrency", "null"}, {"request_rate", `"inf"`}} {
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(vllm, &doc); err != nil {
			t.Fatal(err)
		}
		doc[tc.key] = json.RawMessage(tc.value)
		data, _ := json.Marshal(doc)
		if _, err := Import("f.json", data, deadline12s); err != nil {
			t.Errorf("%s: %s: %v", tc.key, tc.value, err)
		}
	}
}

// TestAIPerfThroughputOfTheWrongKind: AIPerf's and GenAI-Perf's summaries
// with a request_throughput that is negative or not a number were refused
// as having none ("has no request_throughput").
func TestAIPerfThroughputOfTheWrongKind(t *testing.T) {
	js := readTestdata(t, "aiperf/examples-run1/profile_export_aiperf.json")
	csv := readTestdata(t, "aiperf/examples-run1/profile_export_aiperf.csv")
	for _, tc := range []struct {
		name      string
		data      []byte
		from, to  string
		file, say string
	}{
		{"negative, JSON", js, `"avg": 9.551622221540914`, `"avg": -9.55`, "profile_export_aiperf.json", `"request_throughput" is -9.55 req/s: a throughput is not negative`},
		{"text, JSON", js, `"avg": 9.551622221540914`, `"avg": "fast"`, "profile_export_aiperf.json", `"request_throughput" has an avg of "fast": not a finite number`},
		{"null, JSON", js, `"avg": 9.551622221540914`, `"avg": null`, "profile_export_aiperf.json", `"request_throughput" has an avg of null: not a finite number`},
		{"negative, CSV", csv, "Request Throughput (requests/sec),9.55", "Request Throughput (requests/sec),-9.55", "profile_export_aiperf.csv", `"request_throughput" is -9.55 req/s: a throughput is not negative`},
	} {
		data := bytes.Replace(tc.data, []byte(tc.from), []byte(tc.to), 1)
		if bytes.Equal(data, tc.data) {
			t.Fatalf("%s: %q is not in the fixture", tc.name, tc.from)
		}
		if _, err := Import(tc.file, data, deadline12s); err == nil || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.say)
		}
	}
}

// TestE2EBelowTTFTIsRefused: a summary whose E2E percentile is below the
// same percentile of TTFT (a TTFT row in the wrong unit) was imported as
// measured; POST /v1/analyses refuses such a step.
func TestE2EBelowTTFTIsRefused(t *testing.T) {
	for _, tc := range []struct{ fixture, from, to, say string }{
		{"aiperf/examples-run1/profile_export_aiperf.csv", "Time to First Token (ms)", "Time to First Token (s)", "E2E p50 (9097 ms) is below TTFT p50 (2.369e+06 ms): a request ends after its first token"},
		{"genai-perf/profile_export_genai_perf.csv", "Time To First Token (ns)", "Time To First Token (ms)", "is below TTFT p50"},
	} {
		orig := readTestdata(t, tc.fixture)
		data := bytes.Replace(orig, []byte(tc.from), []byte(tc.to), 1)
		if bytes.Equal(data, orig) {
			t.Fatalf("%s: %q is not in the fixture", tc.fixture, tc.from)
		}
		if _, err := Import(tc.fixture, data, deadline12s); err == nil || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("%s: err = %v, want %q", tc.fixture, err, tc.say)
		}
	}
}

// TestJSONScalarsAreNotCSV: a file holding only null, a string or a number
// was described as a CSV header ("the CSV header \"null\" matches none").
func TestJSONScalarsAreNotCSV(t *testing.T) {
	for _, data := range []string{"null", `"results"`, "42", " true\n"} {
		_, err := Import("f.json", []byte(data), deadline12s)
		if err == nil || !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), "the file is the JSON value "+strings.TrimSpace(data)+", where a result file holds a JSON object or array") {
			t.Errorf("%q: err = %v", data, err)
		}
	}
}

// TestGuideLLMFiguresOfTheWrongKindAreNamed: a GuideLLM benchmark whose
// percentile, duration or mean in flight is text or negative was imported
// with the figure left out (a p50 dropped, the duration taken from the
// start and end times, the concurrency estimated another way).
func TestGuideLLMFiguresOfTheWrongKindAreNamed(t *testing.T) {
	base := readTestdata(t, "guidellm/guidellm_report_v2.json")
	for _, tc := range []struct {
		name string
		edit func(b map[string]any)
		say  string
	}{
		{"p50 as text", func(b map[string]any) {
			jsonAt(b, "metrics", "time_to_first_token_ms", "successful", "percentiles")["p50"] = "abc"
		}, `time_to_first_token_ms.successful.percentiles: "p50" is "abc": not a finite number`},
		{"negative mean", func(b map[string]any) {
			jsonAt(b, "metrics", "request_latency", "successful")["mean"] = -1.0
		}, `request_latency.successful: "mean" is -1: a latency is not negative`},
		{"duration as text", func(b map[string]any) { b["duration"] = "x" }, `"duration" is "x": not a finite number`},
		{"negative duration", func(b map[string]any) { b["duration"] = -1.0 }, `"duration" is -1: not a positive number of seconds`},
		{"negative requests in flight", func(b map[string]any) {
			jsonAt(b, "metrics", "request_concurrency", "successful")["mean"] = -1.0
		}, `request_concurrency.successful: "mean" is -1: requests in flight are not negative`},
	} {
		var doc map[string]any
		if err := json.Unmarshal(base, &doc); err != nil {
			t.Fatal(err)
		}
		tc.edit(doc["benchmarks"].([]any)[0].(map[string]any))
		data, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Import("benchmarks.json", data, deadline12s); err == nil || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.say)
		}
	}
}

// jsonAt walks a decoded JSON document down the keys given.
func jsonAt(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		m = m[k].(map[string]any)
	}
	return m
}

// TestAIPerfStatisticsOfTheWrongKindAreNamed: a statistic of an AIPerf
// summary that is text or a list was taken as not recorded (an error
// count of "x" as no errors, a p95 of "abc" replaced by the p99), and a
// negative latency statistic was taken as measured.
func TestAIPerfStatisticsOfTheWrongKindAreNamed(t *testing.T) {
	base := readTestdata(t, "aiperf/examples-run1/profile_export_aiperf.json")
	for _, tc := range []struct {
		metric, stat string
		value        any
		say          string
	}{
		{"ttft", "p95", "abc", `"ttft" has a p95 of "abc": not a finite number`},
		{"request_latency", "avg", []any{}, `"request_latency" has an avg of []: not a finite number`},
		{"error_request_count", "avg", "x", `"error_request_count" has an avg of "x": not a finite number`},
		{"benchmark_duration", "avg", "x", `"benchmark_duration" has an avg of "x": not a finite number`},
		{"ttft", "avg", -3.0, `"ttft" has an avg of -3: a latency is not negative`},
		{"output_token_throughput", "avg", -1.0, `"output_token_throughput" is -1 tokens/s: a throughput is not negative`},
	} {
		var doc map[string]any
		if err := json.Unmarshal(base, &doc); err != nil {
			t.Fatal(err)
		}
		jsonAt(doc, "records", tc.metric)[tc.stat] = tc.value
		data, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Import("profile_export_aiperf.json", data, deadline12s); err == nil || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("%s.%s: err = %v, want %q", tc.metric, tc.stat, err, tc.say)
		}
	}
}

// TestAbsurdStartTimeIsRefused: a request row that starts 10³⁰⁰ s into
// its run, or a step whose wall time is 10³⁰⁰ s, is refused, named, as a
// latency beyond 10⁹ ms is, rather than stretching its step's window to
// 10³⁰⁰ s (goodput 4e-299 req/s, a 301-digit window in the table); the
// API's rows and steps have the same bound.
func TestAbsurdStartTimeIsRefused(t *testing.T) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(measure.CSVHeader)
	for i := range 20 {
		rec := measure.Record{Step: 1, Index: i, StartS: float64(i), TTFTMs: 5, E2EMs: 10, OutputTokens: 3, Status: 200, Attempts: 1, OK: true}
		if i == 4 {
			rec.StartS = 1e300
		}
		w.Write(rec.CSVRow())
	}
	w.Flush()
	_, err := Import("requests.csv", b.Bytes(), deadline12s)
	if want := "line 6: start_s 1e+300 is beyond the 1e+09 s a request may start at"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
	// The workshop layout's wall_s is the step's window itself.
	_, err = Import("ramp.csv", []byte("step,idx,ok,code,ms,wall_s\n1,0,1,200,100,1e300\n2,0,1,200,100,1\n"), deadline12s)
	if want := "wall time is 1e+300 s, beyond the 1e+09 s a measured step may last"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("wall_s 1e300: err = %v, want %q", err, want)
	}
}

// TestWorkshopRowOKWithAFailedCodeIsRefused: a workshop row whose ok says
// it succeeded but whose code is a 429 or a 500 is refused with its line,
// as POST /v1/analyses refuses such a row, rather than counted as a
// success (and its 429 as none): the file contradicts itself.
func TestWorkshopRowOKWithAFailedCodeIsRefused(t *testing.T) {
	for code, want := range map[int]string{
		429: "line 3: ok is 1 but code is 429: a successful row was answered 2xx",
		500: "line 3: ok is 1 but code is 500: a successful row was answered 2xx",
	} {
		data := fmt.Sprintf("step,idx,ok,code,ms,wall_s\n1,0,1,200,100,1\n1,1,1,%d,100,1\n2,0,0,429,10,1\n", code)
		_, err := Import("ramp.csv", []byte(data), deadline12s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("code %d: err = %v, want %q", code, err, want)
		}
	}
}

// TestWorkshopHeaderNamingAColumnTwice: a workshop CSV whose header names
// a column twice (a pandas export of a joined frame) is refused, naming
// the column and both places, rather than read from the first; names
// compare as the layout reads them, in any case and spacing.
func TestWorkshopHeaderNamingAColumnTwice(t *testing.T) {
	for _, tc := range []struct{ data, says string }{
		{"step,idx,ok,code,ms,wall_s,ms\n1,0,1,200,100,10,900\n", `the header names the "ms" column twice, in columns 5 and 7`},
		{"step,idx,OK,code,ms,wall_s, ok \n1,0,1,200,100,10,0\n", `the header names the "ok" column twice, in columns 3 and 7`},
	} {
		_, err := Import("ramp.csv", []byte(tc.data), deadline12s)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%q: err = %v, want %q", tc.data, err, tc.says)
		}
	}
}

// TestWorkshopOKForms: every form the ok column's refusal lists is
// read, in any case, and the refusal lists every form that is read.
func TestWorkshopOKForms(t *testing.T) {
	row := func(ok string) []byte {
		return []byte("step,idx,ok,code,ms,wall_s\n1,0," + ok + ",,100,10\n1,1,1,200,100,10\n")
	}
	_, err := Import("ramp.csv", row("maybe"), deadline12s)
	if err == nil {
		t.Fatal("ok \"maybe\" was read")
	}
	msg := err.Error()
	m := regexp.MustCompile(`ok "maybe" is none of (.+) \(a success\) or (.+) or an empty cell \(a failure\), in any case`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("err = %v, want it to list the forms of ok", err)
	}
	forms := append(strings.Split(m[1], ", "), strings.Split(m[2], ", ")...)
	for _, want := range []string{"1", "1.0", "true", "t", "yes", "0", "0.0", "false", "f", "no"} {
		if !slices.Contains(forms, want) {
			t.Errorf("the refusal %q does not list %q, which is read", msg, want)
		}
	}
	for _, form := range forms {
		for _, f := range []string{form, strings.ToUpper(form)} {
			imp, err := Import("ramp.csv", row(f), deadline12s)
			if err != nil {
				t.Errorf("ok %q, which the refusal lists, is refused: %v", f, err)
				continue
			}
			if s := imp.Steps[0]; s.Requests != 2 {
				t.Errorf("ok %q: %d requests, want 2", f, s.Requests)
			}
		}
	}
	if _, err := Import("ramp.csv", row(""), deadline12s); err != nil {
		t.Errorf("an empty ok, which the refusal lists, is refused: %v", err)
	}
}

// TestStatusOutsideHTTPIsRefused: a row's HTTP status beyond 100–599
// (999, 42, 600) is refused with its field and line, in the workshop
// layout's code column and in a requests.csv's status column alike; 0
// and an empty code stay a request that got no answer.
func TestStatusOutsideHTTPIsRefused(t *testing.T) {
	probe := func(status int) []byte {
		var buf bytes.Buffer
		recs := []measure.Record{
			{Step: 1, Index: 0, StartS: 0, TTFTMs: 5, E2EMs: 10, OutputTokens: 3, Status: 200, Attempts: 1, OK: true},
			{Step: 1, Index: 1, StartS: 1, E2EMs: 10, Status: status, ErrorClass: measure.ErrServer, Attempts: 1},
		}
		if err := measure.WriteCSV(&buf, recs); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, code := range []int{999, 42, 600, 1} {
		workshop := fmt.Sprintf("step,idx,ok,code,ms,wall_s\n1,0,1,200,100,10\n1,1,0,%d,100,10\n", code)
		want := fmt.Sprintf(`line 3: code "%d" is not an HTTP status`, code)
		if _, err := Import("ramp.csv", []byte(workshop), deadline12s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("workshop code %d: err = %v, want %q", code, err, want)
		}
		want = fmt.Sprintf("line 3: status %d is not an HTTP status", code)
		if _, err := Import("requests.csv", probe(code), deadline12s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("requests.csv status %d: err = %v, want %q", code, err, want)
		}
	}
	for _, code := range []string{"0", "", "100", "599"} {
		workshop := "step,idx,ok,code,ms,wall_s\n1,0,1,200,100,10\n1,1,0," + code + ",100,10\n"
		if _, err := Import("ramp.csv", []byte(workshop), deadline12s); err != nil {
			t.Errorf("workshop code %q: %v", code, err)
		}
	}
	if _, err := Import("requests.csv", probe(0), deadline12s); err != nil {
		t.Errorf("requests.csv status 0 (no answer): %v", err)
	}
}
