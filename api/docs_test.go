package api

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
)

// TestDocsPageWorksOffline fetches /docs from a running server, then every
// script and stylesheet the page names, from the same server: all must
// answer 200, and the page must name no other host.
func TestDocsPageWorksOffline(t *testing.T) {
	srv := httptest.NewServer(newServer(t, Options{}))
	defer srv.Close()
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}

	resp, page := get("/docs")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("/docs: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q does not keep scripts on this server", csp)
	}
	if m := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+`).FindString(page); m != "" {
		t.Errorf("the page names another host: %s", m)
	}
	refs := regexp.MustCompile(`(?i)(?:src|href|apiDescriptionUrl)="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(refs) < 3 {
		t.Fatalf("found %d references in the page:\n%s", len(refs), page)
	}
	for _, ref := range refs {
		path := ref[1]
		if !strings.HasPrefix(path, "/") {
			t.Errorf("reference %q is not a path on this server", path)
			continue
		}
		resp, body := get(path)
		if resp.StatusCode != http.StatusOK || len(body) < 100 {
			t.Errorf("%s: status %d, %d bytes", path, resp.StatusCode, len(body))
		}
		switch {
		case strings.HasSuffix(path, ".js") && !strings.Contains(resp.Header.Get("Content-Type"), "javascript"),
			strings.HasSuffix(path, ".css") && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/css"):
			t.Errorf("%s: content type %q", path, resp.Header.Get("Content-Type"))
		}
	}
}

func TestOpenAPIDocuments(t *testing.T) {
	s := newServer(t, Options{})
	for path, want := range map[string]string{
		"/openapi.yaml": "openapi: 3.1.0",
		"/openapi.json": `"openapi":"3.1.0"`,
	} {
		rec := send(s, http.MethodGet, path, nil)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("%s: %d, lacks %q", path, rec.Code, want)
		}
	}
	doc := s.OpenAPI()
	if len(doc.Paths) != 20 {
		t.Errorf("%d paths in the document", len(doc.Paths))
	}
	for path, item := range doc.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Put, item.Patch, item.Delete} {
			if op == nil {
				continue
			}
			if op.OperationID == "" || op.Summary == "" || op.Description == "" || len(op.Tags) != 1 {
				t.Errorf("%s %s: operation ID %q, summary %q, tags %v, description %d bytes", op.Method, path, op.OperationID, op.Summary, op.Tags, len(op.Description))
			}
			if op.RequestBody != nil {
				c := op.RequestBody.Content
				if !slices.Equal(slices.Sorted(maps.Keys(c)), bodyTypes) || len(c["application/json"].Examples) == 0 ||
					c["application/yaml"].Schema != c["application/json"].Schema {
					t.Errorf("%s %s: request body %v: not JSON and YAML of one schema, with a JSON example", op.Method, path, c)
				}
				success := op.Responses["200"]
				if success == nil {
					success = op.Responses["202"]
				}
				if success == nil || len(success.Content["application/json"].Examples) == 0 {
					t.Errorf("%s %s: no response example", op.Method, path)
				}
			}
			if open := path == openPath; open != (len(op.Security) == 1 && len(op.Security[0]) == 0) {
				t.Errorf("%s %s: security %v", op.Method, path, op.Security)
			}
		}
	}
	if len(doc.Security) != 1 || doc.Components.SecuritySchemes[securityScheme].Scheme != "bearer" {
		t.Errorf("bearer security not declared: %v", doc.Security)
	}
}
