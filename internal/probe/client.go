package probe

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/redact"
	"github.com/plannerdev/planner/internal/target"
)

// maxErrorBody bounds how much of a non-200 answer is read.
const maxErrorBody = 4 << 10

// maxErrorText bounds the message kept of a failed request. The message is
// redacted before it is cut, so that a cut cannot leave part of a key.
const maxErrorText = 200

// newTransport returns the run's transport: HTTP/1.1 keep-alive connections
// (one per in-flight stream, as the common SDKs use them) with an idle pool
// sized for the largest step, so that each step reuses the connections of
// the one before. Compression is off because it would buffer the stream.
// An answer's headers are bounded as the preflight's are
// (target.MaxResponseHeaderBytes). With dial set, connections go through
// it and never through a proxy.
func newTransport(maxConcurrency int, dial func(ctx context.Context, network, addr string) (net.Conn, error), tlsConfig *tls.Config) *http.Transport {
	proxy := http.ProxyFromEnvironment
	if dial == nil {
		dial = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	} else {
		proxy = nil
	}
	return &http.Transport{
		Proxy:                  proxy,
		DialContext:            dial,
		MaxIdleConns:           maxConcurrency + 16,
		MaxIdleConnsPerHost:    maxConcurrency + 16,
		IdleConnTimeout:        90 * time.Second,
		TLSClientConfig:        tlsConfig,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		DisableCompression:     true,
		MaxResponseHeaderBytes: target.MaxResponseHeaderBytes,
	}
}

// chatRequest is the body of one probe request.
type chatRequest struct {
	Model         string          `json:"model"`
	Messages      json.RawMessage `json:"messages"`
	MaxTokens     int             `json:"max_tokens"`
	Stream        bool            `json:"stream"`
	StreamOptions streamOptions   `json:"stream_options"`
	IgnoreEOS     bool            `json:"ignore_eos,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// sender sends one request, with its retries, and times it.
type sender struct {
	client      *http.Client
	url         string
	keyHeader   string // "" when no key is sent
	keyValue    string
	deadline    time.Duration
	maxAttempts int
	backoff     backoff
	rnd         *lockedRand
	limits      *rateLimitLog
	budget      *budget
	redact      *redact.Redactor
	slots       sync.Pool // of *slot
	names       nameCache
}

// A slot is what one request needs besides what net/http allocates for
// it: its body's bytes, and its connection trace with the hooks and the
// traced context built on them, all reused from request to request. A
// request gives its slot back only when the transport can no longer touch
// it: each of its connections came from the idle pool, so that no dial
// started on its behalf can still report into the trace, and its body was
// written. Otherwise the slot is dropped. In a steady run, where every
// request reuses a kept-alive connection, requests allocate no slot.
type slot struct {
	buf    []byte
	trace  connTrace
	hooks  *httptrace.ClientTrace
	base   context.Context // the context traced was built on
	traced context.Context // base with hooks
}

// take returns a slot for a request.
func (s *sender) take() *slot {
	if sl, ok := s.slots.Get().(*slot); ok {
		return sl
	}
	sl := &slot{}
	sl.hooks = sl.trace.hooks()
	return sl
}

// give takes back a slot whose request has ended, unless the transport
// may still use it.
func (s *sender) give(sl *slot) {
	if sl.trace.settled() {
		s.slots.Put(sl)
	}
}

// tracedContext is ctx with the slot's hooks, built once for a given ctx.
func (sl *slot) tracedContext(ctx context.Context) context.Context {
	if sl.base != ctx {
		sl.base, sl.traced = ctx, httptrace.WithClientTrace(ctx, sl.hooks)
	}
	return sl.traced
}

// reply is the outcome of one request. The stream's times are from the
// send of the last attempt; end is from the first send.
type reply struct {
	start      time.Time // first send
	last       time.Time // send of the last attempt
	status     int       // last HTTP status; 0 without a response
	class      string    // "" on success, else an analysis error class
	msg        string    // what went wrong, redacted
	stream     streamResult
	attempts   int
	retryAfter time.Duration // the longest wait a 429 asked for
	end        time.Duration // when the request ended, from the first send
	conn       connTiming    // how the last attempt got its connection
}

// lastAttempt is how long the last attempt took, to its end.
func (r reply) lastAttempt() time.Duration { return r.end - r.last.Sub(r.start) }

// send posts the slot's body until it gets an answer other than 429, the
// attempts run out, a 429's wait would pass the deadline, or the budget
// refuses a retry. The first attempt must have been admitted by the
// budget. runCtx is the run's context: its end marks the request
// cancelled rather than failed.
func (s *sender) send(runCtx context.Context, sl *slot) reply {
	ctx, cancel := context.WithTimeout(sl.tracedContext(runCtx), s.deadline)
	defer cancel()
	r := reply{start: time.Now()}
	for {
		r.attempts++
		r.last = time.Now()
		wait, retry := s.attempt(runCtx, ctx, sl, &r)
		if !retry {
			break
		}
		left := s.deadline - time.Since(r.start)
		var gaveUp string
		switch {
		case r.attempts >= s.maxAttempts:
			gaveUp = fmt.Sprintf("gave up after %d attempts", r.attempts)
		case wait >= left:
			gaveUp = fmt.Sprintf("the wait of %s would pass the deadline (%s left)", wait, left.Round(time.Millisecond))
		case !s.budget.retry():
			gaveUp = "the request budget allows no retry"
		case !sleep(ctx, wait):
			r.class = failureClass(runCtx, ctx)
			gaveUp = "ended while waiting to retry"
		default:
			continue
		}
		r.msg += "; " + gaveUp
		break
	}
	if r.end == 0 || r.class == measure.ErrCancelled || r.class == measure.ErrTimeout {
		r.end = time.Since(r.start)
	}
	return r
}

// attempt sends body once and fills r. It returns retry = true, with the
// wait to honour, when the answer is a 429.
//
// The attempt is traced by the slot's trace, reset for it, while every
// attempt before it left the trace settled; otherwise by a trace of its
// own, whose hooks the transport calls besides the slot's.
func (s *sender) attempt(runCtx, ctx context.Context, sl *slot, r *reply) (wait time.Duration, retry bool) {
	trace := &sl.trace
	if r.attempts == 1 || trace.settled() {
		trace.reset()
	} else {
		trace = &connTrace{}
		ctx = httptrace.WithClientTrace(ctx, trace.hooks())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(sl.buf))
	if err != nil {
		r.class, r.msg = measure.ErrClient, s.redact.Clip(err.Error(), maxErrorText)
		return 0, false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if s.keyHeader != "" {
		req.Header.Set(s.keyHeader, s.keyValue)
	}
	resp, err := s.client.Do(req)
	r.conn = trace.timing(r.last)
	if err != nil {
		r.class, r.msg = failureClass(runCtx, ctx), s.redact.Clip(err.Error(), maxErrorText)
		r.end = time.Since(r.start)
		return 0, false
	}
	defer resp.Body.Close()
	now := time.Now()
	r.status = resp.StatusCode
	s.limits.observe(resp.Header, now)
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		r.class = measure.ErrRateLimited
		r.end = time.Since(r.start)
		r.msg = "HTTP 429: " + s.errorText(resp.Body)
		d, announced := retryAfter(resp.Header, now)
		if announced {
			r.retryAfter = max(r.retryAfter, d)
		}
		if announced && d > 0 {
			return d, true
		}
		// No wait named (or "0"): back off rather than retry at once.
		return s.backoff.delay(r.attempts-1, s.rnd), true
	case resp.StatusCode != http.StatusOK:
		r.class = statusClass(resp.StatusCode)
		r.msg = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, s.errorText(resp.Body))
		r.end = time.Since(r.start)
		return 0, false
	}
	r.class, r.msg = "", ""
	st, err := readStream(resp.Body, r.last, &s.names)
	r.stream, r.end = st, r.last.Sub(r.start)+st.end
	switch {
	case err != nil:
		r.class, r.msg = failureClass(runCtx, ctx), s.redact.Clip(err.Error(), maxErrorText)
	case st.errClass != "":
		r.class, r.msg = st.errClass, s.redact.Clip(st.errMsg, maxErrorText)
		if st.errClass == measure.ErrBadStream && !st.acked && !isEventStream(resp.Header) {
			r.msg = fmt.Sprintf("the answer is not an event stream (content-type %q): does the endpoint support stream=true?", resp.Header.Get("Content-Type"))
		}
	case !st.ok():
		r.class, r.msg = measure.ErrBadStream, "the stream carried no output"
	}
	return 0, false
}

// failureClass classifies a request that ended without an answer: the run
// ended (cancelled), its deadline passed (timeout), or the network failed.
func failureClass(runCtx, ctx context.Context) string {
	switch {
	case runCtx.Err() != nil:
		return measure.ErrCancelled
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return measure.ErrTimeout
	}
	return measure.ErrTransport
}

// statusClass is the error class of a non-200, non-429 status.
func statusClass(status int) string {
	if status >= 500 {
		return measure.ErrServer
	}
	return measure.ErrClient
}

// errorText reads the start of a failed answer and returns its message:
// that of an OpenAI-style error body, else the text. It is redacted before
// it is cut to maxErrorText, and when the read stopped at maxErrorBody, a
// key that the limit cut in two is redacted too.
func (s *sender) errorText(body io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(body, maxErrorBody))
	if info, err := scanChunk(b); err == nil && info.hasError {
		if m := info.errorMessage(); m != "" {
			return s.redact.Clip(m, maxErrorText)
		}
	}
	text := strings.TrimSpace(string(b))
	if len(b) == maxErrorBody {
		return redact.Cut(s.redact.Truncated(text), maxErrorText)
	}
	return s.redact.Clip(text, maxErrorText)
}

// isEventStream reports whether the answer says it is an event stream.
func isEventStream(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(h.Get("Content-Type")), "text/event-stream")
}

// sleep waits d; it reports false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
