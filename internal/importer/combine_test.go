package importer

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// The combinations below, of shipped fixtures, used to merge into one ramp
// without a word; each is now refused with the difference named, or
// imported with a warning when asked to (AllowMixed).

func TestCombiningRunsOfDifferentModelsIsRefused(t *testing.T) {
	files := []File{
		{"fireworks_70b.json", readTestdata(t, "llmperf/leaderboard/fireworks_70b.json")},
		{"yi_summary.json", readTestdata(t, "llmperf/01-ai-Yi-1-5-34B-Chat_550_150_summary.json")},
	}
	_, err := ImportMany(files, deadline12s)
	if err == nil || !strings.Contains(err.Error(), `model is "accounts/fireworks/models/llama-v2-70b-chat" in fireworks_70b.json but "01-ai/Yi-1.5-34B-Chat" in yi_summary.json`) ||
		!strings.Contains(err.Error(), "--allow-mixed") {
		t.Fatalf("err = %v", err)
	}
	mixed := deadline12s
	mixed.AllowMixed = true
	imp, err := ImportMany(files, mixed)
	if err != nil {
		t.Fatal(err)
	}
	if len(imp.Steps) != 2 || !strings.Contains(strings.Join(imp.Notes, "\n"), "warning: files of different deployments combined") {
		t.Errorf("steps %d, notes %v", len(imp.Steps), imp.Notes)
	}
}

// TestRunsAtTheSameLoadAreRefused: the two vLLM fixtures measured two
// deployments at the same 3.6 req/s; their estimated concurrencies (12
// and 13) once made them look like two steps of one ramp.
func TestRunsAtTheSameLoadAreRefused(t *testing.T) {
	cases := []struct {
		name  string
		files []string
		want  string
	}{
		{"two deployments at one rate", []string{"vllm/benchmark_2025-05-13_04-37-51.json", "vllm/benchmark_2025-05-13_04-55-27.json"}, "both measure a request rate of 3.6 req/s"},
		{"one open-loop file twice", []string{"vllm/benchmark_2025-05-13_04-55-27.json", "vllm/benchmark_2025-05-13_04-55-27.json"}, "both measure a request rate of 3.6 req/s"},
		{"one closed-loop file twice", []string{vllmSweep[3], vllmSweep[3]}, "both measure concurrency 8"},
		{"one file of unknown load twice", []string{"genai-perf/profile_export_genai_perf.csv", "genai-perf/profile_export_genai_perf.csv"}, "the same unknown load with the same figures"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var files []File
			for i, f := range tc.files {
				files = append(files, File{string(rune('a'+i)) + "/" + f, readTestdata(t, f)})
			}
			if _, err := ImportMany(files, deadline12s); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// TestSummaryAndRecordsOfDifferentRunsAreNotPaired: AIPerf's 100k smoke
// summary put beside the records of examples-run1 (one folder, so the
// same pair key) counts 500,000 requests where the rows are 100.
func TestSummaryAndRecordsOfDifferentRunsAreNotPaired(t *testing.T) {
	files := []File{
		{"run/profile_export_aiperf.json", readTestdata(t, "aiperf/dev-smoke-100k-conc/profile_export_aiperf.json")},
		{"run/profile_export.jsonl", readTestdata(t, "aiperf/examples-run1/profile_export.jsonl")},
	}
	_, err := ImportMany(files, deadline12s)
	if err == nil || !strings.Contains(err.Error(), "not the same run: the summary counts 500000 requests (481414 ok, 18586 failed), the rows 100") {
		t.Fatalf("err = %v", err)
	}
	mixed := deadline12s
	mixed.AllowMixed = true
	imp, err := ImportMany(files, mixed)
	if err != nil {
		t.Fatal(err)
	}
	if len(imp.Steps) != 2 || !strings.Contains(strings.Join(imp.Notes, "\n"), "imported as separate steps") {
		t.Errorf("steps %+v, notes %v", imp.Steps, imp.Notes)
	}
	// The right pair still pairs: the records of examples-run1 with its summary.
	imp = importFiles(t, "aiperf/examples-run1/profile_export_aiperf.json", "aiperf/examples-run1/profile_export.jsonl")
	if len(imp.Steps) != 1 || !strings.Contains(strings.Join(imp.Notes, "\n"), "supplies the per-request rows") {
		t.Errorf("examples-run1 did not pair: %+v %v", imp.Steps, imp.Notes)
	}
}

// TestEstimatedValuesAreMarked: what an importer derives rather than
// reads is marked in the step, and an inconsistent derived pair is noted.
func TestEstimatedValuesAreMarked(t *testing.T) {
	s := oneStep(t, importFiles(t, "vllm/benchmark_2025-05-13_04-55-27.json"))
	if !s.E2EEstimated || !s.GoodputEstimated || !s.ConcurrencyEstimated || s.TTFTEstimated || s.TPOTEstimated {
		t.Errorf("vLLM without e2el: %v, want concurrency, goodput and e2e", s.Estimated())
	}
	imp := importFiles(t, "llmperf/01-ai-Yi-1-5-34B-Chat_550_150_summary.json")
	s = oneStep(t, imp)
	if !s.TPOTEstimated || s.E2EEstimated || s.TTFTEstimated {
		t.Errorf("llmperf summary: %v, want tpot", s.Estimated())
	}
	// (E2E p95 − TTFT p95)/(159 − 1) = 70.17 ms lies below the p50's 72.49 ms.
	if !strings.Contains(strings.Join(imp.Notes, "\n"), "TPOT p95 derived from the E2E and TTFT p95s is 70.17 ms, below the p50's 72.49 ms") {
		t.Errorf("no note on the inconsistent TPOT pair: %v", imp.Notes)
	}
	// With the per-request responses the TPOT is measured, and not marked.
	s = oneStep(t, importFiles(t, "llmperf/01-ai-Yi-1-5-34B-Chat_550_150_summary.json", "llmperf/01-ai-Yi-1-5-34B-Chat_550_150_individual_responses.json"))
	if s.TPOTEstimated || s.TPOTP95Ms < s.TPOTP50Ms {
		t.Errorf("paired with its responses: TPOT p50 %g p95 %g, marks %v", s.TPOTP50Ms, s.TPOTP95Ms, s.Estimated())
	}
}

// TestSwappedPercentilesAreRefused: a file whose p95 is below its p50 is
// corrupt, and says so rather than being clamped.
func TestSwappedPercentilesAreRefused(t *testing.T) {
	data := readTestdata(t, "vllm/benchmark_2025-05-13_04-55-27.json")
	data = bytes.Replace(data, []byte(`"median_ttft_ms": 244.08852099440992`), []byte(`"median_ttft_ms": 257.0488001947524`), 1)
	data = bytes.Replace(data, []byte(`"p95_ttft_ms": 257.0488001947524`), []byte(`"p95_ttft_ms": 244.08852099440992`), 1)
	_, err := Import("swapped.json", data, deadline12s)
	if err == nil || !strings.Contains(err.Error(), "TTFT p95 (244.1 ms) is below its p50 (257 ms)") {
		t.Errorf("err = %v", err)
	}
}

// TestDisorderedPercentilesAreRefused: a p95 above the file's p99, or a
// latency beyond a scenario's largest, is not a distribution: refused
// with both quantiles named, rather than planned as a 309-digit number.
func TestDisorderedPercentilesAreRefused(t *testing.T) {
	orig := readTestdata(t, "vllm/benchmark_2025-05-13_04-55-27.json")
	for value, want := range map[string]string{
		"1e308":  "TTFT p95 (1e+308 ms) is beyond the 1e+09 ms a latency may be",
		"100000": "TTFT p99 (",
	} {
		data := regexp.MustCompile(`"p95_ttft_ms": [0-9.]+`).ReplaceAll(orig, []byte(`"p95_ttft_ms": `+value))
		_, err := Import("disordered.json", data, deadline12s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("p95 TTFT %s: err = %v, want %q", value, err, want)
		}
	}
}

// TestAIPerfRunsOfDifferentEndpointsAreRefused: AIPerf's summary records
// the URL it measured (input_config.endpoint.url); two runs against two
// endpoints once merged into one ramp. The URL is shown without the
// credentials it may carry.
func TestAIPerfRunsOfDifferentEndpointsAreRefused(t *testing.T) {
	data := readTestdata(t, "aiperf/examples-run1/profile_export_aiperf.json")
	other := bytes.Replace(data, []byte(`"url": "localhost:9000"`), []byte(`"url": "https://user:s3cret@other-host:9000/v1?api_key=sk-abc123"`), 1)
	other = bytes.Replace(other, []byte(`"concurrency": 100,`), []byte(`"concurrency": 50,`), 1)
	if bytes.Equal(other, data) || bytes.Contains(other, []byte(`"concurrency": 100,`)) {
		t.Fatal("the fixture's url or concurrency was not replaced")
	}
	files := []File{{"east/profile_export_aiperf.json", data}, {"west/profile_export_aiperf.json", other}}
	_, err := ImportMany(files, deadline12s)
	if err == nil || !strings.Contains(err.Error(), `endpoint is "localhost:9000" in east/profile_export_aiperf.json but "https://other-host:9000/v1?api_key=[redacted]" in west/profile_export_aiperf.json`) {
		t.Fatalf("err = %v, want the endpoints named", err)
	}
	refused := err.Error()
	mixed := deadline12s
	mixed.AllowMixed = true
	imp, err := ImportMany(files, mixed)
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(imp)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"s3cret", "sk-abc123", "user:"} {
		if strings.Contains(refused, secret) || strings.Contains(string(js), secret) {
			t.Errorf("%q is in the refusal or the import: %s %s", secret, refused, js)
		}
	}
	if imp.Sources[1].Endpoint != "https://other-host:9000/v1?api_key=[redacted]" {
		t.Errorf("endpoint %q", imp.Sources[1].Endpoint)
	}
}

// TestFilesOfOneNameAreToldApart: AIPerf and GuideLLM name every result
// file alike; two of them from different folders were named by their
// base name alone ("profile_export_aiperf.json and
// profile_export_aiperf.json both measure concurrency 100").
func TestFilesOfOneNameAreToldApart(t *testing.T) {
	for _, tc := range []struct{ fixture, base, want string }{
		{"aiperf/examples-run1/profile_export_aiperf.json", "profile_export_aiperf.json",
			"run1/profile_export_aiperf.json and run2/profile_export_aiperf.json both measure concurrency 100"},
		{"guidellm/guidellm_report_v2.json", "benchmarks.json",
			"run1/benchmarks.json benchmark 1 (2 req/s) and run2/benchmarks.json benchmark 1 (2 req/s) both measure a request rate of 2 req/s"},
	} {
		data := readTestdata(t, tc.fixture)
		files := []File{{"run1/" + tc.base, data}, {"run2/" + tc.base, data}}
		if _, err := ImportMany(files, deadline12s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.fixture, err, tc.want)
		}
	}
	data := readTestdata(t, "aiperf/examples-run1/profile_export_aiperf.json")
	other := bytes.Replace(data, []byte(`"openai/gpt-oss-20b"`), []byte(`"openai/gpt-oss-120b"`), 1)
	other = bytes.Replace(other, []byte(`"concurrency": 100,`), []byte(`"concurrency": 50,`), 1)
	_, err := ImportMany([]File{{"run1/profile_export_aiperf.json", data}, {"run2/profile_export_aiperf.json", other}}, deadline12s)
	if want := `model is "openai/gpt-oss-20b" in run1/profile_export_aiperf.json but "openai/gpt-oss-120b" in run2/profile_export_aiperf.json`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// TestGuideLLMRunsOfDifferentTargetsAreRefused: GuideLLM's report records
// the server it measured (config.spec.backend.target, or a benchmark's
// config.backend.target); two reports against two servers once merged
// into one ramp. The URL is shown without the credentials it may carry.
func TestGuideLLMRunsOfDifferentTargetsAreRefused(t *testing.T) {
	data := readTestdata(t, "guidellm/guidellm_report_v2.json")
	other := bytes.ReplaceAll(data, []byte(`"target": "http://127.0.0.1:8765"`), []byte(`"target": "https://user:s3cret@other-host:8000?api_key=sk-abc123"`))
	if bytes.Equal(other, data) {
		t.Fatal("the fixture's target was not replaced")
	}
	files := []File{{"east/benchmarks.json", data}, {"west/benchmarks.json", other}}
	_, err := ImportMany(files, deadline12s)
	if err == nil || !strings.Contains(err.Error(), `endpoint is "http://127.0.0.1:8765" in`) || !strings.Contains(err.Error(), `"https://other-host:8000?api_key=[redacted]" in`) {
		t.Fatalf("err = %v, want the endpoints named", err)
	}
	for _, secret := range []string{"s3cret", "sk-abc123", "user:"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%q is in the refusal: %v", secret, err)
		}
	}
}
