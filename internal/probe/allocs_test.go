package probe

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/optional"
)

// TestReadStreamAllocatesNothing: reading a stream whose chunks carry a
// model name seen before (SSE events, chunk scanning and the chunk
// template, timing, usage, the served model) allocates nothing once the
// reader's pool is warm, at any answer length: 0 allocations per stream
// and per chunk. The chunks are vLLM's, with escapes, a tool call and a
// reasoning chunk among them so that both the template and the full scan
// are read.
func TestReadStreamAllocatesNothing(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector's sync.Pool drops items at random")
	}
	chunk := func(delta, usage string) string {
		return `{"id":"chatcmpl-0ewqA2yNo60jhyTSrdRndOVotXASY","object":"chat.completion.chunk","created":1796134077,"model":"sim-model","system_fingerprint":null,"choices":[` +
			delta + `],"usage":` + usage + `}`
	}
	content := func(text string) string {
		return chunk(`{"index":0,"delta":{"content":"`+text+`"},"logprobs":null,"finish_reason":null}`, "null")
	}
	for _, tokens := range []int{1, 16, 256} {
		t.Run(fmt.Sprintf("tokens=%d", tokens), func(t *testing.T) {
			parts := []string{chunk(`{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}`, "null"), reasonChunk}
			for i := range tokens {
				switch i % 8 {
				case 3:
					parts = append(parts, content(`say \"hi\"\n`))
				case 5:
					parts = append(parts, toolChunk)
				default:
					parts = append(parts, content(" quick"))
				}
			}
			parts = append(parts, chunk(`{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}`, "null"),
				fmt.Sprintf(`{"id":"x","model":"sim-model","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":%d,"total_tokens":%d}}`, tokens, tokens+8))
			body := []byte(sse("\n", parts...) + "data: [DONE]\n\n")
			var names nameCache
			r := bytes.NewReader(body)
			read := func() {
				r.Reset(body)
				res, err := readStream(r, time.Now(), &names)
				if err != nil || !res.ok() || res.completion != tokens || res.nModels != 1 || names.served(res, nil) != "sim-model" {
					t.Fatalf("%v %+v", err, res)
				}
			}
			read() // the model name is new to the run once
			if n := testing.AllocsPerRun(100, read); n != 0 {
				t.Errorf("reading a stream of %d chunks allocates %g times", len(parts), n)
			}
		})
	}
}

// TestRequestAllocatesNoMoreThanNetHTTP: in a steady run, the probe's
// request path (prompt, body, deadline, connection timing, SSE reading,
// chunk scanning, the row) allocates no more than a bare net/http client
// that copies the same answers to io.Discard, per request and per chunk.
// Both run against one simulator in this process, whose own allocations
// count alike for both (BenchmarkRequestAllocs counts the client's alone).
func TestRequestAllocatesNoMoreThanNetHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations over real sockets")
	}
	if raceDetector {
		t.Skip("the race detector's sync.Pool drops items at random")
	}
	_, base := startSim(t, fastSim)
	allocs := func(tokens int) (bare, probe float64) {
		cfg := Config{BaseURL: base, Model: fakeendpoint.DefaultModel, Steps: []int{1}, MaxTokens: optional.Of(tokens), IgnoreEOS: true,
			InputTokens: optional.Of(64)}.WithDefaults()
		url, body := bareRequest(t, cfg)
		tr := newTransport(1, nil, nil)
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: cfg.deadline()}
		bare = testing.AllocsPerRun(200, func() {
			req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
		r, err := newRunner(cfg, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer r.close()
		r.records = make([]measure.Record, 0, 512)
		i := 0
		probe = testing.AllocsPerRun(200, func() {
			if rec, ok := r.request(t.Context(), stepKey{c: 1}, i, false, false); !ok || !rec.OK || rec.OutputTokens != tokens {
				t.Fatalf("request %d: %+v", i, rec)
			}
			i++
		})
		return bare, probe
	}
	bare4, probe4 := allocs(4)
	bare32, probe32 := allocs(32)
	t.Logf("allocations per request: bare %g and %g, probe %g and %g (4 and 32 tokens)", bare4, bare32, probe4, probe32)
	if probe4 > bare4 || probe32 > bare32 {
		t.Errorf("the probe allocates %g and %g a request, the bare client %g and %g", probe4, probe32, bare4, bare32)
	}
	if probe32-probe4 > bare32-bare4 {
		t.Errorf("the probe allocates %g more for 28 more chunks, the bare client %g", probe32-probe4, bare32-bare4)
	}
}

// bareRequest is the URL and a body of the size the probe sends under cfg.
func bareRequest(b testing.TB, cfg Config) (string, []byte) {
	cfg = cfg.WithDefaults()
	url, err := cfg.endpoint()
	if err != nil {
		b.Fatal(err)
	}
	frame, err := newFrame(cfg)
	if err != nil {
		b.Fatal(err)
	}
	r := &runner{cfg: cfg, frame: frame, prompts: newPrompts(nil, cfg.inputTokens(), "bare")}
	in, err := r.prompts.next(0)
	if err != nil {
		b.Fatal(err)
	}
	return url, r.appendBody(nil, in)
}
