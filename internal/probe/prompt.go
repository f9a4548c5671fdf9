package probe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// Limits on a prompts file.
const (
	maxPrompts    = 100_000
	maxPromptLine = 16 << 20
)

// Prompt is one request's input from a prompts file: either a text sent as
// a single user message, or a chat messages array sent as given.
type Prompt struct {
	Text     string          `json:"prompt,omitempty"`
	Messages json.RawMessage `json:"messages,omitempty"`
}

// LoadPrompts reads a JSONL prompts file: one {"prompt": "..."} or
// {"messages": [...]} object per line; blank lines are skipped. Requests use
// the prompts in order, round robin.
func LoadPrompts(r io.Reader) ([]Prompt, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxPromptLine)
	var out []Prompt
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var p Prompt
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("prompts line %d: %w", line, err)
		}
		if err := p.check(); err != nil {
			return nil, fmt.Errorf("prompts line %d: %w", line, err)
		}
		if len(out) == maxPrompts {
			return nil, fmt.Errorf("prompts: more than %d prompts", maxPrompts)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading prompts: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("prompts: the file has no prompts")
	}
	return out, nil
}

// check requires exactly one of a non-empty text and a non-empty messages
// array.
func (p Prompt) check() error {
	hasMsgs := len(p.Messages) > 0 && string(p.Messages) != "null"
	switch {
	case p.Text != "" && hasMsgs:
		return errors.New(`give "prompt" or "messages", not both`)
	case p.Text != "":
		return nil
	case !hasMsgs:
		return errors.New(`needs a non-empty "prompt" or "messages"`)
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(p.Messages, &msgs); err != nil {
		return fmt.Errorf(`"messages" must be an array: %w`, err)
	}
	if len(msgs) == 0 {
		return errors.New(`"messages" is empty`)
	}
	return nil
}

// messages renders the prompt as a chat messages array.
func (p Prompt) messages() (json.RawMessage, error) {
	if p.Text == "" {
		return p.Messages, nil
	}
	return json.Marshal([]message{{Role: "user", Content: p.Text}})
}

// message is one chat message of a synthetic prompt.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Synthetic prompts start with an instruction that asks for a long answer
// (for endpoints without ignore_eos) and continue with filler words. Both
// are plain ASCII that JSON carries unescaped, so that a prompt's size is
// known before it is built.
const (
	instruction = "Write a long, detailed essay that continues the following text, and do not stop early. "
	filler      = "capacity planning measures latency under load while every pool " +
		"keeps its quota and the model serves each stream with care so that " +
		"throughput grows until the batch is full and the queue begins to wait "
	// charsPerToken is the first guess of synthetic text per token, before
	// calibration (about right for English with common tokenizers).
	charsPerToken = 4
	// calibrationRounds is how many responses tune the synthetic length.
	calibrationRounds = 8
	// The synthetic length that calibration may choose is bounded,
	// whatever an endpoint answers (an endpoint may answer anything):
	// one answer moves it by at most maxCalibrationFactor either way, and
	// it stays within minCharsPerToken and maxCharsPerToken characters per
	// target token. The filler is common English words, which tokenizers
	// cut into a token per 4 to 6 characters; a tokenizer whose
	// vocabulary holds every filler word as one token still needs fewer
	// than 7. So a prompt is never longer than 8 characters per token of
	// the target (8 MB at MaxInputTokens), and a hostile usage count
	// cannot grow the requests from 1 KB to gigabytes.
	maxCalibrationFactor = 2
	minCharsPerToken     = 1
	maxCharsPerToken     = 8
)

// syntheticPrefix and syntheticSuffix are the JSON around a synthetic
// text in a messages array, as encoding/json writes []message (the text
// is plain ASCII, which it carries as it is); syntheticOverhead is their
// length, so that a synthetic input's size is this plus the text's.
const (
	syntheticPrefix   = `[{"role":"user","content":"`
	syntheticSuffix   = `"}]`
	syntheticOverhead = len(syntheticPrefix) + len(syntheticSuffix)
)

// prompts hands out request inputs: prompts from a file in turn, or
// synthetic text of a target length in tokens. The synthetic length is
// calibrated on the first responses: a response that counted p prompt
// tokens for a text of n characters sets the length to n·target/p, within
// the bounds above, which converges on the target when the chat template
// adds only a few tokens.
type prompts struct {
	fixed  []Prompt
	target int    // input tokens of a synthetic prompt
	runID  string // makes each prompt's start unique so provider prefix caches do not hide prefill
	// rendered holds each fixed prompt's messages as the request body
	// carries them, rendered once at the start of the run (or why the
	// prompt cannot be sent).
	rendered [][]byte
	errs     []error

	mu     sync.Mutex
	chars  int // synthetic text length
	rounds int // calibration rounds done
}

func newPrompts(fixed []Prompt, target int, runID string) *prompts {
	p := &prompts{fixed: fixed, target: target, runID: runID, chars: target * charsPerToken}
	for _, f := range fixed {
		m, err := f.messages()
		if err == nil {
			// What encoding/json writes of a json.RawMessage: compact, with
			// HTML characters escaped.
			m, err = json.Marshal(m)
		}
		p.rendered, p.errs = append(p.rendered, m), append(p.errs, err)
	}
	return p
}

// input is one request's messages: a fixed prompt's, a shaped prompt's
// turns, or a synthetic text of chars characters (for a synthetic prompt
// of one message its text length, by which the length is calibrated; 0
// for a prompt from a file or of several messages), written into the
// request's body only once the budget has admitted its size
// (appendMessages).
type input struct {
	fixed []byte // a fixed prompt's rendered messages
	chars int
	seq   int
	size  int    // bytes of messages, known before they are written
	turns []turn // a shaped prompt's messages; nil for a plain synthetic one
	// prefixTokens is the tokens at the prompt's start that an earlier
	// request sent (measure.Record.PrefixTokens), when known before it
	// is sent; prefixShare the share of its characters that repeat an
	// earlier prompt's, whose tokens are counted once the endpoint has
	// counted the prompt's.
	prefixTokens int
	prefixShare  float64
}

// segment is synthetic text of n characters (at least its head): head,
// then lead, then filler words.
type segment struct {
	head, lead string
	n          int
}

// text renders the segment.
func (s segment) text() string {
	var b strings.Builder
	b.Grow(max(s.n, len(s.head)))
	b.WriteString(s.head)
	body := s.lead
	for b.Len() < s.n {
		rest := s.n - b.Len()
		if body == "" {
			body = filler
		}
		if len(body) > rest {
			body = body[:rest]
		}
		b.WriteString(body)
		body = filler
	}
	return b.String()
}

// chars is the segment's length.
func (s segment) chars() int { return max(s.n, len(s.head)) }

// turn is one message of a shaped prompt: its role and its text, the
// segments in order. Its text is fixed when it is made, so that a prompt
// that repeats it repeats it byte for byte, as a prompt cache needs.
type turn struct {
	role string
	segs []segment
}

// shaped is the input of a prompt of the given messages.
func shaped(turns []turn, seq int) input {
	empty := make([]message, len(turns))
	chars := 0
	for i, t := range turns {
		empty[i].Role = t.role
		for _, s := range t.segs {
			chars += s.chars()
		}
	}
	b, _ := json.Marshal(empty) // roles are plain ASCII
	in := input{turns: turns, seq: seq, size: len(b) + chars}
	if len(turns) == 1 {
		in.chars = chars
	}
	return in
}

// next returns the input of request seq (0, 1, ...) of the run: a prompt
// from a file, or a synthetic prompt's size.
func (p *prompts) next(seq int) (input, error) {
	if len(p.fixed) > 0 {
		i := seq % len(p.fixed)
		if err := p.errs[i]; err != nil {
			return input{}, fmt.Errorf("prompt %d: %w", i, err)
		}
		return input{fixed: p.rendered[i], size: len(p.rendered[i])}, nil
	}
	n := max(p.length(), syntheticHeadLen(p.runID, seq))
	return input{chars: n, seq: seq, size: syntheticOverhead + n}, nil
}

// appendMessages appends the input's messages to dst as the request body
// carries them: compact JSON, byte for byte what encoding/json writes of
// them. A synthetic prompt is written in place, which allocates nothing
// once dst has room.
func (p *prompts) appendMessages(dst []byte, in input) []byte {
	if in.fixed != nil {
		return append(dst, in.fixed...)
	}
	if in.turns != nil {
		msgs := make([]message, len(in.turns))
		for i, t := range in.turns {
			var b strings.Builder
			for _, s := range t.segs {
				b.WriteString(s.text())
			}
			msgs[i] = message{Role: t.role, Content: b.String()}
		}
		m, _ := json.Marshal(msgs) // strings and roles always encode
		return append(dst, m...)
	}
	dst = append(dst, syntheticPrefix...)
	dst = appendSyntheticText(dst, p.runID, in.seq, in.chars)
	return append(dst, syntheticSuffix...)
}

// observe calibrates the synthetic length from a response that counted
// promptTokens for a text of chars characters, within a factor of
// maxCalibrationFactor of the length in use and between minCharsPerToken
// and maxCharsPerToken characters per target token.
func (p *prompts) observe(chars, promptTokens int) {
	if len(p.fixed) > 0 || chars <= 0 || promptTokens <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rounds >= calibrationRounds {
		return
	}
	p.rounds++
	want := float64(chars) * float64(p.target) / float64(promptTokens)
	cur := float64(p.chars)
	want = min(max(want, cur/maxCalibrationFactor, minCharsPerToken*float64(p.target)), cur*maxCalibrationFactor, maxCharsPerToken*float64(p.target))
	p.chars = max(1, int(want+0.5))
}

// length reports the synthetic text length in use.
func (p *prompts) length() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.chars
}

// charsFor is the synthetic text length of a prompt of tokens tokens, at
// the characters per token calibrated so far: within 1 and 8 characters
// a token, as the calibrated length is (observe).
func (p *prompts) charsFor(tokens int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(1, int(float64(p.chars)*float64(tokens)/float64(p.target)+0.5))
}

// sized is the input of request seq: a synthetic prompt of one message,
// unique from its start, of tokens tokens (a prefill ladder's length).
func (p *prompts) sized(seq, tokens int) input {
	return shaped([]turn{p.opening(seq, tokens)}, seq)
}

// opening is a user message of tokens tokens that starts with the unique
// head of request (or task) seq and asks for a long answer: a plain
// synthetic prompt as a turn.
func (p *prompts) opening(seq, tokens int) turn {
	return turn{role: "user", segs: []segment{{head: syntheticHead(p.runID, seq), lead: instruction, n: p.charsFor(tokens)}}}
}

// sharedHead starts the prefix that the cache comparison's repeated
// prompts share, unique to the run so that no earlier run's cache serves
// it.
func sharedHead(runID string) string { return "[" + runID + "-shared] " }

// repeat is the input of request seq of a cache comparison that repeats
// the run's shared prefix: one user message of chars characters, the
// shared prefix (the run's shared head, the instruction and filler) and
// then a unique tail of tail characters, so that no two prompts are the
// same.
func (p *prompts) repeat(seq, chars, tail int) input {
	in := shaped([]turn{{role: "user", segs: []segment{
		{head: sharedHead(p.runID), lead: instruction, n: chars - tail},
		{head: " " + syntheticHead(p.runID, seq), n: tail},
	}}}, seq)
	in.prefixShare = float64(chars-tail) / float64(in.chars)
	return in
}

// fresh is the input of request seq of a cache comparison that repeats
// nothing: chars characters from a unique start.
func (p *prompts) fresh(seq, chars int) input {
	return shaped([]turn{{role: "user", segs: []segment{{head: syntheticHead(p.runID, seq), lead: instruction, n: chars}}}}, seq)
}

// answer stands for an answer of tokens tokens that a conversation sends
// back as the assistant's message: filler words of the length such an
// answer has (the answer's own words are not kept).
func (p *prompts) answer(task, call, tokens int) turn {
	return turn{role: "assistant", segs: []segment{{head: "Answer " + strconv.Itoa(call) + " of task " + strconv.Itoa(task) + ": ", n: p.charsFor(tokens)}}}
}

// toolResult is a conversation's tool result after call call: a user
// message of tokens tokens.
func (p *prompts) toolResult(task, call, tokens int) turn {
	return turn{role: "user", segs: []segment{{head: "Tool result " + strconv.Itoa(call) + " of task " + strconv.Itoa(task) + ": ", n: p.charsFor(tokens)}}}
}

// syntheticHead is the unique start of request seq's synthetic text.
func syntheticHead(runID string, seq int) string {
	return "[" + runID + "-" + strconv.Itoa(seq) + "] "
}

// syntheticHeadLen is the length of the unique start of request seq's
// synthetic text, "[runID-seq] ".
func syntheticHeadLen(runID string, seq int) int {
	digits := 1
	for v := seq; v >= 10 || v <= -10; v /= 10 {
		digits++
	}
	if seq < 0 {
		digits++
	}
	return len(runID) + digits + 4
}

// appendSyntheticText appends request seq's synthetic text to dst: n
// characters (at least the unique head), a head that names the run and
// request, the instruction, then filler words.
func appendSyntheticText(dst []byte, runID string, seq, n int) []byte {
	start := len(dst)
	dst = append(dst, '[')
	dst = append(dst, runID...)
	dst = append(dst, '-')
	dst = strconv.AppendInt(dst, int64(seq), 10)
	dst = append(dst, "] "...)
	body := instruction
	for len(dst)-start < n {
		rest := n - (len(dst) - start)
		if len(body) > rest {
			body = body[:rest]
		}
		dst = append(dst, body...)
		body = filler
	}
	return dst
}
