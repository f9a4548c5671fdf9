package api

import (
	"fmt"
	"net/http"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// yamlBombs are request bodies whose aliases expand them hundreds of
// times or more: one long scalar aliased many times (the body of the
// report, 203 KB that decoded to 180 MB), aliases of aliases, merge keys
// that copy a large mapping into every class, and many aliases of a small
// latency block.
func yamlBombs() map[string]string {
	var long strings.Builder
	fmt.Fprintf(&long, "note: &n %s\nscenario:\n  quotas: [", strings.Repeat("q", 220_000))
	for range 800 {
		long.WriteString("*n, ")
	}
	long.WriteString("*n]\n")
	var nested strings.Builder
	nested.WriteString("x0: &x0 [ab, ab, ab, ab, ab, ab, ab, ab]\n")
	for i := 1; i < 12; i++ {
		fmt.Fprintf(&nested, "x%d: &x%d [*x%d, *x%d, *x%d, *x%d, *x%d, *x%d, *x%d, *x%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	nested.WriteString("scenario: {classes: *x11}\n")
	var merge strings.Builder
	merge.WriteString("defaults: &d\n")
	for i := range 1500 {
		fmt.Fprintf(&merge, "  field_%d: some text to copy %d\n", i, i)
	}
	merge.WriteString("scenario:\n  classes:\n")
	for i := range 1500 {
		fmt.Fprintf(&merge, "    - {<<: *d, name: c%d}\n", i)
	}
	var small strings.Builder
	small.WriteString("scenario:\n  latency: &l {ttft_ms: {p50: 400, p95: 900}, tpot_ms: {p50: 22, p95: 35}, curve: [")
	for c := 1; c <= 8; c++ {
		fmt.Fprintf(&small, "{concurrency: %d, ttft_p50_ms: 310, ttft_p95_ms: 720, tpot_p50_ms: 21, tpot_p95_ms: 34}, ", c)
	}
	small.WriteString("]}\n  endpoints: [")
	for range 20_000 {
		small.WriteString("*l, ")
	}
	small.WriteString("]\n")
	return map[string]string{"one long scalar": long.String(), "aliases of aliases": nested.String(), "merge keys": merge.String(), "many small aliases": small.String()}
}

// TestYAMLAliasBombs: each bomb is a 400 located at the body, refused
// before it is expanded: the request allocates a small multiple of the
// body, not what the aliases would expand it to, and the service goes on
// serving.
func TestYAMLAliasBombs(t *testing.T) {
	s := newServer(t, Options{MaxBodyBytes: 1 << 20})
	for name, body := range yamlBombs() {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			rec := send(s, http.MethodPost, "/v1/plans", []byte(body), "Content-Type", "application/yaml")
			runtime.ReadMemStats(&after)
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("%d bytes: status %d, want 400: %.300s", len(body), rec.Code, rec.Body)
			}
			p := readProblem(t, rec)
			if !slices.Contains(p.locations(), "body") || !strings.Contains(rec.Body.String(), "aliases expand it") {
				t.Errorf("problem %s", rec.Body)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 100*uint64(len(body))+8<<20 {
				t.Errorf("%d bytes: the request allocated %d bytes", len(body), alloc)
			}
		})
	}
	if rec := send(s, http.MethodGet, "/healthz", nil); rec.Code != http.StatusOK {
		t.Errorf("healthz %d", rec.Code)
	}
}

// TestYAMLValueProblemsNameTheirPath: a YAML body with a number JSON
// cannot hold (.nan, .inf) or a key given twice is refused with the path
// and line of the value, as a JSON body with NaN is, not as a body that is
// "not valid YAML".
func TestYAMLValueProblemsNameTheirPath(t *testing.T) {
	s := newServer(t, Options{})
	js := mustJSON(t, map[string]any{"scenario": exampleDoc(t, "chat")})
	doc, err := yaml.JSONToYAML(js)
	if err != nil {
		t.Fatal(err)
	}
	for edit, want := range map[string]string{
		"rpm: .nan":          `^the body is refused: scenario\.quotas\[0\]\.rpm: line \d+: \.nan is not a number JSON can hold$`,
		"rpm: -.inf":         `^the body is refused: scenario\.quotas\[0\]\.rpm: line \d+: -\.inf is not a number JSON can hold$`,
		"rpm: 1\n    rpm: 2": `^the body is refused: scenario\.quotas\[0\]\.rpm: line \d+: key "rpm" already set in this mapping$`,
	} {
		body := regexp.MustCompile(`rpm: \d+`).ReplaceAllString(string(doc), edit)
		if body == string(doc) {
			t.Fatalf("no rpm in %s", doc)
		}
		rec := send(s, http.MethodPost, "/v1/plans", []byte(body), "Content-Type", "application/yaml")
		if p := readProblem(t, rec); rec.Code != http.StatusBadRequest || len(p.Errors) != 1 || !regexp.MustCompile(want).MatchString(p.Errors[0].Message) {
			t.Errorf("%s: %d %s", edit, rec.Code, rec.Body)
		}
	}
}
