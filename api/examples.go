package api

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/danielgtaylor/huma/v2"
	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
)

// examples are the request and response examples of the OpenAPI document,
// computed from docs/examples/chat.yaml by the engine itself, so that they
// are always true.
type examples struct {
	planRequest, planResponse     map[string]*huma.Example
	whatIfRequest, whatIfResponse map[string]*huma.Example
}

// specExamples builds the examples once per process. The embedded example
// is part of the binary, so a failure is a programming error.
var specExamples = sync.OnceValue(func() examples {
	ex, err := buildExamples()
	if err != nil {
		panic(fmt.Sprintf("build the OpenAPI examples: %v", err))
	}
	return ex
})

func buildExamples() (examples, error) {
	text, ok := planner.Example("chat")
	if !ok {
		return examples{}, fmt.Errorf("no embedded example chat")
	}
	js, err := yaml.YAMLToJSON(text)
	if err != nil {
		return examples{}, err
	}
	var doc any // the scenario as written, without the defaults a struct would add
	if err := json.Unmarshal(js, &doc); err != nil {
		return examples{}, err
	}
	sc, err := scenario.Parse(text)
	if err != nil {
		return examples{}, err
	}
	p, err := plan.Compute(sc)
	if err != nil {
		return examples{}, err
	}
	tpm := plan.Variation{Path: "/quotas/0/tpm", Values: []any{500000, 1000000, 2000000}}
	grid, err := plan.Sweep(sc, []plan.Variation{tpm})
	if err != nil {
		return examples{}, err
	}
	return examples{
		planRequest: map[string]*huma.Example{
			"chat": {Summary: "One interactive class on one key (docs/examples/chat.yaml)", Value: map[string]any{"scenario": doc}},
		},
		planResponse: map[string]*huma.Example{
			"chat": {Summary: "The plan of docs/examples/chat.yaml: a pool of 39, bound by tpm", Value: planOf(p)},
		},
		whatIfRequest: map[string]*huma.Example{
			"tpm": {Summary: "Three tokens-per-minute limits for the chat example", Value: map[string]any{
				"scenario":   doc,
				"variations": []Variation{{Path: tpm.Path, Values: tpm.Values}},
			}},
			"tiers": {Summary: "Two catalogue tiers on the chat example's key", Value: map[string]any{
				"scenario":   doc,
				"variations": []Variation{{Path: "/quotas/0", Tiers: []string{"example-small", "example-medium"}}},
			}},
		},
		whatIfResponse: map[string]*huma.Example{
			"tpm": {Summary: "The grid for three tokens-per-minute limits", Value: WhatIfResponse{
				Variations: []Variation{{Path: tpm.Path, Values: tpm.Values}},
				Cells:      each(grid.Cells, cellOf),
			}},
		},
	}, nil
}

// withExamples attaches request and response examples to the POST
// operation at path; the response examples go to its success response
// (200, 201 or 202).
func withExamples(doc *huma.OpenAPI, path string, request, response map[string]*huma.Example) {
	op := doc.Paths[path].Post
	// RawBody is read for the resolvers only, not a second request format.
	delete(op.RequestBody.Content, "application/octet-stream")
	op.RequestBody.Content["application/json"].Examples = request
	for _, status := range []string{"200", "201", "202"} {
		if r := op.Responses[status]; r != nil {
			r.Content["application/json"].Examples = response
			return
		}
	}
}
