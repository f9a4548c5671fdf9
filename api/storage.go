package api

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/plannerdev/planner/internal/store"
)

// Store is what the API needs of the store (package store): stored plans,
// probe runs and their rows, and readiness.
type Store interface {
	Readier
	SavePlan(ctx context.Context, p store.StoredPlan) (string, error)
	GetPlan(ctx context.Context, id string) (store.StoredPlan, error)
	ListPlans(ctx context.Context, opts store.ListOptions) ([]store.StoredPlan, string, error)
	PlansForProbe(ctx context.Context, probeID string) ([]store.StoredPlan, error)
	GetProbe(ctx context.Context, id string) (store.ProbeRun, error)
	ListProbes(ctx context.Context, opts store.ListOptions) ([]store.ProbeRun, string, error)
	WriteRecordsCSV(ctx context.Context, w io.Writer, probeID string) error
}

// errNoStore answers operations that need a store on a server without one
// (planner openapi builds the API so).
var errNoStore = huma.Error503ServiceUnavailable("the server has no store")

// needStore returns errNoStore when the server has no store.
func (s *Server) needStore() error {
	if s.store == nil {
		return errNoStore
	}
	return nil
}

// storeError turns a store failure into a problem: an unknown id is a 404
// located at the path parameter, a bad cursor a 422 at query.cursor, and
// anything else is the server's fault, logged.
func (s *Server) storeError(err error, what, id string) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return huma.Error404NotFound("no "+what+" "+id, &huma.ErrorDetail{Location: "path.id", Message: "no " + what + " has this id", Value: id})
	case errors.Is(err, store.ErrBadCursor):
		return huma.Error422UnprocessableEntity("invalid paging cursor", &huma.ErrorDetail{Location: "query.cursor", Message: "not a cursor this server issued; use next_cursor of the previous page"})
	}
	s.log.Error("store failure", "what", what, "error", err)
	return huma.Error500InternalServerError("the store failed; the server log has the cause")
}

// notFoundStatuses are the problems of an operation on a stored resource.
var notFoundStatuses = []int{http.StatusUnauthorized, http.StatusNotFound, http.StatusUnprocessableEntity}

// PageQuery is the paging of a list, newest first.
type PageQuery struct {
	Limit  int    `query:"limit" minimum:"1" maximum:"500" default:"50" doc:"Items per page."`
	Cursor string `query:"cursor" maxLength:"64" doc:"next_cursor of the previous page; empty for the first page."`
}

func (q PageQuery) options() store.ListOptions {
	return store.ListOptions{Limit: q.Limit, Cursor: q.Cursor}
}
