package testutil

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// ChatEndpoint is an OpenAI-compatible endpoint whose timing is exact: it
// streams chat completions of Tokens tokens, the first after TTFT and each
// next one ITL later, then the usage (a prompt token per 4 bytes of the
// request) and [DONE]; any other path is a 404. It waits on the clock of
// the goroutine that serves it, so that inside a testing/synctest bubble
// (served with ServePipe) its latencies are exact however loaded the
// machine is. internal/fakeendpoint models a batching server instead, but waits for
// its deadlines in a busy loop, which a bubble's clock never lets end.
type ChatEndpoint struct {
	TTFT, ITL time.Duration
	Tokens    int
	chats     atomic.Int64
}

// Chats counts the chat-completions requests received.
func (e *ChatEndpoint) Chats() int64 { return e.chats.Load() }

func (e *ChatEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	e.chats.Add(1)
	n, err := io.Copy(io.Discard, r.Body)
	if err != nil {
		return
	}
	prompt := int(n / 4)
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	wait := e.TTFT
	for range e.Tokens {
		select {
		case <-time.After(wait):
		case <-r.Context().Done():
			return
		}
		wait = e.ITL
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"x"}}]}`+"\n\n")
		_ = rc.Flush()
	}
	fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`+"\n\n",
		prompt, e.Tokens, prompt+e.Tokens)
	fmt.Fprint(w, "data: [DONE]\n\n")
}
