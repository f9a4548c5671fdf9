package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/plannerdev/planner/internal/app"
	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
)

// problemContentType is the media type of RFC 9457 problem details.
const problemContentType = "application/problem+json"

// writeProblem answers with a problem document outside huma (auth, unknown
// routes, panics), in the same shape as huma's own.
func writeProblem(w http.ResponseWriter, status int, detail string, details ...*huma.ErrorDetail) {
	w.Header().Set("Content-Type", problemContentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(&huma.ErrorModel{
		Title:  http.StatusText(status),
		Status: status,
		Detail: detail,
		Errors: details,
	})
}

// bodyStatuses are the problems about the request body as a whole.
var bodyStatuses = []int{http.StatusBadRequest, http.StatusRequestTimeout, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType}

// completeProblem is a huma transformer for problem responses: a problem
// about the whole body (malformed JSON, missing, oversize) is located at
// "body"; the body is not echoed back; the size limit is stated as
// configured; a value echoed is a JSON number (NaN and the infinities as
// text, -0 as 0).
func (s *Server) completeProblem(ctx huma.Context, _ string, v any) (any, error) {
	em, ok := v.(*huma.ErrorModel)
	if !ok {
		return v, nil
	}
	if em.Status == http.StatusRequestEntityTooLarge {
		limit := s.maxBody
		if op := ctx.Operation(); op != nil && op.MaxBodyBytes > 0 {
			limit = op.MaxBodyBytes - 1
		}
		em.Detail = fmt.Sprintf("request body is larger than the limit of %d bytes", limit)
	}
	em.Errors = slices.DeleteFunc(em.Errors, func(d *huma.ErrorDetail) bool { return d == nil })
	if len(em.Errors) == 0 && slices.Contains(bodyStatuses, em.Status) {
		em.Errors = []*huma.ErrorDetail{{Location: "body", Message: em.Detail}}
	}
	for _, d := range em.Errors {
		if requiredProperty.MatchString(d.Message) {
			d.Location, d.Message = fieldLocation(d), "required"
		}
		switch v := d.Value.(type) {
		case map[string]any, []any:
			d.Value = nil // an echo of a whole object or list says less than the location
		case float64:
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
				d.Value = strconv.FormatFloat(v, 'g', -1, 64) // JSON has no such number
			case v == 0:
				d.Value = 0.0 // -0 is 0, and no answer says "-0"
			}
		}
		if d.Location == "body" {
			d.Value = nil
		}
	}
	return em, nil
}

// fieldLocation is where a schema problem is: for a missing property, the
// property itself rather than its object.
func fieldLocation(d *huma.ErrorDetail) string {
	if m := requiredProperty.FindStringSubmatch(d.Message); m != nil {
		return joinPath(d.Location, m[1])
	}
	return d.Location
}

// requiredProperty matches huma's problem for a missing property, which it
// locates at the object; the property's own location names the field.
var requiredProperty = regexp.MustCompile(`^expected required property ([A-Za-z0-9_$-]+) to be present$`)

// scenarioProblem turns the scenario.Errors of the planning engine into a
// 422 whose details sit under prefix ("body.scenario", "body"); any other
// error is the server's fault.
func (s *Server) scenarioProblem(err error, prefix string) error {
	var errs scenario.Errors
	if errors.Is(err, context.Canceled) {
		return huma.Error503ServiceUnavailable("the computation was cancelled (the client went away or the server is stopping)")
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return huma.Error422UnprocessableEntity(fmt.Sprintf("planning stopped after %s, the server's limit", s.timeout), &huma.ErrorDetail{
			Location: prefix,
			Message:  "too large to plan in time: use fewer classes or policy.monte_carlo_draws, or a smaller what-if grid",
		})
	}
	if !errors.As(err, &errs) {
		s.log.Error("planning failed", "error", err)
		return huma.Error500InternalServerError("planning failed; the server log has the cause")
	}
	details := make([]error, len(errs))
	for i, e := range errs {
		details[i] = &huma.ErrorDetail{Location: joinPath(prefix, e.Path), Message: e.Message}
	}
	return huma.Error422UnprocessableEntity("the request is invalid", details...)
}

func joinPath(prefix, path string) string {
	switch {
	case path == "":
		return prefix
	case prefix == "":
		return path
	case strings.HasPrefix(path, "["):
		return prefix + path
	}
	return prefix + "." + path
}

// rule is a problem found by a cross-field rule, located like huma's schema
// problems ("body.scenario.classes[1].output_tokens.p95").
type rule struct {
	location, message string
	// hide keeps the value out of the problem: it may be a credential.
	hide bool
}

// bodySchema is the JSON Schema of a request body type, built the way huma
// builds it, so that a resolver can tell which locations the schema already
// refused.
type bodySchema struct {
	registry huma.Registry
	schema   *huma.Schema
}

func schemaOf[T any]() bodySchema {
	reg := huma.NewMapRegistry("#/components/schemas/", huma.DefaultSchemaNamer)
	return bodySchema{registry: reg, schema: reg.Schema(reflect.TypeFor[T](), true, "")}
}

// uncoveredRules returns, as huma error details, the rule problems that no
// schema problem already covers: huma runs resolvers even after the schema
// refused a body, and a bad value should be reported once, not again
// through the rules it breaks. Only bodies with rule problems pay for the
// second look at the schema.
func uncoveredRules(raw []byte, bs bodySchema, rules []rule) []error {
	if len(rules) == 0 {
		return nil
	}
	var doc any
	if json.Unmarshal(raw, &doc) != nil {
		return nil // huma reports the malformed body
	}
	pb := huma.NewPathBuffer(make([]byte, 0, 128), 0)
	pb.Push("body")
	res := &huma.ValidateResult{}
	huma.Validate(bs.registry, bs.schema, pb, huma.ModeWriteToServer, doc, res)
	var schemaLocations []string
	for _, e := range res.Errors {
		var d *huma.ErrorDetail
		if errors.As(e, &d) {
			schemaLocations = append(schemaLocations, fieldLocation(d))
		}
	}
	var out []error
	for _, r := range rules {
		covered := slices.ContainsFunc(schemaLocations, func(l string) bool { return fieldpath.Related(l, r.location) })
		if !covered {
			d := &huma.ErrorDetail{Location: r.location, Message: r.message}
			if !r.hide {
				d.Value = valueAt(doc, r.location)
			}
			out = append(out, d)
		}
	}
	return out
}

// scenarioRules runs the scenario's cross-field rules, located under prefix.
func scenarioRules(sc scenario.Scenario, prefix string) []rule {
	var rules []rule
	for _, e := range sc.Check() {
		rules = append(rules, rule{location: joinPath(prefix, e.Path), message: e.Message})
	}
	return rules
}

// valueAt returns the value at a location such as
// "body.scenario.classes[1].name" in a decoded JSON body, nil when absent.
func valueAt(doc any, location string) any {
	steps := strings.FieldsFunc(location, func(r rune) bool { return r == '.' || r == '[' || r == ']' })
	if len(steps) == 0 || steps[0] != "body" {
		return nil
	}
	cur := doc
	for _, step := range steps[1:] {
		switch node := cur.(type) {
		case map[string]any:
			cur = node[step]
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(node) {
				return nil
			}
			cur = node[i]
		default:
			return nil
		}
	}
	if _, composite := cur.(map[string]any); composite {
		return nil // a whole object says less than its location
	}
	if _, composite := cur.([]any); composite {
		return nil
	}
	return cur
}

// computeBusy describes the 503 of an operation that computes.
const computeBusy = "Every computation slot is busy (limits.max_computations) and as many requests as may wait are " +
	"waiting: the request is shed, with Retry-After (load shedding, not a failure); or the server is shutting down."

// computeError answers a computation that did not give an answer: every
// slot busy (a 503 with Retry-After, load shedding rather than a fault),
// the engine shutting down (a 503), a panic (a 500, its stack in the log),
// a non-finite number (a 422 at prefix), and the scenario's problems,
// the deadline and the request's end as scenarioProblem answers them.
func (s *Server) computeError(ctx context.Context, err error, prefix string) error {
	var pe *plan.PanicError
	var nf *app.NonFiniteError
	switch {
	case errors.Is(err, plan.ErrBusy):
		s.metrics.computeRefused.Inc()
		markShed(ctx)
		return huma.ErrorWithHeaders(
			huma.Error503ServiceUnavailable("the service is at its limit of concurrent plan computations; retry shortly"),
			http.Header{"Retry-After": {strconv.Itoa(1)}},
		)
	case errors.Is(err, plan.ErrClosed):
		return huma.Error503ServiceUnavailable("the server is shutting down; the computation was stopped before it finished")
	case errors.As(err, &pe):
		s.log.Error("a computation panicked", "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
		return huma.Error500InternalServerError("the computation failed; the server log has the cause")
	case errors.As(err, &nf):
		s.log.Error("a computation holds a non-finite number", "what", nf.What, "at", nf.Path)
		title, verb := "the scenario cannot be planned", "planning"
		if nf.What == "simulation" {
			title, verb = "the scenario cannot be simulated", "simulating"
		}
		return huma.Error422UnprocessableEntity(title, &huma.ErrorDetail{
			Location: prefix,
			Message:  verb + " this scenario gives a non-finite " + nf.Path,
		})
	}
	return s.scenarioProblem(err, prefix)
}
