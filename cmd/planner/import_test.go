package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner/internal/scenario"
)

// importTestdata is the importer's testdata, shared by these tests.
const importTestdata = "../../internal/importer/testdata/"

// runCLI runs the command line with the given standard input.
func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func vllmSweepFiles() []string {
	var files []string
	for _, c := range []string{"1", "2", "4", "8", "16"} {
		files = append(files, importTestdata+"handmade/vllm-detailed/openai-chat-infqps-concurrency"+c+"-handmade.json")
	}
	return files
}

// TestImportWritesACurveFileThatPlans writes the curve file with --out
// and uses it as it says: appended to a scenario without a latency block,
// which planner plan then plans.
func TestImportWritesACurveFileThatPlans(t *testing.T) {
	dir := t.TempDir()
	curve := filepath.Join(dir, "curve.yaml")
	code, out, errOut := runCLI(t, "", append([]string{"import", "--out", curve}, vllmSweepFiles()...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"format: vllm-bench-serve", "per-request rows: 128", "knee: 8", "first failing: 16", "collapse: none", "quota-limited: no", "peak N*=", "written to " + curve} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	block, err := os.ReadFile(curve)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(block), "# Use: append this file to a scenario") || !strings.Contains(string(block), "# concurrency 16: 1 of 64 answers were 429; 1 of 64 requests failed") {
		t.Errorf("the curve file lacks its use or its marks:\n%s", block)
	}
	base := "quotas:\n  - {name: prod, rpm: 600}\nclasses:\n  - {name: chat, quota: prod, mode: interactive, input_tokens: {fixed: 256}, output_tokens: {fixed: 50}}\n"
	scenarioFile := filepath.Join(dir, "planned.yaml")
	if err := os.WriteFile(scenarioFile, append([]byte(base), block...), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Parse(append([]byte(base), block...))
	if err != nil {
		t.Fatalf("the scenario with the curve file does not validate: %v", err)
	}
	if len(sc.Latency.Curve) != 5 || sc.Latency.Knee == nil || *sc.Latency.Knee != 8 {
		t.Errorf("latency = %+v", sc.Latency)
	}
	code, out, errOut = runCLI(t, "", "plan", "-f", scenarioFile)
	if code != exitOK || !strings.Contains(out, "chat") {
		t.Errorf("planner plan on it: exit %d\n%s%s", code, out, errOut)
	}
}

func TestImportToStandardOutput(t *testing.T) {
	code, out, errOut := runCLI(t, "", "import", "--out", "-", importTestdata+"llmperf/leaderboard/fireworks_70b.json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Latency scenario.Latency `json:"latency"`
	}
	if err := yaml.UnmarshalStrict([]byte(out), &doc); err != nil {
		t.Fatalf("stdout is not a curve file: %v\n%s", err, out)
	}
	l := doc.Latency
	if len(l.Curve) != 1 || l.Curve[0].Concurrency != 5 || l.Curve[0].TTFTP50Ms != 516.6 {
		t.Errorf("latency = %+v", l)
	}
	if !strings.Contains(errOut, "format: llmperf-summary") {
		t.Errorf("the report should go to stderr with -o -:\n%s", errOut)
	}
	// One concurrency: neither the report nor the curve file has a knee,
	// and the report says why.
	if l.Knee != nil || !strings.Contains(errOut, "knee: none") || !strings.Contains(errOut, "one concurrency only (5): no knee") {
		t.Errorf("a ramp of one concurrency: curve knee %v, report:\n%s", l.Knee, errOut)
	}
}

func TestImportJSON(t *testing.T) {
	code, out, errOut := runCLI(t, "", "import", "-o", "json",
		importTestdata+"aiperf/examples-run1/profile_export_aiperf.json", importTestdata+"aiperf/examples-run1/profile_export.jsonl")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Format      string `json:"format"`
		RecordCount int    `json:"record_count"`
		Analysis    struct {
			Steps []struct {
				Concurrency int `json:"concurrency"`
				OK          int `json:"ok"`
			} `json:"steps"`
			Knee *int `json:"knee"`
		} `json:"analysis"`
		Records []any `json:"records"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if got.Format != "aiperf-json+aiperf-jsonl" || got.RecordCount != 100 || got.Records != nil {
		t.Errorf("format %q, record_count %d, records %d", got.Format, got.RecordCount, len(got.Records))
	}
	if len(got.Analysis.Steps) != 1 || got.Analysis.Steps[0].Concurrency != 100 || got.Analysis.Steps[0].OK != 89 || got.Analysis.Knee != nil {
		t.Errorf("analysis = %+v", got.Analysis)
	}
}

func TestImportReadsStandardInput(t *testing.T) {
	data, err := os.ReadFile(importTestdata + "genai-perf/profile_export_genai_perf.csv")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, string(data), "import", "-")
	if code != exitOK || !strings.Contains(out, "format: genai-perf-csv") || !strings.Contains(out, "source: standard input") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}

func TestImportExitCodes(t *testing.T) {
	dir := t.TempDir()
	full, err := os.ReadFile(importTestdata + "vllm/benchmark_2025-05-13_04-37-51.json")
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.json")
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(truncated, full[:len(full)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notes, []byte("meeting notes, not a benchmark\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	responses := importTestdata + "llmperf/01-ai-Yi-1-5-34B-Chat_550_150_individual_responses.json"
	cases := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"truncated", []string{"import", truncated}, exitError, "looks like a vLLM bench serve result but the JSON ends early"},
		{"not a result", []string{"import", notes}, exitError, "not a result file of a supported tool"},
		{"missing file", []string{"import", filepath.Join(dir, "nope.json")}, exitError, "no such file"},
		{"nothing to write", []string{"import", "--out", filepath.Join(dir, "c.yaml"), responses}, exitError, "no latency block to write"},
		{"a file in -o", []string{"import", "-o", filepath.Join(dir, "c.yaml"), responses}, exitUsage, "a file to write goes in --out"},
		{"two models", []string{"import", importTestdata + "llmperf/leaderboard/fireworks_70b.json", importTestdata + "llmperf/01-ai-Yi-1-5-34B-Chat_550_150_summary.json"}, exitError, "do not describe one deployment"},
		{"forced wrong format", []string{"import", "--format", "guidellm-benchmarks", truncated}, exitError, "looks like a vLLM bench serve result but was asked to be read as a GuideLLM benchmarks.json (format guidellm-benchmarks)"},
		{"no files", []string{"import"}, exitUsage, "requires at least 1 arg"},
		{"unknown format", []string{"import", "--format", "excel", truncated}, exitUsage, "--format must be auto or one of"},
		{"negative deadline", []string{"import", "--deadline", "-1s", truncated}, exitUsage, "--deadline must not be negative"},
		{"bad fraction", []string{"import", "--max-p95-fraction", "2", truncated}, exitUsage, "--max-p95-fraction"},
		{"stdin twice", []string{"import", "-", "-"}, exitUsage, "standard input (-) can be given once"},
		{"unknown flag", []string{"import", "--colour", truncated}, exitUsage, "unknown flag"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, "", tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.says) {
				t.Errorf("exit %d, stderr %q; want exit %d saying %q", code, errOut, tc.code, tc.says)
			}
		})
	}
}

// TestImportedCurveSaysWhatMeasuredIt: the comment at the top of a curve
// file imported from GuideLLM names the tool that measured the run, and
// the format as what the file was read as, rather than passing the
// format id off as the tool ("Measured by guidellm-benchmarks").
func TestImportedCurveSaysWhatMeasuredIt(t *testing.T) {
	for _, tc := range []struct{ file, head string }{
		{"guidellm/guidellm_report_v2.json", "# Measured by guidellm (read as guidellm-benchmarks) and imported by planner from:\n#   "},
		{"handmade/workshop_ramp.csv", "# Measured by workshop ramp script (read as workshop-ramp-csv) and imported by planner from:\n#   "},
	} {
		code, out, errOut := runCLI(t, "", "import", "--out", "-", importTestdata+tc.file)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", tc.file, code, errOut)
		}
		if !strings.HasPrefix(out, tc.head+importTestdata+tc.file+"\n") {
			t.Errorf("%s: the curve file begins\n%.200s\nwant\n%s", tc.file, out, tc.head)
		}
	}
}
