package measure

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The outcomes of the served-model check (Served.Check).
const (
	// ServedMatch: every answer named the model asked for, or a versioned
	// name of it (ModelMatches).
	ServedMatch = "match"
	// ServedSwitch: some answer named another model (or, for a
	// deployment, the answers named more than one model).
	ServedSwitch = "switch"
	// ServedDeployment: the model asked for is a deployment's name (Azure
	// OpenAI), which no model name matches; the one model its answers
	// named is information, not a verdict.
	ServedDeployment = "deployment"
	// ServedUnnamed: no answer named a model.
	ServedUnnamed = "unnamed"
)

// Served is what the answers of a run named in their model field, against
// the model the requests asked for (docs/probe.md, "The served model").
type Served struct {
	Asked string `json:"asked" doc:"The model (or deployment) name the requests sent."`
	// Deployment says that Asked names a deployment (Azure OpenAI), whose
	// answers name the model behind it.
	Deployment bool          `json:"deployment,omitempty" doc:"The name asked is a deployment's (Azure OpenAI): no model name matches it, and the model its answers name is information."`
	Check      string        `json:"check" enum:"match,switch,deployment,unnamed" doc:"match: every answer named the model asked for or a versioned name of it; switch: some answer named another model (for a deployment: the answers named more than one); deployment: the name asked is a deployment's, and its answers named one model; unnamed: no answer named a model."`
	Models     []ServedCount `json:"models" doc:"Each name the answers carried, most answers first."`
}

// ServedCount is one model name the answers carried.
type ServedCount struct {
	Name    string `json:"name"`
	Answers int    `json:"answers" doc:"Requests whose answer named it."`
	Matches bool   `json:"matches" doc:"The name is the model asked for or a versioned name of it."`
}

// SummarizeServed counts the model names the answers of recs carried
// (warm-up included: a switch is a switch whenever it happens) and judges
// them against asked. deployment says that asked names a deployment
// rather than a model. It returns nil for no records.
func SummarizeServed(asked string, deployment bool, recs []Record) *Served {
	if len(recs) == 0 {
		return nil
	}
	counts := map[string]int{}
	for _, r := range recs {
		for _, name := range r.ServedModels() {
			counts[name]++
		}
	}
	s := &Served{Asked: asked, Deployment: deployment, Models: []ServedCount{}}
	for _, name := range slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	}) {
		s.Models = append(s.Models, ServedCount{Name: name, Answers: counts[name], Matches: ModelMatches(asked, name)})
	}
	switch {
	case len(s.Models) == 0:
		s.Check = ServedUnnamed
	case deployment && len(s.Models) == 1:
		s.Check = ServedDeployment
	case deployment:
		s.Check = ServedSwitch
	case slices.ContainsFunc(s.Models, func(m ServedCount) bool { return !m.Matches }):
		s.Check = ServedSwitch
	default:
		s.Check = ServedMatch
	}
	return s
}

// Switched reports whether the answers named another model than the one
// asked for.
func (s *Served) Switched() bool { return s != nil && s.Check == ServedSwitch }

// Names are the served names, most answers first, joined by ", ".
func (s *Served) Names() string {
	if s == nil {
		return ""
	}
	names := make([]string, len(s.Models))
	for i, m := range s.Models {
		names[i] = m.Name
	}
	return strings.Join(names, ", ")
}

// Sentence says what the answers named, in the words of the verdict line
// and the record card; "" for nil. A switch starts with "WARNING".
func (s *Served) Sentence() string {
	if s == nil {
		return ""
	}
	total := 0
	for _, m := range s.Models {
		total += m.Answers
	}
	var all, others []string
	for _, m := range s.Models {
		n := fmt.Sprintf("%s (%d of %d answers)", m.Name, m.Answers, total)
		all = append(all, n)
		if !m.Matches {
			others = append(others, n)
		}
	}
	switch {
	case s.Check == ServedUnnamed:
		return "the answers named no model"
	case s.Check == ServedDeployment:
		return fmt.Sprintf("served %s, the model behind deployment %s", s.Models[0].Name, s.Asked)
	case s.Check == ServedSwitch && s.Deployment:
		return fmt.Sprintf("WARNING: the answers to deployment %s named more than one model: %s", s.Asked, strings.Join(all, ", "))
	case s.Check == ServedSwitch:
		return fmt.Sprintf("WARNING: the answers named another model than the one asked (%s): %s", s.Asked, strings.Join(others, ", "))
	case len(s.Models) == 1 && s.Models[0].Name == s.Asked:
		return "served " + s.Asked
	case len(s.Models) == 1:
		return fmt.Sprintf("served %s, a versioned name of %s", s.Models[0].Name, s.Asked)
	}
	return fmt.Sprintf("served versioned names of %s: %s", s.Asked, strings.Join(all, ", "))
}

// ModelMatches reports whether an answer naming served answers a request
// for asked (docs/probe.md, "The served model"). Case aside, it is the
// same name, or the asked name followed by a version suffix: providers
// answer with a dated snapshot of the name asked (asked gpt-4o, served
// gpt-4o-2024-08-06; claude-3-5-sonnet@20241022; anthropic's -v2:0;
// Ollama's :latest). An asked name ending in -latest or :latest is an
// alias of a version of its stem. A suffix is one or more parts, the
// first after "-", "_", "@" or ":" and each later one after any of those
// or ".", each part digits (at least three in the first part: 0613,
// 2024, 001), "v" and digits, or "latest". Anything else is another
// model: gpt-4o-mini for gpt-4o, llama-3-8b for llama-3-70b, gpt-4.5 for
// gpt-4.
func ModelMatches(asked, served string) bool {
	a, s := strings.ToLower(strings.TrimSpace(asked)), strings.ToLower(strings.TrimSpace(served))
	if a == s {
		return true
	}
	if a == "" {
		return false
	}
	stems := []string{a}
	for _, alias := range []string{"-latest", ":latest"} {
		if stem, ok := strings.CutSuffix(a, alias); ok && stem != "" {
			stems = append(stems, stem)
		}
	}
	for _, stem := range stems {
		if rest, ok := strings.CutPrefix(s, stem); ok && versionSuffix(rest) {
			return true
		}
	}
	return false
}

// versionSuffix reports whether s is a version suffix (ModelMatches).
func versionSuffix(s string) bool {
	if s == "" {
		return false
	}
	for first := true; s != ""; first = false {
		seps := "-_@:."
		if first {
			seps = "-_@:"
		}
		if !strings.ContainsRune(seps, rune(s[0])) {
			return false
		}
		s = s[1:]
		end := strings.IndexAny(s, "-_@:.")
		if end < 0 {
			end = len(s)
		}
		if !versionPart(s[:end], first) {
			return false
		}
		s = s[end:]
	}
	return true
}

// versionPart reports whether p is one part of a version suffix.
func versionPart(p string, first bool) bool {
	if p == "latest" {
		return true
	}
	digits := strings.TrimPrefix(p, "v")
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return false
	}
	return !first || digits != p || len(digits) >= 3
}
