package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"runtime/debug"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
)

// openPath is the only route that needs no token.
const openPath = "/healthz"

// observe logs every request (method, path, status, duration, operation;
// never a body or a header), counts it in the metrics, and turns a panic
// into a 500 problem as a last resort. A request shed by the computation
// limit is counted with status class "shed" and logged as a warning, not
// as an error: under load, turning work away is the service's design.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		op := s.label(r)
		rec := &statusRecorder{ResponseWriter: w}
		ctx, shed := withShedMark(r.Context())
		r = r.WithContext(ctx)
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.metrics.panics.Inc()
				s.log.Error("handler panicked", "operation", op, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if rec.status == 0 {
					writeProblem(rec, http.StatusInternalServerError, "the server failed to answer; its log has the cause")
				} else {
					rec.status = http.StatusInternalServerError // counted as what it became: a broken answer
				}
			}
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			elapsed := time.Since(start)
			class := statusClass(status, shed.Load() && status == http.StatusServiceUnavailable)
			s.metrics.observeRequest(op, class, elapsed.Seconds())
			level := slog.LevelInfo
			switch {
			case class == "shed":
				level = slog.LevelWarn // the service works as designed under load
			case status >= http.StatusInternalServerError:
				level = slog.LevelError
			}
			s.log.LogAttrs(r.Context(), level, "request",
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", status),
				slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
				slog.String("operation", op))
		}()
		next.ServeHTTP(rec, r)
	})
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController (deadlines, flushing) the writer
// underneath.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush sends buffered data, for streamed responses.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// authenticate requires a configured bearer token on every route but
// /healthz and the browser page's static files. Without tokens it lets
// everything through.
func (s *Server) authenticate(next http.Handler) http.Handler {
	if len(s.tokens) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == openPath || pageFile(r) || tokenMatches(r.Header.Get("Authorization"), s.tokens) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="planner"`)
		writeProblem(w, http.StatusUnauthorized, "a valid bearer token is required",
			&huma.ErrorDetail{Location: "header.Authorization", Message: "missing, malformed or unknown bearer token"})
	})
}

// pageFile reports whether a request reads a static file of the browser
// page: the page at / and under /ui/ its scripts, styles and the example
// scenarios. They hold no data, and a browser cannot add a token to a page
// load; the page asks for the token and sends it on its API calls.
func pageFile(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.Path
	return p == "/" || (strings.HasPrefix(p, "/ui/") && path.Clean(p) == strings.TrimSuffix(p, "/"))
}

// hashTokens keeps the configured tokens as SHA-256 digests, so that every
// comparison is between equal lengths.
func hashTokens(tokens []string) [][32]byte {
	out := make([][32]byte, 0, len(tokens))
	for _, t := range tokens {
		out = append(out, sha256.Sum256([]byte(t)))
	}
	return out
}

// tokenMatches reports whether an Authorization header carries one of the
// tokens. It compares digests in constant time and checks every token, so
// that its timing tells nothing about how close a guess was or which token
// matched.
func tokenMatches(header string, tokens [][32]byte) bool {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	match := 0
	for _, t := range tokens {
		match |= subtle.ConstantTimeCompare(got[:], t[:])
	}
	return match == 1
}
