package probe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/redact"
)

// streamResult is what one streamed response delivered. Times are from the
// send of the request's first attempt.
type streamResult struct {
	ack, ttft, e2e time.Duration // e2e is the last output chunk; ttft and e2e are 0 without output
	end            time.Duration // when reading stopped
	acked          bool          // at least one event arrived
	outputChunks   int           // events whose delta carried output
	usage          bool          // a usage object arrived
	prompt         int           // usage.prompt_tokens
	completion     int           // usage.completion_tokens
	cached         int           // usage.prompt_tokens_details.cached_tokens
	done           bool          // the [DONE] sentinel arrived
	errClass       string        // "" or an analysis error class
	errMsg         string
	// models holds the distinct model names the chunks carried, in order
	// (raw JSON string contents), nModels of them.
	models  [maxServedNames]string
	nModels int
}

// maxServedNames bounds the distinct model names kept of one stream, and
// maxServedName the bytes of each, so that a hostile stream cannot grow a
// row without bound.
const (
	maxServedNames = 4
	maxServedName  = 200
)

// servedName notes the model name of a chunk (raw JSON string contents,
// cut to maxServedName bytes) unless the stream already named it; names
// interns it, so that only a name new to the run allocates.
func (r *streamResult) servedName(raw []byte, names *nameCache) {
	if len(raw) == 0 || r.nModels >= maxServedNames {
		return
	}
	if len(raw) > maxServedName {
		n := maxServedName
		for n > 0 && !utf8.RuneStart(raw[n]) {
			n--
		}
		raw = raw[:n]
	}
	for _, m := range r.models[:r.nModels] {
		if string(raw) == m {
			return
		}
	}
	r.models[r.nModels] = names.intern(raw)
	r.nModels++
}

// servedModels are the names the stream carried, escapes decoded.
func (r streamResult) servedModels() []string {
	out := make([]string, 0, r.nModels)
	for _, m := range r.models[:r.nModels] {
		name := decodeName(m)
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// decodeName is a raw model name with its escapes decoded; a name cut
// inside an escape is kept as it came.
func decodeName(raw string) string {
	name := raw
	if strings.IndexByte(raw, '\\') >= 0 && json.Unmarshal([]byte(`"`+raw+`"`), &name) != nil {
		name = raw
	}
	return name
}

// maxInterned bounds the names a nameCache keeps.
const maxInterned = 16

// nameCache interns the raw model names that a run's answers carry, and
// the row's served_model of a stream that named one of them alone
// (decoded and redacted), so that rows naming a model seen before
// allocate nothing. It keeps maxInterned names; past them, names are
// allocated as they come. It is safe for concurrent use; a nil cache
// interns nothing.
type nameCache struct {
	mu    sync.Mutex
	names []internedName
}

type internedName struct {
	raw, served string
}

// intern returns raw as a string, the one kept when it is known.
func (c *nameCache) intern(raw []byte) string {
	if c == nil {
		return string(raw)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.names {
		if n.raw == string(raw) {
			return n.raw
		}
	}
	s := string(raw)
	if len(c.names) < maxInterned {
		c.names = append(c.names, internedName{raw: s})
	}
	return s
}

// served is the row's served_model of a stream: its names, decoded,
// joined by measure.ServedModelSep and redacted by red.
func (c *nameCache) served(st streamResult, red *redact.Redactor) string {
	if st.nModels == 0 {
		return ""
	}
	if st.nModels > 1 || c == nil {
		return red.String(strings.Join(st.servedModels(), measure.ServedModelSep))
	}
	raw := st.models[0]
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, n := range c.names {
		if n.raw == raw {
			if n.served == "" {
				c.names[i].served = red.String(decodeName(raw))
			}
			return c.names[i].served
		}
	}
	return red.String(decodeName(raw))
}

// ok reports whether the stream is a success: it finished with [DONE],
// carried output, and had no error.
func (r streamResult) ok() bool { return r.done && r.errClass == "" && r.outputChunks > 0 }

// outputTokens is usage.completion_tokens, else the number of output chunks
// (then estimated is true).
func (r streamResult) outputTokens() (n int, estimated bool) {
	if r.usage {
		return r.completion, false
	}
	return r.outputChunks, true
}

var doneSentinel = []byte("[DONE]")

// readStream reads a chat-completions event stream to its end and times it
// against sent with the monotonic clock: ack at the first event, TTFT at the
// first event whose delta carries output, E2E at the last such event (the
// usage-only chunk and [DONE] do not count). A stream that ends without
// [DONE], or with a chunk that is not valid JSON, is a bad stream; an error
// object or an "error" event ends it as an error of the class its code says.
// The error returned is a read failure other than the end of the stream,
// for the caller to classify (timeout, cancel, transport).
//
// names, if not nil, interns the model names the chunks carry.
func readStream(body io.Reader, sent time.Time, names *nameCache) (streamResult, error) {
	var res streamResult
	r := newSSEReader(body, sent)
	defer r.release()
	for {
		ev, err := r.next()
		if err != nil {
			res.end = time.Since(sent)
			switch {
			case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
				if !res.done {
					res.errClass, res.errMsg = measure.ErrBadStream, "the stream ended without [DONE]"
				}
				return res, nil
			case errors.Is(err, errEventTooLarge):
				res.errClass, res.errMsg = measure.ErrBadStream, err.Error()
				return res, nil
			}
			return res, fmt.Errorf("reading the stream: %w", err)
		}
		d := ev.at
		if !res.acked {
			res.ack, res.acked = d, true
		}
		if res.done {
			continue // drain to the end so the connection can be reused
		}
		if bytes.Equal(ev.data, doneSentinel) {
			res.done = true
			continue
		}
		info, matched := r.tmpl.match(ev.data)
		if !matched {
			info, err = scanChunk(ev.data)
			if err == nil {
				r.tmpl.remember(ev.data, info)
			}
		}
		switch {
		case err != nil && ev.isError:
			res.end = d
			res.errClass, res.errMsg = measure.ErrServer, fmt.Sprintf("error event in the stream: %q", ev.data)
			return res, nil
		case err != nil:
			res.end = d
			res.errClass, res.errMsg = measure.ErrBadStream, fmt.Sprintf("unparseable chunk %q", ev.data)
			return res, nil
		case ev.isError || info.hasError:
			res.end = d
			res.errClass, res.errMsg = streamErrorClass(info), "error in the stream: "+info.errorMessage()
			return res, nil
		}
		if info.output {
			if res.outputChunks == 0 {
				res.ttft = d
			}
			res.e2e = d
			res.outputChunks++
		}
		if info.usage {
			res.usage, res.prompt, res.completion, res.cached = true, info.prompt, info.completion, info.cached
		}
		res.servedName(info.model, names)
	}
}

// streamErrorClass classifies an in-stream error by its code: 429 or a
// rate-limit type is rate limiting, another 4xx a client error, anything
// else a server error.
func streamErrorClass(info chunkInfo) string {
	switch {
	case info.errCode == 429 || bytes.Contains(info.errType, []byte("rate_limit")):
		return measure.ErrRateLimited
	case info.errCode >= 400 && info.errCode < 500:
		return measure.ErrClient
	}
	return measure.ErrServer
}
