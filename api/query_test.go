package api

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestRepeatedQueryParameter: every operation refuses a query parameter
// given twice (?limit=1&limit=2) with a 422 at that parameter, which its
// document declares, rather than reading the first value and dropping
// the other; a parameter given once is no problem of this kind.
func TestRepeatedQueryParameter(t *testing.T) {
	s := newServer(t, Options{})
	checked := 0
	for _, o := range operations(s) {
		for _, p := range o.op.Parameters {
			if p.In != "query" {
				continue
			}
			checked++
			path := o.path + "?" + p.Name + "=1&" + p.Name + "=2"
			rec := send(s, o.method, path, nil)
			if rec.Code != http.StatusUnprocessableEntity {
				t.Errorf("%s %s: %d, want 422: %.300s", o.method, path, rec.Code, rec.Body)
				continue
			}
			pr := readProblem(t, rec)
			if !slices.Equal(pr.locations(), []string{"query." + p.Name}) || !strings.Contains(pr.Errors[0].Message, "given 2 times") {
				t.Errorf("%s %s: %+v, want one problem at query.%s", o.method, path, pr, p.Name)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d query parameters in the document", checked)
	}
	for _, path := range []string{"/v1/probes?limit=1&limit=2", "/v1/plans?limit=2&limit=2"} {
		rec := send(s, http.MethodGet, path, nil)
		if rec.Code != http.StatusUnprocessableEntity || !slices.Equal(readProblem(t, rec).locations(), []string{"query.limit"}) {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
	if rec := send(s, http.MethodGet, "/v1/probes?limit=1", nil); rec.Code != http.StatusOK {
		t.Errorf("limit given once: %d %s", rec.Code, rec.Body)
	}
}
