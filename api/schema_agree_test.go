package api

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"

	"github.com/plannerdev/planner/internal/scenario"
)

// TestScenarioSchemaAgreesWithHuma: the scenario's shapes and ranges live
// once, in its struct tags. The API enforces them as its JSON Schema; the
// command line and what-if cells enforce them with the scenario package's
// own validator. On every document of the fuzz corpus and on documents
// that break each kind of tag, both must find problems at the same places.
func TestScenarioSchemaAgreesWithHuma(t *testing.T) {
	docs := map[string]string{
		"minimum":          `{"quotas":[{"name":"k","rpm":-5}],"classes":[]}`,
		"exclusiveMinimum": `{"quotas":[{"name":"k","tpm":0}],"classes":[{"name":"c","quota":"k","mode":"batch","input_tokens":{"fixed":1},"output_tokens":{"fixed":1}}]}`,
		"maximum":          `{"quotas":[{"name":"k","rpm":1e13,"headroom":2}],"classes":[]}`,
		"exclusiveMaximum": `{"quotas":[{"name":"k","rpm":1}],"classes":[],"policy":{"max_utilization":1}}`,
		"pattern":          `{"quotas":[{"name":"-bad name","rpm":1}],"classes":[]}`,
		"length":           `{"quotas":[{"name":"","rpm":1}],"classes":[]}`,
		"enum":             `{"quotas":[{"name":"k","rpm":1,"token_accounting":"guess"}],"classes":[{"name":"c","quota":"k","mode":"urgent","input_tokens":{"fixed":1},"output_tokens":{"fixed":1}}]}`,
		"items":            `{"quotas":[],"classes":[]}`,
		"types":            `{"quotas":[{"name":7,"rpm":"many","cached_input_free":"yes"}],"classes":{"a":1},"latency":[]}`,
		"integer":          `{"quotas":[{"name":"k","rpm":1}],"classes":[{"name":"c","quota":"k","mode":"batch","max_tokens":1.5,"input_tokens":{"fixed":1},"output_tokens":{"fixed":1}}]}`,
		"unknown":          `{"quotas":[{"name":"k","rpm":1,"colour":"blue"}],"classes":[],"extra":1}`,
		"required":         `{"quotas":[{"rpm":1}],"classes":[{"quota":"k"}]}`,
		"nulls":            `{"quotas":[{"name":"k","rpm":null}],"classes":null,"latency":null}`,
	}
	corpus, _ := filepath.Glob("testdata/fuzz/FuzzPlan/*")
	for _, f := range corpus {
		b, _ := os.ReadFile(f)
		// The corpus files hold a Go fuzz encoding of one []byte body.
		s := string(b)
		if i := strings.Index(s, "[]byte("); i >= 0 {
			if body, err := strconv.Unquote(strings.TrimSuffix(strings.TrimSpace(s[i+len("[]byte("):]), ")")); err == nil {
				var req struct {
					Scenario json.RawMessage `json:"scenario"`
				}
				if json.Unmarshal([]byte(body), &req) == nil && len(req.Scenario) > 0 {
					docs["corpus "+filepath.Base(f)] = string(req.Scenario)
				}
			}
		}
	}
	if len(docs) < 20 {
		t.Fatalf("only %d documents", len(docs))
	}
	bs := schemaOf[scenario.Scenario]()
	for name, doc := range docs {
		var generic any
		if err := json.Unmarshal([]byte(doc), &generic); err != nil {
			continue
		}
		if _, ok := generic.(map[string]any); !ok {
			continue // Parse refuses it before any schema check
		}
		res := &huma.ValidateResult{}
		huma.Validate(bs.registry, bs.schema, huma.NewPathBuffer(nil, 0), huma.ModeWriteToServer, generic, res)
		var want []string
		for _, e := range res.Errors {
			var d *huma.ErrorDetail
			if errors.As(e, &d) {
				want = append(want, strings.TrimPrefix(d.Location, "."))
			}
		}
		_, err := scenario.Parse([]byte(doc))
		var got []string
		var errs scenario.Errors
		if errors.As(err, &errs) {
			for _, e := range errs {
				got = append(got, e.Path)
			}
		}
		// Parse adds the rules that span fields; every schema problem huma
		// finds must be among its problems, and no schema problem of its
		// own may be missing from huma's.
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: huma finds a problem at %q, the scenario's validator does not (%v)", name, w, err)
			}
		}
		schemaOnly := validateOnly(doc)
		for _, g := range schemaOnly {
			if !slices.Contains(want, g) {
				t.Errorf("%s: the scenario's validator finds a problem at %q, huma does not (%v)", name, g, want)
			}
		}
	}
}

// validateOnly is the scenario package's schema problems alone, without
// the cross-field rules: the paths of Parse's errors that are not rule
// problems, found by parsing a document the rules cannot object to.
func validateOnly(doc string) []string {
	_, err := scenario.Parse([]byte(doc))
	var errs scenario.Errors
	if !errors.As(err, &errs) {
		return nil
	}
	var out []string
	for _, e := range errs {
		if strings.HasPrefix(e.Message, "expected") || e.Message == "unexpected property" {
			out = append(out, e.Path)
		}
	}
	return out
}
