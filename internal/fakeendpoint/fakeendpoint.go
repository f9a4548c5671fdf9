// Package fakeendpoint is an OpenAI-compatible simulated endpoint, shaped
// like vLLM's server, for rehearsals and tests of clients, probes and
// benchmarking tools: POST /v1/chat/completions and /v1/completions
// (streamed or whole, n choices, stop sequences), GET /v1/models, /health
// and a Prometheus /metrics with vLLM's metric names.
//
// It models a continuously batching model server: at most MaxNumSeqs
// sequences decode at once and later requests wait in a FIFO queue. A
// request is admitted on arrival when a slot is free, else when the slot it
// waited for frees; it then sees its first token after
//
//	TTFT*(1+TTFTGrowth*(running-1)) + PrefillPer1K*uncachedTokens/1000
//
// (the prompt's tokens less those an optional prefix cache served:
// cache.go)
// and each further token ITL*(1+ITLGrowth*(running-1)) later, with running
// read at every token. Deadlines are absolute (admission time plus the
// accumulated intervals), so timing does not drift with the load.
//
// Prompt tokens are approximated deterministically: 3 tokens for priming
// the reply, plus, per message, 4 tokens of overhead and ceil(bytes/4) of its
// text (a string content, or the "text" parts of an array content).
//
// Optional RPM and TPM token buckets answer 429 with honest retry-after and
// retry-after-ms headers, and every admitted or refused request carries
// OpenAI's x-ratelimit-* headers for the configured buckets. Optional
// random failures (FailRate) answer 429 or 500 whatever the load. An
// optional prefix cache (PrefixCacheTokens) serves the leading blocks a
// prompt shares with earlier ones, reports them in
// usage.prompt_tokens_details.cached_tokens and skips their prefill.
package fakeendpoint

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// maxArrivals bounds the arrival log.
	maxArrivals = 100_000
	// maxBody bounds a request body.
	maxBody = 16 << 20
	// lengthSigma is the lognormal sigma of output lengths.
	lengthSigma = 0.5
	// idAlphabet and idLength shape completion ids like OpenAI's.
	idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	idLength   = 29
	// requestIDLength is the length of a generated x-request-id, and
	// maxRequestID the longest one a request may bring.
	requestIDLength = 32
	maxRequestID    = 256
	// spinWindow is how much of a precise wait (first and last token) is
	// spent yielding instead of on a timer; it covers the idle runtime's
	// millisecond timer granularity.
	spinWindow = 1500 * time.Microsecond
	// spinMaxRunning limits precise waits to a lightly loaded batch, where
	// the yielding is cheap; a busy runtime checks its timers often anyway.
	spinMaxRunning = 32
)

// Arrival records one chat-completions request as it arrived and was
// answered, so that tests can check what a client sent; it never holds
// headers or keys.
type Arrival struct {
	// At is when the request reached the handler.
	At time.Time
	// Status is the HTTP status answered (200 once admitted to the queue).
	Status int
	// Path is the route asked for (/v1/chat/completions or /v1/completions).
	Path string
	// PromptTokens is the approximated prompt length (0 when unparsable).
	PromptTokens int
	// MaxTokens is max_completion_tokens or max_tokens as sent, 0 when absent.
	MaxTokens int
}

// Server is the simulated endpoint; it is an http.Handler safe for
// concurrent use.
type Server struct {
	cfg       Config
	modelJSON []byte // cfg.ServedModel as a JSON string, the model field of the answers
	created   int64
	batch     *batcher
	limits    *limiter
	metrics   *metrics
	cache     *prefixCache // nil without a prefix cache

	rngMu   sync.Mutex
	lengths *rand.Rand
	ids     *rand.Rand
	fails   *rand.Rand
	spin    time.Duration // the busy wait before a punctual token; 0 with TimersOnly

	arrMu    sync.Mutex
	arrivals []Arrival // ring buffer once full
	arrHead  int       // oldest entry when full
}

// New validates cfg, applies the defaults and returns a ready server.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	modelJSON, err := json.Marshal(cfg.ServedModel)
	if err != nil {
		return nil, fmt.Errorf("sim: encoding model id: %w", err)
	}
	now := time.Now()
	batch := newBatcher(cfg.MaxNumSeqs)
	return &Server{
		cfg:       cfg,
		modelJSON: modelJSON,
		created:   now.Unix(),
		batch:     batch,
		limits:    newLimiter(cfg.RPM, cfg.TPM, now),
		metrics:   newMetrics(cfg.Model, batch, cfg.PrefixCacheTokens > 0),
		cache:     newPrefixCache(cfg.PrefixCacheTokens, cfg.PrefixCacheMinTokens),
		lengths:   rand.New(rand.NewPCG(cfg.Seed, 0x6c656e67746873)),
		ids:       rand.New(rand.NewPCG(cfg.Seed, 0x696473)),
		fails:     rand.New(rand.NewPCG(cfg.Seed, 0x6661696c73)),
		spin:      spinFor(cfg),
	}, nil
}

// spinFor is the busy wait of a configuration.
func spinFor(cfg Config) time.Duration {
	if cfg.TimersOnly {
		return 0
	}
	return spinWindow
}

// ServeHTTP routes /v1/chat/completions, /v1/completions, /v1/models,
// /health and /metrics; anything else is an OpenAI-style 404. Every answer
// carries an x-request-id: the one the request sent, else a new one.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-Request-Id")
	if id == "" || len(id) > maxRequestID {
		id = s.newID("", requestIDLength)
	}
	w.Header().Set("X-Request-Id", id)
	switch r.URL.Path {
	case "/v1/chat/completions":
		s.handleGenerate(w, r, true)
	case "/v1/completions":
		s.handleGenerate(w, r, false)
	case "/v1/models":
		s.handleModels(w, r)
	case "/health":
		s.handleHealth(w, r)
	case "/metrics":
		s.metrics.serve(w, r)
	default:
		writeError(w, &apiError{status: http.StatusNotFound, Type: "invalid_request_error",
			Message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path)})
	}
}

// Arrivals returns the chat-completions requests received, oldest first
// (the last 100,000).
func (s *Server) Arrivals() []Arrival {
	s.arrMu.Lock()
	out := make([]Arrival, 0, len(s.arrivals))
	out = append(out, s.arrivals[s.arrHead:]...)
	out = append(out, s.arrivals[:s.arrHead]...)
	s.arrMu.Unlock()
	slices.SortStableFunc(out, func(a, b Arrival) int { return a.At.Compare(b.At) })
	return out
}

// record appends a to the arrival log, dropping the oldest entry when full.
func (s *Server) record(a Arrival) {
	s.arrMu.Lock()
	defer s.arrMu.Unlock()
	if len(s.arrivals) < maxArrivals {
		s.arrivals = append(s.arrivals, a)
		return
	}
	s.arrivals[s.arrHead] = a
	s.arrHead = (s.arrHead + 1) % maxArrivals
}

// authorize checks the bearer key when one is configured.
func (s *Server) authorize(r *http.Request) *apiError {
	if s.cfg.APIKey == "" {
		return nil
	}
	got := r.Header.Get("Authorization")
	if got == "" {
		return (&apiError{status: http.StatusUnauthorized, Type: "invalid_request_error",
			Message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth."}).withCode("invalid_api_key")
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte("Bearer "+s.cfg.APIKey)) != 1 {
		return (&apiError{status: http.StatusUnauthorized, Type: "invalid_request_error",
			Message: "Incorrect API key provided."}).withCode("invalid_api_key")
	}
	return nil
}

// handleHealth serves GET /health as vLLM does: 200 with an empty body
// while the server runs.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, methodNotAllowed(r))
		return
	}
	w.WriteHeader(http.StatusOK)
}

// handleModels serves GET /v1/models.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if e := s.authorize(r); e != nil {
		writeError(w, e)
		return
	}
	if r.Method != http.MethodGet {
		writeError(w, methodNotAllowed(r))
		return
	}
	writeJSON(w, modelList{Object: "list", Data: []modelInfo{{
		ID: s.cfg.Model, Object: "model", Created: s.created, OwnedBy: "planner-sim", Root: s.cfg.ServedModel,
	}}})
}

// handleGenerate serves POST /v1/chat/completions (chat) and
// /v1/completions: it checks the request, takes it through the rate
// limits and the batch, and answers streamed or whole.
func (s *Server) handleGenerate(w http.ResponseWriter, r *http.Request, chat bool) {
	arr := Arrival{At: time.Now(), Path: r.URL.Path}
	p, e := s.admit(w, r, chat)
	arr.PromptTokens, arr.MaxTokens = p.promptTokens, p.sentMax
	if e != nil {
		arr.Status = e.status
		s.record(arr)
		writeError(w, e)
		return
	}
	arr.Status = http.StatusOK
	s.record(arr)
	s.generate(w, r, p, arr.At, chat)
}

// admit runs every check before generation and takes the request from the
// rate-limit buckets; on refusal it returns the error to answer with, its
// headers already set.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, chat bool) (parsed, *apiError) {
	if e := s.authorize(r); e != nil {
		return parsed{}, e
	}
	if r.Method != http.MethodPost {
		return parsed{}, methodNotAllowed(r)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			e := invalidRequest("", "request body larger than %d bytes", mbe.Limit)
			e.status = http.StatusRequestEntityTooLarge
			return parsed{}, e
		}
		return parsed{}, invalidRequest("", "reading request body: %v", err)
	}
	p, e := parseRequest(body, chat)
	if e != nil {
		return p, e
	}
	if p.req.Model != s.cfg.Model {
		return p, (&apiError{status: http.StatusNotFound, Type: "invalid_request_error",
			Message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", p.req.Model),
		}).withCode("model_not_found")
	}
	if e := s.injectedFailure(w.Header()); e != nil {
		return p, e
	}
	cost := p.promptTokens
	if s.cfg.TokenAccounting == AccountingMaxTokens {
		cost += p.maxTokens * p.choices
	}
	v := s.limits.admit(time.Now(), cost, w.Header())
	if v.ok {
		return p, nil
	}
	e = (&apiError{status: http.StatusTooManyRequests, Type: "rate_limit_exceeded"}).withCode("rate_limit_exceeded")
	if v.retry == 0 {
		e.Message = fmt.Sprintf("Request too large for %s on tokens per min (TPM): Limit %d, Requested %d.",
			s.cfg.Model, v.limit, cost)
		return p, e
	}
	retry := ceilMillis(v.retry)
	ms := retry.Milliseconds()
	w.Header().Set("retry-after", strconv.FormatInt((ms+999)/1000, 10))
	w.Header().Set("retry-after-ms", strconv.FormatInt(ms, 10))
	e.Message = fmt.Sprintf("Rate limit reached for %s on %s per min: Limit %d. Please try again in %s.",
		s.cfg.Model, v.unit, v.limit, retry)
	return p, e
}

// injectedFailure draws whether the request fails at random (FailRate),
// and returns the failure to answer with, its headers set: a 429 that asks
// for FailRetryAfter, or a 500.
func (s *Server) injectedFailure(h http.Header) *apiError {
	if s.cfg.FailRate <= 0 {
		return nil
	}
	s.rngMu.Lock()
	fail := s.fails.Float64() < s.cfg.FailRate
	s.rngMu.Unlock()
	if !fail {
		return nil
	}
	if s.cfg.FailStatus == http.StatusInternalServerError {
		return &apiError{status: http.StatusInternalServerError, Type: "server_error",
			Message: "The server had an error while processing your request (injected failure)."}
	}
	retry := ceilMillis(s.cfg.FailRetryAfter)
	h.Set("retry-after", strconv.FormatInt((retry.Milliseconds()+999)/1000, 10))
	h.Set("retry-after-ms", strconv.FormatInt(retry.Milliseconds(), 10))
	return (&apiError{status: http.StatusTooManyRequests, Type: "rate_limit_exceeded",
		Message: fmt.Sprintf("Rate limit reached for %s (injected failure). Please try again in %s.", s.cfg.Model, retry)}).withCode("rate_limit_exceeded")
}

// plan draws the output length of an admitted request (at least
// min_tokens, at most max_tokens); the draws happen in admission order so
// that a seed replays the same lengths.
func (s *Server) plan(p parsed) int {
	s.rngMu.Lock()
	z := s.lengths.NormFloat64()
	s.rngMu.Unlock()
	if p.req.IgnoreEOS {
		return p.maxTokens
	}
	drawn := math.Round(float64(s.cfg.OutputTokens) * math.Exp(lengthSigma*z))
	return int(math.Max(math.Max(1, float64(p.minTokens)), math.Min(drawn, float64(p.maxTokens))))
}

// newID draws an id: prefix and length characters of idAlphabet.
func (s *Server) newID(prefix string, length int) string {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	var b strings.Builder
	b.WriteString(prefix)
	for range length {
		b.WriteByte(idAlphabet[s.ids.IntN(len(idAlphabet))])
	}
	return b.String()
}

// ttft is the time from admission to the first token, for a prompt of
// uncached tokens to prefill.
func (s *Server) ttft(running, uncached int) time.Duration {
	base := float64(s.cfg.TTFT) * (1 + s.cfg.TTFTGrowth*float64(running-1))
	return time.Duration(base + float64(s.cfg.PrefillPer1K)*float64(uncached)/1000)
}

// itl is the interval to the next token with running sequences decoding.
func (s *Server) itl(running int) time.Duration {
	return time.Duration(float64(s.cfg.ITL) * (1 + s.cfg.ITLGrowth*float64(running-1)))
}

// generate waits for a batch slot, produces the tokens on schedule and
// answers as a stream or as one completion. The n choices of a request
// decode together in its slot, token for token, and are the same text.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, p parsed, arrived time.Time, chat bool) {
	ctx := r.Context()
	out := planOutput(s.plan(p), p.maxTokens, p.stops)
	prefix := "chatcmpl-"
	if !chat {
		prefix = "cmpl-"
	}
	id := s.newID(prefix, idLength)
	created := time.Now().Unix()

	var emit func(i int) error
	var enc *chunkEncoder
	rc := http.NewResponseController(w)
	if p.req.Stream {
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		if rc.Flush() != nil {
			return
		}
		enc = newChunkEncoder(id, created, s.modelJSON, !chat, p.includeUsage)
		emit = func(i int) error {
			enc.buf = enc.buf[:0]
			f := ""
			if i == out.tokens-1 {
				f = out.finish
			}
			clipped, whole := out.delta(i)
			for c := range p.choices {
				if i == 0 {
					enc.roleChunk(c)
				}
				enc.tokenChunk(c, i, clipped, whole, f)
			}
			if _, err := w.Write(enc.buf); err != nil {
				return fmt.Errorf("writing chunk %d: %w", i, err)
			}
			if err := rc.Flush(); err != nil {
				return fmt.Errorf("flushing chunk %d: %w", i, err)
			}
			return nil
		}
	}

	var blocks []uint64
	if s.cache != nil {
		blocks = s.cache.hashes(p)
	}
	adm, err := s.batch.acquire(ctx, arrived)
	if err != nil {
		return
	}
	s.metrics.admitted(adm.at.Sub(arrived))
	timing := s.metrics.request(arrived)
	first := func(cached int) time.Time { return adm.at.Add(s.ttft(adm.running, p.promptTokens-cached)) }
	cached := 0
	if s.cache != nil {
		cached = s.cache.admit(blocks, adm.at, first)
		s.metrics.prefixCache(p.promptTokens, cached)
	}
	emitted := s.decode(ctx, first(cached), out.tokens, emit, timing.token)
	s.batch.release()
	if s.cfg.TokenAccounting == AccountingActual {
		s.limits.charge(time.Now(), emitted*p.choices)
	}
	if emitted < out.tokens {
		return // the client went away
	}
	u := newUsage(p.promptTokens, out.tokens*p.choices)
	if s.cache != nil {
		u.PromptTokensDetails = &promptDetails{CachedTokens: cached}
	}
	timing.finished(out.finish, u)

	if p.req.Stream {
		enc.buf = enc.buf[:0]
		if p.includeUsage {
			enc.usageChunk(u)
		}
		enc.done()
		if _, err := w.Write(enc.buf); err == nil {
			_ = rc.Flush()
		}
		return
	}
	text := out.text()
	if !chat {
		choices := make([]textChoice, p.choices)
		for c := range choices {
			choices[c] = textChoice{Index: c, Text: text, FinishReason: out.finish}
		}
		writeJSON(w, textCompletion{ID: id, Object: "text_completion", Created: created, Model: s.cfg.ServedModel, Choices: choices, Usage: u})
		return
	}
	choices := make([]completionChoice, p.choices)
	for c := range choices {
		choices[c] = completionChoice{Index: c, Message: completionMessage{Role: "assistant", Content: text}, FinishReason: out.finish}
	}
	writeJSON(w, completion{
		ID: id, Object: "chat.completion", Created: created, Model: s.cfg.ServedModel,
		Choices: choices, Usage: u,
	})
}

// output is what a request generates: its tokens (per choice), the text
// kept of them, and why it ended.
type output struct {
	tokens int
	keep   int // bytes of the tokens' text in the answer: all, or up to a stop sequence
	full   string
	finish string // "stop" (end of sequence or a stop sequence) or "length" (max tokens)
}

// planOutput decides the output of a request drawn at n tokens. A stop
// sequence ends the output at the token that completes it, and the text
// before it is kept, as vLLM does (finish_reason "stop"); otherwise all n
// tokens are, "length" when n reached max_tokens.
func planOutput(n, maxTokens int, stops []string) output {
	var b strings.Builder
	for i := range n {
		b.WriteString(token(i))
	}
	o := output{tokens: n, full: b.String(), finish: "stop"}
	o.keep = len(o.full)
	if n == maxTokens {
		o.finish = "length"
	}
	at, end := -1, 0
	for _, stop := range stops {
		if i := strings.Index(o.full, stop); i >= 0 && (at < 0 || i < at) {
			at, end = i, i+len(stop)
		}
	}
	if at < 0 {
		return o
	}
	o.keep, o.finish = at, "stop"
	off := 0
	for i := range n {
		off += len(token(i))
		if off >= end {
			o.tokens = i + 1
			break
		}
	}
	return o
}

// text is the answer's text.
func (o output) text() string { return o.full[:o.keep] }

// delta is the part of token i's text in the answer, and whether it is
// the whole token.
func (o output) delta(i int) (string, bool) {
	if o.keep == len(o.full) {
		return "", true
	}
	start := 0
	for j := range i {
		start += len(token(j))
	}
	end := start + len(token(i))
	if end <= o.keep {
		return "", true
	}
	return o.full[min(start, o.keep):o.keep], false
}

// decode produces n tokens, the first at due and each next one a per-token
// interval later, against absolute deadlines. emit, when set, sends token i;
// produced is told of each token as it is produced. It returns how many
// tokens were produced: fewer than n when ctx ends or emit fails.
func (s *Server) decode(ctx context.Context, due time.Time, n int, emit func(i int) error, produced func(i int, at time.Time)) int {
	t := time.NewTimer(time.Hour) // re-armed for every token
	defer t.Stop()
	for i := range n {
		// The first token is observable only when streamed; the last one
		// ends the response either way.
		var spin time.Duration
		if (i == n-1 || i == 0 && emit != nil) && s.batch.current() <= spinMaxRunning {
			spin = s.spin
		}
		if !sleepUntil(ctx, t, due, spin) {
			return i
		}
		produced(i, time.Now())
		if emit != nil && emit(i) != nil {
			return i
		}
		due = due.Add(s.itl(s.batch.current()))
	}
	return n
}

// sleepUntil waits until due and reports false when ctx ended first. The
// timer covers all but the last spin of the wait and a yielding loop the
// rest: an idle Go runtime sleeps in whole milliseconds, which would make
// the deadline up to a millisecond late.
func sleepUntil(ctx context.Context, t *time.Timer, due time.Time, spin time.Duration) bool {
	if d := time.Until(due) - spin; d > 0 {
		t.Reset(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
	}
	for time.Now().Before(due) {
		if ctx.Err() != nil {
			return false
		}
		runtime.Gosched()
	}
	return ctx.Err() == nil
}

// methodNotAllowed is the OpenAI-style answer to a wrong method.
func methodNotAllowed(r *http.Request) *apiError {
	return &apiError{status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
		Message: fmt.Sprintf("Invalid method for URL (%s %s)", r.Method, r.URL.Path)}
}

// writeJSON sends v as a 200 JSON response.
func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeError(w, &apiError{status: http.StatusInternalServerError, Type: "server_error",
			Message: fmt.Sprintf("encoding response: %v", err)})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(body, '\n'))
}
