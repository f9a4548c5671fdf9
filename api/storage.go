package api

import (
	"context"
	"errors"
	"fmt"
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
// located at the path parameter, a bad cursor a 422 at query.cursor, a
// document over the store's cap a 413 that names it, and a store that
// cannot take the write now a 507 or 503 (storeProblem); anything else is
// the server's fault, logged. A refused write left nothing behind.
func (s *Server) storeError(err error, what, id string) error {
	var tooLarge *store.TooLargeError
	switch {
	case errors.Is(err, store.ErrNotFound):
		return huma.Error404NotFound("no "+what+" "+id, &huma.ErrorDetail{Location: "path.id", Message: "no " + what + " has this id", Value: id})
	case errors.Is(err, store.ErrBadCursor):
		return huma.Error422UnprocessableEntity("invalid paging cursor", &huma.ErrorDetail{Location: "query.cursor", Message: "not a cursor that this list issued (the plans' and the probes' are not each other's); use next_cursor of its previous page"})
	case errors.As(err, &tooLarge):
		return huma.Error413RequestEntityTooLarge("the "+tooLarge.What+" is too large to store", &huma.ErrorDetail{
			Location: "body", Value: tooLarge.Bytes,
			Message: fmt.Sprintf("it takes %d bytes stored, more than the server's store.max_document_bytes of %d", tooLarge.Bytes, tooLarge.Limit),
		})
	}
	if problem := storeProblem(err, false); problem != nil {
		s.log.Warn("the store refused", "what", what, "status", problem.GetStatus(), "error", err)
		return problem
	}
	s.log.Error("store failure", "what", what, "error", err)
	return huma.Error500InternalServerError("the store failed; the server log has the cause")
}

// storeProblem is the problem of a store that cannot take a write now,
// nil for other errors: 507 when it has no room (503 for readiness, which
// answers 200 or 503), 503 when its file was removed or replaced, when its
// start-up has not completed (a degraded start), or when it cannot use its
// file. The details name the cause in general terms: the log has the
// store's own error.
func storeProblem(err error, readiness bool) huma.StatusError {
	switch {
	case errors.Is(err, store.ErrGone):
		return huma.Error503ServiceUnavailable("the store's file was removed or replaced while the server ran: " +
			"nothing is saved until the server is restarted")
	case errors.Is(err, store.ErrStarting) && errors.Is(err, store.ErrFull):
		return huma.Error503ServiceUnavailable("the store started degraded: it has no room to complete its start-up; " +
			"free space on its disk, or raise store.max_bytes")
	case errors.Is(err, store.ErrStarting):
		return huma.Error503ServiceUnavailable("the store has not completed its start-up; the server log has the cause")
	case errors.Is(err, store.ErrFull) && readiness:
		return huma.Error503ServiceUnavailable("the store has too little room left for the largest document it accepts; " +
			"free space on its disk, or raise store.max_bytes")
	case errors.Is(err, store.ErrFull):
		return huma.NewError(http.StatusInsufficientStorage, "the store is full: nothing was saved; "+
			"free space on its disk, or raise store.max_bytes")
	case errors.Is(err, store.ErrUnavailable):
		return huma.Error503ServiceUnavailable("the store cannot read or write its database (its file, or its PostgreSQL server); the server log has the cause")
	}
	return nil
}

// notFoundStatuses are the problems of an operation on a stored resource.
var notFoundStatuses = []int{http.StatusUnauthorized, http.StatusNotFound, http.StatusUnprocessableEntity, http.StatusServiceUnavailable}

// saveStatuses are the problems a store adds to an operation that writes:
// a document over its cap, no room, no file to write.
var saveStatuses = []int{http.StatusRequestEntityTooLarge, http.StatusServiceUnavailable, http.StatusInsufficientStorage}

// PageQuery is the paging of a list, newest first.
type PageQuery struct {
	Limit  int    `query:"limit" minimum:"1" maximum:"500" default:"50" doc:"Items per page."`
	Cursor string `query:"cursor" maxLength:"64" doc:"next_cursor of the previous page; empty for the first page."`
}

func (q PageQuery) options() store.ListOptions {
	return store.ListOptions{Limit: q.Limit, Cursor: q.Cursor}
}
