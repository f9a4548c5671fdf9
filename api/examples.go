package api

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"

	"github.com/danielgtaylor/huma/v2"
)

// exampleFiles are the request and response examples of the OpenAPI
// document, one file per operation (examples/OPERATION-ID.json). They are
// static: the document does not change when the engine's numbers do.
// TestOpenAPIExamples checks every response example against what the
// service answers for the request example of the same name, and rewrites
// them with -update.
//
//go:embed examples/*.json
var exampleFiles embed.FS

// exampleFile is the form of an examples file: examples by name, each a
// summary and a value.
type exampleFile struct {
	Request  map[string]exampleValue `json:"request"`
	Response map[string]exampleValue `json:"response"`
}

type exampleValue struct {
	Summary string          `json:"summary"`
	Value   json.RawMessage `json:"value"`
}

// opExamples are one operation's request and response examples.
type opExamples struct {
	request, response map[string]*huma.Example
}

// examplesOf reads the examples of an operation. A response value must
// read as R, the operation's answer, without a member R lacks, so that an
// example cannot show a name the API does not have. The values keep the
// file's order of members. The files are part of the binary, so an error
// is a programming error.
func examplesOf[R any](operationID string) opExamples {
	ex, err := readExamples[R](operationID)
	if err != nil {
		panic(fmt.Sprintf("the OpenAPI examples of %s: %v", operationID, err))
	}
	return ex
}

func readExamples[R any](operationID string) (opExamples, error) {
	b, err := exampleFiles.ReadFile("examples/" + operationID + ".json")
	if err != nil {
		return opExamples{}, err
	}
	var f exampleFile
	if err := json.Unmarshal(b, &f); err != nil {
		return opExamples{}, err
	}
	ex := opExamples{request: map[string]*huma.Example{}, response: map[string]*huma.Example{}}
	for name, v := range f.Request {
		ex.request[name] = &huma.Example{Summary: v.Summary, Value: v.Value}
	}
	for name, v := range f.Response {
		dec := json.NewDecoder(bytes.NewReader(v.Value))
		dec.DisallowUnknownFields()
		var r R
		if err := dec.Decode(&r); err != nil {
			return opExamples{}, fmt.Errorf("response %s: %w", name, err)
		}
		ex.response[name] = &huma.Example{Summary: v.Summary, Value: v.Value}
	}
	return ex, nil
}

// withExamples attaches request and response examples to the POST
// operation at path; the response examples go to its success response
// (200, 201 or 202).
func withExamples(doc *huma.OpenAPI, path string, ex opExamples) {
	op := doc.Paths[path].Post
	op.RequestBody.Content["application/json"].Examples = ex.request
	for _, status := range []string{"200", "201", "202"} {
		if r := op.Responses[status]; r != nil {
			r.Content["application/json"].Examples = ex.response
			return
		}
	}
}
