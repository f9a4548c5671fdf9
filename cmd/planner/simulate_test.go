package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/simulate"
)

func TestSimulateTable(t *testing.T) {
	code, out, errOut := execute(t, "", "simulate", "--example", "backfill", "--duration", "10m")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"simulated 600 s with seed 1: pacing on", "CLASS", "chat", "backfill", "key shared:", "verdict: the plan holds"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	for i, line := range strings.Split(out, "\n") {
		if n := len([]rune(line)); n > 100 {
			t.Errorf("line %d is %d columns wide: %q", i+1, n, line)
		}
	}
}

// TestSimulateFailsWhenThePlanDoesNotHold: without pacing the backfill's
// start-up burst draws 429s; the output is written and the exit status is
// 1 with the verdict on standard error.
func TestSimulateFailsWhenThePlanDoesNotHold(t *testing.T) {
	code, out, errOut := execute(t, "", "simulate", "--example", "backfill", "--duration", "10m", "--no-pacing", "-o", "json")
	if code != exitError || !strings.Contains(errOut, "backfill: 429s on 20.9 % of sends, requests lost") {
		t.Fatalf("exit %d, stderr %q; want 1 and the verdict", code, errOut)
	}
	var r simulate.Simulation
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("the JSON does not decode: %v", err)
	}
	if r.Settings.Pacing || r.Verdict.Holds || r.Quotas[0].RateLimited == 0 {
		t.Errorf("settings %+v, verdict %+v, %d 429s", r.Settings, r.Verdict, r.Quotas[0].RateLimited)
	}
}

func TestSimulateFormatsAndSeed(t *testing.T) {
	args := []string{"simulate", "--example", "chat", "--duration", "20m", "--aimd"}
	_, a, _ := execute(t, "", append(args, "-o", "json")...)
	_, b, _ := execute(t, "", append(args, "-o", "json")...)
	if a != b {
		t.Error("two runs with the same seed print different JSON")
	}
	_, c, _ := execute(t, "", append(args, "-o", "json", "--seed", "9")...)
	var r simulate.Simulation
	if err := json.Unmarshal([]byte(c), &r); err != nil || r.Settings.Seed != 9 || !r.Settings.AIMD || c == a {
		t.Errorf("--seed 9: %v, seed %d", err, r.Settings.Seed)
	}
	code, ym, _ := execute(t, "", append(args, "-o", "yaml")...)
	var fromYAML simulate.Simulation
	if err := yaml.Unmarshal([]byte(ym), &fromYAML); code != exitOK || err != nil || fromYAML.Settings.DurationS != 1200 {
		t.Errorf("yaml: exit %d, %v", code, err)
	}
	code, md, _ := execute(t, "", append(args, "-o", "markdown")...)
	if code != exitOK || !strings.HasPrefix(md, "# Simulation") || !strings.Contains(md, "| chat | poisson |") {
		t.Errorf("markdown: exit %d\n%s", code, md)
	}
	path := filepath.Join(t.TempDir(), "run.json")
	code, out, _ := execute(t, "", append(args, "-o", "json", "--out", path)...)
	written, err := os.ReadFile(path)
	if code != exitOK || out != "" || err != nil || string(written) != a {
		t.Errorf("--out: exit %d, stdout %q, file %v", code, out, err)
	}
}

func TestSimulateUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--example", "chat", "--duration", "0s"}, "--duration"},
		{[]string{"--example", "chat", "--duration", "200h"}, "--duration"},
		{[]string{"--example", "chat", "--refill", "sliding"}, "--refill"},
		{[]string{"--example", "chat", "-o", "xml"}, "--output"},
		{[]string{"--example", "chat", "--interval", "1s", "--duration", "2h"}, "--interval"},
		{[]string{"--example", "chat", "--interval", "0s"}, "--interval must be positive, got 0s"},
		{[]string{"--example", "chat", "--max-events", "100"}, "--duration"},
		{[]string{"--example", "chat", "--seed", "9007199254740992"}, "--seed must be below 2^53"},
		{[]string{"--example", "chat", "--replay", "chat"}, "CLASS=FILE"},
		{[]string{"-f", "-", "--replay", "chat=-"}, "standard input (-) can be given once, not to -f - and --replay chat=-"},
		{[]string{"--example", "chat-and-batch", "--replay", "chat=-", "--replay", "batch=-"}, "standard input (-) can be given once, not to --replay chat=- and --replay batch=-"},
		{[]string{"--example", "nope"}, "no example"},
		{[]string{}, "-f FILE"},
	} {
		code, _, errOut := execute(t, "", append([]string{"simulate"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	code, _, errOut := execute(t, "quotas: []\n", "simulate", "-f", "-")
	if code != exitError || !strings.Contains(errOut, "invalid scenario") {
		t.Errorf("an invalid scenario: exit %d, %q", code, errOut)
	}
}

// TestSimulateReplaysAProbe replays the start times of a probe's
// requests.csv as the arrivals of a class, from the first request on.
func TestSimulateReplaysAProbe(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "requests.csv")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []measure.Record
	for i := range 40 {
		recs = append(recs, measure.Record{Step: 1, Index: i, StartS: 100 + 0.5*float64(i), AckMs: 90, TTFTMs: 100, E2EMs: 600,
			OutputTokens: 20, InputTokens: 50, Status: 200, Attempts: 1, OK: true})
	}
	if err := measure.WriteCSV(f, recs); err != nil {
		t.Fatal(err)
	}
	f.Close()
	code, out, errOut := execute(t, "", "simulate", "--example", "chat", "--duration", "15s", "--replay", "chat="+path, "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r simulate.Simulation
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	// Start times 0, 0.5, …, 19.5 s after the first: 31 within 15 s.
	if c := r.Classes[0]; c.Arrivals != simulate.ArrivalsReplay || c.Simulated.Requests != 31 {
		t.Errorf("%s arrivals, %d requests; want 31 replayed", c.Arrivals, c.Simulated.Requests)
	}
	code, _, errOut = execute(t, "", "simulate", "--example", "chat", "--replay", "nobody="+path)
	if code != exitUsage || !strings.Contains(errOut, `--replay nobody=`+path+`: no class named "nobody"`) {
		t.Errorf("a replay of no class: exit %d, %q", code, errOut)
	}
	missing := filepath.Join(dir, "missing.csv")
	code, _, errOut = execute(t, "", "simulate", "--example", "chat", "--replay", "chat="+missing)
	if code != exitError || !strings.Contains(errOut, `planner: --replay chat=`+missing+`: read `) {
		t.Errorf("a replay of a missing file: exit %d, %q; want the flag named", code, errOut)
	}
	code, _, errOut = execute(t, "", "simulate", "--example", "chat", "--replay", "chat="+path, "--replay", "chat="+path)
	if code != exitUsage || !strings.Contains(errOut, `planner: --replay chat=`+path+`: class "chat" is replayed twice`) {
		t.Errorf("a class replayed twice: exit %d, %q", code, errOut)
	}
}

func TestReportWithASimulation(t *testing.T) {
	code, md, errOut := execute(t, "", "report", "--example", "backfill", "--simulate", "10m")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"## Simulation", "Simulated 600 s with seed 1: pacing on", "### backfill", "simulated requests in flight"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	code, page, _ := execute(t, "", "report", "--example", "backfill", "--simulate", "10m", "-o", "html")
	if code != exitOK || strings.Count(page, `data-chart="simulation"`) != 2 {
		t.Errorf("the HTML report: exit %d, %d simulation charts", code, strings.Count(page, `data-chart="simulation"`))
	}
	if code, _, errOut := execute(t, "", "report", "--example", "chat", "--simulate", "-1h"); code != exitUsage || !strings.Contains(errOut, "--simulate") {
		t.Errorf("a negative --simulate: exit %d, %q", code, errOut)
	}
	// --simulate 0s is refused as the message says, not read as no
	// simulation, which a report without the flag has.
	if code, md, errOut := execute(t, "", "report", "--example", "chat", "--simulate", "0s"); code != exitUsage || !strings.Contains(errOut, "--simulate must be a duration of at least 1s") || strings.Contains(md, "## Simulation") {
		t.Errorf("--simulate 0s: exit %d, %q", code, errOut)
	}
	// A run too long for the events a report's simulation may have names
	// report's flag, not planner simulate's.
	code, _, errOut = execute(t, "", "report", "--example", "three-classes", "--simulate", "168h")
	if code != exitUsage || !strings.Contains(errOut, "planner: --simulate: 604800 s of this scenario needs about") ||
		!strings.Contains(errOut, "shorten the run or run it with planner simulate --max-events") || strings.Contains(errOut, "--duration") || strings.Contains(errOut, "max_events") {
		t.Errorf("a --simulate too long: exit %d, %q", code, errOut)
	}
	code, _, errOut = execute(t, "", "simulate", "--example", "chat", "--max-events", "100")
	if code != exitUsage || !strings.Contains(errOut, "more than --max-events 100: shorten the run or raise --max-events") {
		t.Errorf("--max-events too small: exit %d, %q", code, errOut)
	}
}
