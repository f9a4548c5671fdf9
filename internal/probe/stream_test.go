package probe

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/plannerdev/planner/internal/measure"
)

// Chunks as OpenAI-compatible servers send them.
const (
	roleChunk     = `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`
	contentChunk  = `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}],"usage":null}`
	reasonChunk   = `{"choices":[{"index":0,"delta":{"reasoning_content":"thinking"}}]}`
	reasoningAlt  = `{"choices":[{"index":0,"delta":{"reasoning":"hmm","content":null}}]}`
	toolChunk     = `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}`
	finishChunk   = `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	usageChunk    = `{"id":"c1","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`
	errorChunk    = `{"error":{"message":"overloaded","type":"server_error","code":null}}`
	rateLimitErr  = `{"error":{"object":"error","message":"slow down","type":"rate_limit_exceeded","code":429}}`
	clientErr     = `{"error":{"message":"context too long","type":"BadRequestError","code":"400"}}`
	azureFiltered = `{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}`
)

// sse renders chunks as server-sent events with the given line ending.
func sse(eol string, chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + eol + eol)
	}
	return b.String()
}

func TestReadStream(t *testing.T) {
	done := "data: [DONE]\n\n"
	tests := []struct {
		name         string
		body         string
		class        string
		outputChunks int
		tokens       int
		estimated    bool
		prompt       int
	}{
		{name: "content with usage", body: sse("\n", roleChunk, contentChunk, contentChunk, contentChunk, finishChunk, usageChunk) + done,
			outputChunks: 3, tokens: 3, prompt: 12},
		{name: "reasoning_content counts as output", body: sse("\n", roleChunk, reasonChunk, contentChunk, usageChunk) + done,
			outputChunks: 2, tokens: 3, prompt: 12},
		{name: "reasoning counts as output, null content does not", body: sse("\n", reasoningAlt, usageChunk) + done,
			outputChunks: 1, tokens: 3, prompt: 12},
		{name: "tool calls count as output", body: sse("\n", roleChunk, toolChunk, toolChunk, usageChunk) + done,
			outputChunks: 2, tokens: 3, prompt: 12},
		{name: "missing usage: output counted and estimated", body: sse("\n", roleChunk, contentChunk, contentChunk) + done,
			outputChunks: 2, tokens: 2, estimated: true},
		{name: "Azure filter results chunk first", body: sse("\n", azureFiltered, contentChunk, usageChunk) + done,
			outputChunks: 1, tokens: 3, prompt: 12},
		{name: "CRLF line endings", body: sse("\r\n", roleChunk, contentChunk, usageChunk) + "data: [DONE]\r\n\r\n",
			outputChunks: 1, tokens: 3, prompt: 12},
		{name: "CR line endings", body: sse("\r", roleChunk, contentChunk, usageChunk) + "data: [DONE]\r\r",
			outputChunks: 1, tokens: 3, prompt: 12},
		{name: "line endings mixed, an event split over CR and CRLF lines",
			body:         "data: {\"choices\":[{\"delta\":\r\ndata: {\"content\":\"x\"}}]}\r\n" + "\r" + sse("\n", usageChunk) + "data: [DONE]\r\n\r\n",
			outputChunks: 1, tokens: 3, prompt: 12},
		{name: "comments, event and id fields, no space after colon",
			body:         ": keep-alive\n\nid: 1\nevent: message\ndata:" + contentChunk + "\n\n: ping\n\n" + sse("\n", usageChunk) + "data:[DONE]\n\n",
			outputChunks: 1, tokens: 3, prompt: 12},
		{name: "data split over two lines", body: "data: {\"choices\":[{\"delta\":\ndata: {\"content\":\"x\"}}]}\n\n" + done,
			outputChunks: 1, tokens: 1, estimated: true},
		{name: "[DONE] without a final blank line", body: sse("\n", contentChunk, usageChunk) + "data: [DONE]",
			outputChunks: 1, tokens: 3, prompt: 12},
		{name: "missing [DONE] is a bad stream", body: sse("\n", roleChunk, contentChunk, usageChunk),
			class: measure.ErrBadStream, outputChunks: 1, tokens: 3, prompt: 12},
		{name: "unparseable chunk is a bad stream", body: sse("\n", contentChunk, `{"choices":[{"delta":{"content":"x"}`) + done,
			class: measure.ErrBadStream, outputChunks: 1, tokens: 1, estimated: true},
		{name: "error object is a server error", body: sse("\n", contentChunk, errorChunk) + done,
			class: measure.ErrServer, outputChunks: 1, tokens: 1, estimated: true},
		{name: "error object with code 429", body: sse("\n", rateLimitErr), class: measure.ErrRateLimited, estimated: true},
		{name: "error object with code 400 as a string", body: sse("\n", clientErr), class: measure.ErrClient, estimated: true},
		{name: "error event", body: "event: error\ndata: upstream closed\n\n", class: measure.ErrServer, estimated: true},
		{name: "empty body", body: "", class: measure.ErrBadStream, estimated: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// One byte per read exercises the line reassembly.
			for _, r := range []io.Reader{strings.NewReader(tc.body), iotest.OneByteReader(strings.NewReader(tc.body))} {
				res, err := readStream(r, time.Now(), nil)
				if err != nil {
					t.Fatalf("readStream: %v", err)
				}
				if res.errClass != tc.class {
					t.Errorf("class = %q (%s), want %q", res.errClass, res.errMsg, tc.class)
				}
				if res.outputChunks != tc.outputChunks {
					t.Errorf("output chunks = %d, want %d", res.outputChunks, tc.outputChunks)
				}
				n, est := res.outputTokens()
				if n != tc.tokens || est != tc.estimated {
					t.Errorf("output tokens = %d (estimated %v), want %d (%v)", n, est, tc.tokens, tc.estimated)
				}
				if res.prompt != tc.prompt {
					t.Errorf("prompt tokens = %d, want %d", res.prompt, tc.prompt)
				}
				if res.ok() != (tc.class == "") {
					t.Errorf("ok = %v with class %q", res.ok(), tc.class)
				}
			}
		})
	}
}

// timedReader delivers one part per read, waiting before each.
type timedReader struct {
	parts []string
	gaps  []time.Duration
}

func (r *timedReader) Read(p []byte) (int, error) {
	if len(r.parts) == 0 {
		return 0, io.EOF
	}
	time.Sleep(r.gaps[0])
	n := copy(p, r.parts[0])
	r.parts, r.gaps = r.parts[1:], r.gaps[1:]
	return n, nil
}

// TestReadStreamTiming checks which chunk each time is taken at: ack at the
// first chunk of any kind, TTFT at the first output chunk, E2E at the last
// output chunk, not at the usage chunk or [DONE]. The reader waits before
// each chunk on a fake clock (testing/synctest), so the times are exact.
func TestReadStreamTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gap := 30 * time.Millisecond
		r := &timedReader{
			parts: []string{sse("\n", roleChunk), sse("\n", contentChunk), sse("\n", contentChunk), sse("\n", usageChunk), "data: [DONE]\n\n"},
			gaps:  []time.Duration{gap, gap, gap, gap, gap},
		}
		res, err := readStream(r, time.Now(), nil)
		if err != nil || !res.ok() {
			t.Fatalf("readStream: %v %+v", err, res)
		}
		for _, c := range []struct {
			name  string
			got   time.Duration
			steps int
		}{{"ack", res.ack, 1}, {"ttft", res.ttft, 2}, {"e2e", res.e2e, 3}, {"end", res.end, 5}} {
			if want := time.Duration(c.steps) * gap; c.got != want {
				t.Errorf("%s = %v, want %v", c.name, c.got, want)
			}
		}
	})
}

func TestReadStreamReadError(t *testing.T) {
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader(sse("\n", contentChunk)), iotest.ErrReader(boom))
	if _, err := readStream(r, time.Now(), nil); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	r = io.MultiReader(strings.NewReader(sse("\n", contentChunk)), iotest.ErrReader(io.ErrUnexpectedEOF))
	res, err := readStream(r, time.Now(), nil)
	if err != nil || res.errClass != measure.ErrBadStream {
		t.Fatalf("a stream cut mid-way: err %v, class %q; want a bad stream", err, res.errClass)
	}
}

func TestReadStreamEventTooLarge(t *testing.T) {
	body := "data: " + strings.Repeat("x", maxEventSize+10) + "\n\n"
	res, err := readStream(strings.NewReader(body), time.Now(), nil)
	if err != nil || res.errClass != measure.ErrBadStream {
		t.Fatalf("err %v, class %q; want a bad stream", err, res.errClass)
	}
}

func TestScanChunk(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  chunkInfo
		valid bool
	}{
		{"empty content is not output", `{"choices":[{"delta":{"content":""}}]}`, chunkInfo{}, true},
		{"escaped content", `{"choices":[{"delta":{"content":"\"\u00e9\n"}}]}`, chunkInfo{output: true}, true},
		{"second choice carries output", `{"choices":[{"delta":{}},{"delta":{"content":"x"}}]}`, chunkInfo{output: true}, true},
		{"empty tool calls are not output", `{"choices":[{"delta":{"tool_calls":[]}}]}`, chunkInfo{}, true},
		{"usage with decimals and extra fields", `{"usage":{"prompt_tokens":7.0,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}}`,
			chunkInfo{usage: true, prompt: 7, completion: 2}, true},
		{"cached tokens", `{"usage":{"prompt_tokens":2048,"completion_tokens":2,"prompt_tokens_details":{"audio_tokens":0,"cached_tokens":1920}}}`,
			chunkInfo{usage: true, prompt: 2048, completion: 2, cached: 1920}, true},
		{"prompt details null", `{"usage":{"prompt_tokens":5,"prompt_tokens_details":null}}`, chunkInfo{usage: true, prompt: 5}, true},
		{"usage null", `{"usage":null}`, chunkInfo{}, true},
		{"error null is no error", `{"error":null,"choices":[]}`, chunkInfo{}, true},
		{"error string", `{"error":"boom"}`, chunkInfo{hasError: true, errMessage: []byte("boom")}, true},
		{"nested unknown values", `{"x":[1,-2.5e3,true,false,null,{"a":[[]]}],"choices":[{"logprobs":{"content":[{"t":"a"}]},"delta":{"content":"y"}}]}`,
			chunkInfo{output: true}, true},
		{"whitespace", " {\n\"choices\" : [ { \"delta\" : { \"content\" : \"z\" } } ] } ", chunkInfo{output: true}, true},
		{"trailing comma", `{"choices":[],}`, chunkInfo{}, false},
		{"missing colon", `{"choices" []}`, chunkInfo{}, false},
		{"not an object", `[1]`, chunkInfo{}, false},
		{"trailing garbage", `{} x`, chunkInfo{}, false},
		{"bad escape", `{"a":"\q"}`, chunkInfo{}, false},
		{"bad number", `{"a":01}`, chunkInfo{}, false},
		{"bad literal", `{"a":nul}`, chunkInfo{}, false},
		{"control character in string", "{\"a\":\"\x01\"}", chunkInfo{}, false},
		{"unterminated", `{"a":"b`, chunkInfo{}, false},
		{"too deep", `{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, chunkInfo{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := scanChunk([]byte(tc.in))
			if (err == nil) != tc.valid {
				t.Fatalf("err = %v, want valid %v", err, tc.valid)
			}
			if string(got.errMessage) != string(tc.want.errMessage) {
				t.Errorf("error message = %q, want %q", got.errMessage, tc.want.errMessage)
			}
			got.errMessage, tc.want.errMessage = nil, nil
			if got.output != tc.want.output || got.usage != tc.want.usage || got.prompt != tc.want.prompt ||
				got.completion != tc.want.completion || got.cached != tc.want.cached || got.hasError != tc.want.hasError {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestScanChunkAllocations(t *testing.T) {
	b := []byte(contentChunk)
	if n := testing.AllocsPerRun(100, func() { _, _ = scanChunk(b) }); n != 0 {
		t.Errorf("scanChunk allocates %v times per chunk, want 0", n)
	}
}

// FuzzScanChunk checks that the scanner never panics and accepts exactly
// the JSON objects that encoding/json accepts.
func FuzzScanChunk(f *testing.F) {
	for _, s := range []string{roleChunk, contentChunk, toolChunk, usageChunk, errorChunk, azureFiltered, `{"a":[1,{"b":"\u12"}]}`, `{}`, `[]`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := scanChunk(b)
		if deepest(b) > maxDepth/2 {
			return // the scanner's depth bound, not JSON validity, decides
		}
		var obj map[string]json.RawMessage
		ref := json.Unmarshal(b, &obj) == nil && obj != nil
		if (err == nil) != ref {
			t.Fatalf("scanChunk(%q) error %v, encoding/json object %v", b, err, ref)
		}
	})
}

// FuzzChunkTemplate checks the template that spares a stream's chunks
// their scan: whenever a chunk matches the template of one scanned before
// it, scanning it accepts it too and reads the same from it.
func FuzzChunkTemplate(f *testing.F) {
	model := func(name, chunk string) string { return `{"model":"` + name + `",` + chunk[1:] }
	for _, pair := range [][2]string{
		{contentChunk, strings.Replace(contentChunk, `"Hi"`, `" there"`, 1)},
		{contentChunk, strings.Replace(contentChunk, `"Hi"`, `""`, 1)},
		{contentChunk, strings.Replace(contentChunk, `"Hi"`, `"a\"b"`, 1)},
		{contentChunk, strings.Replace(contentChunk, `"Hi"`, `"a"b"`, 1)},
		{contentChunk, strings.Replace(contentChunk, `"Hi"`, "\"a\tb\"", 1)},
		{contentChunk, strings.Replace(contentChunk, `"Hi"`, `"é"`, 1)},
		{roleChunk, strings.Replace(roleChunk, `"content":""`, `"content":"x"`, 1)},
		{model("m1", contentChunk), model("m1", strings.Replace(contentChunk, `"Hi"`, `"yo"`, 1))},
		{contentChunk[:len(contentChunk)-1] + `,"model":"m"}`, strings.Replace(contentChunk[:len(contentChunk)-1]+`,"model":"m"}`, `"Hi"`, `"yo"`, 1)},
		{reasonChunk, strings.Replace(reasonChunk, "think", "thought", 1)},
		{toolChunk, toolChunk},
		{usageChunk, usageChunk},
		{errorChunk, errorChunk},
	} {
		f.Add([]byte(pair[0]), []byte(pair[1]))
	}
	f.Fuzz(func(t *testing.T, first, next []byte) {
		info, err := scanChunk(first)
		if err != nil {
			return
		}
		var tmpl chunkTemplate
		tmpl.remember(first, info)
		got, ok := tmpl.match(next)
		if !ok {
			return
		}
		want, err := scanChunk(next)
		if err != nil {
			t.Fatalf("%q matches the template of %q, but does not scan: %v", next, first, err)
		}
		if got.output != want.output || got.usage != want.usage || got.prompt != want.prompt || got.completion != want.completion ||
			got.hasError != want.hasError || got.errCode != want.errCode || !bytes.Equal(got.errType, want.errType) ||
			!bytes.Equal(got.errMessage, want.errMessage) || !bytes.Equal(got.model, want.model) || (got.model == nil) != (want.model == nil) {
			t.Fatalf("%q by the template of %q reads %+v, scanned %+v", next, first, got, want)
		}
	})
}

// deepest is the deepest bracket nesting of b outside strings.
func deepest(b []byte) int {
	depth, most, inStr, esc := 0, 0, false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			depth++
			most = max(most, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return most
}

// BenchmarkReadStream reads a vLLM-shaped stream of 16 output chunks, a
// usage chunk and [DONE] from memory: the probe's per-chunk work (SSE
// lines, chunk scanning, timing) without the network. Its allocations are
// none once the reader's pool is warm.
func BenchmarkReadStream(b *testing.B) {
	chunk := func(delta, usage string) string {
		return `{"id":"chatcmpl-0ewqA2yNo60jhyTSrdRndOVotXASY","object":"chat.completion.chunk","created":1796134077,"model":"sim-model","system_fingerprint":null,"choices":[` +
			delta + `],"usage":` + usage + `}`
	}
	var parts []string
	parts = append(parts, chunk(`{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}`, "null"))
	for range 16 {
		parts = append(parts, chunk(`{"index":0,"delta":{"content":" quick"},"logprobs":null,"finish_reason":null}`, "null"))
	}
	parts = append(parts, `{"id":"chatcmpl-0ewqA2yNo60jhyTSrdRndOVotXASY","object":"chat.completion.chunk","created":1796134077,"model":"sim-model","system_fingerprint":null,"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":16,"total_tokens":24}}`)
	body := []byte(sse("\n", parts...) + "data: [DONE]\n\n")
	var names nameCache
	r := bytes.NewReader(body)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r.Reset(body)
		res, err := readStream(r, time.Now(), &names)
		if err != nil || !res.ok() || res.completion != 16 {
			b.Fatalf("%v %+v", err, res)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(parts)+1), "ns/event")
}
