// Package scenariodoc writes docs/scenario.md, the reference of every
// scenario field, from the JSON Schema of the scenario that the API
// publishes in its OpenAPI document: each field's type, unit, default,
// limits, an example and its description. The units follow the names'
// conventions (a _ms suffix is milliseconds, rpm is requests per minute,
// a distribution takes the unit of the field that holds it); the examples
// come from the shipped example scenarios, else from the schema.
//
// Regenerate the file with go generate ./internal/scenariodoc (which runs
// its test with -update); the test fails when the file is out of date.
package scenariodoc

//go:generate go test -run ^TestScenarioDoc$ -update .

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/scenario"
)

// section is one object type of the scenario: where it appears, and the
// schema of its fields.
type section struct {
	name   string   // the schema's name, its anchor in the document
	title  string   // the heading
	at     []string // the paths where it appears
	schema *huma.Schema
}

// notes explain what the schema cannot say: the rules that span fields.
var notes = map[string]string{
	"Scenario": "A scenario is a YAML or JSON document; `planner plan -f FILE`, `POST /v1/plans` and the page " +
		"all read the same fields. A field not listed here is refused (names are matched as written: `RPM` is not `rpm`), a key given twice in one object is refused, " +
		"and a field given as null is read as left out (its default, or missing where it is required). Every " +
		"problem is reported with its path, such as `classes[1].output_tokens.p95`. YAML is read as YAML 1.2 (its core schema): only `true` " +
		"and `false` are booleans, so a class named `y`, `no` or `on` is a name, as in JSON. How the fields are " +
		"used is in [concepts.md](concepts.md).",
	"Quota": "Give at least one limit. Output tokens count against `tpm`, `otpm` and `tpd` as `token_accounting` says; " +
		"`headroom` applies to every limit of the key. Daily limits are spread over `active_hours`, and may not " +
		"come to more a second than the per-minute limits may state (`rpd` as `rpm`, `tpd` as `tpm`).",
	"Price": "Give `input_per_mtok` and `output_per_mtok` (pay as you go: billed on the tokens the requests use, " +
		"output capped at `max_tokens`, whatever `token_accounting` counts against the limits; the prompt cache's reads " +
		"and writes at their own prices when given), or `per_hour` alone (provisioned capacity, paid for each of the " +
		"key's `active_hours`). Every price of a scenario is in one currency. How the cost is computed is in " +
		"[concepts.md](concepts.md#cost).",
	"Latency": "Give `ttft_ms` and `tpot_ms`, or a measured `curve` (then they follow the curve), here or in a " +
		"class's own `latency`. `knee` caps each class at its mode's `knee_safety` share of it, or of " +
		"`knee_refined` when given. With `knee_lower_bound` the knee is one the probe never reached: the plan " +
		"holds pools to it, and where it binds it says to probe to higher concurrency rather than to add " +
		"serving capacity.",
	"Class": "`max_tokens` is required when the class's quota counts `max_tokens`. `cached_input_fraction` and " +
		"`cache_write_fraction` are shares of the same input and add up to at most 1.",
	"SLO": "Give `ttft_ms`, `e2e_ms` and `tpot_ms` with `percentile` (95 unless given), or the older " +
		"`ttft_p95_ms` and `e2e_p95_ms`, which are targets at the 95th percentile; a class that mixes the two forms " +
		"is refused. `task_e2e_ms`, a class with a task's target on the whole task, goes with either form and binds " +
		"at its percentile. A target of 0 is no target. TTFT and E2E include the queue wait; the plan sizes " +
		"`min_pool` and predicts at the percentile ([concepts.md](concepts.md#slos-at-a-percentile)).",
	"Dist": "A distribution is given in exactly one of four forms: `fixed`; `p50` and `p95` (a lognormal with " +
		"mu = ln p50 and sigma = ln(p95/p50) / 1.6449, so p95 must be at least p50); `mean` and `stddev` (a " +
		"lognormal with those moments; stddev 0 is fixed); or `samples` (the measured values, drawn with equal " +
		"weight). `max` clips any of them. Its values are in the unit of the field that holds it: tokens for " +
		"`input_tokens` and `output_tokens`, milliseconds for `ttft_ms` and `tpot_ms`. Output tokens are also " +
		"clipped at the class's `max_tokens`.",
	"Demand": "Give exactly one of `rps`, `rpm`, or `requests` with `within_hours` (a batch that must finish in " +
		"that time), each above 0. Without a demand the class runs as fast as its share of the quota allows; a " +
		"demand of 0 is refused, as a plan has nothing to size for it (leave the class out, or pause it for a " +
		"while in a simulation with a `profile` window of `factor` 0). A batch comes to " +
		"`requests / (within_hours × 3600)` requests per second, which may not exceed what `rpm` may state at " +
		"most (1e9 a minute, about 1.67e7 a second). A batch of one day (`within_hours` up to 24) without a " +
		"`schedule` takes at most its key's `active_hours`, the hours a day the key is used; its daily limits " +
		"count its requests once a day.",
	"DemandWindow": "A window of simulated time in which the class's rate is multiplied by `factor`; planner simulate " +
		"and POST /v1/simulations follow the profile, and a plan is sized at its largest factor (above 1), with a " +
		"warning that says so.",
	"CacheProfile": "What the endpoint's prompt cache does, as `planner probe --cache` (the hit rate and the saving) or " +
		"`--conversation-calls` (the hit rate) measures it, in the probe's prefill.yaml, or as set by hand. With it, " +
		"each call of an accumulating agent task reads its earlier context from the cache: `hit_rate` (1 without it) " +
		"of the previous call's input and output, when that prefix has at least `min_prefix_tokens`; " +
		"how is in [concepts.md](concepts.md#the-prompt-cache-of-an-agent-task).",
	"Schedule": "The hours of every day, in UTC, that the class runs: from `start_hour` for `hours`, past midnight " +
		"when it ends after 24:00. A batch's `within_hours` must fit in `hours`. The plan lists the windows of the " +
		"day with the classes active in each and plans each window apart: classes that never run at the same time " +
		"share no per-minute limit and no endpoint budget, while a daily limit is shared by all the key's classes, " +
		"each counted over its own hours. A simulation runs the class only in its hours.",
	"CurvePoint": "One measured step: what `planner probe` writes in its curve.yaml, or `planner import` from " +
		"other tools' results.",
	"Task": "An agent loop: demand and pool count tasks, and a task's calls are serial. Call i's input is " +
		"`input_tokens` plus, with `context: accumulate`, every earlier output and tool result of the task; each call " +
		"is followed by a tool run of `tool_ms`. A class with a task has a latency profile of `ttft_ms` and `tpot_ms` " +
		"(not a curve), and its targets are `slo.task_e2e_ms` on the whole task and `slo.ttft_ms` (or `ttft_p95_ms`) " +
		"on each call, at the SLO's percentile, not `e2e_ms` or `e2e_p95_ms`. How a task is planned is in [concepts.md](concepts.md#agent-tasks).",
	"KneeSafety": "The fraction of the measured knee that a class of each mode may use as its pool.",
}

// unit gives a field's unit from its name.
func unit(name string) string {
	switch {
	case name == "prefill_ms_per_1k_tokens":
		return "ms per 1,000 input tokens"
	case strings.HasSuffix(name, "_per_mtok"):
		return "currency per 1,000,000 tokens"
	case name == "per_hour":
		return "currency per hour"
	case name == "ttft_saving_ms_per_1k":
		return "ms per 1,000 cached tokens"
	case name == "start_hour":
		return "hour of the day, UTC"
	case strings.HasSuffix(name, "_ms"):
		return "ms"
	case strings.HasSuffix(name, "_s"):
		return "s"
	case strings.HasSuffix(name, "hours"):
		return "hours"
	case strings.HasSuffix(name, "_tokens"):
		return "tokens"
	case strings.HasSuffix(name, "_rps"), name == "rps":
		return "requests/s"
	case strings.HasSuffix(name, "_tps"):
		return "tokens/s"
	case strings.HasSuffix(name, "_rate"), strings.HasSuffix(name, "_fraction"), name == "headroom", name == "max_utilization":
		return "fraction"
	case name == "interactive" || name == "semi" || name == "batch":
		return "fraction of the knee"
	}
	if d, ok := scenario.DimensionNamed(name); ok {
		return d.Rate() // a quota's limit, and a demand's rpm
	}
	return map[string]string{
		"requests": "requests",
		"knee":     "requests in flight", "knee_refined": "requests in flight", "concurrency": "requests in flight", "max_pool": "requests in flight",
		"monte_carlo_draws": "draws",
	}[name]
}

// Write writes the reference of the scenario schema of doc.
func Write(w io.Writer, doc *huma.OpenAPI) error {
	reg := doc.Components.Schemas
	root := reg.Map()["Scenario"]
	if root == nil {
		return fmt.Errorf("the OpenAPI document has no Scenario schema")
	}
	examples, err := exampleDocs()
	if err != nil {
		return err
	}
	sections := collect(reg, root)
	var b strings.Builder
	b.WriteString("# Scenario fields\n\n" +
		"<!-- Generated from the API's schema of the scenario by go generate ./internal/scenariodoc; do not edit. -->\n\n" +
		notes["Scenario"] + "\n\n" +
		"Each table lists a field's type, its unit, the default used when it is left out, the values allowed, " +
		"an example (from the [shipped examples](examples) where one sets it) and what it means. " +
		"Fields in bold are required.\n\n")
	for _, s := range sections {
		fmt.Fprintf(&b, "- [%s](#%s)\n", s.title, strings.ToLower(s.name))
	}
	for _, s := range sections {
		fmt.Fprintf(&b, "\n<a id=\"%s\"></a>\n\n## %s\n\n", strings.ToLower(s.name), s.title)
		fmt.Fprintf(&b, "At %s.", strings.Join(quoteAll(s.at), ", "))
		if n := notes[s.name]; n != "" && s.name != "Scenario" {
			b.WriteString(" " + n)
		}
		b.WriteString("\n\n| field | type | unit | default | allowed | example | description |\n|---|---|---|---|---|---|---|\n")
		for _, name := range fieldOrder(s.schema) {
			f := s.schema.Properties[name]
			target := deref(reg, f)
			label := "`" + name + "`"
			if slices.Contains(s.schema.Required, name) {
				label = "**" + label + "**"
			}
			u := unit(name)
			if s.name == "Dist" {
				u = "the holder's"
			}
			ex, err := example(examples, s, name, f, target)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", label, typeOf(reg, f), dash(u), dash(defaultOf(target)),
				dash(limits(target)), dash(ex), cell(description(f, target)))
		}
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// sectionOrder is the order of the sections: the scenario's own order,
// each type after the one that holds it.
var sectionOrder = []string{"Scenario", "Quota", "Price", "Latency", "Dist", "CurvePoint", "Endpoint", "Class", "Demand", "DemandWindow", "Task", "SLO", "Policy", "KneeSafety", "Schedule"}

// collect walks the schema from the root and returns each object type
// once, with every path it appears at, in sectionOrder (types it does not
// name last, in the order met).
func collect(reg huma.Registry, root *huma.Schema) []*section {
	var out []*section
	byName := map[string]*section{}
	var walk func(name string, s *huma.Schema, path string)
	walk = func(name string, s *huma.Schema, path string) {
		if sec, ok := byName[name]; ok {
			sec.at = append(sec.at, path)
		} else {
			sec := &section{name: name, title: titleOf(name, path), at: []string{path}, schema: s}
			byName[name] = sec
			out = append(out, sec)
		}
		for _, field := range fieldOrder(s) {
			f := s.Properties[field]
			sub := strings.TrimPrefix(path+"."+field, ".")
			if f.Items != nil {
				f, sub = f.Items, sub+"[]"
			}
			if n := refName(f); n != "" {
				walk(n, deref(reg, f), sub)
			}
		}
	}
	walk("Scenario", root, "")
	rank := func(s *section) int {
		if i := slices.Index(sectionOrder, s.name); i >= 0 {
			return i
		}
		return len(sectionOrder)
	}
	slices.SortStableFunc(out, func(a, b *section) int { return cmp.Compare(rank(a), rank(b)) })
	return out
}

// titleOf names a section by its type and where it first appears.
func titleOf(name, path string) string {
	switch name {
	case "Scenario":
		return "The scenario (top level)"
	case "Dist":
		return "Distribution"
	}
	return fmt.Sprintf("%s (`%s`)", splitWords(name), path)
}

func splitWords(name string) string {
	var b strings.Builder
	for i, r := range name {
		if i > 0 && r >= 'A' && r <= 'Z' && !(name[i-1] >= 'A' && name[i-1] <= 'Z') {
			b.WriteByte(' ')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fieldOrder lists required fields first, then the others, each
// alphabetically; the scenario's own fields in the order of a scenario
// file.
func fieldOrder(s *huma.Schema) []string {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	top := []string{"quotas", "latency", "endpoints", "classes", "policy"}
	slices.SortFunc(names, func(a, b string) int {
		if ia, ib := slices.Index(top, a), slices.Index(top, b); ia >= 0 && ib >= 0 {
			return cmp.Compare(ia, ib)
		}
		ra, rb := slices.Contains(s.Required, a), slices.Contains(s.Required, b)
		if ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return cmp.Compare(a, b)
	})
	return names
}

func refName(s *huma.Schema) string {
	if s == nil || s.Ref == "" {
		return ""
	}
	return s.Ref[strings.LastIndex(s.Ref, "/")+1:]
}

func deref(reg huma.Registry, s *huma.Schema) *huma.Schema {
	if s.Ref != "" {
		return reg.SchemaFromRef(s.Ref)
	}
	return s
}

// typeOf names a field's type, linking object types to their section.
func typeOf(reg huma.Registry, f *huma.Schema) string {
	if f.Items != nil {
		return "list of " + typeOf(reg, f.Items)
	}
	if n := refName(f); n != "" {
		title := strings.ToLower(splitWords(n))
		if n == "Dist" {
			title = "distribution"
		}
		return fmt.Sprintf("[%s](#%s)", title, strings.ToLower(n))
	}
	switch {
	case len(f.Enum) > 0:
		return "string"
	case f.Type == "number":
		return "number"
	}
	return f.Type
}

func defaultOf(s *huma.Schema) string {
	d := defaultValue(s)
	if d == nil {
		return ""
	}
	return "`" + value(d) + "`"
}

// defaultValue is a field's default: its schema's default keyword or, in
// the schemas of request bodies, which state their defaults without the
// keyword so that generators keep the fields optional, its x-default.
func defaultValue(s *huma.Schema) any {
	if s.Default != nil {
		return s.Default
	}
	return s.Extensions["x-default"]
}

// limits says which values a field allows.
func limits(s *huma.Schema) string {
	var parts []string
	if len(s.Enum) > 0 {
		vals := make([]string, len(s.Enum))
		for i, v := range s.Enum {
			vals[i] = "`" + value(v) + "`"
		}
		parts = append(parts, "one of "+strings.Join(vals, ", "))
	}
	lo, hi := "", ""
	if s.Minimum != nil {
		lo = "≥ " + num(*s.Minimum)
	}
	if s.ExclusiveMinimum != nil {
		lo = "> " + num(*s.ExclusiveMinimum)
	}
	if s.Maximum != nil {
		hi = "≤ " + num(*s.Maximum)
	}
	if s.ExclusiveMaximum != nil {
		hi = "< " + num(*s.ExclusiveMaximum)
	}
	if lo != "" || hi != "" {
		parts = append(parts, strings.TrimSpace(lo+", "+hi))
		parts[len(parts)-1] = strings.Trim(parts[len(parts)-1], ", ")
	}
	if s.MinItems != nil || s.MaxItems != nil {
		parts = append(parts, itemCount(s.MinItems, s.MaxItems))
	}
	if s.MaxLength != nil {
		parts = append(parts, fmt.Sprintf("%d to %d characters", derefInt(s.MinLength), *s.MaxLength))
	}
	if s.Pattern != "" {
		parts = append(parts, "matching `"+s.Pattern+"`")
	}
	if s.Type == "integer" {
		parts = append(parts, "whole number")
	}
	return strings.Join(parts, "; ")
}

func itemCount(lo, hi *int) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("%d to %s items", *lo, num(float64(*hi)))
	case hi != nil:
		return fmt.Sprintf("at most %s items", num(float64(*hi)))
	}
	return fmt.Sprintf("at least %d items", *lo)
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// num writes a limit with thousands separators.
func num(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	intPart, frac, hasFrac := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if hasFrac {
		b.WriteString("." + frac)
	}
	return b.String()
}

func description(f, target *huma.Schema) string {
	if f.Description != "" {
		return f.Description
	}
	return target.Description
}

// exampleDocs are the shipped example scenarios as JSON values.
func exampleDocs() ([]any, error) {
	var docs []any
	for _, name := range planner.ExampleNames() {
		text, _ := planner.Example(name)
		var d any
		if err := yaml.Unmarshal(text, &d); err != nil {
			return nil, fmt.Errorf("example %s: %w", name, err)
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// maxExample is the longest example shown; a longer one (a whole list of
// classes) is left to its own section.
const maxExample = 60

// handExamples are the examples of fields that no shipped example sets and
// whose schema has no default or example. Write checks them against the
// field's limits.
var handExamples = map[string]any{
	"Quota.cached_input_free":            true,
	"Quota.cached_input_tpm_free":        true,
	"SLO.ttft_ms":                        800,
	"SLO.e2e_ms":                         9000,
	"SLO.tpot_ms":                        40,
	"Quota.itpm":                         800000,
	"Quota.otpm":                         200000,
	"Quota.tpd":                          50000000,
	"Latency.prefill_ms_per_1k_tokens":   40,
	"Latency.knee_lower_bound":           true,
	"Latency.knee_refined":               12,
	"CacheProfile.hit_rate":              0.94,
	"CacheProfile.ttft_saving_ms_per_1k": 38,
	"Dist.fixed":                         400,
	"Dist.max":                           4000,
	"Dist.mean":                          600,
	"Dist.stddev":                        250,
	"Dist.samples":                       []any{420, 515, 610},
	"CurvePoint.error_rate":              0.01,
	"CurvePoint.goodput_rps":             4.95,
	"CurvePoint.output_tps":              333,
	"CurvePoint.rate_limited_rate":       0,
	"CurvePoint.requests":                40,
	"DemandWindow.start_s":               3600,
	"DemandWindow.duration_s":            300,
	"DemandWindow.factor":                2,
	"Class.arrival_scv":                  0,
	"Class.endpoint":                     "big-gpu",
	"Class.cached_input_fraction":        0.5,
	"Class.cache_write_fraction":         0.05,
	"Price.cache_write_per_mtok":         3.125,
	"Class.priority":                     1,
	"Class.weight":                       2,
	"Policy.seed":                        7,
}

// example is the first value a shipped example scenario sets for the field
// at any of the section's paths (with the path when the section has
// several), else the schema's example or default, else a hand example; a
// field holding a whole section points to it.
func example(docs []any, s *section, name string, f, target *huma.Schema) (string, error) {
	for _, p := range s.at {
		at := strings.TrimPrefix(p+"."+name, ".")
		for _, d := range docs {
			v, ok := lookup(d, strings.Split(at, "."))
			if !ok {
				continue
			}
			text := value(v)
			if len(text) > maxExample {
				break
			}
			if len(s.at) > 1 {
				return fmt.Sprintf("`%s` (`%s`)", text, at), nil
			}
			return "`" + text + "`", nil
		}
	}
	switch {
	case len(target.Examples) > 0:
		return "`" + value(target.Examples[0]) + "`", nil
	case defaultValue(target) != nil:
		return "`" + value(defaultValue(target)) + "`", nil
	}
	if v, ok := handExamples[s.name+"."+name]; ok {
		if err := check(target, v); err != nil {
			return "", fmt.Errorf("the example of %s.%s: %w", s.name, name, err)
		}
		return "`" + value(v) + "`", nil
	}
	if n := refName(cmp.Or(f.Items, f)); n != "" {
		return fmt.Sprintf("see [%s](#%s)", strings.ToLower(splitWords(n)), strings.ToLower(n)), nil
	}
	return "", fmt.Errorf("%s.%s has no example: set it in a shipped example, its schema, or handExamples", s.name, name)
}

// check verifies a hand example against the field's limits.
func check(s *huma.Schema, v any) error {
	if list, ok := v.([]any); ok && s.Items != nil {
		for _, item := range list {
			if err := check(s.Items, item); err != nil {
				return err
			}
		}
		return nil
	}
	var x float64
	switch n := v.(type) {
	case int:
		x = float64(n)
	case float64:
		x = n
	default:
		return nil
	}
	switch {
	case s.Minimum != nil && x < *s.Minimum, s.ExclusiveMinimum != nil && x <= *s.ExclusiveMinimum,
		s.Maximum != nil && x > *s.Maximum, s.ExclusiveMaximum != nil && x >= *s.ExclusiveMaximum:
		return fmt.Errorf("%v is outside %s", v, limits(s))
	}
	return nil
}

// lookup finds the first value at segments; "x[]" looks in every item of
// the list x.
func lookup(v any, segments []string) (any, bool) {
	if len(segments) == 0 {
		return v, true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	key, list := strings.CutSuffix(segments[0], "[]")
	next, ok := m[key]
	if !ok {
		return nil, false
	}
	if !list {
		return lookup(next, segments[1:])
	}
	items, _ := next.([]any)
	for _, item := range items {
		if found, ok := lookup(item, segments[1:]); ok {
			return found, true
		}
	}
	return nil, false
}

// value writes a value as compact JSON, long lists cut short.
func value(v any) string {
	if list, ok := v.([]any); ok && len(list) > 3 {
		return strings.TrimSuffix(value(list[:3]), "]") + ", …]"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return strings.ReplaceAll(string(b), ",", ", ")
}

func quoteAll(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		if p == "" {
			p = "the top level"
			out[i] = p
			continue
		}
		out[i] = "`" + p + "`"
	}
	return out
}

func dash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// cell keeps a table cell on one line and its pipes literal.
func cell(s string) string {
	return dash(strings.NewReplacer("|", `\|`, "\n", " ").Replace(s))
}
