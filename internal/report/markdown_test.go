package report

import (
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
)

func TestMdText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain words", "plain words"},
		{"[x](javascript:y)", `\[x\](javascript:y)`},
		{"a|b\\c <d> & e", `a\|b\\c &lt;d&gt; &amp; e`},
		{"see http://127.0.0.1:8000/v1, then", "see `http://127.0.0.1:8000/v1`, then"},
		{"(https://x.example/a_b))", "(`https://x.example/a_b`))"},
		{"www.x.example.", "`www.x.example`."},
		{"ops@x.example", "`ops@x.example`"},
		{"no@dot and a.b", "no@dot and a.b"},
		{"`a http://x.example/`b", "\\`a ``http://x.example/`b``"},
		{"http://x.example/`", "`` http://x.example/` ``"},
		{"http://x.example/[a](b)|c", "`http://x.example/[a](b)`\\|c"},
		{"one\ntwo\rthree\r\n\tfour", "one two three   four"},
		{"\x1b[31m\x00\x7f\u0085\u009b\u2028\xff", "␛\\[31m␀␡ \ufffd \ufffd"},
		{"http://x.example/\x1b[2J", "`http://x.example/`␛\\[2J"},
		{"a._b_.c and max_tokens", `a.\_b\_.c and max_tokens`},
		{"**approved** ~~draft~~ _x_ k__y__", `\*\*approved\*\* \~\~draft\~\~ \_x\_ k\_\_y\_\_`},
	} {
		if got := mdText(tc.in); got != tc.want {
			t.Errorf("mdText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got, want := mdProse("www.a.b gets E[S] 4.5 s\x1b"), "`www.a.b` gets E[S] 4.5 s␛"; got != want {
		t.Errorf("mdProse = %q, want %q", got, want)
	}
	if got, want := mdProse("a._b_.c gets a pool of 3 (slo_e2e)"), `a.\_b\_.c gets a pool of 3 (slo_e2e)`; got != want {
		t.Errorf("mdProse = %q, want %q", got, want)
	}
}

// TestEveryMarkdownRenderingIsInert puts the injections where a plan
// shows text (a class's and a key's name, warnings; its explanation holds
// names, which may look like a www. name) and where a what-if grid does (a
// variation's path and values), and renders them.
func TestEveryMarkdownRenderingIsInert(t *testing.T) {
	for _, bad := range injections {
		_, p := examplePlan(t, "three-classes")
		p.Classes[0].Name, p.Classes[0].Quota = bad, bad
		p.Classes[0].Explanation = "www.evil.example gets a pool of 23 (E[S] 4.5 s) on key ops@evil.example"
		p.Classes[0].Warnings = append(p.Classes[0].Warnings, bad)
		p.Warnings = append(p.Warnings, bad)
		var md strings.Builder
		if err := WriteMarkdown(&md, p); err != nil {
			t.Fatal(err)
		}
		checkNoLinks(t, []byte(md.String()))
		var grid strings.Builder
		w := &plan.WhatIf{
			Variations: []plan.Variation{{Path: bad, Values: []any{bad, 1.0}}},
			Cells: []plan.Cell{
				{Values: []any{bad}, Errors: []scenario.FieldError{{Path: bad, Message: bad}}},
				{Values: []any{1.0}, Classes: []plan.CellClass{{Name: bad, Pool: 1, BindingConstraint: "rpm"}}},
			},
		}
		if err := WriteWhatIf(&grid, w, FormatMarkdown); err != nil {
			t.Fatal(err)
		}
		checkNoLinks(t, []byte(grid.String()))
	}
}
