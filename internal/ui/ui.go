// Package ui serves planner's browser page: a scenario editor with the
// plan as a table and charts, a what-if panel, a simulation panel and a
// probe view, all built on the public API. The page, its scripts, styles and vendored libraries
// are embedded in the binary, so it works with no network access; the
// shipped example scenarios are served beside them.
//
// Routes (all GET or HEAD):
//
//	/                            the page
//	/ui/                         the page
//	/ui/{file...}                scripts, styles, the icon, vendored libraries
//	/ui/examples/                the example scenarios, as JSON
//	/ui/examples/{name}.yaml     one example scenario, as YAML
//
// None of them holds data, so they need no token even when the API does.
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/plannerdev/planner"
)

//go:embed assets
var assets embed.FS

// CSP keeps the page to this server: its own scripts and styles (no inline
// code, no eval) and requests to its own API.
const CSP = "default-src 'none'; base-uri 'none'; connect-src 'self'; form-action 'none'; " +
	"frame-ancestors 'none'; img-src 'self' data:; script-src 'self'; style-src 'self'"

// contentTypes are the media types of the files served, by extension; a
// fixed table, so that the answer does not depend on the host's MIME files.
var contentTypes = map[string]string{
	".html":    "text/html; charset=utf-8",
	".css":     "text/css; charset=utf-8",
	".js":      "text/javascript; charset=utf-8",
	".mjs":     "text/javascript; charset=utf-8",
	".md":      "text/markdown; charset=utf-8",
	".LICENSE": "text/plain; charset=utf-8",
	".yaml":    "application/yaml; charset=utf-8",
	".svg":     "image/svg+xml",
}

// ContentType is the media type the handler serves a file name with.
func ContentType(name string) string {
	if t, ok := contentTypes[path.Ext(name)]; ok {
		return t
	}
	return "application/octet-stream"
}

// file is one embedded file, ready to serve.
type file struct {
	body        []byte
	contentType string
	etag        string
}

func newFile(body []byte, name string) file {
	sum := sha256.Sum256(body)
	return file{body: body, contentType: ContentType(name), etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
}

// Example is one entry of the example list at /ui/examples/.
type Example struct {
	// Name is the example's name, as planner plan --example takes it.
	Name string `json:"name"`
	// Description is the example's leading comment, as one paragraph.
	Description string `json:"description"`
	// URL is where its YAML text is served.
	URL string `json:"url"`
}

// handler serves the embedded files and the examples.
type handler struct {
	mux      *http.ServeMux
	files    map[string]file // by path below assets/
	examples map[string]file // by name
	list     file
}

// Handler returns the UI's handler. Mount it for GET / and GET /ui/.
func Handler() http.Handler {
	h := &handler{mux: http.NewServeMux(), files: map[string]file{}, examples: map[string]file{}}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := assets.ReadFile(p)
		h.files[strings.TrimPrefix(p, "assets/")] = newFile(body, p)
		return err
	})
	if err != nil {
		panic("ui: read the embedded assets: " + err.Error()) // the files are part of the binary
	}
	list := []Example{}
	for _, name := range planner.ExampleNames() {
		text, _ := planner.Example(name)
		h.examples[name] = newFile(text, name+".yaml")
		list = append(list, Example{Name: name, Description: leadingComment(text), URL: "/ui/examples/" + name + ".yaml"})
	}
	body, _ := json.Marshal(map[string]any{"examples": list})
	h.list = file{body: body, contentType: "application/json", etag: newFile(body, "").etag}

	page := func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, h.files["index.html"]) }
	h.mux.HandleFunc("GET /{$}", page)
	h.mux.HandleFunc("GET /ui/{$}", page)
	h.mux.HandleFunc("GET /ui/examples/{$}", func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, h.list) })
	h.mux.HandleFunc("GET /ui/examples/{file}", h.example)
	h.mux.HandleFunc("GET /ui/{file...}", h.asset)
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

func (h *handler) asset(w http.ResponseWriter, r *http.Request) {
	f, ok := h.files[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h.serve(w, r, f)
}

func (h *handler) example(w http.ResponseWriter, r *http.Request) {
	name, isYAML := strings.CutSuffix(r.PathValue("file"), ".yaml")
	f, ok := h.examples[name]
	if !isYAML || !ok {
		http.NotFound(w, r)
		return
	}
	h.serve(w, r, f)
}

// serve answers with one file. Browsers revalidate every time (the files
// change with the binary), and an unchanged file costs a 304.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, f file) {
	header := w.Header()
	header.Set("Content-Type", f.contentType)
	header.Set("Content-Security-Policy", CSP)
	header.Set("X-Content-Type-Options", "nosniff")
	header.Set("Referrer-Policy", "no-referrer")
	header.Set("Cache-Control", "no-cache")
	header.Set("ETag", f.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
}

// leadingComment joins the comment lines at the top of a YAML file into
// one paragraph.
func leadingComment(text []byte) string {
	var words []string
	for line := range strings.Lines(string(text)) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "#")
		if !ok {
			break
		}
		words = append(words, strings.Fields(rest)...)
	}
	return strings.Join(words, " ")
}
