package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/plan"
)

// execute runs the command line with the given standard input.
func execute(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestPlanExampleTable(t *testing.T) {
	code, out, errOut := execute(t, "", "plan", "--example", "three-classes")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"CLASS", "chat", "summarise", "nightly", "tpm", "ceilings (largest pool each allows; * binds):"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	for i, line := range strings.Split(out, "\n") {
		if n := len([]rune(line)); n > 100 {
			t.Errorf("line %d is %d columns wide: %q", i+1, n, line)
		}
	}
}

func TestPlanFormats(t *testing.T) {
	code, js, _ := execute(t, "", "plan", "--example", "chat", "-o", "json")
	if code != exitOK {
		t.Fatalf("json exit %d", code)
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(js), &p); err != nil || len(p.Classes) != 1 || p.Classes[0].Pool < 1 {
		t.Fatalf("json plan %v: %s", err, js)
	}
	code, ym, _ := execute(t, "", "plan", "--example", "chat", "-o", "yaml")
	var fromYAML plan.Plan
	if err := yaml.Unmarshal([]byte(ym), &fromYAML); code != exitOK || err != nil || fromYAML.Classes[0].Pool != p.Classes[0].Pool {
		t.Fatalf("yaml exit %d err %v", code, err)
	}
	code, md, _ := execute(t, "", "plan", "--example", "chat", "-o", "markdown")
	if code != exitOK || !strings.HasPrefix(md, "# Capacity plan") || !strings.Contains(md, "| chat |") {
		t.Fatalf("markdown exit %d:\n%s", code, md)
	}
}

func TestPlanFromStdinMatchesFile(t *testing.T) {
	_, fromExample, _ := execute(t, "", "plan", "--example", "chat", "-o", "json")
	code, fromStdin, errOut := execute(t, exampleText(t, "chat"), "plan", "-f", "-", "-o", "json")
	if code != exitOK || fromStdin != fromExample {
		t.Fatalf("stdin plan differs (exit %d, %s)", code, errOut)
	}
}

// TestEmptyScenario: an empty scenario file, or standard input with
// nothing piped in, is refused as empty by every command that reads one.
func TestEmptyScenario(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(empty, []byte("\n  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"plan", empty}, {"plan", "-f", "-"}, {"simulate", "-f", "-"}, {"report", empty},
		{"export", empty, "--to", "client"}, {"what-if", "-f", "-", "--vary", "/quotas/0/tpm=1,2"},
	} {
		name := empty
		if args[1] == "-f" {
			name = "standard input"
		}
		code, out, errOut := execute(t, "", args...)
		if code != exitError || out != "" || !strings.Contains(errOut, "scenario "+name+" is empty") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}

func TestPlanBadScenarioListsEveryProblem(t *testing.T) {
	bad := strings.NewReplacer("rpm: 3000", "rpm: -1", "quota: prod", "quota: other", "{p50: 150, p95: 450}", "{p50: 150, p95: 100}").Replace(exampleText(t, "chat"))
	code, out, errOut := execute(t, bad, "plan", "-f", "-")
	if code != exitError || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	for _, want := range []string{"3 problems", "quotas[0].rpm", "classes[0].quota", `no quota named "other"`, "classes[0].output_tokens.p95: must be >= p50"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestPlanUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"plan"},
		{"plan", "--example", "nope"},
		{"plan", "--example", "chat", "-o", "xml"},
		{"plan", "--example", "chat", "-f", "x.yaml"},
		{"plan", "--bogus"},
		{"plan", "extra-arg", "--example", "chat"},
	} {
		if code, _, _ := execute(t, "", args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	if code, _, errOut := execute(t, "", "plan", "-f", "/nonexistent/scenario.yaml"); code != exitError || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing file: exit %d %s", code, errOut)
	}
}

func exampleText(t *testing.T, name string) string {
	t.Helper()
	code, _, _ := execute(t, "", "plan", "--example", name)
	if code != exitOK {
		t.Fatalf("example %s does not plan", name)
	}
	b, ok := planner.Example(name)
	if !ok {
		t.Fatalf("no example %q", name)
	}
	return string(b)
}

// TestPlanCheckExitStatus: with --check, a plan in which a class does not
// fit is printed and exits 3; one where every class fits exits 0; without
// --check both exit 0.
func TestPlanCheckExitStatus(t *testing.T) {
	for _, tc := range []struct {
		example string
		check   bool
		want    int
	}{
		{"daily-limit-batch", true, exitUnfit},
		{"daily-limit-batch", false, exitOK},
		{"chat", true, exitOK},
	} {
		args := []string{"plan", "--example", tc.example}
		if tc.check {
			args = append(args, "--check")
		}
		code, out, errOut := execute(t, "", args...)
		if code != tc.want {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, tc.want, errOut)
		}
		if !strings.Contains(out, "CLASS") {
			t.Errorf("%v: no plan printed:\n%s", args, out)
		}
		if tc.want == exitUnfit && !strings.Contains(errOut, "nightly-summaries") {
			t.Errorf("%v: the message does not name the class: %s", args, errOut)
		}
	}
}

// bigRequests is a class whose requests count more tokens at admission
// (input p50 5,000 and max_tokens 4,000) than the key allows in one second
// of its 450,000 a minute (7,500): its own simulation sees 429s.
const bigRequests = `{"quotas":[{"name":"k","rpm":5000,"tpm":450000,"token_accounting":"max_tokens"}],
	"latency":{"ttft_ms":{"p50":500,"p95":1200},"tpot_ms":{"p50":20,"p95":30}},
	"classes":[{"name":"writer","quota":"k","mode":"interactive","demand":{"rps":0.5},"max_tokens":4000,
	"input_tokens":{"p50":5000,"p95":9000},"output_tokens":{"p50":300,"p95":900},"slo":{"ttft_p95_ms":5000}}]}`

// TestPlanCheckFailsWhereTheSimulationBreaks: --check exits 3 when a class
// does not fit by its own simulation, whatever the queueing model says,
// and the table and the JSON say why.
func TestPlanCheckFailsWhereTheSimulationBreaks(t *testing.T) {
	code, out, errOut := execute(t, bigRequests, "plan", "-f", "-", "--check")
	if code != exitUnfit || !strings.Contains(errOut, "writer") || !strings.Contains(out, "BREAKS") {
		t.Fatalf("exit %d, stderr %q:\n%s", code, errOut, out)
	}
	_, out, _ = execute(t, bigRequests, "plan", "-f", "-", "-o", "json")
	var p plan.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	c := p.Classes[0]
	if c.Fitting() || c.Check == nil || c.Check.Holds || len(c.Check.Misses) == 0 || p.Check == nil || p.Check.Holds {
		t.Errorf("writer: fits %v, check %+v, plan check %+v", c.Fits, c.Check, p.Check)
	}
}

// TestPlanBoundedNumbers: a batch whose rate comes to +Inf is refused with
// its field named (exit 1) instead of being searched for ever, and a
// headroom of the smallest normal float64 gives a plan that every format
// writes with finite numbers only, saying that no finite limit helps.
func TestPlanBoundedNumbers(t *testing.T) {
	const base = `{"quotas":[{"name":"k","rpm":6000%s}],"latency":{"ttft_ms":{"fixed":500},"tpot_ms":{"fixed":20}},
		"classes":[{"name":"c","quota":"k","mode":"batch","demand":%s,"input_tokens":{"fixed":100},"output_tokens":{"fixed":100}}]}`
	code, out, errOut := execute(t, fmt.Sprintf(base, "", `{"requests":1e12,"within_hours":1e-300}`), "plan", "-f", "-")
	if code != exitError || out != "" || !strings.Contains(errOut, "classes[0].demand.within_hours: requests / within_hours") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	tiny := fmt.Sprintf(base, `,"headroom":2.2250738585072014e-308`, `{"rps":2}`)
	for _, format := range []string{"json", "table", "markdown", "yaml"} {
		code, out, errOut := execute(t, tiny, "plan", "-f", "-", "-o", format)
		if code != exitOK || strings.Contains(out, "Inf") || !strings.Contains(strings.Join(strings.Fields(out), " "), "no finite limit helps") {
			t.Fatalf("-o %s: exit %d, stderr %q:\n%s", format, code, errOut, out)
		}
	}
}

// TestZeroDemand: a demand of 0 is refused at its field, with the rule
// docs/scenario.md states (above 0), not with a message about another
// field.
func TestZeroDemand(t *testing.T) {
	for _, tc := range []struct{ demand, want string }{
		{"{rps: 0}", "classes[0].demand.rps: expected number > 0"},
		{"{requests: 0, within_hours: 4}", "classes[0].demand.requests: expected number > 0"},
		{"{requests: 100, within_hours: 0}", "classes[0].demand.within_hours: expected number > 0"},
	} {
		sc := strings.Replace(exampleText(t, "chat"), "{rps: 2}", tc.demand, 1)
		code, _, errOut := execute(t, sc, "plan", "-f", "-")
		if code != exitError || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "exactly one") || strings.Contains(errOut, "required") {
			t.Errorf("demand %s: exit %d %q; want %q alone", tc.demand, code, errOut, tc.want)
		}
	}
	doc, err := os.ReadFile("../../docs/scenario.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "## Demand (`classes[].demand`)")
	section, _, _ = strings.Cut(section, "\n## ")
	for _, field := range []string{"rps", "requests", "within_hours"} {
		i := strings.Index(section, "| `"+field+"` |")
		if i < 0 {
			t.Fatalf("docs/scenario.md has no row for demand.%s", field)
		}
		if row, _, _ := strings.Cut(section[i:], "\n"); !strings.Contains(row, "| > 0,") {
			t.Errorf("docs/scenario.md does not state > 0 for demand.%s: %s", field, row)
		}
	}
	if !strings.Contains(section, "a demand of 0 is refused") {
		t.Error("docs/scenario.md does not say that a demand of 0 is refused")
	}
}
