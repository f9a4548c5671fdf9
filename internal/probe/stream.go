package probe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/plannerdev/planner/internal/measure"
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
	models         []string // the distinct model names the chunks carried, in order (at most maxServedNames)
}

// maxServedNames bounds the distinct model names kept of one stream, and
// maxServedName the bytes of each, so that a hostile stream cannot grow a
// row without bound.
const (
	maxServedNames = 4
	maxServedName  = 200
)

// servedName notes the model name of a chunk (raw JSON string contents,
// cut to maxServedName bytes) unless the stream already named it; only a
// new name allocates.
func (r *streamResult) servedName(raw []byte) {
	if len(raw) == 0 || len(r.models) >= maxServedNames {
		return
	}
	if len(raw) > maxServedName {
		n := maxServedName
		for n > 0 && !utf8.RuneStart(raw[n]) {
			n--
		}
		raw = raw[:n]
	}
	for _, m := range r.models {
		if string(raw) == m {
			return
		}
	}
	r.models = append(r.models, string(raw))
}

// servedModels are the names the stream carried, escapes decoded.
func (r streamResult) servedModels() []string {
	out := make([]string, 0, len(r.models))
	for _, m := range r.models {
		name := m
		if strings.IndexByte(m, '\\') >= 0 && json.Unmarshal([]byte(`"`+m+`"`), &name) != nil {
			name = m // cut inside an escape: kept as it came
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
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
func readStream(body io.Reader, sent time.Time) (streamResult, error) {
	var res streamResult
	r := newSSEReader(body)
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
		d := ev.at.Sub(sent)
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
		info, err := scanChunk(ev.data)
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
		res.servedName(info.model)
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
