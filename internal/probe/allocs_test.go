package probe

import (
	"bytes"
	"fmt"
	"testing"
	"time"
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
