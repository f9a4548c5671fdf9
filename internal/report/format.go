package report

import (
	"encoding/json"
	"fmt"
	"io"
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
