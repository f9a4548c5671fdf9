package scenariodoc

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/kylelemons/godebug/diff"

	"github.com/plannerdev/planner/api"
)

var update = flag.Bool("update", false, "rewrite docs/scenario.md")

const docPath = "../../docs/scenario.md"

// TestScenarioDoc keeps docs/scenario.md equal to what Write makes of the
// API's schema; -update rewrites it.
func TestScenarioDoc(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, api.New(api.Options{}).OpenAPI()); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(docPath, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, b.Bytes()) {
		t.Fatalf("docs/scenario.md is out of date; run go generate ./internal/scenariodoc. The difference (- checked in, + generated):\n%s",
			diff.Diff(string(have), b.String()))
	}
}

// TestEveryFieldIsDocumented walks the scenario's schema and checks that
// each field has its row, with a unit or type, an example and a
// description.
func TestEveryFieldIsDocumented(t *testing.T) {
	doc := api.New(api.Options{}).OpenAPI()
	var b bytes.Buffer
	if err := Write(&b, doc); err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{} // section anchor + field -> cells
	section := ""
	for _, line := range strings.Split(b.String(), "\n") {
		if a, ok := strings.CutPrefix(line, `<a id="`); ok {
			section = strings.TrimSuffix(a, `"></a>`)
		}
		if !strings.HasPrefix(line, "| `") && !strings.HasPrefix(line, "| **`") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		rows[section+"."+strings.Trim(cells[0], "*`")] = cells
	}
	reg := doc.Components.Schemas
	n := 0
	for _, s := range collect(reg, reg.Map()["Scenario"]) {
		for name := range s.schema.Properties {
			n++
			cells, ok := rows[strings.ToLower(s.name)+"."+name]
			if !ok {
				t.Errorf("%s.%s has no row", s.name, name)
				continue
			}
			if len(cells) != 7 || cells[5] == "–" {
				t.Errorf("%s.%s: a row without all its cells or an example: %q", s.name, name, cells)
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d fields found", n)
	}
}

// TestUnits pins the unit rules on fields whose unit is known.
func TestUnits(t *testing.T) {
	for name, want := range map[string]string{
		"tpm": "tokens/min", "rpd": "requests/day", "ttft_ms": "ms", "e2e_p95_ms": "ms", "burst_window_s": "s",
		"input_tokens": "tokens", "max_tokens": "tokens", "headroom": "fraction", "cached_input_fraction": "fraction",
		"within_hours": "hours", "active_hours": "hours", "rps": "requests/s", "throughput_rps": "requests/s",
		"output_tps": "tokens/s", "knee": "requests in flight", "interactive": "fraction of the knee", "name": "",
	} {
		if got := unit(name); got != want {
			t.Errorf("unit(%q) = %q, want %q", name, got, want)
		}
	}
}
