package main

import (
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/simulate"
)

// outputFormats are the formats a command's -o takes, from its
// completion; none for a command without -o.
func outputFormats(t *testing.T, name string) []string {
	t.Helper()
	if cmd, _, err := newRootCmd(streams{}).Find([]string{name}); name != "" && (err != nil || cmd.Flags().Lookup("output") == nil) {
		return nil
	}
	args := []string{"__complete"}
	if name != "" {
		args = append(args, name)
	}
	_, out, _ := execute(t, "", append(args, "-o", "")...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[:len(lines)-1]
}

// TestMarkdownAlias: every command that writes markdown takes md for it,
// and prints the same.
func TestMarkdownAlias(t *testing.T) {
	root := newRootCmd(streams{})
	dir := t.TempDir()
	morning := writeSteps(t, filepath.Join(dir, "morning"), "gpt-4o", "2026-03-02T09:00:00Z", 8, 400, 2000, 4, 60, 3)
	evening := writeSteps(t, filepath.Join(dir, "evening"), "gpt-4o", "2026-03-02T19:30:00Z", 4, 600, 1800, 3, 50, 10)
	runs := map[string][]string{
		"plan":     {"plan", "--example", "chat"},
		"what-if":  {"what-if", "--example", "chat", "--vary", "/quotas/0/tpm=1e6,2e6"},
		"simulate": {"simulate", "--example", "chat", "--duration", "10m"},
		"report":   {"report", "--example", "chat"},
		"compare":  {"compare", morning, evening},
	}
	// A row every command's Markdown table has: the class, or the model
	// of the runs compared.
	row := map[string]string{"compare": "| gpt-4o |"}
	var found []string
	for _, cmd := range root.Commands() {
		if !slices.Contains(outputFormats(t, cmd.Name()), "markdown") {
			continue
		}
		found = append(found, cmd.Name())
		if u := cmd.Flags().Lookup("output").Usage; !strings.Contains(u, "markdown (or md)") {
			t.Errorf("planner %s: -o's help %q does not name md", cmd.Name(), u)
		}
		args, ok := runs[cmd.Name()]
		if !ok {
			t.Errorf("planner %s writes markdown but is not run here", cmd.Name())
			continue
		}
		code, long, _ := execute(t, "", append(slices.Clone(args), "-o", "markdown")...)
		code2, short, errOut := execute(t, "", append(slices.Clone(args), "-o", "md")...)
		want := "| chat |"
		if r, ok := row[cmd.Name()]; ok {
			want = r
		}
		if code != exitOK || code2 != exitOK || !strings.Contains(short, want) {
			t.Errorf("%v -o md: exit %d/%d: %s", args, code, code2, errOut)
			continue
		}
		if cmd.Name() == "report" {
			long, short = withoutGenerated(long), withoutGenerated(short)
		}
		if long != short {
			t.Errorf("%v: -o md differs from -o markdown", args)
		}
	}
	if len(found) != len(runs) {
		t.Errorf("commands that write markdown: %v, want %d", found, len(runs))
	}
}

// withoutGenerated drops the lines of a report that carry its time.
func withoutGenerated(md string) string {
	var keep []string
	for _, l := range strings.Split(md, "\n") {
		if !strings.Contains(l, "Generated") && !strings.Contains(l, "generated") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// readCSV parses CSV output into its columns by name and its rows.
func readCSV(t *testing.T, out string) (map[string]int, [][]string) {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("not CSV with a header and rows (%v):\n%s", err, out)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	return col, recs[1:]
}

// number reads a CSV cell as a number; the empty cell is nil.
func number(t *testing.T, cell string) *float64 {
	t.Helper()
	if cell == "" {
		return nil
	}
	v, err := strconv.ParseFloat(cell, 64)
	if err != nil {
		t.Fatalf("cell %q is not a number", cell)
	}
	return &v
}

func sameNumber(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// TestCSVForEveryTable: every command that prints a table takes -o csv,
// and its rows carry the numbers of its JSON, unrounded.
func TestCSVForEveryTable(t *testing.T) {
	root := newRootCmd(streams{})
	for _, cmd := range append([]*cobra.Command{root}, root.Commands()...) {
		formats := outputFormats(t, cmd.Name())
		// sim's "table" is one line, the base URL it serves on.
		if slices.Contains(formats, "table") && !slices.Contains(formats, "csv") && cmd.Name() != "sim" {
			t.Errorf("planner %s prints a table (%v) but takes no -o csv", cmd.Name(), formats)
		}
	}

	_, js, _ := execute(t, "", "plan", "--example", "three-classes", "-o", "json")
	var p plan.Plan
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := execute(t, "", "plan", "--example", "three-classes", "-o", "csv")
	if code != exitOK {
		t.Fatalf("plan -o csv: exit %d %s", code, errOut)
	}
	col, rows := readCSV(t, out)
	if len(rows) != len(p.Classes) {
		t.Fatalf("%d rows for %d classes", len(rows), len(p.Classes))
	}
	for i, c := range p.Classes {
		r := rows[i]
		if r[col["class"]] != c.Name || r[col["pool"]] != strconv.Itoa(c.Pool) || r[col["binding_constraint"]] != c.BindingConstraint ||
			r[col["feasible"]] != strconv.FormatBool(c.Feasible) || r[col["min_pool"]] != strconv.Itoa(*c.MinPool) ||
			!sameNumber(number(t, r[col["ttft_p95_ms"]]), c.Predicted.TTFTP95Ms) || !sameNumber(number(t, r[col["e2e_p95_ms"]]), c.Predicted.E2EP95Ms) ||
			*number(t, r[col["throughput_rps"]]) != c.Predicted.ThroughputRPS {
			t.Errorf("row %v differs from the plan's class %s", r, c.Name)
		}
	}

	args := []string{"what-if", "--example", "chat", "--vary", "/quotas/0/tpm=500000,1e6,-1"}
	_, js, _ = execute(t, "", append(slices.Clone(args), "-o", "json")...)
	var g plan.WhatIf
	if err := json.Unmarshal([]byte(js), &g); err != nil {
		t.Fatal(err)
	}
	_, out, _ = execute(t, "", append(args, "-o", "csv")...)
	col, rows = readCSV(t, out)
	if len(rows) != 3 || rows[0][col["/quotas/0/tpm"]] != "500000" || rows[1][col["pool"]] != strconv.Itoa(g.Cells[1].Classes[0].Pool) ||
		rows[2][col["pool"]] != "" || !strings.Contains(rows[2][col["error"]], "quotas[0].tpm") || rows[0][col["error"]] != "" {
		t.Errorf("what-if -o csv:\n%s", out)
	}

	args = []string{"simulate", "--example", "chat", "--duration", "10m"}
	_, js, _ = execute(t, "", append(slices.Clone(args), "-o", "json")...)
	var r simulate.Simulation
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatal(err)
	}
	_, out, _ = execute(t, "", append(args, "-o", "csv")...)
	col, rows = readCSV(t, out)
	s := r.Classes[0].Simulated
	if len(rows) != 1 || rows[0][col["requests"]] != strconv.Itoa(s.Requests) || *number(t, rows[0][col["throughput_rps"]]) != s.ThroughputRPS ||
		!sameNumber(number(t, rows[0][col["e2e_p95_ms"]]), s.E2EP95Ms) || rows[0][col["holds"]] != strconv.FormatBool(r.Classes[0].Verdict.Holds) {
		t.Errorf("simulate -o csv:\n%s", out)
	}

	for _, name := range []string{"knee", "import"} {
		_, js, _ = execute(t, "", name, workshopRamp, "-o", "json")
		var doc struct {
			Analysis struct{ Steps []measure.Step }
		}
		if err := json.Unmarshal([]byte(js), &doc); err != nil || len(doc.Analysis.Steps) == 0 {
			t.Fatalf("%s -o json: %v", name, err)
		}
		_, out, _ = execute(t, "", name, workshopRamp, "-o", "csv")
		col, rows = readCSV(t, out)
		if len(rows) != len(doc.Analysis.Steps) {
			t.Fatalf("%s -o csv: %d rows for %d steps", name, len(rows), len(doc.Analysis.Steps))
		}
		for i, st := range doc.Analysis.Steps {
			if rows[i][col["concurrency"]] != strconv.Itoa(st.Concurrency) || *number(t, rows[i][col["goodput_rps"]]) != st.GoodputRPS ||
				*number(t, rows[i][col["e2e_p95_ms"]]) != st.E2EP95Ms {
				t.Errorf("%s -o csv row %v differs from step %+v", name, rows[i], st)
			}
		}
	}
}

// TestWhatIfCSVCarriesTheTablesColumns: a checked, priced grid's CSV has
// the columns its table shows, whether each class fits, what its check
// saw and what the cell's plan costs a day, with the JSON's numbers
// unrounded.
func TestWhatIfCSVCarriesTheTablesColumns(t *testing.T) {
	args := []string{"what-if", "--example", "chat", "--vary", "/quotas/0/tpm=300000,1e6", "--vary",
		`/quotas/0/price={"input_per_mtok":1.2345678,"output_per_mtok":2}`, "--check"}
	code, js, errOut := execute(t, "", append(slices.Clone(args), "-o", "json")...)
	if code != exitOK {
		t.Fatalf("what-if -o json: exit %d %s", code, errOut)
	}
	var g plan.WhatIf
	if err := json.Unmarshal([]byte(js), &g); err != nil {
		t.Fatal(err)
	}
	_, table, _ := execute(t, "", slices.Clone(args)...)
	if !strings.Contains(table, "FITS") || !strings.Contains(table, "CHECK") || !strings.Contains(table, "PLAN/DAY") {
		t.Fatalf("the table has no FITS, CHECK and PLAN/DAY:\n%s", table)
	}
	_, out, _ := execute(t, "", append(args, "-o", "csv")...)
	col, rows := readCSV(t, out)
	for _, name := range []string{"fits", "check", "plan_cost_per_day", "currency"} {
		if _, ok := col[name]; !ok {
			t.Fatalf("no column %s:\n%s", name, out)
		}
	}
	if len(rows) != len(g.Cells) {
		t.Fatalf("%d rows for %d cells:\n%s", len(rows), len(g.Cells), out)
	}
	for i, c := range g.Cells {
		r, cl := rows[i], c.Classes[0]
		if cl.Fits == nil || c.Cost == nil {
			t.Fatalf("cell %d is not checked and priced: %+v", i, c)
		}
		if r[col["fits"]] != strconv.FormatBool(*cl.Fits) || r[col["check"]] == "" ||
			*number(t, r[col["plan_cost_per_day"]]) != c.Cost.PerDay || r[col["currency"]] != c.Cost.Currency {
			t.Errorf("row %v differs from cell %d: fits %v, misses %v, cost %+v", r, i, *cl.Fits, cl.Misses, *c.Cost)
		}
	}
	if rows[0][col["fits"]] == rows[1][col["fits"]] {
		t.Errorf("both cells fit alike; the test wants one that breaks:\n%s", out)
	}
}

// TestPlanTableTellsTasksPerSecond: an agent task class's row of the plan
// table gives its demand and capacity in tasks/s, which its demand and
// pool count, and its E2E p95 as a whole task's, in the table, the
// Markdown and the report's HTML.
func TestPlanTableTellsTasksPerSecond(t *testing.T) {
	_, js, _ := execute(t, "", "plan", "--example", "agent", "-o", "json")
	var p plan.Plan
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		t.Fatal(err)
	}
	c := p.Classes[0]
	if c.Task == nil {
		t.Fatalf("the agent example's first class has no task")
	}
	want := regexp.MustCompile(regexp.QuoteMeta(strconv.FormatFloat(c.Predicted.OfferedRPS, 'f', -1, 64)) + ` / [0-9.,]+ tasks/s`)
	taskE2E := regexp.MustCompile(`[0-9][0-9.,]* ms a task`)
	for _, args := range [][]string{{"plan", "--example", "agent"}, {"plan", "--example", "agent", "-o", "md"}, {"report", "--example", "agent", "-o", "html"}} {
		code, out, errOut := execute(t, "", args...)
		if code != exitOK || !want.MatchString(out) {
			t.Errorf("%v: exit %d %s, want %q in:\n%s", args, code, errOut, want, out)
		}
		if !taskE2E.MatchString(out) {
			t.Errorf("%v: want its E2E p95 as a task's, %q, in:\n%s", args, taskE2E, out)
		}
	}
}

// TestSimulationCSVSaysWhatItCounts: a simulation's CSV says what each
// class's requests, completed and rates count, tasks for an agent task
// class, as its JSON's counts does.
func TestSimulationCSVSaysWhatItCounts(t *testing.T) {
	for ex, want := range map[string]string{"agent": "tasks", "chat": "requests"} {
		code, out, errOut := execute(t, "", "simulate", "--example", ex, "--duration", "2m", "-o", "csv")
		if code != exitOK && code != exitError {
			t.Fatalf("%s: exit %d: %s", ex, code, errOut)
		}
		col, rows := readCSV(t, out)
		if i, ok := col["counts"]; !ok || rows[0][i] != want {
			t.Errorf("%s: counts %v, want %s:\n%s", ex, col, want, out)
		}
	}
}

// TestNoNegativeZero: a figure that rounds to zero from below is 0 in
// every answer, never -0: here the prompt cache's saving a day of a key
// whose cache reads and writes cost what input does (a difference of
// rounding error below zero), in the plan's JSON and its report.
func TestNoNegativeZero(t *testing.T) {
	sc := strings.NewReplacer("headroom: 0.9", "headroom: 0.9\n    price: {input_per_mtok: 2.5, cached_input_per_mtok: 2.5, cache_write_per_mtok: 2.5, output_per_mtok: 10}",
		"max_tokens: 700", "max_tokens: 700\n    cached_input_fraction: 0.1\n    cache_write_fraction: 0.1").Replace(exampleText(t, "chat"))
	negZero := regexp.MustCompile(`(^|[^0-9.,])-0([^.0-9]|$)`)
	for _, args := range [][]string{{"plan", "-f", "-", "-o", "json"}, {"plan", "-f", "-", "-o", "csv"}, {"report", "-f", "-"}, {"report", "-f", "-", "-o", "json"}} {
		code, out, errOut := execute(t, sc, args...)
		if code != exitOK || (args[len(args)-1] == "json" && !strings.Contains(out, "cache_saving_per_day")) {
			t.Fatalf("%v: exit %d: %s\n%s", args, code, errOut, out)
		}
		if m := negZero.FindString(out); m != "" {
			t.Errorf("%v: %q in:\n%s", args, m, out)
		}
	}
}

// TestTablesTellLongNamesApart: two classes (and two keys) whose long
// names share their first letters keep distinct names in the plan's and
// the simulation's tables, each a shortening of its own name, rather than
// both reading "customer-suppor…".
func TestTablesTellLongNamesApart(t *testing.T) {
	a, b := "customer-support-assistant-europe-west-a", "customer-support-assistant-europe-west-b"
	ka, kb := "key-of-team-europe-west-a", "key-of-team-europe-west-b"
	chat := exampleText(t, "chat")
	i := strings.Index(chat, "classes:")
	classA := strings.NewReplacer("name: chat", "name: "+a, "quota: prod", "quota: "+ka).Replace(chat[i+len("classes:\n"):])
	classB := strings.NewReplacer("name: chat", "name: "+b, "quota: prod", "quota: "+kb).Replace(chat[i+len("classes:\n"):])
	quotas := chat[strings.Index(chat, "quotas:"):strings.Index(chat, "latency:")]
	qa, qb := strings.Replace(quotas, "name: prod", "name: "+ka, 1), strings.Replace(quotas[len("quotas:\n"):], "name: prod", "name: "+kb, 1)
	sc := qa + qb + chat[strings.Index(chat, "latency:"):i] + "classes:\n" + classA + classB
	for _, args := range [][]string{{"plan", "-f", "-"}, {"simulate", "-f", "-", "--duration", "2m"}} {
		code, out, errOut := execute(t, sc, args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s\n%s", args, code, errOut, sc)
		}
		lines := strings.Split(out, "\n")
		k := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "CLASS ") })
		if k < 0 || k+2 >= len(lines) {
			t.Fatalf("%v: no table:\n%s", args, out)
		}
		rows := []string{lines[k+1], lines[k+2]}
		for j, name := range []string{a, b} {
			f := strings.Fields(rows[j])
			if f[0] == strings.Fields(rows[1-j])[0] || !shortens(f[0], name) {
				t.Errorf("%v: row %q does not tell %s apart:\n%s", args, rows[j], name, out)
			}
		}
		if args[0] == "plan" && (strings.Fields(rows[0])[2] == strings.Fields(rows[1])[2] || !shortens(strings.Fields(rows[0])[2], ka)) {
			t.Errorf("%v: the keys' column does not tell %s and %s apart:\n%s", args, ka, kb, out)
		}
	}
}

// shortens reports whether s is name or name with a part of it left out
// as "…".
func shortens(s, name string) bool {
	head, tail, cut := strings.Cut(s, "…")
	return s == name || cut && strings.HasPrefix(name, head) && strings.HasSuffix(name, tail) && len(head)+len(tail) < len(name)
}

// TestPlanCSVSaysWhatItCounts: a plan's CSV says what each class's
// offered and throughput rates count, tasks for an agent task class, as
// its pool and demand count them.
func TestPlanCSVSaysWhatItCounts(t *testing.T) {
	for ex, want := range map[string]string{"agent": "tasks", "chat": "requests"} {
		code, out, errOut := execute(t, "", "plan", "--example", ex, "-o", "csv")
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", ex, code, errOut)
		}
		col, rows := readCSV(t, out)
		if i, ok := col["counts"]; !ok || rows[0][i] != want {
			t.Errorf("%s: counts %v, want %s:\n%s", ex, col, want, out)
		}
	}
}
