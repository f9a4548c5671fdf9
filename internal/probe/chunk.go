package probe

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strconv"
)

// maxDepth bounds the nesting a chunk may have, so that a hostile stream
// cannot exhaust the stack.
const maxDepth = 64

// errBadJSON is returned for a chunk that is not a valid JSON object.
var errBadJSON = errors.New("chunk is not a valid JSON object")

// chunkInfo is what one streamed chat-completion chunk says, as far as the
// probe needs it.
type chunkInfo struct {
	output     bool // a choice's delta carries content, reasoning or tool calls
	usage      bool // the chunk has a usage object
	prompt     int  // usage.prompt_tokens
	completion int  // usage.completion_tokens
	cached     int  // usage.prompt_tokens_details.cached_tokens
	hasError   bool // the chunk is an error object
	errCode    int  // error.code or error.status when numeric, else 0
	errType    []byte
	errMessage []byte // raw JSON string contents, escapes not decoded
	model      []byte // the top-level model string, raw (escapes not decoded); nil when absent

	// What a template of the chunk needs (chunkTemplate): texts counts
	// the text values (a delta's content or reasoning string), the last
	// of which lies at textStart:textEnd; toolOutput is whether a tool
	// call carried output; modelStart is where model lies.
	texts, textStart, textEnd int
	toolOutput                bool
	modelStart                int
}

// scanChunk reads a chunk with a purpose-built validating scanner: it walks
// the JSON once, looks only at choices[].delta, usage, error and model, and skips
// everything else without allocating, so that per-chunk work stays small
// when a thousand streams are open. Keys are compared byte for byte (JSON
// keys are case-sensitive; an escaped key does not match).
func scanChunk(b []byte) (chunkInfo, error) {
	var info chunkInfo
	s := jscan{b: b}
	s.ws()
	if s.peek() != '{' {
		return info, errBadJSON
	}
	s.i++
	for first := true; s.more('}', &first); {
		switch string(s.key()) {
		case "choices":
			s.choices(&info)
		case "usage":
			s.usage(&info)
		case "error":
			s.errorValue(&info)
		case "model":
			if s.peek() == '"' {
				info.modelStart = s.i + 1
				info.model = s.str()
			} else {
				s.skip(1)
			}
		default:
			s.skip(1)
		}
	}
	s.ws()
	if s.bad || s.i != len(s.b) {
		return chunkInfo{}, errBadJSON
	}
	return info, nil
}

// chunkTemplate is a chunk of a stream that scanChunk read whole and that
// had one text value, kept as the bytes before and after that value.
// Chunks of one stream mostly differ in their text alone: a later chunk
// with the same bytes before and after it and, between them, a string
// without quotes, escapes or control characters is the same JSON with
// another text (a scanner walks the same bytes in the same states, and
// the text is plain string content), so that its info is the template's
// with the new text, and matching it replaces the scan.
type chunkTemplate struct {
	ok         bool
	head, tail []byte
	toolOutput bool
	// The model, when the chunk has one: its length, and where it lies,
	// from the start when it comes before the text, else from the end.
	hasModel, modelInTail bool
	modelAt, modelLen     int
}

// remember makes data, whose scan gave info, the template when it has
// one text value and neither usage nor an error.
func (t *chunkTemplate) remember(data []byte, info chunkInfo) {
	t.ok = info.texts == 1 && !info.usage && !info.hasError
	if !t.ok {
		return
	}
	t.head = append(t.head[:0], data[:info.textStart]...)
	t.tail = append(t.tail[:0], data[info.textEnd:]...)
	t.toolOutput = info.toolOutput
	t.hasModel, t.modelInTail, t.modelLen = info.model != nil, info.modelStart > info.textStart, len(info.model)
	t.modelAt = info.modelStart
	if t.modelInTail {
		t.modelAt = len(data) - info.modelStart
	}
}

// match reads data by the template; false when data does not fit it.
func (t *chunkTemplate) match(data []byte) (chunkInfo, bool) {
	if !t.ok || len(data) < len(t.head)+len(t.tail) || !bytes.HasPrefix(data, t.head) || !bytes.HasSuffix(data, t.tail) {
		return chunkInfo{}, false
	}
	end := len(data) - len(t.tail)
	text := data[len(t.head):end]
	if bytes.IndexByte(text, '"') >= 0 || !plainSpan(text) {
		return chunkInfo{}, false
	}
	info := chunkInfo{output: len(text) > 0 || t.toolOutput, texts: 1, textStart: len(t.head), textEnd: end, toolOutput: t.toolOutput}
	if t.hasModel {
		info.modelStart = t.modelAt
		if t.modelInTail {
			info.modelStart = len(data) - t.modelAt
		}
		info.model = data[info.modelStart : info.modelStart+t.modelLen]
	}
	return info, true
}

// errorMessage decodes the error message of a chunk (only on the error path,
// where an allocation does not matter).
func (c chunkInfo) errorMessage() string {
	if len(c.errMessage) == 0 {
		return ""
	}
	var msg string
	if err := json.Unmarshal(append(append([]byte{'"'}, c.errMessage...), '"'), &msg); err != nil {
		return string(c.errMessage)
	}
	return msg
}

// jscan is a cursor over one JSON document. Any syntax error sets bad and
// moves the cursor to the end, so that every loop terminates.
type jscan struct {
	b   []byte
	i   int
	bad bool
}

func (s *jscan) fail() {
	s.bad = true
	s.i = len(s.b)
}

func (s *jscan) ws() {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return // the common case: no whitespace
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte, or 0 at the end.
func (s *jscan) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// more advances to the next member of an object or element of an array
// whose opening bracket was consumed; it reports false after consuming the
// closing one (or on a syntax error).
func (s *jscan) more(closing byte, first *bool) bool {
	s.ws()
	c := s.peek()
	if c == closing {
		s.i++
		return false
	}
	if !*first {
		if c != ',' {
			s.fail()
			return false
		}
		s.i++
		s.ws()
	}
	*first = false
	if s.i >= len(s.b) {
		s.fail()
		return false
	}
	return true
}

// key reads an object key and its colon, returning the raw key.
func (s *jscan) key() []byte {
	k := s.str()
	s.ws()
	if s.peek() != ':' {
		s.fail()
		return nil
	}
	s.i++
	s.ws()
	return k
}

// str reads a string and returns its raw contents (escapes validated, not
// decoded).
func (s *jscan) str() []byte {
	if s.peek() != '"' {
		s.fail()
		return nil
	}
	b := s.b
	start := s.i + 1
	// The common case: the next quote ends the string, and nothing before
	// it is escaped or a control character. A short string is looked at
	// byte by byte, a long one searched for its quote.
	i := start
	for end := min(len(b), start+shortString); i < end && plain[b[i]]; i++ {
	}
	if i < len(b) && b[i] == '"' {
		s.i = i + 1
		return b[start:i]
	}
	if i == start+shortString {
		if j := bytes.IndexByte(b[i:], '"'); j >= 0 && plainSpan(b[i:i+j]) {
			s.i = i + j + 1
			return b[start : i+j]
		}
	}
	for i := start; i < len(b); i++ {
		c := b[i]
		if plain[c] {
			continue
		}
		switch {
		case c == '"':
			s.i = i + 1
			return b[start:i]
		case c < 0x20:
			s.fail()
			return nil
		}
		// An escape: \" \\ \/ \b \f \n \r \t or \uXXXX.
		i++
		if i >= len(b) {
			break
		}
		switch b[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if i+4 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
				s.fail()
				return nil
			}
			i += 4
		default:
			s.fail()
			return nil
		}
	}
	s.fail()
	return nil
}

// plain marks the bytes a JSON string carries as they are: all but the
// quote, the backslash and the control characters.
var plain = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return t
}()

// shortString is how far str looks byte by byte before it searches.
const shortString = 16

// plainSpan reports whether every byte of b is plain: eight at a time,
// with the word tests for a byte below 0x20 and for a zero byte (after
// XOR with backslashes) of Anderson's Bit Twiddling Hacks, exact for
// telling whether any byte is one.
func plainSpan(b []byte) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		w := binary.LittleEndian.Uint64(b)
		control := (w - lo*0x20) & ^w & hi
		bs := w ^ (lo * '\\')
		backslash := (bs - lo) & ^bs & hi
		if control|backslash != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if !plain[c] {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// number reads a JSON number and returns its text.
func (s *jscan) number() []byte {
	start := s.i
	if s.peek() == '-' {
		s.i++
	}
	switch c := s.peek(); {
	case c == '0':
		s.i++
	case '1' <= c && c <= '9':
		for isDigit(s.peek()) {
			s.i++
		}
	default:
		s.fail()
		return nil
	}
	if s.peek() == '.' {
		s.i++
		if !isDigit(s.peek()) {
			s.fail()
			return nil
		}
		for isDigit(s.peek()) {
			s.i++
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if !isDigit(s.peek()) {
			s.fail()
			return nil
		}
		for isDigit(s.peek()) {
			s.i++
		}
	}
	return s.b[start:s.i]
}

// literal consumes the literal word (true, false or null).
func (s *jscan) literal(word string) {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		s.fail()
		return
	}
	s.i += len(word)
}

// skip consumes any value, validating it; depth is the nesting level of the
// value.
func (s *jscan) skip(depth int) {
	if depth > maxDepth {
		s.fail()
		return
	}
	switch c := s.peek(); c {
	case '{':
		s.i++
		for first := true; s.more('}', &first); {
			s.key()
			s.skip(depth + 1)
		}
	case '[':
		s.i++
		for first := true; s.more(']', &first); {
			s.skip(depth + 1)
		}
	case '"':
		s.str()
	case 't':
		s.literal("true")
	case 'f':
		s.literal("false")
	case 'n':
		s.literal("null")
	default:
		s.number()
	}
}

// nonEmptyArray consumes a value and reports whether it is a non-empty
// array.
func (s *jscan) nonEmptyArray() bool {
	if s.peek() != '[' {
		s.skip(3)
		return false
	}
	s.i++
	n := 0
	for first := true; s.more(']', &first); n++ {
		s.skip(4)
	}
	return n > 0
}

// choices reads choices[].delta and notes whether any delta carries output.
func (s *jscan) choices(info *chunkInfo) {
	if s.peek() != '[' {
		s.skip(1)
		return
	}
	s.i++
	for first := true; s.more(']', &first); {
		if s.peek() != '{' {
			s.skip(2)
			continue
		}
		s.i++
		for f2 := true; s.more('}', &f2); {
			if string(s.key()) == "delta" {
				s.delta(info)
			} else {
				s.skip(3)
			}
		}
	}
}

// delta reads one choice's delta.
func (s *jscan) delta(info *chunkInfo) {
	if s.peek() != '{' {
		s.skip(3)
		return
	}
	s.i++
	for first := true; s.more('}', &first); {
		switch string(s.key()) {
		case "content", "reasoning_content", "reasoning":
			if s.peek() != '"' {
				s.skip(4)
				continue
			}
			start := s.i + 1
			if text := s.str(); len(text) > 0 {
				info.output = true
			}
			info.texts++
			info.textStart, info.textEnd = start, s.i-1
		case "tool_calls":
			if s.nonEmptyArray() {
				info.output, info.toolOutput = true, true
			}
		default:
			s.skip(4)
		}
	}
}

// usage reads the token counts of a usage object (null is no usage).
func (s *jscan) usage(info *chunkInfo) {
	if s.peek() != '{' {
		s.skip(1)
		return
	}
	s.i++
	info.usage = true
	for first := true; s.more('}', &first); {
		switch string(s.key()) {
		case "prompt_tokens":
			info.prompt = s.count()
		case "completion_tokens":
			info.completion = s.count()
		case "prompt_tokens_details":
			s.promptDetails(info)
		default:
			s.skip(2)
		}
	}
}

// promptDetails reads usage.prompt_tokens_details.cached_tokens (null, or
// an object without it, is none).
func (s *jscan) promptDetails(info *chunkInfo) {
	if s.peek() != '{' {
		s.skip(2)
		return
	}
	s.i++
	for first := true; s.more('}', &first); {
		if string(s.key()) == "cached_tokens" {
			info.cached = s.count()
		} else {
			s.skip(3)
		}
	}
}

// count consumes a value and returns it as a non-negative integer count, or
// 0 when it is not a number.
func (s *jscan) count() int {
	c := s.peek()
	if c != '-' && !isDigit(c) {
		s.skip(2)
		return 0
	}
	v, err := strconv.ParseFloat(string(s.number()), 64)
	if err != nil || v < 0 || v > 1e12 {
		return 0
	}
	return int(v)
}

// errorValue reads an error member: an object with message, type and code
// (or status), or a bare message string. null is no error.
func (s *jscan) errorValue(info *chunkInfo) {
	switch s.peek() {
	case 'n':
		s.literal("null")
		return
	case '"':
		info.hasError = true
		info.errMessage = s.str()
		return
	case '{':
	default:
		info.hasError = true
		s.skip(1)
		return
	}
	s.i++
	info.hasError = true
	for first := true; s.more('}', &first); {
		switch string(s.key()) {
		case "message":
			if s.peek() == '"' {
				info.errMessage = s.str()
			} else {
				s.skip(2)
			}
		case "type":
			if s.peek() == '"' {
				info.errType = s.str()
			} else {
				s.skip(2)
			}
		case "code", "status":
			if code := s.code(); code != 0 {
				info.errCode = code
			}
		default:
			s.skip(2)
		}
	}
}

// code consumes a value and returns it as an HTTP-like status code when it
// is a number or a numeric string, else 0.
func (s *jscan) code() int {
	var text []byte
	switch c := s.peek(); {
	case c == '"':
		text = s.str()
	case c == '-' || isDigit(c):
		text = s.number()
	default:
		s.skip(2)
		return 0
	}
	v, err := strconv.Atoi(string(text))
	if err != nil || v < 100 || v > 599 {
		return 0
	}
	return v
}
