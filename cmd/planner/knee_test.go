package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/measure"
)

const workshopRamp = importTestdata + "handmade/workshop_ramp.csv"

func TestKneeWorkshopRamp(t *testing.T) {
	code, out, errOut := runCLI(t, "", "knee", workshopRamp)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"format: workshop-ramp-csv", "conc", "goodput", "e2e_p50", "p99", "knee: 8", "collapse: 16", "quota-limited: no", "TTFT and TPOT are unknown"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Two tables of five steps each: the load (11 columns) and the
	// latency (16 columns: p50, p90, p95, p99 and the p95's interval of
	// TTFT, TPOT and E2E).
	load, latency := 0, 0
	for _, line := range strings.Split(out, "\n") {
		switch f := strings.Fields(line); {
		case len(f) == 11 && f[0] != "conc":
			load++
		case len(f) == 16 && f[0] != "conc":
			latency++
		}
	}
	if load != 5 || latency != 5 {
		t.Errorf("%d and %d table rows, want 5 and 5:\n%s", load, latency, out)
	}
}

func TestKneeFlagsChangeTheVerdict(t *testing.T) {
	// With a 1.5 s deadline the first step's p95 (1027 ms) is over 0.6 × 1.5 s.
	code, out, _ := runCLI(t, "", "knee", "--deadline", "1.5s", workshopRamp)
	if code != exitOK || !strings.Contains(out, "knee: none") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	// Asking for 99 % growth per step passes 1→2→4 (100 %) and fails 4→8 (97.5 %).
	code, out, _ = runCLI(t, "", "knee", "--min-gain-pct", "99", workshopRamp)
	if code != exitOK || !strings.Contains(out, "knee: 4") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestKneeProbeRequestsCSV(t *testing.T) {
	// A closed loop of c workers, max(40, 3c) + c requests per step, the
	// first round warm-up; an endpoint that serves two at a time.
	var recs []measure.Record
	for _, c := range []int{1, 2, 4} {
		e2e := 1000.0
		if c == 4 {
			e2e = 2000 // saturated: goodput stays flat
		}
		for i := range analysis.MinMeasured(c) + c {
			recs = append(recs, measure.Record{
				Step: c, Index: i, StartS: float64(i/c) * e2e / 1000, TTFTMs: 100, E2EMs: e2e,
				OutputTokens: 20, Status: 200, OK: true, Attempts: 1, Warmup: i < c,
			})
		}
	}
	var buf bytes.Buffer
	if err := measure.WriteCSV(&buf, recs); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "requests.csv")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "", "knee", "-o", "json", path)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Format   string `json:"format"`
		Analysis struct {
			Knee *int `json:"knee"`
		} `json:"analysis"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if got.Format != "planner-requests-csv" || got.Analysis.Knee == nil || *got.Analysis.Knee != 2 {
		t.Errorf("format %q, knee %v:\n%s", got.Format, got.Analysis.Knee, out)
	}
}

func TestKneeExitCodes(t *testing.T) {
	broken := filepath.Join(t.TempDir(), "broken.csv")
	if err := os.WriteFile(broken, []byte("step,idx,ok,code,ms,wall_s\n1,0,1,200,900,4\n2,0,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A probe's output directory and its steps.json are what a probe
	// writes beside its requests.csv, which is the file to give.
	probeDir := t.TempDir()
	steps := filepath.Join(probeDir, "steps.json")
	if err := os.WriteFile(steps, []byte(`{"steps":[{"concurrency":1,"goodput_rps":2}],"knee":null,"stop_reason":"completed","config":{"model":"m"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	requests := filepath.Join(probeDir, "requests.csv")
	cases := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"short row", []string{"knee", broken}, exitError, "looks like a workshop ramp CSV (step, idx, ok, code, ms, wall_s) but line 3 has 3 fields"},
		{"no file", []string{"knee"}, exitUsage, "accepts 1 arg"},
		{"two files", []string{"knee", broken, broken}, exitUsage, "accepts 1 arg"},
		{"zero gain", []string{"knee", "--min-gain-pct", "0", broken}, exitUsage, "--min-gain-pct must be above 0"},
		{"bad duration", []string{"knee", "--deadline", "soon", broken}, exitUsage, "invalid argument"},
		{"bad SLO", []string{"knee", "--slo", "ttft:500ms,ttft:1s", broken}, exitUsage, "--slo: ttft is given twice"},
		{"a directory", []string{"knee", probeDir}, exitError, "planner: " + probeDir + " is a directory: give a result file (a probe's output directory holds its requests.csv, " + requests + ")\n"},
		{"a steps.json", []string{"knee", steps}, exitError, "planner: knee: " + steps + " is a probe's steps.json, its judgement already made: give its requests.csv (" + requests + ") to judge its requests\n"},
		{"import of a directory", []string{"import", probeDir}, exitError, probeDir + " is a directory: give a result file"},
		{"import of a steps.json", []string{"import", steps}, exitError, "planner: import: " + steps + " is a probe's steps.json"},
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

// TestImportSLO: planner import --slo judges a probe's requests.csv by the
// targets: a step whose requests take 150 ms to their first token meets
// ttft:120ms not at all, and its goodput is 0; the table says so.
func TestImportSLO(t *testing.T) {
	var recs []measure.Record
	for _, c := range []int{1, 2} {
		ttft := 100.0
		if c == 2 {
			ttft = 150
		}
		for i := range analysis.MinMeasured(c) + c {
			recs = append(recs, measure.Record{Step: c, Index: i, StartS: float64(i / c), TTFTMs: ttft, E2EMs: 1000,
				OutputTokens: 20, Status: 200, OK: true, Attempts: 1, Warmup: i < c})
		}
	}
	var buf bytes.Buffer
	if err := measure.WriteCSV(&buf, recs); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "requests.csv")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "", "import", "--slo", "ttft:120ms", path)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"SLO ttft:120ms: goodput counts the requests that met every target at once",
		"1            40   40        100.0 %", "2            0    40        0.0 %"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
}

// TestOutIsNotAnInput: --out naming a file the command reads (by another
// spelling too) is refused before anything is written, so that a typo
// does not replace a probe's requests.csv by a curve file or a table.
func TestOutIsNotAnInput(t *testing.T) {
	dir := t.TempDir()
	ramp := []byte("step,idx,ok,code,ms,wall_s\n1,0,1,200,900,4\n2,0,1,200,950,4\n")
	csvPath := filepath.Join(dir, "ramp.csv")
	if err := os.WriteFile(csvPath, ramp, 0o644); err != nil {
		t.Fatal(err)
	}
	probeDir := writeSteps(t, filepath.Join(dir, "morning"), "gpt-4o", "2026-03-02T09:00:00Z", 8, 400, 2000, 4, 60, 3)
	steps := filepath.Join(probeDir, "steps.json")
	before, err := os.ReadFile(steps)
	if err != nil {
		t.Fatal(err)
	}
	other := dir + "/./ramp.csv"
	for _, tc := range []struct {
		name string
		args []string
		says string
	}{
		{"import", []string{"import", csvPath, "--out", other}, "--out " + other + " is " + csvPath + ", a file read: writing it would replace what was measured"},
		{"knee", []string{"knee", csvPath, "--out", csvPath}, "--out " + csvPath + " is " + csvPath + ", a file read"},
		{"compare of a directory", []string{"compare", probeDir, csvPath, "--out", steps}, "--out " + steps + " is " + steps + ", a file read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args...)
			if code != exitUsage || !strings.Contains(errOut, tc.says) || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d saying %q", code, out, errOut, exitUsage, tc.says)
			}
			if b, _ := os.ReadFile(csvPath); string(b) != string(ramp) {
				t.Errorf("the ramp was overwritten: %q", b)
			}
			if b, _ := os.ReadFile(steps); string(b) != string(before) {
				t.Errorf("the steps.json was overwritten: %q", b)
			}
		})
	}
}
