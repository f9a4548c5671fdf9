package fakeendpoint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/testutil"
)

// fast is a configuration whose requests complete in well under a
// millisecond of simulated time, for tests that do not measure timing.
var fast = Config{TTFT: time.Microsecond, ITL: time.Microsecond, ITLGrowth: NoGrowth}

// startSim serves a simulator on 127.0.0.1 and returns it with its base URL.
func startSim(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts.URL + "/v1"
}

// startBubble serves a simulator over an in-memory network, for a test
// running under testing/synctest (whose fake clock makes the schedule
// exact); the helpers below reach it through its base URL.
func startBubble(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	cfg.TimersOnly = true
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	host, dial := testutil.PipeServer(t, srv)
	clients.Store(host, testutil.PipeClient(t, dial))
	t.Cleanup(func() { clients.Delete(host) })
	return srv, host + "/v1"
}

// clients maps the host of a bubble's simulator to the client that
// reaches it.
var clients sync.Map

// client is the HTTP client that reaches base.
func client(base string) *http.Client {
	u, err := url.Parse(base)
	if err == nil {
		if c, ok := clients.Load(u.Scheme + "://" + u.Host); ok {
			return c.(*http.Client)
		}
	}
	return http.DefaultClient
}

// chatBody renders a chat-completions request body.
func chatBody(model string, maxTokens int, stream, includeUsage, ignoreEOS bool) string {
	return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"Say something."}],`+
		`"max_tokens":%d,"stream":%t,"stream_options":{"include_usage":%t},"ignore_eos":%t,"temperature":0.7}`,
		model, maxTokens, stream, includeUsage, ignoreEOS)
}

// post sends body to the chat-completions endpoint with optional headers.
func post(t *testing.T, base, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client(base).Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	return resp
}

// streamed is a whole streamed response as the client saw it.
type streamed struct {
	resp   *http.Response
	events []string // the data of every event, the final [DONE] included
	// ack is when the first chunk arrived, ttft when the first chunk with
	// content did, e2e when the last one with content did.
	ack, ttft, e2e time.Duration
	contentChunks  int
}

// testChunk is a chat.completion.chunk as a client decodes it.
type testChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

// stream posts body and reads the event stream to its end, checking that
// every event is exactly "data: <payload>\n\n".
func stream(t *testing.T, base, body string) streamed {
	t.Helper()
	s, err := streamE(base, body)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// streamE is stream for goroutines other than the test's own.
func streamE(base, body string) (streamed, error) {
	start := time.Now()
	resp, err := client(base).Post(base+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return streamed{}, fmt.Errorf("POST: %w", err)
	}
	defer resp.Body.Close()
	out := streamed{resp: resp}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return out, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF && line == "" {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("reading stream: %w (partial %q)", err, line)
		}
		at := time.Since(start)
		blank, err := r.ReadString('\n')
		if err != nil || blank != "\n" {
			return out, fmt.Errorf("event %q not followed by a blank line (got %q, %v)", line, blank, err)
		}
		data, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "data: ")
		if !ok {
			return out, fmt.Errorf("line %q is not a data line", line)
		}
		if len(out.events) == 0 {
			out.ack = at
		}
		out.events = append(out.events, data)
		if data == "[DONE]" {
			continue
		}
		var c testChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return out, fmt.Errorf("chunk %q: %w", data, err)
		}
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != nil && *c.Choices[0].Delta.Content != "" {
			if out.contentChunks == 0 {
				out.ttft = at
			}
			out.e2e = at
			out.contentChunks++
		}
	}
}

// decodeJSON reads and closes resp's body into v.
func decodeJSON(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(v); err != nil {
		t.Fatalf("decoding %q: %v", b, err)
	}
}

// ms renders a duration in milliseconds for messages.
func ms(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d)/1e6) }
