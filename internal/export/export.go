// Package export renders a plan as the files of the tools a team already
// runs (docs/exports.md): Prometheus alerting rules on the SLOs, the 429
// rate and each key's use; a LiteLLM router configuration with every
// class's rpm, tpm and max_parallel_requests; and a client settings file
// (pool, pacing, admission, retry, AIMD per class) as JSON for any SDK.
//
// Every renderer is pure over the scenario and its plan: it reads the
// plan's fields (pools, allotments, pacing, predictions) and the
// scenario's targets (SLOs, max_tokens, token accounting) and computes no
// plan of its own, so that an export says what the plan says.
package export

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/yamldoc"
)

// The export targets: planner export --to and GET /v1/plans/{id}/export?to=.
const (
	ToPrometheusRules = "prometheus-rules"
	ToLiteLLM         = "litellm"
	ToClient          = "client"
)

// Targets are the export targets, in the order the docs list them.
var Targets = []string{ToPrometheusRules, ToLiteLLM, ToClient}

// Options are what an export needs besides the plan: the names of the
// metrics the rules read, and the model LiteLLM calls.
type Options struct {
	// Metrics are the metric names and labels the alerting rules read;
	// each one left empty is DefaultMetrics'.
	Metrics Metrics
	// Model is litellm_params.model of every deployment, LiteLLM's
	// provider/model string ("openai/gpt-4o-mini"); DefaultModel when
	// empty.
	Model string
	// Format is "yaml" or "json", or empty for the target's own: YAML for
	// the rules and LiteLLM's settings, JSON for the client settings. A
	// file converted from YAML keeps no comments.
	Format string
}

// Formats of an export besides its own.
const (
	FormatYAML = "yaml"
	FormatJSON = "json"
)

// CheckModel says what is wrong with a LiteLLM provider/model string, or
// returns nil: a control character (a newline wrote a second line into
// litellm_params.model) or blank space around it, which no provider's
// model name has.
func CheckModel(model string) error {
	if i := strings.IndexFunc(model, unicode.IsControl); i >= 0 {
		return fmt.Errorf("%q has a control character (%U): a provider/model string such as %s is one line of text", model, []rune(model[i:])[0], "openai/gpt-4o-mini")
	}
	if strings.TrimSpace(model) != model {
		return fmt.Errorf("%q begins or ends with blank space: a provider/model string such as %s has none", model, "openai/gpt-4o-mini")
	}
	return nil
}

// DefaultModel is the model LiteLLM is told to call when none is given: a
// placeholder that the file's header says to replace.
const DefaultModel = "openai/MODEL"

// Write renders the plan of sc as the file of target to, in o.Format.
func Write(w io.Writer, to string, sc scenario.Scenario, p *plan.Plan, o Options) error {
	if p == nil {
		return fmt.Errorf("export: no plan")
	}
	native := FormatYAML
	if to == ToClient {
		native = FormatJSON
	}
	if o.Format == "" || o.Format == native {
		return write(w, to, sc, p, o)
	}
	var buf bytes.Buffer
	if err := write(&buf, to, sc, p, o); err != nil {
		return err
	}
	var out []byte
	var err error
	switch o.Format {
	case FormatJSON:
		var js []byte
		if js, err = yamldoc.ToJSON(buf.Bytes()); err == nil {
			var ind bytes.Buffer
			if err = json.Indent(&ind, js, "", "  "); err == nil {
				out = append(ind.Bytes(), '\n')
			}
		}
	case FormatYAML:
		out, err = yaml.JSONToYAML(buf.Bytes())
	default:
		return fmt.Errorf("export as %q: the formats are %s and %s", o.Format, FormatYAML, FormatJSON)
	}
	if err != nil {
		return fmt.Errorf("export as %s: %w", o.Format, err)
	}
	_, err = w.Write(out)
	return err
}

// write renders the plan as the file of target to, in its own format.
func write(w io.Writer, to string, sc scenario.Scenario, p *plan.Plan, o Options) error {
	switch to {
	case ToPrometheusRules:
		return writeRules(w, sc, p, o.Metrics)
	case ToLiteLLM:
		return writeLiteLLM(w, sc, p, cmp.Or(o.Model, DefaultModel))
	case ToClient:
		return writeClient(w, sc, p)
	}
	return fmt.Errorf("export to %q: the targets are %s", to, strings.Join(Targets, ", "))
}

// ContentType is the media type of target to's file in its own format.
func ContentType(to string) string {
	if to == ToClient {
		return "application/json"
	}
	return "application/yaml"
}

// Known reports whether to is an export target.
func Known(to string) bool { return slices.Contains(Targets, to) }

// classesOf pairs each class of the plan with its scenario entry, by
// name: a stored plan and its scenario always agree, and a plan made from
// another scenario is refused.
func classesOf(sc scenario.Scenario, p *plan.Plan) ([]classPair, error) {
	byName := make(map[string]scenario.Class, len(sc.Classes))
	for _, c := range sc.Classes {
		byName[c.Name] = c
	}
	out := make([]classPair, 0, len(p.Classes))
	for _, cp := range p.Classes {
		c, ok := byName[cp.Name]
		if !ok {
			return nil, fmt.Errorf("export: the plan's class %q is not in the scenario", cp.Name)
		}
		out = append(out, classPair{spec: c, plan: cp})
	}
	return out, nil
}

// classPair is one class: its scenario entry and its plan.
type classPair struct {
	spec scenario.Class
	plan plan.ClassPlan
}

// quotaOf is the scenario's quota named name.
func quotaOf(sc scenario.Scenario, name string) (scenario.Quota, bool) {
	for _, q := range sc.Quotas {
		if q.Name == name {
			return q, true
		}
	}
	return scenario.Quota{}, false
}

// allotment is the share of quota q's limits that the plan gave class.
func allotment(q plan.QuotaPlan, class string) map[string]float64 {
	for _, a := range q.Allocations {
		if a.Class == class {
			return a.Allotted
		}
	}
	return nil
}
