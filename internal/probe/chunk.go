package probe

import (
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
	for i := start; i < len(b); i++ {
		c := b[i]
		if c >= 0x20 && c != '"' && c != '\\' {
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

// nonEmptyString consumes a value and reports whether it is a non-empty
// string.
func (s *jscan) nonEmptyString() bool {
	if s.peek() == '"' {
		return len(s.str()) > 0
	}
	s.skip(3)
	return false
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
			if s.nonEmptyString() {
				info.output = true
			}
		case "tool_calls":
			if s.nonEmptyArray() {
				info.output = true
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
