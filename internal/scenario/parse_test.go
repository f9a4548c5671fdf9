package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/yamldoc"
)

// TestParseRefusesAliasBombs: a scenario whose aliases expand it far past
// its size is refused before it is expanded, while one that shares a
// latency block between endpoints by an alias plans as written out.
func TestParseRefusesAliasBombs(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "quotas: [{name: k, rpm: 1}]\nlatency: {ttft_ms: &t {samples: [%s1]}, tpot_ms: *t}\nclasses:\n", strings.Repeat("1, ", 9000))
	for i := range 32 {
		fmt.Fprintf(&b, "  - {name: c%d, quota: k, mode: batch, input_tokens: *t, output_tokens: *t}\n", i)
	}
	if _, err := Parse([]byte(b.String())); !errors.Is(err, yamldoc.ErrExpansion) || !strings.HasPrefix(err.Error(), "scenario: ") {
		t.Errorf("error %v, want ErrExpansion", err)
	}
	shared := "quotas: [{name: k, rpm: 60}]\nendpoints:\n  - {name: a, latency: &l {ttft_ms: {fixed: 300}, tpot_ms: {fixed: 20}}}\n  - {name: b, latency: *l}\n" +
		"classes: [{name: c, quota: k, mode: batch, endpoint: b, input_tokens: {fixed: 10}, output_tokens: {fixed: 10}}]\n"
	s, err := Parse([]byte(shared))
	if err != nil || len(s.Endpoints) != 2 || *s.Endpoints[1].Latency.TTFTMs.Fixed != 300 {
		t.Fatalf("%+v, %v", s, err)
	}
}

// TestParseRefusesSecondDocument: a scenario file is one YAML document; a
// second one (a scenario appended after ---, or one that does not parse)
// is refused rather than ignored.
func TestParseRefusesSecondDocument(t *testing.T) {
	for _, more := range []string{good, "classes: [unclosed\n", ""} {
		if _, err := Parse([]byte(good + "---\n" + more)); !errors.Is(err, yamldoc.ErrDocuments) || !strings.HasPrefix(err.Error(), "scenario: ") {
			t.Errorf("a second document %q: error %v, want ErrDocuments", more, err)
		}
	}
}

// TestParseClassNamedLikeABoolean: YAML 1.1 would read y, no or on as a
// boolean and refuse it as a name; scenarios are read as YAML 1.2 (the
// core schema), where they are strings, as they are in JSON.
func TestParseClassNamedLikeABoolean(t *testing.T) {
	for _, name := range []string{"y", "n", "yes", "no", "on", "off"} {
		doc := strings.ReplaceAll(good, "name: chat", "name: "+name)
		if !strings.Contains(doc, "name: "+name) {
			t.Fatal("the scenario has no class named chat")
		}
		s, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("a class named %s: %v", name, err)
		}
		if !slices.ContainsFunc(s.Classes, func(c Class) bool { return c.Name == name }) {
			t.Errorf("no class named %s in %+v", name, s.Classes)
		}
	}
}
