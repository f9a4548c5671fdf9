package api

import (
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
)

// oneValueEach refuses a request that gives a query parameter of its
// operation more than once (?limit=1&limit=2, ?probes=a&probes=b): each
// takes one value (a list one as comma-separated values, explode: false
// in the document), and huma would read the first and silently drop the
// others. It is a 422 at the parameter, before the operation runs.
func (s *Server) oneValueEach(ctx huma.Context, next func(huma.Context)) {
	op := ctx.Operation()
	if op == nil {
		next(ctx)
		return
	}
	u := ctx.URL()
	query := u.Query()
	var problems []error
	for _, p := range op.Parameters {
		if p.In != "query" || len(query[p.Name]) < 2 {
			continue
		}
		msg := fmt.Sprintf("given %d times; it takes one value", len(query[p.Name]))
		if p.Schema != nil && p.Schema.Type == huma.TypeArray {
			msg += ", its items comma-separated (" + p.Name + "=a,b)"
		}
		problems = append(problems, &huma.ErrorDetail{Location: "query." + p.Name, Message: msg, Value: query[p.Name]})
	}
	if len(problems) > 0 {
		_ = huma.WriteErr(s.api, ctx, http.StatusUnprocessableEntity, "a query parameter is given more than once", problems...)
		return
	}
	next(ctx)
}
