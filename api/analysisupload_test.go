package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// vllmDetailedFile writes a vLLM bench serve --save-detailed result of n
// requests at concurrency 8, as vLLM writes it (times in seconds, one
// entry per request in each array): request i has TTFT 0.2 s plus 1 ms
// per i mod 7 and 63 gaps of 20 ms. The layout is docs/import.md's.
func vllmDetailedFile(n int) []byte {
	var b bytes.Buffer
	list := func(key string, f func(i int) string) {
		fmt.Fprintf(&b, "%q: [", key)
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f(i))
		}
		b.WriteString("], ")
	}
	ttft := func(i int) float64 { return 0.2 + 0.001*float64(i%7) }
	gap := strings.TrimSuffix(strings.Repeat("0.0200000001, ", 63), ", ")
	fmt.Fprintf(&b, `{"date": "20260101-120000", "backend": "openai-chat", "model_id": "m", "num_prompts": %d, `+
		`"request_rate": "inf", "burstiness": 1.0, "max_concurrency": 8, "completed": %d, "failed": 0, `+
		`"duration": %g, "request_throughput": %g, "total_output_tokens": %d, `, n, n, float64(n)/8*1.46, 8/1.46, 64*n)
	list("ttfts", func(i int) string { return strconv.FormatFloat(ttft(i), 'f', -1, 64) })
	list("itls", func(int) string { return "[" + gap + "]" })
	list("output_lens", func(int) string { return "64" })
	list("input_lens", func(int) string { return "1024" })
	list("errors", func(int) string { return `""` })
	list("start_times", func(i int) string { return strconv.FormatFloat(float64(i/8)*1.46, 'f', -1, 64) })
	b.WriteString(`"mean_ttft_ms": 203.0}`)
	return b.Bytes()
}

// TestAnalysisOfALargeFile analyses a 20 MB result file through the API:
// the operation takes bodies far beyond the 256 KiB of the others, the
// numbers come out of the file's rows, and the server's allocations stay
// within a small multiple of the file.
func TestAnalysisOfALargeFile(t *testing.T) {
	if testing.Short() {
		t.Skip("a 20 MB upload")
	}
	file := vllmDetailedFile(23_000)
	if len(file) < 20<<20 {
		t.Fatalf("the generated file has %d bytes, want at least 20 MiB", len(file))
	}
	body, err := json.Marshal(map[string]any{
		"file":        map[string]any{"name": "c8.json", "content": string(file)},
		"deadline_ms": 12000,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, Options{})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rec := send(s, http.MethodPost, "/v1/analyses", body)
	runtime.ReadMemStats(&after)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %.400s", rec.Code, rec.Body)
	}
	var got AnalysisResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Format != "vllm-bench-serve" || len(got.Steps) != 1 {
		t.Fatalf("format %q, %d steps", got.Format, len(got.Steps))
	}
	st := got.Steps[0]
	// E2E = TTFT + 63 × 20 ms: 1.46 s + 0–6 ms, so p50 = 1463 ms.
	if st.Concurrency != 8 || st.OK != 23_000 || st.E2EP50Ms < 1462.9 || st.E2EP50Ms > 1463.1 {
		t.Errorf("step: concurrency %d, ok %d, E2E p50 %.4g ms", st.Concurrency, st.OK, st.E2EP50Ms)
	}
	// Everything the request allocated, whatever was freed on the way:
	// an upper bound of its peak memory (not checked under the race
	// detector, whose build allocates more).
	allocated := after.TotalAlloc - before.TotalAlloc
	if limit := uint64(16 * len(body)); allocated > limit && !raceDetector {
		t.Errorf("analysing a %d-byte body allocated %d bytes (%.1f×), over the bound of 16×", len(body), allocated, float64(allocated)/float64(len(body)))
	}
	t.Logf("a %d-byte body: %d bytes allocated (%.1f×)", len(body), allocated, float64(allocated)/float64(len(body)))
}

// TestAnalysisBodyLimit checks the limit of POST /v1/analyses alone: a
// body of exactly the limit is read, one byte more is a 413 that states
// it, and the other operations keep theirs.
func TestAnalysisBodyLimit(t *testing.T) {
	const small, large = 4096, 64 << 10
	s := newServer(t, Options{MaxBodyBytes: small, MaxAnalysisBodyBytes: large})
	body := []byte(`{"steps": [{"concurrency": 1, "goodput_rps": 1}]}`)
	atLimit := append(body, bytes.Repeat([]byte(" "), large-len(body))...)
	if rec := send(s, http.MethodPost, "/v1/analyses", atLimit); rec.Code != http.StatusOK {
		t.Errorf("an analysis body of exactly %d bytes: %d %s", large, rec.Code, rec.Body)
	}
	rec := send(s, http.MethodPost, "/v1/analyses", append(atLimit, ' '))
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("an analysis body of %d bytes: %d", large+1, rec.Code)
	}
	if p := readProblem(t, rec); !strings.Contains(p.Detail, strconv.Itoa(large)) {
		t.Errorf("413 problem: %+v", p)
	}
	plan := append([]byte(`{"scenario": {}}`), bytes.Repeat([]byte(" "), small)...)
	if rec := send(s, http.MethodPost, "/v1/plans", plan); rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("a plan body beyond %d bytes: %d", small, rec.Code)
	} else if p := readProblem(t, rec); !strings.Contains(p.Detail, strconv.Itoa(small)) {
		t.Errorf("413 problem of a plan: %+v", p)
	}
}

// TestAnalysisOfAnUnknownFormat: a format id that no reader has is the
// field's fault (body.file.format), not the file's.
func TestAnalysisOfAnUnknownFormat(t *testing.T) {
	s := newServer(t, Options{})
	body := mustJSON(t, map[string]any{"file": map[string]any{"name": "r.csv", "content": "step,idx,ok,code,ms,wall_s\n1,0,1,200,5,10\n", "format": "excel"}})
	rec := send(s, http.MethodPost, "/v1/analyses", body)
	p := readProblem(t, rec)
	if rec.Code != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Location != "body.file.format" ||
		!strings.Contains(p.Errors[0].Message, "must be auto or one of guidellm-benchmarks") {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
	for _, format := range []string{"", "auto", "workshop-ramp-csv"} {
		body := mustJSON(t, map[string]any{"file": map[string]any{"name": "r.csv", "content": "step,idx,ok,code,ms,wall_s\n1,0,1,200,5,10\n", "format": format}})
		if rec := send(s, http.MethodPost, "/v1/analyses", body); rec.Code != http.StatusOK {
			t.Errorf("format %q: %d %s", format, rec.Code, rec.Body)
		}
	}
}
