package fakeendpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// Prompt-token approximation: every message costs messageOverhead tokens plus
// ceil(bytes/4) of its text, and the reply is primed with replyOverhead.
const (
	messageOverhead = 4
	replyOverhead   = 3
	bytesPerToken   = 4
)

// chatRequest holds the fields of an OpenAI chat-completions request that the
// simulator acts on; every other field is accepted and ignored.
type chatRequest struct {
	Model               string        `json:"model"`
	Messages            []chatMessage `json:"messages"`
	MaxTokens           *int          `json:"max_tokens"`
	MaxCompletionTokens *int          `json:"max_completion_tokens"`
	Stream              bool          `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	IgnoreEOS bool `json:"ignore_eos"`
}

// chatMessage is one message; Content is a string, an array of parts, or
// null. Only the content counts towards the prompt.
type chatMessage struct {
	Content json.RawMessage `json:"content"`
}

// contentPart is one element of an array-valued message content.
type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// apiError is an OpenAI-shaped error, rendered as {"error":{...}}.
type apiError struct {
	status  int
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// invalidRequest builds a 400 invalid_request_error about param (may be "").
func invalidRequest(param, format string, args ...any) *apiError {
	e := &apiError{status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...), Type: "invalid_request_error"}
	if param != "" {
		e.Param = &param
	}
	return e
}

// withCode sets the error's code.
func (e *apiError) withCode(code string) *apiError {
	e.Code = &code
	return e
}

// writeError sends e as the response.
func writeError(w http.ResponseWriter, e *apiError) {
	// Marshalling strings and string pointers cannot fail.
	body, _ := json.Marshal(struct {
		Error *apiError `json:"error"`
	}{e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_, _ = w.Write(append(body, '\n'))
}

// parsed is a validated request with its derived numbers.
type parsed struct {
	req          chatRequest
	promptTokens int
	maxTokens    int // effective: max_completion_tokens, else max_tokens, else DefaultMaxTokens
	sentMax      int // as sent, 0 when absent
	includeUsage bool
}

// parseRequest decodes and validates a chat-completions body.
func parseRequest(body []byte) (parsed, *apiError) {
	var p parsed
	if err := json.Unmarshal(body, &p.req); err != nil {
		return p, invalidRequest("", "We could not parse the JSON body of your request: %v", err)
	}
	if p.req.Model == "" {
		return p, invalidRequest("model", "you must provide a model parameter")
	}
	if len(p.req.Messages) == 0 {
		return p, invalidRequest("messages", "'messages' must be a non-empty array")
	}
	p.promptTokens = replyOverhead
	for i, m := range p.req.Messages {
		n, err := textBytes(m.Content)
		if err != nil {
			return p, invalidRequest(fmt.Sprintf("messages.[%d].content", i), "invalid content in messages[%d]: %v", i, err)
		}
		p.promptTokens += messageOverhead + (n+bytesPerToken-1)/bytesPerToken
	}
	p.maxTokens = DefaultMaxTokens
	for _, f := range []struct {
		name string
		v    *int
	}{{"max_tokens", p.req.MaxTokens}, {"max_completion_tokens", p.req.MaxCompletionTokens}} {
		if f.v == nil {
			continue
		}
		if *f.v < 1 {
			return p, invalidRequest(f.name, "Invalid '%s': integer below minimum value. Expected a value >= 1, but got %d instead.", f.name, *f.v)
		}
		p.maxTokens, p.sentMax = *f.v, *f.v
	}
	p.includeUsage = p.req.StreamOptions != nil && p.req.StreamOptions.IncludeUsage
	return p, nil
}

// textBytes is the length in bytes of a message content's text: a string,
// the text parts of an array (other parts count nothing), or null.
func textBytes(raw json.RawMessage) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, fmt.Errorf("decoding string content: %w", err)
		}
		return len(s), nil
	case '[':
		var parts []contentPart
		if err := json.Unmarshal(raw, &parts); err != nil {
			return 0, fmt.Errorf("decoding content parts: %w", err)
		}
		n := 0
		for _, p := range parts {
			if p.Type == "text" {
				n += len(p.Text)
			}
		}
		return n, nil
	}
	return 0, errors.New("content must be a string or an array of content parts")
}

// words are the simulated tokens, one short word each.
var words = [...]string{
	"the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog",
	"while", "planners", "size", "every", "pool", "with", "care", "and",
	"measure", "latency", "twice",
}

// token is the text of output token i.
func token(i int) string {
	w := words[i%len(words)]
	if i == 0 {
		return w
	}
	return " " + w
}

// firstDelta and laterDeltas are the JSON deltas of the output tokens: the
// first token is a bare word, token i > 0 is laterDeltas[i%len(words)].
var (
	firstDelta  = `{"content":` + strconv.Quote(token(0)) + `}`
	laterDeltas = func() (d [len(words)]string) {
		for i, w := range words {
			d[i] = `{"content":` + strconv.Quote(" "+w) + `}`
		}
		return d
	}()
)

// chunkEncoder renders the server-sent events of one streamed completion
// without reflection, so that a thousand streams stay cheap.
type chunkEncoder struct {
	head         []byte // `data: {"id":…,"model":…,"system_fingerprint":null,`
	includeUsage bool
	buf          []byte
}

func newChunkEncoder(id string, created int64, model []byte, includeUsage bool) *chunkEncoder {
	head := []byte(`data: {"id":"` + id + `","object":"chat.completion.chunk","created":` +
		strconv.FormatInt(created, 10) + `,"model":`)
	head = append(head, model...)
	head = append(head, `,"system_fingerprint":null,`...)
	return &chunkEncoder{head: head, includeUsage: includeUsage}
}

// choice appends one chunk event with the given delta and finish_reason
// ("" for null).
func (e *chunkEncoder) choice(delta, finish string) {
	e.buf = append(e.buf, e.head...)
	e.buf = append(e.buf, `"choices":[{"index":0,"delta":`...)
	e.buf = append(e.buf, delta...)
	e.buf = append(e.buf, `,"logprobs":null,"finish_reason":`...)
	if finish == "" {
		e.buf = append(e.buf, "null"...)
	} else {
		e.buf = strconv.AppendQuote(e.buf, finish)
	}
	e.buf = append(e.buf, "}]"...)
	if e.includeUsage {
		e.buf = append(e.buf, `,"usage":null`...)
	}
	e.buf = append(e.buf, "}\n\n"...)
}

// roleChunk appends the opening chunk that names the assistant role.
func (e *chunkEncoder) roleChunk() {
	e.choice(`{"role":"assistant","content":""}`, "")
}

// tokenChunk appends the chunk carrying output token i.
func (e *chunkEncoder) tokenChunk(i int, finish string) {
	delta := firstDelta
	if i > 0 {
		delta = laterDeltas[i%len(words)]
	}
	e.choice(delta, finish)
}

// usageChunk appends the trailing usage-only chunk.
func (e *chunkEncoder) usageChunk(u usage) {
	e.buf = append(e.buf, e.head...)
	e.buf = append(e.buf, `"choices":[],"usage":{"prompt_tokens":`...)
	e.buf = strconv.AppendInt(e.buf, int64(u.PromptTokens), 10)
	e.buf = append(e.buf, `,"completion_tokens":`...)
	e.buf = strconv.AppendInt(e.buf, int64(u.CompletionTokens), 10)
	e.buf = append(e.buf, `,"total_tokens":`...)
	e.buf = strconv.AppendInt(e.buf, int64(u.TotalTokens), 10)
	e.buf = append(e.buf, "}}\n\n"...)
}

// done appends the terminating event.
func (e *chunkEncoder) done() {
	e.buf = append(e.buf, "data: [DONE]\n\n"...)
}

// usage is OpenAI's usage object.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func newUsage(prompt, completion int) usage {
	return usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

// completion is a non-streamed chat.completion object.
type completion struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint *string            `json:"system_fingerprint"`
	Choices           []completionChoice `json:"choices"`
	Usage             usage              `json:"usage"`
}

// completionChoice is the single choice of a completion.
type completionChoice struct {
	Index        int               `json:"index"`
	Message      completionMessage `json:"message"`
	Logprobs     *struct{}         `json:"logprobs"`
	FinishReason string            `json:"finish_reason"`
}

// completionMessage is the assistant's message in a completion.
type completionMessage struct {
	Role    string  `json:"role"`
	Content string  `json:"content"`
	Refusal *string `json:"refusal"`
}

// modelList is the body of GET /v1/models.
type modelList struct {
	Object string      `json:"object"`
	Data   []modelInfo `json:"data"`
}

// modelInfo describes the served model.
type modelInfo struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}
