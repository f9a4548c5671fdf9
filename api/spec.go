package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/yamldoc"
)

// Tags group the operations in the OpenAPI document and the docs page.
const (
	tagPlans       = "plans"
	tagWhatIf      = "what-if"
	tagSimulations = "simulations"
	tagTiers       = "tiers"
	tagProbes      = "probes"
	tagRecords     = "records"
	tagAnalyses    = "analyses"
	tagOperations  = "operations"
)

// securityScheme names the bearer-token scheme in the OpenAPI document.
const securityScheme = "bearerAuth"

const apiDescription = `planner sizes client-side concurrency pools for teams that call LLM APIs.
Given the quotas of your API keys, your task classes with their token
distributions and latency targets, and the endpoint's measured latency, a
plan gives every class a pool, names the constraint that binds it, predicts
latency and quota use, and says what to change when a class does not fit.

Errors are RFC 9457 problem details (application/problem+json); each
problem in the request is listed under ` + "`errors`" + ` with its ` + "`location`" + `,
for example ` + "`body.scenario.classes[1].output_tokens.p95`" + `. A query
parameter takes one value (a list one comma-separated, ` + "`probes=a,b`" + `);
one given more than once is a 422 at it.

Request bodies are JSON (` + "`application/json`" + `) or YAML
(` + "`application/yaml`" + `), as scenario files are; a body declared as anything
else, or not declared, gets a 415. Answers are JSON (problems
` + "`application/problem+json`" + `) whatever Accept asks, except the documents,
charts, CSV rows and event streams that an operation declares. A request
whose Host header does not
name the service, or that a web page of another origin sends, gets a 403;
the configuration's allowed_hosts and allowed_origins add names and
origins.

When the server is configured with tokens, every operation except
` + "`GET /healthz`" + ` needs ` + "`Authorization: Bearer <token>`" + `. A server on a
loopback address may run without tokens.`

// humaConfig is the huma configuration: the document's metadata, and none
// of huma's own routes (the spec and the offline docs page are served by
// this package).
func (s *Server) humaConfig() huma.Config {
	cfg := huma.DefaultConfig("planner API", Version)
	cfg.Components.Schemas = huma.NewMapRegistry("#/components/schemas/", schemaName)
	cfg.CreateHooks = nil // no $schema links in bodies: responses carry exactly the documented fields
	cfg.OpenAPIPath = ""
	cfg.DocsPath = ""
	cfg.SchemasPath = ""
	cfg.Transformers = []huma.Transformer{s.completeProblem}
	cfg.Formats = maps.Clone(cfg.Formats)
	cfg.Formats["application/yaml"] = yamlFormat
	for _, ct := range []string{"application/json", "json"} {
		cfg.Formats[ct] = jsonFormat(cfg.Formats[ct])
	}
	cfg.Info.Description = apiDescription
	cfg.Info.License = &huma.License{Name: "Proprietary", URL: "https://github.com/plannerdev/planner"}
	// A relative server URL is resolved against where the document is
	// served from (OpenAPI 3.1, Server Object), so that /docs tries its
	// requests on the server that serves it, whatever its address.
	cfg.Servers = []*huma.Server{{URL: "/", Description: "the planner serve that serves this document"}}
	cfg.Tags = []*huma.Tag{
		{Name: tagPlans, Description: "Plan the pools of a scenario's task classes."},
		{Name: tagWhatIf, Description: "Vary fields of a scenario, or its quota tier, and compare the plans."},
		{Name: tagSimulations, Description: "Run a scenario's plan against its quotas, bursts and retries in a seeded simulation."},
		{Name: tagTiers, Description: "The quota-tier catalogue that the operator maintains."},
		{Name: tagProbes, Description: "Measure an endpoint with a bounded probe run in the background: its latency curve, knee and announced quota."},
		{Name: tagRecords, Description: "Dated record cards of the probes, for on-call engineers."},
		{Name: tagAnalyses, Description: "Judge ramps measured elsewhere: rows, step tables or benchmark tools' result files."},
		{Name: tagOperations, Description: "Liveness, readiness and metrics for running the service."},
	}
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		securityScheme: {
			Type:        "http",
			Scheme:      "bearer",
			Description: "One of the tokens of the server's configuration (auth.tokens or PLANNER_AUTH_TOKENS). Not needed on a loopback server without tokens.",
		},
	}
	cfg.Security = []map[string][]string{{securityScheme: {}}}
	return cfg
}

// schemaNames are the schema names of the served types whose Go name
// says less in the OpenAPI document than in its package: a problem in a
// what-if cell's varied scenario (fieldpath.Error) is a FieldError.
var schemaNames = map[reflect.Type]string{reflect.TypeFor[fieldpath.Error](): "FieldError"}

// schemaName names the schema of t as huma does (its Go name, without the
// package), or as schemaNames says. Two served types of one name stop
// the server from starting (huma refuses the duplicate), so a name never
// stands for two schemas.
func schemaName(t reflect.Type, hint string) string {
	base := t
	for base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	if name, ok := schemaNames[base]; ok {
		return name
	}
	return huma.DefaultSchemaNamer(t, hint)
}

// errorStatuses are the problem responses every body-taking operation
// documents besides those that declareAnswers adds to every operation.
var errorStatuses = []int{400, 401, 413, 422}

// bodyTypes are the media types a request body may be declared as
// (crossSite refuses the others with a 415): both are read as the same
// document, with the same schema.
var bodyTypes = []string{"application/json", "application/yaml"}

// answerDescriptions describe the problems that declareAnswers adds to
// the operations, as the layers every request passes answer them.
var answerDescriptions = map[int]string{
	http.StatusBadRequest: "The body is not a JSON or YAML document (or repeats a key), holds more than one YAML document, or its YAML aliases expand it beyond what is read.",
	http.StatusUnauthorized: "The server is configured with tokens and the request carries none of them as `Authorization: Bearer <token>`; " +
		"the WWW-Authenticate header names the scheme.",
	http.StatusForbidden: "The Host header does not name this service (allowed_hosts), or a web page of another origin sent the " +
		"request (allowed_origins): docs/security.md, \"Cross-site requests\".",
	http.StatusRequestTimeout:        "The body did not arrive in time.",
	http.StatusRequestEntityTooLarge: "The body is larger than the server's limit (limits.max_body_bytes), or, where the operation stores, what it stores is larger than store.max_document_bytes.",
	http.StatusUnsupportedMediaType:  "A body is declared as neither application/json nor application/yaml (in any case), or in a charset other than UTF-8, or is not declared.",
	http.StatusInternalServerError:   "The server failed to answer; its log has the cause.",
}

// declareAnswers completes the OpenAPI document with what the layers
// around the operations answer, once for every operation: 403 (crossSite,
// on every request), 401 with its WWW-Authenticate header (authenticate,
// on every operation that takes a token), 500 (observe, the last resort),
// and on every operation with a body 400, 408, 413 and 415 (huma's reading
// of the body, crossSite), on every operation of /v1/ 422 (a query
// parameter given twice or not the operation's: oneValueEach), and the
// body in YAML as well as JSON. huma's
// catch-all default response goes: every status is declared for what it
// is, so that a client or a validator knows each answer it can get.
func (s *Server) declareAnswers() {
	s.optionalDefaults()
	doc := s.OpenAPI()
	for _, item := range doc.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Put, item.Patch, item.Delete} {
			if op == nil {
				continue
			}
			delete(op.Responses, "default")
			statuses := []int{http.StatusForbidden, http.StatusInternalServerError}
			if op.Path != openPath {
				statuses = append(statuses, http.StatusUnauthorized)
			}
			if body := op.RequestBody; body != nil {
				statuses = append(statuses, http.StatusBadRequest, http.StatusRequestTimeout, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
				// RawBody is read for the resolvers only, not a second request format.
				delete(body.Content, "application/octet-stream")
				for _, mt := range bodyTypes[1:] {
					body.Content[mt] = &huma.MediaType{Schema: body.Content[bodyTypes[0]].Schema}
				}
			}
			if strings.HasPrefix(op.Path, "/v1/") {
				s.problemResponse(op, http.StatusUnprocessableEntity) // a query parameter given twice or not the operation's
			}
			for _, status := range statuses {
				r := s.problemResponse(op, status)
				r.Description = answerDescriptions[status]
				if status == http.StatusUnauthorized {
					r.Headers = map[string]*huma.Param{"WWW-Authenticate": {
						Description: "The scheme and realm to authenticate with: Bearer realm=\"planner\".",
						Schema:      &huma.Schema{Type: huma.TypeString},
					}}
				}
			}
		}
	}
}

// optionalDefaults keeps the defaults of the schemas that request bodies
// use out of their `default` keywords and states them as x-default
// instead (docs/scenario.md is written from it): generators such as
// openapi-typescript (with its defaults) read a property with a default as
// one always present, which makes every defaulted field of a request,
// such as a quota's headroom, one that a client must send. The service
// applies the defaults itself (huma, from the struct tags, which this
// leaves as they are).
func (s *Server) optionalDefaults() {
	reg := s.OpenAPI().Components.Schemas
	seen := map[*huma.Schema]bool{}
	var walk func(sc *huma.Schema)
	walk = func(sc *huma.Schema) {
		if sc == nil || seen[sc] {
			return
		}
		seen[sc] = true
		if sc.Ref != "" {
			walk(reg.SchemaFromRef(sc.Ref))
			return
		}
		for _, name := range slices.Sorted(maps.Keys(sc.Properties)) {
			p := sc.Properties[name]
			if p.Default != nil {
				if p.Extensions == nil {
					p.Extensions = map[string]any{}
				}
				p.Extensions["x-default"] = p.Default
				p.Default = nil
			}
			walk(p)
		}
		walk(sc.Items)
		if extra, ok := sc.AdditionalProperties.(*huma.Schema); ok {
			walk(extra)
		}
		for _, sub := range slices.Concat(sc.OneOf, sc.AnyOf, sc.AllOf) {
			walk(sub)
		}
	}
	for _, item := range s.OpenAPI().Paths {
		for _, op := range []*huma.Operation{item.Post, item.Put, item.Patch} {
			if op != nil && op.RequestBody != nil {
				walk(op.RequestBody.Content[bodyTypes[0]].Schema)
			}
		}
	}
}

// problemResponse is the response of op for a problem status, added as
// huma adds those of Operation.Errors when op does not declare it.
func (s *Server) problemResponse(op *huma.Operation, status int) *huma.Response {
	key := strconv.Itoa(status)
	if r := op.Responses[key]; r != nil {
		return r
	}
	r := &huma.Response{
		Description: http.StatusText(status),
		Content: map[string]*huma.MediaType{problemContentType: {
			Schema: s.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[huma.ErrorModel](), true, ""),
		}},
	}
	op.Responses[key] = r
	return r
}

// declareRetryAfter declares the Retry-After header, in seconds, on the
// status response of the operation at method and path (a 503 of the
// computation limit, a 429 of the probe limit), with what the status
// means there.
func (s *Server) declareRetryAfter(method, path string, status int, description string) {
	item := s.OpenAPI().Paths[path]
	op := map[string]*huma.Operation{http.MethodGet: item.Get, http.MethodPost: item.Post}[method]
	r := s.problemResponse(op, status)
	r.Description = description
	r.Headers = map[string]*huma.Param{"Retry-After": {
		Description: "Seconds after which the request may succeed; sent when the service turned the request away for want of a slot.",
		Schema:      &huma.Schema{Type: huma.TypeInteger, Minimum: ptrTo(0.0)},
	}}
}

func ptrTo[T any](v T) *T { return &v }

// jsonAnswers is the huma API with its answers in JSON whatever a
// client's Accept asks: application/json, and problems
// application/problem+json, as the document declares them. YAML is read,
// as scenario files are, but never written.
type jsonAnswers struct{ huma.API }

func (jsonAnswers) Negotiate(string) (string, error) { return "application/json", nil }

// yamlFormat reads request bodies declared application/yaml, as the
// command line and the page read scenario files (YAML is read as its JSON
// equivalent, so the same schema and the same problems apply). It is
// never chosen for an answer (jsonAnswers).
var yamlFormat = huma.Format{
	Marshal: func(w io.Writer, v any) error {
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode YAML: %w", err)
		}
		_, err = w.Write(b)
		return err
	},
	Unmarshal: func(data []byte, v any) error {
		js, err := yamldoc.ToJSON(data)
		if _, ok := errors.AsType[*yamldoc.PathError](err); ok || errors.Is(err, yamldoc.ErrExpansion) || errors.Is(err, yamldoc.ErrDocuments) {
			return fmt.Errorf("the body is refused: %w", err)
		}
		if err != nil {
			return fmt.Errorf("the body is not valid YAML (or repeats a key): %w", err)
		}
		return json.Unmarshal(positiveZeros(js), v) // -0.0 is 0, as in JSON
	},
}
