package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner/api"
	"github.com/plannerdev/planner/internal/plan"
)

// TestWhatIfMatchesTheAPI sweeps the same scenario and variations through
// the command and through POST /v1/what-if: the grids are equal.
func TestWhatIfMatchesTheAPI(t *testing.T) {
	code, out, errOut := execute(t, "", "what-if", "--example", "chat",
		"--vary", "/quotas/0/tpm=200000,1000000", "--vary", "/classes/0/max_tokens=700,1200", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var cli plan.WhatIf
	if err := json.Unmarshal([]byte(out), &cli); err != nil {
		t.Fatal(err)
	}
	var sc any
	if err := yaml.Unmarshal([]byte(exampleText(t, "chat")), &sc); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"scenario": sc, "variations": []map[string]any{
		{"path": "/quotas/0/tpm", "values": []any{200000, 1000000}},
		{"path": "/classes/0/max_tokens", "values": []any{700, 1200}},
	}})
	req := httptest.NewRequest(http.MethodPost, "/v1/what-if", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Host = "localhost" // a name of the service, as its Host check wants
	rec := httptest.NewRecorder()
	api.New(api.Options{}).ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("POST /v1/what-if: %d %s", rec.Code, rec.Body)
	}
	var fromAPI plan.WhatIf
	if err := json.Unmarshal(rec.Body.Bytes(), &fromAPI); err != nil {
		t.Fatal(err)
	}
	if len(cli.Cells) != 4 || !reflect.DeepEqual(cli.Cells, fromAPI.Cells) || !reflect.DeepEqual(cli.Variations, fromAPI.Variations) {
		t.Fatalf("the command's grid differs from the API's:\ncommand %+v\napi     %+v", cli, fromAPI)
	}
}

// TestWhatIfTable reads the table of a sweep over the chat example's tpm:
// at 200,000 tokens per minute one window of 1 s allows 0.9 × 200,000/60 =
// 3,000 tokens, less than a request's charge (3,994 at the p99 of its
// input), so the pool is 0, bound by tpm, and does not fit the demand
// (which needs 12); at 2,000,000 it is 78 and fits.
func TestWhatIfTable(t *testing.T) {
	code, out, errOut := execute(t, "", "what-if", "--example", "chat", "--vary", "/quotas/0/tpm=200000,2000000")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := [][]string{
		{"/quotas/0/tpm", "CLASS", "POOL", "BINDING", "MIN", "FEASIBLE"},
		{"200,000", "chat", "0", "tpm", "12", "NO"},
		{"2,000,000", "chat", "78", "tpm", "12", "yes"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if got := strings.Fields(lines[i]); !reflect.DeepEqual(got, w) {
			t.Errorf("line %d: %q, want %q", i+1, got, w)
		}
	}
	// Checked, each cell says whether the class fits and what its check
	// saw: the infeasible cell fits no more than it is feasible.
	code, out, errOut = execute(t, "", "what-if", "--example", "chat", "--vary", "/quotas/0/tpm=200000,2000000", "--check")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 3 || !reflect.DeepEqual(strings.Fields(lines[0]), append(want[0], "FITS", "CHECK")) ||
		strings.Fields(lines[1])[6] != "NO" || strings.Fields(lines[2])[6] != "yes" || strings.Fields(lines[2])[7] != "holds" {
		t.Errorf("exit %d (%s), checked table:\n%s", code, errOut, out)
	}
}

func TestWhatIfValuesAndErrors(t *testing.T) {
	// Words, JSON objects, and a value that makes only its cell invalid.
	code, out, errOut := execute(t, "", "what-if", "--example", "chat", "--vary", `/classes/0/demand={"rps":1},{"rps":-1}`, "-o", "yaml")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var g plan.WhatIf
	if err := yaml.Unmarshal([]byte(out), &g); err != nil || len(g.Cells) != 2 {
		t.Fatalf("%v: %s", err, out)
	}
	if len(g.Cells[0].Classes) != 1 || len(g.Cells[0].Errors) != 0 || len(g.Cells[1].Errors) == 0 ||
		!strings.Contains(g.Cells[1].Errors[0].Path, "demand.rps") {
		t.Errorf("cells %+v", g.Cells)
	}
	code, out, _ = execute(t, "", "what-if", "--example", "chat", "--vary", "/classes/0/mode=interactive,batch", "-o", "markdown")
	if code != exitOK || !strings.Contains(out, "| interactive | chat |") || !strings.Contains(out, "| batch | chat |") {
		t.Errorf("exit %d, markdown:\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"--example", "chat"}, exitUsage, "give --vary"},
		{[]string{"--example", "chat", "--vary", "/a=1", "--vary", "/b=1", "--vary", "/c=1"}, exitUsage, "once or twice"},
		{[]string{"--example", "chat", "--vary", "quotas.0.tpm=1"}, exitUsage, "JSON Pointer"},
		{[]string{"--example", "chat", "--vary", "/quotas/9/tpm=1"}, exitUsage, `--vary "/quotas/9/tpm=1": no field at /quotas/9/tpm`},
		{[]string{"--example", "chat", "--vary", "/quotas/0/tpm=1,2", "-o", "html"}, exitUsage, "must be one of table, json, yaml, markdown"},
		{[]string{"--vary", "/quotas/0/tpm=1"}, exitUsage, "give a scenario"},
	} {
		code, _, errOut := execute(t, "", append([]string{"what-if"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errOut, tc.err) {
			t.Errorf("%v: exit %d, want %d; stderr %q, want %q in it", tc.args, code, tc.code, errOut, tc.err)
		}
	}
}

// TestWhatIfWithNoValidCell: a grid whose every cell is invalid is
// printed, and the exit status is 1; a path that names no field is a usage
// error before anything is planned; one valid cell is enough for 0.
func TestWhatIfWithNoValidCell(t *testing.T) {
	code, out, errOut := execute(t, "", "what-if", "--example", "chat", "--vary", "/classes/0/max_tokens=-1,-2")
	if code != exitError || !strings.Contains(out, "invalid: classes[0].max_tokens") || !strings.Contains(errOut, "no cell of the grid is valid") {
		t.Errorf("every cell invalid: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = execute(t, "", "what-if", "--example", "chat", "--vary", "/classes/0/nope=1,2")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "no field at /classes/0/nope") {
		t.Errorf("a path to no field: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := execute(t, "", "what-if", "--example", "chat", "--vary", "/classes/0/max_tokens=-1,700"); code != exitOK {
		t.Errorf("one valid cell: exit %d %s", code, errOut)
	}
}

// TestWhatIfValueBeyondANumber: a value beyond the range of a number
// (1e400) is refused at its flag, and adds no cell of its own: the grid is
// not planned with the values before it twice and a cell without the field.
func TestWhatIfValueBeyondANumber(t *testing.T) {
	for _, list := range []string{"5,1e400", "-1,0,1e400", `{"rps":1e400}`, "5, 1e400"} {
		path := "/quotas/0/tpm"
		if strings.HasPrefix(list, "{") {
			path = "/classes/0/demand"
		}
		code, out, errOut := execute(t, "", "what-if", "--example", "chat", "--vary", path+"="+list)
		if code != exitUsage || out != "" || !strings.Contains(errOut, fmt.Sprintf("--vary %q: 1e400 is beyond the range of a number", path+"="+list)) {
			t.Errorf("%s: exit %d\n%s%s", list, code, out, errOut)
		}
	}
	// Words and numbers together still read each value once.
	code, out, errOut := execute(t, "", "what-if", "--example", "chat", "--vary", "/classes/0/mode=interactive,batch,7", "-o", "json")
	var g plan.WhatIf
	if code != exitOK || json.Unmarshal([]byte(out), &g) != nil || len(g.Cells) != 3 {
		t.Errorf("words and a number: exit %d, %d cells\n%s%s", code, len(g.Cells), out, errOut)
	}
}

// TestWhatIfBoundsAVariationAsTheAPIDoes: a variation of more values than
// POST /v1/what-if takes in one (its variations[].values, at most
// plan.MaxVariationValues) is a usage error naming the --vary, as the
// API refuses it, rather than a grid that only the command answers.
func TestWhatIfBoundsAVariationAsTheAPIDoes(t *testing.T) {
	values := func(n int) string {
		vs := make([]string, n)
		for i := range vs {
			vs[i] = fmt.Sprint(100000 + i)
		}
		return strings.Join(vs, ",")
	}
	code, _, errOut := execute(t, "", "what-if", "--example", "chat", "--vary", "/quotas/0/tpm="+values(plan.MaxVariationValues+1), "-o", "csv")
	if code != exitUsage || !strings.Contains(errOut, "--vary \"/quotas/0/tpm=100000,") ||
		!strings.Contains(errOut, fmt.Sprintf("%d values; at most %d", plan.MaxVariationValues+1, plan.MaxVariationValues)) {
		t.Errorf("exit %d: %s", code, errOut)
	}
	var sc any
	if err := yaml.Unmarshal([]byte(exampleText(t, "chat")), &sc); err != nil {
		t.Fatal(err)
	}
	over := make([]any, plan.MaxVariationValues+1)
	for i := range over {
		over[i] = 100000 + i
	}
	body, _ := json.Marshal(map[string]any{"scenario": sc, "variations": []map[string]any{{"path": "/quotas/0/tpm", "values": over}}})
	req := httptest.NewRequest(http.MethodPost, "/v1/what-if", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Host = "localhost"
	rec := httptest.NewRecorder()
	api.New(api.Options{}).ServeHTTP(rec, req)
	if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "body.variations[0].values") {
		t.Errorf("POST /v1/what-if of %d values: %d %s", len(over), rec.Code, rec.Body)
	}
	if code, _, errOut := execute(t, "", "what-if", "--example", "chat", "--vary", "/quotas/0/tpm="+values(plan.MaxVariationValues), "-o", "csv"); code != exitOK {
		t.Errorf("%d values: exit %d: %s", plan.MaxVariationValues, code, errOut)
	}
}

// TestWhatIfTableKeepsAValueOnItsRow: a varied value is shown on its
// cell's row: a string with a line break quoted as JSON rather than
// splitting the row, and a number of hundreds of digits in exponent form
// rather than written out.
func TestWhatIfTableKeepsAValueOnItsRow(t *testing.T) {
	code, out, errOut := execute(t, "", "what-if", "--example", "chat", "--vary", `/classes/0/mode="semi\n## not a row",batch`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 3 || !strings.HasPrefix(lines[1], `"semi\n## not a row"`) || !strings.HasPrefix(lines[2], "batch ") {
		t.Errorf("exit %d (%s):\n%s", code, errOut, out)
	}
	code, out, errOut = execute(t, "", "what-if", "--example", "chat", "--vary", `/quotas/0/tpm=1e300,1e6`)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 3 || !strings.HasPrefix(lines[1], "1e+300 ") || len(lines[1]) > 200 || !strings.HasPrefix(lines[2], "1,000,000 ") {
		t.Errorf("exit %d (%s):\n%s", code, errOut, out)
	}
}

// TestWhatIfVariesInsideTheFirstsObject: the second variation may vary a
// field inside the object the first puts in place, also one the scenario
// did not have (a task on a class without one): each cell writes it into
// the first's value. A path that none of the first's values holds is
// still refused.
func TestWhatIfVariesInsideTheFirstsObject(t *testing.T) {
	// The chat example with the one target a task class takes of its two.
	chat := strings.Replace(exampleText(t, "chat"), "slo: {ttft_p95_ms: 1500, e2e_p95_ms: 12000}", "slo: {ttft_p95_ms: 1500}", 1)
	if !strings.Contains(chat, "slo: {ttft_p95_ms: 1500}") {
		t.Fatalf("the chat example's SLO is not as the test expects:\n%s", chat)
	}
	code, out, errOut := execute(t, chat, "what-if", "-f", "-",
		"--vary", `/classes/0/task={"calls":{"fixed":3}},{"calls":{"fixed":5},"tool_ms":{"fixed":100}}`,
		"--vary", "/classes/0/task/calls/fixed=2,4", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var g plan.WhatIf
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cells) != 4 {
		t.Fatalf("%d cells, want 4:\n%s", len(g.Cells), out)
	}
	for _, c := range g.Cells {
		if len(c.Errors) > 0 || len(c.Classes) != 1 {
			t.Errorf("cell %v: %+v", c.Values, c)
		}
	}
	code, _, errOut = execute(t, chat, "what-if", "-f", "-",
		"--vary", `/classes/0/task={"calls":{"fixed":3}}`, "--vary", "/classes/0/task/tool_ms/fixed=2,4")
	if code != exitUsage || !strings.Contains(errOut, "no field at /classes/0/task/tool_ms/fixed") {
		t.Errorf("a path no value of the first holds: exit %d: %s", code, errOut)
	}
}
