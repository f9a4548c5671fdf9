package api

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"sync"
)

// docsAssets are the docs UI's script and styles (Stoplight Elements, see
// docs/README.md), served from the binary so that /docs works offline.
//
//go:embed docs/elements/web-components.min.js docs/elements/styles.min.css
var docsAssets embed.FS

// docsCSP lets the docs page load only this server's scripts, styles and spec.
const docsCSP = "default-src 'none'; base-uri 'none'; connect-src 'self'; font-src 'self' data:; " +
	"form-action 'none'; frame-ancestors 'none'; img-src 'self' data:; script-src 'self'; " +
	"style-src 'self' 'unsafe-inline'"

const docsPage = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="referrer" content="no-referrer">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>planner API reference</title>
    <link rel="stylesheet" href="/docs/assets/styles.min.css">
    <script src="/docs/assets/web-components.min.js"></script>
  </head>
  <body style="height: 100vh;">
    <elements-api
      apiDescriptionUrl="/openapi.yaml"
      router="hash"
      layout="sidebar"
      tryItCredentialsPolicy="same-origin"
    ></elements-api>
  </body>
</html>
`

func (s *Server) registerDocs() {
	assets, err := fs.Sub(docsAssets, "docs/elements")
	if err != nil {
		panic(err)
	}
	files := http.StripPrefix("/docs/assets/", http.FileServerFS(assets))
	s.handle("GET /docs", "docs", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", docsCSP)
		_, _ = w.Write([]byte(docsPage))
	})
	s.handle("GET /docs/assets/{file}", "docs", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		files.ServeHTTP(w, r)
	})
	spec := sync.OnceValues(func() ([]byte, error) { return s.OpenAPI().YAML() })
	s.handle("GET /openapi.yaml", "openapi", func(w http.ResponseWriter, _ *http.Request) {
		s.writeSpec(w, "application/openapi+yaml", spec)
	})
	specJSON := sync.OnceValues(func() ([]byte, error) { return json.Marshal(s.OpenAPI()) })
	s.handle("GET /openapi.json", "openapi", func(w http.ResponseWriter, _ *http.Request) {
		s.writeSpec(w, "application/openapi+json", specJSON)
	})
}

func (s *Server) writeSpec(w http.ResponseWriter, contentType string, spec func() ([]byte, error)) {
	b, err := spec()
	if err != nil {
		s.log.Error("encode the OpenAPI document", "error", err)
		writeProblem(w, http.StatusInternalServerError, "the OpenAPI document could not be encoded")
		return
	}
	w.Header().Set("Content-Type", contentType)
	_, _ = w.Write(b)
}
