package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// oneValueEach refuses a request that gives a query parameter of its
// operation more than once (?limit=1&limit=2, ?probes=a&probes=b): each
// takes one value (a list one as comma-separated values, explode: false
// in the document), and huma would read the first and silently drop the
// others. It also refuses, on the operations of /v1/, a query parameter
// that the operation does not declare (?limt=5, ?simulate=60 for
// simulate_s), which huma would ignore, answering as if it were not there;
// the probes of /healthz, /readyz and /metrics take whatever a checker
// adds. Either is a 422 at the parameter, before the operation runs.
func (s *Server) oneValueEach(ctx huma.Context, next func(huma.Context)) {
	op := ctx.Operation()
	if op == nil {
		next(ctx)
		return
	}
	u := ctx.URL()
	query := u.Query()
	var problems []error
	var takes []string
	for _, p := range op.Parameters {
		if p.In != "query" {
			continue
		}
		takes = append(takes, p.Name)
		if len(query[p.Name]) < 2 {
			continue
		}
		msg := fmt.Sprintf("given %d times; it takes one value", len(query[p.Name]))
		if p.Schema != nil && p.Schema.Type == huma.TypeArray {
			msg += ", its items comma-separated (" + p.Name + "=a,b)"
		}
		problems = append(problems, &huma.ErrorDetail{Location: "query." + p.Name, Message: msg, Value: query[p.Name]})
	}
	repeated := len(problems)
	if strings.HasPrefix(op.Path, "/v1/") {
		known := "which takes none"
		if len(takes) > 0 {
			known = "which takes " + strings.Join(takes, ", ")
		}
		var unknown []string
		for name := range query {
			if !slices.Contains(takes, name) {
				unknown = append(unknown, name)
			}
		}
		slices.Sort(unknown)
		for _, name := range unknown {
			// The value is not echoed: an unknown parameter may carry a credential.
			problems = append(problems, &huma.ErrorDetail{Location: "query." + name, Message: "not a query parameter of this operation, " + known})
		}
	}
	detail := "a query parameter is given more than once"
	switch {
	case repeated == 0:
		detail = "a query parameter is not one of this operation's"
	case repeated < len(problems):
		detail = "the query parameters are invalid: one is given more than once, another is not the operation's"
	}
	if len(problems) > 0 {
		_ = huma.WriteErr(s.api, ctx, http.StatusUnprocessableEntity, detail, problems...)
		return
	}
	next(ctx)
}
