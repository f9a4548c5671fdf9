package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/compare"
	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/report"
)

// writeSteps writes a probe's output directory holding a steps.json of
// the given knee and step at the knee, and returns the directory.
func writeSteps(t *testing.T, dir, model, started string, knee int, ttft, e2e, goodput float64, answers, rateLimited int) string {
	t.Helper()
	doc := map[string]any{
		"steps": []map[string]any{
			{"concurrency": 1, "requests": 40, "ok": 40, "answers": 41, "goodput_rps": 1, "ttft_p95_ms": 100, "e2e_p95_ms": 500},
			{"concurrency": knee, "requests": 40, "ok": 40, "answers": answers, "rate_limited": rateLimited,
				"goodput_rps": goodput, "ttft_p95_ms": ttft, "e2e_p95_ms": e2e},
		},
		"knee": knee, "collapse": nil, "quota_limited": false, "usl": nil,
		"served":      map[string]any{"asked": model, "check": "match", "models": []map[string]any{{"name": model, "answers": 81, "matches": true}}},
		"stop_reason": "completed", "started": started,
		"config": map[string]any{"base_url": "http://127.0.0.1:8000/v1", "model": model, "deadline": "12s"},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "steps.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCompareCommand compares two probe directories, checked by hand:
// the evening's knee of 4 against the morning's 8 is −50 %, its TTFT p95
// of 600 ms against 400 ms +50 %, its E2E p95 of 1,800 ms against
// 2,000 ms −10 %, its goodput of 3 req/s against 4 req/s −25 %. A result
// file of another tool is a run too.
func TestCompareCommand(t *testing.T) {
	dir := t.TempDir()
	morning := writeSteps(t, filepath.Join(dir, "morning"), "gpt-4o", "2026-03-02T09:00:00Z", 8, 400, 2000, 4, 60, 3)
	evening := writeSteps(t, filepath.Join(dir, "evening"), "gpt-4o", "2026-03-02T19:30:00Z", 4, 600, 1800, 3, 50, 10)

	code, out, stderr := execute(t, "", "compare", morning, evening+"/")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(out, "\n")
	row := func(i int) string { return strings.Join(strings.Fields(lines[i]), " ") }
	for i, want := range map[int]string{
		1: morning + " gpt-4o gpt-4o 2026-03-02 09:00 UTC 8 - 400.0 2000.0 4.000 3 of 101 no",
		2: evening + " gpt-4o gpt-4o 2026-03-02 19:30 UTC 4 - 600.0 1800.0 3.000 10 of 91 no",
		5: morning + " base base base base",
		6: evening + " -50.0 % +50.0 % -10.0 % -25.0 %",
	} {
		if got := row(i); got != want {
			t.Errorf("line %d: %q, want %q\n%s", i, got, want, out)
		}
	}

	// Against the evening: the morning's knee +100 %, its goodput
	// (4 − 3)/3 = +33.3 %.
	code, out, stderr = execute(t, "", "compare", morning, evening, "--baseline", evening+"/", "-o", "csv")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("%v %q", err, out)
	}
	for i, want := range []float64{100, 100 * (400 - 600) / 600.0, 100 * (2000 - 1800) / 1800.0, 100 * (4 - 3) / 3.0} {
		got, err := strconv.ParseFloat(rows[1][15+i], 64)
		if err != nil || math.Abs(got-want) > 1e-9 {
			t.Errorf("the morning against the evening, %s: %s, want %v", rows[0][15+i], rows[1][15+i], want)
		}
	}

	// An imported result file is a run; -o json with --out writes the
	// comparison to the file.
	file := filepath.Join(dir, "compared.json")
	code, out, stderr = execute(t, "", "compare", morning, "../../internal/importer/testdata/handmade/workshop_ramp.csv", "-o", "json", "--out", file)
	if code != exitOK || out != "" {
		t.Fatalf("exit %d, stdout %q: %s", code, out, stderr)
	}
	b, _ := os.ReadFile(file)
	var c compare.Comparison
	if err := json.Unmarshal(b, &c); err != nil || len(c.Runs) != 2 || c.Runs[1].Knee == nil || c.Runs[1].Drift == nil || c.Runs[1].Drift.KneePct == nil {
		t.Fatalf("%v: %s", err, b)
	}
	if want := 100 * float64(*c.Runs[1].Knee-8) / 8; *c.Runs[1].Drift.KneePct != want {
		t.Errorf("the imported run's knee drift %v, want %v", *c.Runs[1].Drift.KneePct, want)
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", morning, evening, "--baseline", "noon"}, `the baseline "noon" is none of the runs`},
		{[]string{"compare", morning, morning}, "given twice"},
		{[]string{"compare", morning, "-o", "html"}, "-o/--output"},
		// A probe's steps.json holds the probe's own judgement: a
		// judgement flag would silently judge the result files beside it
		// by other rules than the probe's runs.
		{[]string{"compare", morning, "../../internal/importer/testdata/handmade/workshop_ramp.csv", "--deadline", "30s"},
			"--deadline: " + morning + " is a probe's steps.json, judged as the probe ran it; give its requests.csv (" + filepath.Join(morning, "requests.csv") + ") to judge it with --deadline"},
		{[]string{"compare", morning, evening + "/steps.json", "--min-gain-pct", "5", "--slo", "ttft:500ms"}, "--min-gain-pct, --slo: " + morning + " is a probe's steps.json"},
	} {
		if code, _, stderr := execute(t, "", bad.args...); code != exitUsage || !strings.Contains(stderr, bad.want) {
			t.Errorf("%v: exit %d, %s", bad.args, code, stderr)
		}
	}
	if code, _, stderr := execute(t, "", "compare", morning, filepath.Join(dir, "none")); code != exitError || !strings.Contains(stderr, "none") {
		t.Errorf("a missing run: exit %d, %s", code, stderr)
	}
}

// TestProbeSaysAnotherModelAnswered: the verdict lines and the warnings
// of a probe of gpt-4o whose answers come from gpt-4o-mini.
func TestProbeSaysAnotherModelAnswered(t *testing.T) {
	base := probeSim(t, fakeendpoint.Config{Model: "gpt-4o", ServedModel: "gpt-4o-mini", MaxNumSeqs: 8, TTFT: time.Millisecond, ITL: time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := execute(t, "", withFlag(withFlag(fastProbeArgs(base, out), "--model", "gpt-4o"), "--steps", "1")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "served model: WARNING: the answers named another model than the one asked (gpt-4o): gpt-4o-mini (41 of 41 answers)") {
		t.Errorf("stdout:\n%s", stdout)
	}
	if !strings.Contains(stderr, "warning: the answers named another model than the one asked (gpt-4o)") {
		t.Errorf("stderr:\n%s", stderr)
	}
	csvText, _ := os.ReadFile(filepath.Join(out, "requests.csv"))
	if !strings.Contains(string(csvText), ",gpt-4o-mini,") {
		t.Errorf("requests.csv:\n%.400s", csvText)
	}
}

// byModel routes each request to the simulator of the model its body
// names, as a gateway in front of several models does.
type byModel map[string]http.Handler

func (m byModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &req)
	r.Body = io.NopCloser(bytes.NewReader(body))
	h, ok := m[req.Model]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h.ServeHTTP(w, r)
}

// TestProbeSeveralModels runs one ladder on two models behind one
// endpoint, each into its own directory, and prints the comparison of
// what each wrote.
func TestProbeSeveralModels(t *testing.T) {
	sims := byModel{}
	for model, seqs := range map[string]int{"small/one": 1, "big": 4} {
		srv, err := fakeendpoint.New(fakeendpoint.Config{Model: model, MaxNumSeqs: seqs, TTFT: 2 * time.Millisecond, ITL: time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
		if err != nil {
			t.Fatal(err)
		}
		sims[model] = srv
	}
	ts := httptest.NewServer(sims)
	t.Cleanup(ts.Close)
	out := filepath.Join(t.TempDir(), "ladder")
	args := withFlag(withFlag(fastProbeArgs(ts.URL+"/v1", out), "--model", "big,small/one"), "--steps", "1,2")
	code, stdout, stderr := execute(t, "", args...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"== model big ==", "== model small/one ==", "== compared =="} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	var runs []compare.Run
	for _, d := range []string{"big", "small_one"} {
		r, err := readRun(nil, filepath.Join(out, d), analysis.Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	runs[0].Name, runs[1].Name = "big", "small/one"
	c, err := compare.New(runs, "")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := report.WriteComparison(&want, c, report.FormatTable); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(stdout, "== compared ==\n"+want.String()) {
		t.Errorf("the comparison printed differs from that of the files written:\n%s\nwant\n%s", stdout, want.String())
	}

	code, stdout, stderr = execute(t, "", append(withFlag(args, "--out", filepath.Join(t.TempDir(), "j")), "-o", "json")...)
	var doc struct {
		Runs []struct {
			Config struct {
				Model string `json:"model"`
			} `json:"config"`
		} `json:"runs"`
		Comparison *compare.Comparison `json:"comparison"`
	}
	if code != exitOK || json.Unmarshal([]byte(stdout), &doc) != nil || len(doc.Runs) != 2 || doc.Comparison == nil || len(doc.Comparison.Runs) != 2 ||
		doc.Comparison.Baseline != "big" || doc.Runs[1].Config.Model != "small/one" {
		t.Errorf("exit %d: %.300s %s", code, stdout, stderr)
	}

	if code, _, stderr := execute(t, "", withFlag(args, "--model", "a/b,a_b")...); code != exitUsage || !strings.Contains(stderr, "share the output directory") {
		t.Errorf("two models in one directory: exit %d, %s", code, stderr)
	}
	code, _, stderr = execute(t, "", withFlag(args, "--model", "big,nope")...)
	if code != exitError || !strings.Contains(stderr, "1 of 2 models measured nothing: nope:") {
		t.Errorf("a model that is not served: exit %d, %s", code, stderr)
	}
}
