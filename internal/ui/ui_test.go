package ui

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/plannerdev/planner"
)

func get(t *testing.T, h http.Handler, method, target string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// embedded lists every embedded file, by path below assets/.
func embedded(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		files[strings.TrimPrefix(p, "assets/")] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestEveryAssetIsServedWithItsType(t *testing.T) {
	h := Handler()
	want := map[string]string{
		".html":    "text/html; charset=utf-8",
		".css":     "text/css; charset=utf-8",
		".js":      "text/javascript; charset=utf-8",
		".mjs":     "text/javascript; charset=utf-8",
		".md":      "text/markdown; charset=utf-8",
		".LICENSE": "text/plain; charset=utf-8",
		".svg":     "image/svg+xml",
	}
	files := embedded(t)
	if len(files) < 10 {
		t.Fatalf("only %d embedded files", len(files))
	}
	for name, body := range files {
		ext := name[strings.LastIndex(name, "."):]
		ct, ok := want[ext]
		if !ok {
			t.Errorf("%s: no expected content type for %s", name, ext)
			continue
		}
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			rec := get(t, h, method, "/ui/"+name)
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != ct {
				t.Errorf("%s /ui/%s: %d %q, want 200 %q", method, name, rec.Code, rec.Header().Get("Content-Type"), ct)
			}
			if rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("Content-Security-Policy") != CSP {
				t.Errorf("%s /ui/%s: headers %v", method, name, rec.Header())
			}
			if method == http.MethodGet && !bytes.Equal(rec.Body.Bytes(), body) {
				t.Errorf("/ui/%s: the body differs from the embedded file", name)
			}
		}
	}
}

func TestPageAtRootAndUI(t *testing.T) {
	h := Handler()
	page := embedded(t)["index.html"]
	for _, route := range []string{"/", "/ui/"} {
		rec := get(t, h, http.MethodGet, route)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" || !bytes.Equal(rec.Body.Bytes(), page) {
			t.Errorf("%s: %d %q", route, rec.Code, rec.Header().Get("Content-Type"))
		}
	}
	// Everything the page names is served from /ui/.
	refs := regexp.MustCompile(`(?:src|href)="([^"#]+)"`).FindAllStringSubmatch(string(page), -1)
	if len(refs) < 2 {
		t.Fatalf("the page names %d files", len(refs))
	}
	for _, ref := range refs {
		if ref[1] == "/docs" {
			continue // the API reference, served by the API
		}
		if rec := get(t, h, http.MethodGet, ref[1]); rec.Code != http.StatusOK {
			t.Errorf("the page names %s: %d", ref[1], rec.Code)
		}
	}
	// Modules import each other by relative paths that must exist too.
	imports := regexp.MustCompile(`from '(\.\.?/[^']+)'`)
	files := embedded(t)
	for name, body := range files {
		if !strings.HasPrefix(name, "js/") {
			continue
		}
		for _, m := range imports.FindAllStringSubmatch(string(body), -1) {
			target := path.Join(path.Dir(name), m[1])
			if _, ok := files[target]; !ok {
				t.Errorf("%s imports %s, which is not embedded (%s)", name, m[1], target)
			}
		}
	}
}

// allowedURL is the only URL the served files may hold: the SVG
// namespace, a name that the browser never fetches.
const allowedURL = "http://www.w3.org/2000/svg"

// licenseBanner is the comment at the top of a vendored file, which may
// name the library's home.
var licenseBanner = regexp.MustCompile(`^/\*![^*]*\*/`)

func TestNoExternalURLs(t *testing.T) {
	h := Handler()
	urls := regexp.MustCompile(`(?i)(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}[^\s"'<>)]*|(?:src|href|action)\s*=\s*["']?//`)
	served := map[string][]byte{"/ui/examples/": get(t, h, http.MethodGet, "/ui/examples/").Body.Bytes()}
	for name := range embedded(t) {
		served["/ui/"+name] = get(t, h, http.MethodGet, "/ui/"+name).Body.Bytes()
	}
	for _, name := range planner.ExampleNames() {
		route := "/ui/examples/" + name + ".yaml"
		served[route] = get(t, h, http.MethodGet, route).Body.Bytes()
	}
	for route, body := range served {
		text := string(body)
		if strings.HasPrefix(route, "/ui/vendor/") {
			text = licenseBanner.ReplaceAllString(text, "")
		}
		for _, u := range urls.FindAllString(text, -1) {
			if u != allowedURL {
				t.Errorf("%s names another host: %s", route, u)
			}
		}
	}
}

func TestExamples(t *testing.T) {
	h := Handler()
	rec := get(t, h, http.MethodGet, "/ui/examples/")
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("/ui/examples/: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	var list struct {
		Examples []Example `json:"examples"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list.Examples {
		names = append(names, e.Name)
		if e.Description == "" || strings.Contains(e.Description, "#") {
			t.Errorf("%s: description %q", e.Name, e.Description)
		}
		rec := get(t, h, http.MethodGet, e.URL)
		text, _ := planner.Example(e.Name)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/yaml; charset=utf-8" || !bytes.Equal(rec.Body.Bytes(), text) {
			t.Errorf("%s: %d %q", e.URL, rec.Code, rec.Header().Get("Content-Type"))
		}
	}
	if !slices.Equal(names, planner.ExampleNames()) || len(names) == 0 {
		t.Errorf("listed %v, shipped %v", names, planner.ExampleNames())
	}
	for _, route := range []string{"/ui/examples/chat", "/ui/examples/nope.yaml", "/ui/examples/chat.yml", "/ui/nope.js", "/ui/js/"} {
		if rec := get(t, h, http.MethodGet, route); rec.Code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", route, rec.Code)
		}
	}
}

func TestRevalidation(t *testing.T) {
	h := Handler()
	first := get(t, h, http.MethodGet, "/ui/js/main.js")
	etag := first.Header().Get("ETag")
	if etag == "" || first.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("headers %v", first.Header())
	}
	if rec := get(t, h, http.MethodGet, "/ui/js/main.js", "If-None-Match", etag); rec.Code != http.StatusNotModified {
		t.Errorf("with its ETag: %d, want 304", rec.Code)
	}
	if rec := get(t, h, http.MethodPost, "/ui/js/main.js"); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", rec.Code)
	}
}

func TestLeadingComment(t *testing.T) {
	got := leadingComment([]byte("# One line,\n#   and  another.\nquotas: []\n# not this\n"))
	if got != "One line, and another." {
		t.Errorf("got %q", got)
	}
	if got := leadingComment([]byte("quotas: []\n")); got != "" {
		t.Errorf("no comment: %q", got)
	}
}
