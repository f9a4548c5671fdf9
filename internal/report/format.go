package report

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner/internal/plan"
)

// Output formats of the renderers: every command's -o/--output takes one
// of them.
const (
	FormatTable    = "table"
	FormatJSON     = "json"
	FormatYAML     = "yaml"
	FormatMarkdown = "markdown"
	FormatHTML     = "html"
)

// PlanFormats are the formats of WritePlan and WriteWhatIf.
var PlanFormats = []string{FormatTable, FormatJSON, FormatYAML, FormatMarkdown}

// CheckFormat reports an error naming the allowed formats when format is
// not one of them.
func CheckFormat(format string, allowed []string) error {
	if slices.Contains(allowed, format) {
		return nil
	}
	return fmt.Errorf("the output format must be one of %s, got %q", strings.Join(allowed, ", "), format)
}

// FormatMD is the short name of FormatMarkdown.
const FormatMD = "md"

// FormatAliases are the other names of the formats, each with the format
// it stands for: every command's -o and every API operation's format
// parameter that takes a format takes its other names too.
var FormatAliases = map[string]string{FormatMD: FormatMarkdown}

// FormatNames are the names that stand for the allowed formats: each
// format, followed by its other names.
func FormatNames(allowed ...string) []string {
	var names []string
	for _, f := range allowed {
		names = append(names, f)
		for _, alias := range slices.Sorted(maps.Keys(FormatAliases)) {
			if FormatAliases[alias] == f {
				names = append(names, alias)
			}
		}
	}
	return names
}

// ParseFormat returns the format that name stands for among the allowed
// ones ("md" stands for FormatMarkdown), or an error naming them all.
func ParseFormat(name string, allowed []string) (string, error) {
	format := name
	if f, ok := FormatAliases[name]; ok {
		format = f
	}
	if slices.Contains(allowed, format) {
		return format, nil
	}
	return "", fmt.Errorf("the output format must be one of %s, got %q", strings.Join(FormatNames(allowed...), ", "), name)
}

// WriteData writes v as indented JSON or as YAML, the machine-readable
// forms of every renderer.
func WriteData(w io.Writer, v any, format string) error {
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case FormatYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode as YAML: %w", err)
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("%q is not a data format (json or yaml)", format)
}

// WritePlan writes a plan in one of PlanFormats: the terminal table, the
// Markdown document, or the plan itself as JSON or YAML.
func WritePlan(w io.Writer, p *plan.Plan, format string) error {
	switch format {
	case FormatTable:
		return WriteTable(w, p)
	case FormatMarkdown:
		return WriteMarkdown(w, p)
	}
	return WriteData(w, p, format)
}
