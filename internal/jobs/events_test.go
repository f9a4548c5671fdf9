package jobs

import (
	"testing"

	"github.com/plannerdev/planner/internal/measure"
)

// TestProgressCountsCancelledApart: the request in flight when a probe is
// cancelled is no failure of the endpoint: the running step's progress
// counts it as cancelled, not among its requests or errors, as the step's
// summary leaves it out.
func TestProgressCountsCancelledApart(t *testing.T) {
	var p Progress
	for _, r := range []measure.Record{
		{OK: true, Status: 200},
		{OK: true, Status: 200},
		{Status: 500, ErrorClass: measure.ErrServer},
		{Status: 429, ErrorClass: measure.ErrRateLimited, Attempts: 2},
		{Status: 200, ErrorClass: measure.ErrCancelled},
		{ErrorClass: measure.ErrCancelled},
	} {
		p.add(r)
	}
	want := Progress{Requests: 4, OK: 2, RateLimited: 2, Errors: 1, Cancelled: 2}
	if p != want {
		t.Errorf("progress %+v, want %+v", p, want)
	}
}
