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
	FormatText     = "text"
	FormatJSON     = "json"
	FormatYAML     = "yaml"
	FormatMarkdown = "markdown"
	FormatHTML     = "html"
	FormatCSV      = "csv"
)

// FormatMD is the short name of FormatMarkdown.
const FormatMD = "md"

// FormatAliases are the other names a format goes by, one vocabulary for
// the command line's -o/--output and the API's format parameters: md is
// markdown wherever markdown is taken.
var FormatAliases = map[string]string{FormatMD: FormatMarkdown}

// PlanFormats are the formats of WritePlan and WriteWhatIf.
var PlanFormats = []string{FormatTable, FormatJSON, FormatYAML, FormatMarkdown, FormatCSV}

// ParseFormat is the format that name stands for, itself or the format it
// is an alias of, when that format is one of allowed; otherwise an error
// naming the allowed formats.
func ParseFormat(name string, allowed []string) (string, error) {
	format := name
	if f, ok := FormatAliases[name]; ok {
		format = f
	}
	if slices.Contains(allowed, format) {
		return format, nil
	}
	return "", fmt.Errorf("the output format must be one of %s, got %q", DescribeFormats(allowed), name)
}

// DescribeFormats lists allowed for a help text or a message, each alias
// beside its format: "table, json, markdown (or md)".
func DescribeFormats(allowed []string) string {
	parts := make([]string, len(allowed))
	for i, f := range allowed {
		parts[i] = f
		if a := formatAliases(f); len(a) > 0 {
			parts[i] += " (or " + strings.Join(a, ", ") + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// formatAliases are the aliases of format, in order.
func formatAliases(format string) []string {
	var out []string
	for a, f := range FormatAliases {
		if f == format {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

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
// Markdown document, one CSV row per class, or the plan itself as JSON or
// YAML.
func WritePlan(w io.Writer, p *plan.Plan, format string) error {
	switch format {
	case FormatTable:
		return WriteTable(w, p)
	case FormatMarkdown:
		return WriteMarkdown(w, p)
	case FormatCSV:
		return WritePlanCSV(w, p)
	}
	return WriteData(w, p, format)
}
