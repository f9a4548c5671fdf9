package report

import (
	"slices"
	"strings"
	"testing"
)

// TestFormatNames: Markdown goes by markdown and md wherever it is
// taken, and the other formats by their one name.
func TestFormatNames(t *testing.T) {
	if got, want := FormatNames(FormatHTML, FormatMarkdown), []string{"html", "markdown", "md"}; !slices.Equal(got, want) {
		t.Errorf("FormatNames = %v, want %v", got, want)
	}
	for _, tc := range []struct{ name, want string }{{"md", FormatMarkdown}, {"markdown", FormatMarkdown}, {"json", FormatJSON}} {
		if got, err := ParseFormat(tc.name, PlanFormats); err != nil || got != tc.want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	_, err := ParseFormat("md", []string{FormatJSON, FormatYAML})
	if err == nil || !strings.Contains(err.Error(), "json, yaml") {
		t.Errorf("md where Markdown is not a format: %v", err)
	}
	_, err = ParseFormat("pdf", PlanFormats)
	if err == nil || !strings.Contains(err.Error(), "table, json, yaml, markdown (or md), csv") || !strings.Contains(err.Error(), `"pdf"`) {
		t.Errorf("an unknown format: %v", err)
	}
}
