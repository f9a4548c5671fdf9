package api

import (
	"encoding/json"
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

// TestUnknownQueryParameter: every operation of /v1/ refuses a query
// parameter it does not declare (?limt=5, ?simulate=60 for simulate_s)
// with a 422 at that parameter naming the ones it takes, which its
// document declares, rather than answering as if it were not there. The
// probes of /healthz, /readyz and /metrics take what a checker adds.
func TestUnknownQueryParameter(t *testing.T) {
	s := newServer(t, Options{})
	checked := 0
	for _, o := range operations(s) {
		if !strings.HasPrefix(o.path, "/v1/") {
			continue
		}
		checked++
		path := o.path + "?limt=5"
		rec := send(s, o.method, path, nil)
		if rec.Code != http.StatusUnprocessableEntity {
			t.Errorf("%s %s: %d, want 422: %.300s", o.method, path, rec.Code, rec.Body)
			continue
		}
		var takes []string
		for _, p := range o.op.Parameters {
			if p.In == "query" {
				takes = append(takes, p.Name)
			}
		}
		want := "not a query parameter of this operation, which takes none"
		if len(takes) > 0 {
			want = "not a query parameter of this operation, which takes " + strings.Join(takes, ", ")
		}
		pr := readProblem(t, rec)
		if !slices.Contains(pr.locations(), "query.limt") || pr.Errors[slices.Index(pr.locations(), "query.limt")].Message != want {
			t.Errorf("%s %s: %+v, want a problem at query.limt: %s", o.method, path, pr, want)
		}
	}
	if checked < 20 {
		t.Fatalf("only %d operations under /v1/", checked)
	}
	rec := send(s, http.MethodGet, "/v1/plans?limit=5&limt=5&cursro=x", nil)
	if pr := readProblem(t, rec); rec.Code != http.StatusUnprocessableEntity || !slices.Equal(pr.locations(), []string{"query.cursro", "query.limt"}) {
		t.Errorf("two unknown parameters: %d %+v", rec.Code, pr)
	}
	for _, path := range []string{"/healthz?probe=1", "/metrics?x=1", "/v1/plans?limit=5"} {
		if rec := send(s, http.MethodGet, path, nil); rec.Code != http.StatusOK {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
}

// TestCursorOfAnotherList: the next_cursor of GET /v1/plans given to
// GET /v1/probes (or /v1/records) is a 422 at query.cursor, not a page of
// the probes older than some plan.
func TestCursorOfAnotherList(t *testing.T) {
	s := newServer(t, Options{})
	for range 2 {
		if rec := send(s, http.MethodPost, "/v1/plans", mustJSON(t, map[string]any{"scenario": exampleDoc(t, "chat"), "save": true})); rec.Code != http.StatusOK {
			t.Fatalf("save: %d %s", rec.Code, rec.Body)
		}
	}
	rec := send(s, http.MethodGet, "/v1/plans?limit=1", nil)
	var page struct {
		Next string `json:"next_cursor"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || page.Next == "" {
		t.Fatalf("plans: %v %s", err, rec.Body)
	}
	for _, path := range []string{"/v1/probes?cursor=" + page.Next, "/v1/records?cursor=" + page.Next} {
		rec := send(s, http.MethodGet, path, nil)
		if rec.Code != http.StatusUnprocessableEntity || !slices.Equal(readProblem(t, rec).locations(), []string{"query.cursor"}) {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
	if rec := send(s, http.MethodGet, "/v1/plans?cursor="+page.Next, nil); rec.Code != http.StatusOK {
		t.Errorf("the plans' own cursor: %d %s", rec.Code, rec.Body)
	}
}
