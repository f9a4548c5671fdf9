package importer

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/measure"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json from the current output")

// deadline12s is the judgement used by every golden case: the planner's
// defaults with a 12 s deadline.
var deadline12s = Options{Options: analysis.Options{DeadlineMs: 12000}}

// goldenCase imports files and compares the result with
// testdata/<name>.golden.json; check asserts numbers read by hand from the
// source files.
type goldenCase struct {
	name  string
	files []string
	check func(t *testing.T, imp *Imported)
}

var vllmSweep = []string{
	"handmade/vllm-detailed/openai-chat-infqps-concurrency1-handmade.json",
	"handmade/vllm-detailed/openai-chat-infqps-concurrency2-handmade.json",
	"handmade/vllm-detailed/openai-chat-infqps-concurrency4-handmade.json",
	"handmade/vllm-detailed/openai-chat-infqps-concurrency8-handmade.json",
	"handmade/vllm-detailed/openai-chat-infqps-concurrency16-handmade.json",
}

var goldenCases = []goldenCase{
	{"vllm_llmd_1p1d", []string{"vllm/benchmark_2025-05-13_04-37-51.json"}, checkVLLM1p1d},
	{"vllm_2replicas", []string{"vllm/benchmark_2025-05-13_04-55-27.json"}, checkVLLM2Replicas},
	{"guidellm_stripped", []string{"guidellm/benchmarks_stripped.json"}, checkGuideLLMStripped},
	{"guidellm_report_v2", []string{"guidellm/guidellm_report_v2.json"}, checkGuideLLMV2},
	{"aiperf_run1_json", []string{"aiperf/examples-run1/profile_export_aiperf.json"}, checkAIPerfRun1JSON},
	{"aiperf_run1_csv", []string{"aiperf/examples-run1/profile_export_aiperf.csv"}, checkAIPerfRun1CSV},
	{"aiperf_run1_jsonl", []string{"aiperf/examples-run1/profile_export.jsonl"}, checkAIPerfRun1JSONL},
	{"aiperf_run1_all", []string{
		"aiperf/examples-run1/profile_export_aiperf.json",
		"aiperf/examples-run1/profile_export.jsonl",
		"aiperf/examples-run1/profile_export_aiperf.csv",
	}, checkAIPerfRun1All},
	{"aiperf_smoke_100k", []string{"aiperf/dev-smoke-100k-conc/profile_export_aiperf.json"}, checkAIPerfSmoke},
	{"genai_perf_csv", []string{"genai-perf/profile_export_genai_perf.csv"}, checkGenAIPerfCSV},
	{"llmperf_yi_summary", []string{"llmperf/01-ai-Yi-1-5-34B-Chat_550_150_summary.json"}, checkLLMPerfYiSummary},
	{"llmperf_yi_responses", []string{"llmperf/01-ai-Yi-1-5-34B-Chat_550_150_individual_responses.json"}, checkLLMPerfYiResponses},
	{"llmperf_yi_pair", []string{
		"llmperf/01-ai-Yi-1-5-34B-Chat_550_150_summary.json",
		"llmperf/01-ai-Yi-1-5-34B-Chat_550_150_individual_responses.json",
	}, checkLLMPerfYiPair},
	{"llmperf_fireworks", []string{"llmperf/leaderboard/fireworks_70b.json"}, checkLLMPerfFireworks},
	{"handmade_vllm_sweep", vllmSweep, checkVLLMSweep},
	{"handmade_workshop", []string{"handmade/workshop_ramp.csv"}, checkWorkshop},
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			imp := importFiles(t, tc.files...)
			tc.check(t, imp)
			got := goldenJSON(t, imp)
			path := filepath.Join("testdata", tc.name+".golden.json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s (go test -update rewrites it):\n%s", path, got)
			}
		})
	}
}

func importFiles(t *testing.T, names ...string) *Imported {
	t.Helper()
	var files []File
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, File{Name: n, Data: data})
	}
	imp, err := ImportMany(files, deadline12s)
	if err != nil {
		t.Fatalf("import %v: %v", names, err)
	}
	return imp
}

// goldenJSON renders an import without its rows (only their count and the
// first two) and with numbers rounded to 10 significant digits, so that the
// files stay readable and do not depend on the last bits of the fit.
func goldenJSON(t *testing.T, imp *Imported) []byte {
	t.Helper()
	view := struct {
		*Imported
		RecordCount int              `json:"record_count"`
		RecordsHead []measure.Record `json:"records_head,omitempty"`
	}{Imported: imp, RecordCount: len(imp.Records), RecordsHead: imp.Records[:min(2, len(imp.Records))]}
	saved := imp.Records
	imp.Records = nil
	raw, err := json.Marshal(view)
	imp.Records = saved
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(roundNumbers(v), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

func roundNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = roundNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = roundNumbers(e)
		}
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return x
		}
		return json.Number(strconv.FormatFloat(f, 'g', 10, 64))
	}
	return v
}

// near fails unless got is within a relative 1e-9 of want.
func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.12g, want %.12g", what, got, want)
	}
}

// within fails unless got is within tol (absolute) of want.
func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.6g, want %.6g ± %g", what, got, want, tol)
	}
}

func eqInt(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %d, want %d", what, got, want)
	}
}

func oneStep(t *testing.T, imp *Imported) measure.Step {
	t.Helper()
	if len(imp.Steps) != 1 {
		t.Fatalf("%d steps, want 1", len(imp.Steps))
	}
	return imp.Steps[0]
}

func kneeIs(t *testing.T, imp *Imported, want int) {
	t.Helper()
	if k := imp.Analysis.Knee; k == nil || *k != want {
		t.Errorf("knee = %v, want %d", fmtPtr(k), want)
	}
}

func noKnee(t *testing.T, imp *Imported) {
	t.Helper()
	if k := imp.Analysis.Knee; k != nil {
		t.Errorf("knee = %d, want none", *k)
	}
}

func fmtPtr(p *int) string {
	if p == nil {
		return "null"
	}
	return strconv.Itoa(*p)
}
