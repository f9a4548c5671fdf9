package fakeendpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Prompt-token approximation: every message costs messageOverhead tokens plus
// ceil(bytes/4) of its text, and the reply is primed with replyOverhead.
const (
	messageOverhead = 4
	replyOverhead   = 3
	bytesPerToken   = 4
)

// chatRequest holds the fields of an OpenAI chat-completions or
// completions request that the simulator acts on (Messages for the one,
// Prompt for the other). Which other fields are accepted is checkOptions'
// rule: none is ignored silently.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           *int            `json:"min_tokens"`
	N                   *int            `json:"n"`
	Stop                json.RawMessage `json:"stop"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	IgnoreEOS bool   `json:"ignore_eos"`
	CacheSalt string `json:"cache_salt"`
}

// Options of a request besides the simulated ones (model, messages or
// prompt, max_tokens, max_completion_tokens, min_tokens, n, stop, stream,
// stream_options, ignore_eos, cache_salt). Inert options change only what the
// simulator does not model (the sampling of the words, the template, the
// scheduling priority) and are accepted; an option with no effect at the
// value given (logprobs false) is accepted too; any other is refused
// with a 400 that names it (docs/probe.md, "planner sim").
var (
	simulatedOptions = map[string]bool{
		"model": true, "max_tokens": true, "min_tokens": true, "n": true, "stop": true,
		"stream": true, "stream_options": true, "ignore_eos": true, "cache_salt": true,
	}
	inertOptions = map[string]bool{
		"temperature": true, "top_p": true, "top_k": true, "min_p": true, "seed": true,
		"frequency_penalty": true, "presence_penalty": true, "repetition_penalty": true,
		"user": true, "metadata": true, "store": true, "priority": true, "request_id": true,
		"skip_special_tokens": true, "spaces_between_special_tokens": true,
		"add_generation_prompt": true, "chat_template_kwargs": true,
	}
	// idleValues are the values at which an option that is not simulated
	// has no effect.
	idleValues = map[string][]string{
		"logprobs": {"false", "0"}, "top_logprobs": {"0"}, "echo": {"false"}, "best_of": {"1"},
		"include_stop_str_in_output": {"false"}, "parallel_tool_calls": {"true", "false"},
	}
)

// checkOptions refuses the options of a request that the simulator does
// not simulate, naming them; a null value is an absent option. chat tells
// the chat-completions fields (messages, max_completion_tokens) from the
// completions one (prompt).
func checkOptions(body []byte, chat bool) *apiError {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return invalidRequest("", "We could not parse the JSON body of your request: %v", err)
	}
	var refused []string
	for k, v := range fields {
		v = bytes.TrimSpace(v)
		switch {
		case string(v) == "null", simulatedOptions[k], inertOptions[k],
			chat && (k == "messages" || k == "max_completion_tokens"), !chat && k == "prompt",
			slices.Contains(idleValues[k], string(v)):
		default:
			refused = append(refused, k)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	slices.Sort(refused)
	return invalidRequest(refused[0], "planner sim does not simulate %s: send the request without %s (the options it takes are listed in docs/probe.md)",
		strings.Join(refused, ", "), map[bool]string{true: "them", false: "it"}[len(refused) > 1])
}

// chatMessage is one message; Content is a string, an array of parts, or
// null. Only the content counts towards the prompt's length; the prefix
// cache hashes the role too.
type chatMessage struct {
	Role    string          `json:"role"`
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
	minTokens    int // min_tokens: no end of sequence before it
	choices      int // n
	stops        []string
	includeUsage bool
}

// maxChoices and maxStops bound n and stop, as OpenAI's API does for stop.
const (
	maxChoices = 128
	maxStops   = 4
)

// parseRequest decodes and validates a chat-completions body (chat) or a
// completions body.
func parseRequest(body []byte, chat bool) (parsed, *apiError) {
	var p parsed
	if e := checkOptions(body, chat); e != nil {
		return p, e
	}
	if err := json.Unmarshal(body, &p.req); err != nil {
		return p, invalidRequest("", "We could not parse the JSON body of your request: %v", err)
	}
	if p.req.Model == "" {
		return p, invalidRequest("model", "you must provide a model parameter")
	}
	if chat {
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
	} else {
		n, e := promptTokens(p.req.Prompt)
		if e != nil {
			return p, e
		}
		p.promptTokens = n
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
	if m := p.req.MinTokens; m != nil {
		if *m < 0 || *m > p.maxTokens {
			return p, invalidRequest("min_tokens", "min_tokens must be between 0 and max_tokens (%d), got %d", p.maxTokens, *m)
		}
		p.minTokens = *m
	}
	p.choices = 1
	if n := p.req.N; n != nil {
		if *n < 1 || *n > maxChoices {
			return p, invalidRequest("n", "n must be between 1 and %d, got %d", maxChoices, *n)
		}
		p.choices = *n
	}
	var err error
	if p.stops, err = stopStrings(p.req.Stop); err != nil {
		return p, invalidRequest("stop", "%v", err)
	}
	p.includeUsage = p.req.StreamOptions != nil && p.req.StreamOptions.IncludeUsage
	return p, nil
}

// promptTokens approximates the prompt of a completions request: a string
// (ceil(bytes/4) tokens), or token ids (one each); a list of several
// prompts is a batch, which the simulator does not simulate.
func promptTokens(raw json.RawMessage) (int, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, invalidRequest("prompt", "you must provide a prompt")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return (len(text) + bytesPerToken - 1) / bytesPerToken, nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return len(ids), nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil && len(list) == 1 {
		return promptTokens(list[0])
	}
	if len(list) > 1 {
		return 0, invalidRequest("prompt", "planner sim does not simulate a batch of %d prompts in one request: send one prompt per request", len(list))
	}
	return 0, invalidRequest("prompt", "prompt must be a string, a list of token ids, or a list of one of them")
}

// stopStrings reads stop: a string, a list of up to 4 strings, or null.
func stopStrings(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errors.New("stop must be a string or a list of strings")
	}
	if len(list) > maxStops {
		return nil, fmt.Errorf("stop takes at most %d sequences, got %d", maxStops, len(list))
	}
	return slices.DeleteFunc(list, func(s string) bool { return s == "" }), nil
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

// tokenDeltas and tokenTexts are the JSON renderings of the output tokens,
// as a chat delta ({"content":…}) and as a completions text (a string),
// computed once: entry 0 is the first token (a bare word), entry 1 + k the
// word k after a space, which every later token is.
var (
	tokenDeltas, tokenTexts = func() (d, t [len(words) + 1]string) {
		for k := range len(words) + 1 {
			text := token(0)
			if k > 0 {
				text = " " + words[k-1]
			}
			q := strconv.Quote(text)
			d[k], t[k] = `{"content":`+q+`}`, q
		}
		return d, t
	}()
)

// renderedToken is the index into tokenDeltas and tokenTexts of token i.
func renderedToken(i int) int {
	if i == 0 {
		return 0
	}
	return 1 + i%len(words)
}

// chunkEncoder renders the server-sent events of one streamed completion
// without reflection, so that a thousand streams stay cheap: chat chunks
// (chat.completion.chunk with a delta) or completions chunks
// (text_completion with a text).
type chunkEncoder struct {
	head         []byte // `data: {"id":…,"object":…,"created":…,"model":…,`
	text         bool
	includeUsage bool
	buf          []byte
}

func newChunkEncoder(id string, created int64, model []byte, text, includeUsage bool) *chunkEncoder {
	object := "chat.completion.chunk"
	if text {
		object = "text_completion"
	}
	head := []byte(`data: {"id":"` + id + `","object":"` + object + `","created":` +
		strconv.FormatInt(created, 10) + `,"model":`)
	head = append(head, model...)
	if !text {
		head = append(head, `,"system_fingerprint":null`...)
	}
	head = append(head, ',')
	return &chunkEncoder{head: head, text: text, includeUsage: includeUsage}
}

// choice appends one chunk event for choice index with the given
// rendering (a delta object for chat, a JSON string for completions) and
// finish_reason ("" for null).
func (e *chunkEncoder) choice(index int, rendered, finish string) {
	e.buf = append(e.buf, e.head...)
	e.buf = append(e.buf, `"choices":[{"index":`...)
	e.buf = strconv.AppendInt(e.buf, int64(index), 10)
	if e.text {
		e.buf = append(e.buf, `,"text":`...)
	} else {
		e.buf = append(e.buf, `,"delta":`...)
	}
	e.buf = append(e.buf, rendered...)
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

// roleChunk appends the opening chunk of a chat choice that names the
// assistant role; completions have none.
func (e *chunkEncoder) roleChunk(index int) {
	if !e.text {
		e.choice(index, `{"role":"assistant","content":""}`, "")
	}
}

// tokenChunk appends the chunk carrying output token i of choice index:
// the token's whole text, or clipped (a stop sequence ends inside it).
func (e *chunkEncoder) tokenChunk(index, i int, clipped string, whole bool, finish string) {
	switch {
	case whole && e.text:
		e.choice(index, tokenTexts[renderedToken(i)], finish)
	case whole:
		e.choice(index, tokenDeltas[renderedToken(i)], finish)
	case e.text:
		e.choice(index, strconv.Quote(clipped), finish)
	default:
		e.choice(index, `{"content":`+strconv.Quote(clipped)+`}`, finish)
	}
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
	if d := u.PromptTokensDetails; d != nil {
		e.buf = append(e.buf, `,"prompt_tokens_details":{"cached_tokens":`...)
		e.buf = strconv.AppendInt(e.buf, int64(d.CachedTokens), 10)
		e.buf = append(e.buf, '}')
	}
	e.buf = append(e.buf, "}}\n\n"...)
}

// done appends the terminating event.
func (e *chunkEncoder) done() {
	e.buf = append(e.buf, "data: [DONE]\n\n"...)
}

// usage is OpenAI's usage object; prompt_tokens_details only with the
// prefix cache on, as vLLM sends it only when asked to.
type usage struct {
	PromptTokens        int            `json:"prompt_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	TotalTokens         int            `json:"total_tokens"`
	PromptTokensDetails *promptDetails `json:"prompt_tokens_details,omitempty"`
}

// promptDetails is usage.prompt_tokens_details.
type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

func newUsage(prompt, completion int) usage {
	return usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

// textCompletion is a non-streamed text_completion object (POST
// /v1/completions).
type textCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []textChoice `json:"choices"`
	Usage   usage        `json:"usage"`
}

// textChoice is one choice of a text completion.
type textChoice struct {
	Index        int       `json:"index"`
	Text         string    `json:"text"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason string    `json:"finish_reason"`
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

// completionChoice is one choice of a completion.
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

// modelInfo describes the served model as vLLM's model card does: root
// is the model it serves (the id itself, there being no adapter), parent
// the base model of an adapter (none).
type modelInfo struct {
	ID      string  `json:"id"`
	Object  string  `json:"object"`
	Created int64   `json:"created"`
	OwnedBy string  `json:"owned_by"`
	Root    string  `json:"root"`
	Parent  *string `json:"parent"`
}
