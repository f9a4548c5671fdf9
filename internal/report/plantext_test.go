package report

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/testutil"
)

// TestTableShowsEveryDerivation checks that the terminal table shows how
// every ceiling of every class was derived, not only the binding one, and
// marks the binding one.
func TestTableShowsEveryDerivation(t *testing.T) {
	p, err := newApp().Plan(context.Background(), testutil.Example(t, "chat-and-batch"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, p); err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(b.String()), " ")
	n := 0
	for _, c := range p.Classes {
		for _, ce := range c.Ceilings {
			mark := ""
			if ce.Constraint == c.BindingConstraint {
				mark = "*"
			}
			bound := "unbounded"
			if ce.MaxPool != nil {
				bound = intOrDash(ce.MaxPool)
			}
			want := strings.Join(strings.Fields(ce.Constraint+" "+bound+mark+": "+strings.TrimPrefix(ce.Detail, ce.Constraint+": ")), " ")
			if !strings.Contains(flat, want) {
				t.Errorf("%s: the table lacks %q", c.Name, want)
			}
			n++
		}
	}
	if n < 8 {
		t.Fatalf("only %d ceilings checked", n)
	}
	for i, line := range strings.Split(b.String(), "\n") {
		if w := len([]rune(line)); w > Width {
			t.Errorf("line %d is %d columns wide", i+1, w)
		}
	}
}

// TestWritePlanFormats round-trips the JSON and YAML forms and checks that
// the table and Markdown are the renderers' own.
func TestWritePlanFormats(t *testing.T) {
	p, err := newApp().Plan(context.Background(), testutil.Example(t, "chat"))
	if err != nil {
		t.Fatal(err)
	}
	render := func(format string) string {
		var b bytes.Buffer
		if err := WritePlan(&b, p, format); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		return b.String()
	}
	var fromJSON, fromYAML plan.Plan
	if err := json.Unmarshal([]byte(render(FormatJSON)), &fromJSON); err != nil || fromJSON.Classes[0].Pool != p.Classes[0].Pool {
		t.Errorf("json: %v", err)
	}
	if err := yaml.Unmarshal([]byte(render(FormatYAML)), &fromYAML); err != nil || fromYAML.Classes[0].BindingConstraint != p.Classes[0].BindingConstraint {
		t.Errorf("yaml: %v", err)
	}
	var table, md bytes.Buffer
	_ = WriteTable(&table, p)
	_ = WriteMarkdown(&md, p)
	if render(FormatTable) != table.String() || render(FormatMarkdown) != md.String() {
		t.Error("table or markdown is not the renderer's")
	}
	if err := WritePlan(&bytes.Buffer{}, p, "html"); err == nil {
		t.Error("html is not a plan format, yet it rendered")
	}
}

// TestWhatIfRendering renders a hand-made grid of two variations, with an
// invalid cell.
func TestWhatIfRendering(t *testing.T) {
	seven, twelve := 7, 12
	g := &plan.WhatIf{
		Variations: []plan.Variation{{Path: "/quotas/0/tpm", Values: []any{200000.0, 2e6}}, {Path: "/classes/0/mode", Values: []any{"batch"}}},
		Cells: []plan.Cell{
			{Values: []any{200000.0, "batch"}, Classes: []plan.CellClass{{Name: "chat", Pool: 7, BindingConstraint: "tpm", MinPool: &twelve}, {Name: "night|ly", Pool: 7, BindingConstraint: "rpm", MinPool: &seven, Feasible: true}}},
			{Values: []any{2e6, "batch"}, Errors: []scenario.FieldError{{Path: "quotas[0].tpm", Message: "must be <= 1e9"}}},
		},
	}
	var table, md bytes.Buffer
	if err := WriteWhatIf(&table, g, FormatTable); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"/quotas/0/tpm", "/classes/0/mode", "CLASS", "POOL", "BINDING", "MIN", "FEASIBLE"},
		{"200,000", "batch", "chat", "7", "tpm", "12", "NO"},
		{"200,000", "batch", "night|ly", "7", "rpm", "7", "yes"},
		{"2,000,000", "batch", "invalid:", "quotas[0].tpm:", "must", "be", "<=", "1e9"},
	}
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("table:\n%s", table.String())
	}
	for i, w := range want {
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("line %d: %q, want %q", i+1, got, w)
		}
	}
	if err := WriteWhatIf(&md, g, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		"| /quotas/0/tpm | /classes/0/mode | CLASS | POOL | BINDING | MIN | FEASIBLE |",
		`| 200,000 | batch | night\|ly | 7 | rpm | 7 | yes |`,
		`| 2,000,000 | batch | invalid: quotas\[0\].tpm: must be &lt;= 1e9 |  |  |  |  |`,
	} {
		if !strings.Contains(md.String(), row+"\n") {
			t.Errorf("markdown lacks %q:\n%s", row, md.String())
		}
	}
	var js bytes.Buffer
	if err := WriteWhatIf(&js, g, FormatJSON); err != nil {
		t.Fatal(err)
	}
	var back plan.WhatIf
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Cells) != 2 || back.Cells[0].Classes[1].Name != "night|ly" {
		t.Errorf("json: %v %s", err, js.String())
	}
}
