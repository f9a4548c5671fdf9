package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"

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
for example ` + "`body.scenario.classes[1].output_tokens.p95`" + `.

Request bodies are JSON (` + "`application/json`" + `) or YAML
(` + "`application/yaml`" + `), as scenario files are; a body declared as anything
else, or not declared, gets a 415. A request whose Host header does not
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
// documents.
var errorStatuses = []int{400, 401, 413, 422}

// yamlFormat reads request bodies declared application/yaml, as the
// command line and the page read scenario files (YAML is read as its JSON
// equivalent, so the same schema and the same problems apply), and writes
// YAML to a client that asks for it with Accept.
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
		if errors.Is(err, yamldoc.ErrExpansion) {
			return fmt.Errorf("the body is refused: %w", err)
		}
		if err != nil {
			return fmt.Errorf("the body is not valid YAML (or repeats a key): %w", err)
		}
		return json.Unmarshal(js, v)
	},
}
