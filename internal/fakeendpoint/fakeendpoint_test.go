package fakeendpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want error
	}{
		{"zero config", Config{}, nil},
		{"no growth", Config{ITLGrowth: NoGrowth}, nil},
		{"negative max_num_seqs", Config{MaxNumSeqs: -1}, ErrMaxNumSeqs},
		{"negative ttft", Config{TTFT: -time.Millisecond}, ErrTTFT},
		{"negative ttft growth", Config{TTFTGrowth: -0.1}, ErrTTFTGrowth},
		{"negative prefill", Config{PrefillPer1K: -time.Millisecond}, ErrPrefillPer1K},
		{"negative itl", Config{ITL: -time.Millisecond}, ErrITL},
		{"negative itl growth", Config{ITLGrowth: -0.5}, ErrITLGrowth},
		{"itl growth not a number", Config{ITLGrowth: math.NaN()}, ErrITLGrowth},
		{"infinite ttft growth", Config{TTFTGrowth: math.Inf(1)}, ErrTTFTGrowth},
		{"negative output tokens", Config{OutputTokens: -3}, ErrOutputTokens},
		{"negative rpm", Config{RPM: -1}, ErrRPM},
		{"negative tpm", Config{TPM: -1}, ErrTPM},
		{"unknown accounting", Config{TokenAccounting: "estimated"}, ErrTokenAccounting},
		{"fail rate above 1", Config{FailRate: 1.5}, ErrFailRate},
		{"fail rate NaN", Config{FailRate: math.NaN()}, ErrFailRate},
		{"fail status 503", Config{FailStatus: 503}, ErrFailStatus},
		{"negative fail retry-after", Config{FailRetryAfter: -time.Millisecond}, ErrFailRetryAfter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("New() error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	srv, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Model: "sim-model", ServedModel: "sim-model", MaxNumSeqs: 16, TTFT: 200 * time.Millisecond, ITL: 20 * time.Millisecond,
		ITLGrowth: 0.02, OutputTokens: 128, TokenAccounting: AccountingActual, FailStatus: 429, FailRetryAfter: DefaultFailRetryAfter}
	if srv.cfg != want {
		t.Fatalf("defaults = %+v, want %+v", srv.cfg, want)
	}
	srv, err = New(Config{ITLGrowth: NoGrowth})
	if err != nil {
		t.Fatal(err)
	}
	if srv.cfg.ITLGrowth != 0 {
		t.Fatalf("NoGrowth gave ITLGrowth %v, want 0", srv.cfg.ITLGrowth)
	}
}

func TestStreamWireFormat(t *testing.T) {
	tests := []struct {
		name                    string
		includeUsage, ignoreEOS bool
	}{
		{"usage and ignore_eos", true, true},
		{"usage without ignore_eos", true, false},
		{"no usage", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fast
			cfg.OutputTokens = 6
			_, base := startSim(t, cfg)
			const maxTokens = 8
			got := stream(t, base, chatBody("sim-model", maxTokens, true, tt.includeUsage, tt.ignoreEOS))
			if ct := got.resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("Content-Type = %q", ct)
			}
			evs := got.events
			if len(evs) < 3 || evs[len(evs)-1] != "[DONE]" {
				t.Fatalf("stream must end with [DONE], got %d events", len(evs))
			}
			var first testChunk
			var contents []string
			var finish []string
			finishAt := -1
			var usageSeen *usage
			for i, data := range evs[:len(evs)-1] {
				var raw map[string]json.RawMessage
				if err := json.Unmarshal([]byte(data), &raw); err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				for _, key := range []string{"id", "object", "created", "model", "system_fingerprint", "choices"} {
					if _, ok := raw[key]; !ok {
						t.Errorf("event %d lacks %q: %s", i, key, data)
					}
				}
				if string(raw["system_fingerprint"]) != "null" {
					t.Errorf("system_fingerprint = %s, want null", raw["system_fingerprint"])
				}
				var c testChunk
				if err := json.Unmarshal([]byte(data), &c); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = c
				}
				if !strings.HasPrefix(c.ID, "chatcmpl-") || c.ID != first.ID || c.Created != first.Created || c.Created == 0 {
					t.Errorf("event %d: id %q created %d, want the first chunk's %q %d", i, c.ID, c.Created, first.ID, first.Created)
				}
				if c.Object != "chat.completion.chunk" || c.Model != "sim-model" {
					t.Errorf("event %d: object %q model %q", i, c.Object, c.Model)
				}
				if c.Usage != nil {
					if string(raw["choices"]) != "[]" {
						t.Errorf("usage chunk choices = %s, want []", raw["choices"])
					}
					if i != len(evs)-2 {
						t.Errorf("usage chunk at %d, want just before [DONE]", i)
					}
					usageSeen = c.Usage
					continue
				}
				if len(c.Choices) != 1 || c.Choices[0].Index != 0 {
					t.Fatalf("event %d: choices %s", i, raw["choices"])
				}
				var choice map[string]json.RawMessage
				var choices []map[string]json.RawMessage
				if err := json.Unmarshal(raw["choices"], &choices); err != nil {
					t.Fatal(err)
				}
				choice = choices[0]
				if string(choice["logprobs"]) != "null" {
					t.Errorf("event %d: logprobs = %s, want null", i, choice["logprobs"])
				}
				if _, ok := choice["finish_reason"]; !ok {
					t.Errorf("event %d lacks finish_reason", i)
				}
				if tt.includeUsage && string(raw["usage"]) != "null" {
					t.Errorf("event %d: usage = %s, want null before the usage chunk", i, raw["usage"])
				}
				d := c.Choices[0].Delta
				if i == 0 {
					if string(choice["delta"]) != `{"role":"assistant","content":""}` {
						t.Errorf("first delta = %s, want the role chunk", choice["delta"])
					}
					continue
				}
				if d.Role != nil || d.Content == nil || *d.Content == "" {
					t.Errorf("event %d: delta %s, want content only", i, choice["delta"])
				}
				contents = append(contents, *d.Content)
				if fr := c.Choices[0].FinishReason; fr != nil {
					finish = append(finish, *fr)
					finishAt = i
				}
			}
			if len(finish) != 1 {
				t.Fatalf("finish reasons %v, want exactly one on the last content chunk", finish)
			}
			n := len(contents)
			if n != got.contentChunks || n < 1 || n > maxTokens {
				t.Fatalf("%d content chunks, want 1..%d", n, maxTokens)
			}
			if tt.ignoreEOS && n != maxTokens {
				t.Errorf("ignore_eos gave %d tokens, want %d", n, maxTokens)
			}
			wantFinish := "stop"
			if n == maxTokens {
				wantFinish = "length"
			}
			if finish[0] != wantFinish {
				t.Errorf("finish_reason %q with %d/%d tokens, want %q", finish[0], n, maxTokens, wantFinish)
			}
			lastContent := len(evs) - 2
			if tt.includeUsage {
				lastContent--
				if usageSeen == nil {
					t.Fatal("no usage chunk")
				}
				if usageSeen.CompletionTokens != n || usageSeen.PromptTokens != 11 ||
					usageSeen.TotalTokens != usageSeen.PromptTokens+n {
					t.Errorf("usage %+v, want completion %d prompt 11", *usageSeen, n)
				}
			} else if usageSeen != nil {
				t.Error("usage chunk sent without include_usage")
			}
			if lastContent != n || finishAt != n {
				t.Errorf("last content chunk at event %d, finish_reason at %d, want both at %d", lastContent, finishAt, n)
			}
		})
	}
}

func TestNonStreaming(t *testing.T) {
	_, base := startSim(t, fast)
	resp := post(t, base, chatBody("sim-model", 5, false, false, true))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var raw map[string]json.RawMessage
	decodeJSON(t, resp, &raw)
	var c struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		Model   string `json:"model"`
		Choices []struct {
			Index   int `json:"index"`
			Message struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage usage `json:"usage"`
	}
	b, _ := json.Marshal(raw)
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.ID, "chatcmpl-") || c.Object != "chat.completion" || c.Created == 0 || c.Model != "sim-model" {
		t.Errorf("header fields: %s", b)
	}
	if string(raw["system_fingerprint"]) != "null" {
		t.Errorf("system_fingerprint = %s", raw["system_fingerprint"])
	}
	if len(c.Choices) != 1 {
		t.Fatalf("choices: %s", raw["choices"])
	}
	ch := c.Choices[0]
	if ch.Message.Role != "assistant" || len(strings.Fields(ch.Message.Content)) != 5 || ch.FinishReason != "length" {
		t.Errorf("choice = %+v", ch)
	}
	if c.Usage != (usage{PromptTokens: 11, CompletionTokens: 5, TotalTokens: 16}) {
		t.Errorf("usage = %+v", c.Usage)
	}
}

func TestModels(t *testing.T) {
	_, base := startSim(t, Config{Model: "my-model"})
	resp, err := http.Get(base + "/models")
	if err != nil {
		t.Fatal(err)
	}
	var got modelList
	decodeJSON(t, resp, &got)
	if got.Object != "list" || len(got.Data) != 1 {
		t.Fatalf("models = %+v", got)
	}
	m := got.Data[0]
	if m.ID != "my-model" || m.Object != "model" || m.OwnedBy != "planner-sim" || m.Created == 0 {
		t.Errorf("model = %+v", m)
	}
}

func TestPromptTokens(t *testing.T) {
	tests := []struct {
		name     string
		messages string
		want     int
	}{
		{"one short message", `[{"role":"user","content":"hi"}]`, 3 + 4 + 1},
		{"exactly four bytes", `[{"role":"user","content":"abcd"}]`, 3 + 4 + 1},
		{"five bytes round up", `[{"role":"user","content":"abcde"}]`, 3 + 4 + 2},
		{"two messages", `[{"role":"system","content":"` + strings.Repeat("x", 400) + `"},{"role":"user","content":"hello"}]`, 3 + 4 + 100 + 4 + 2},
		{"content parts", `[{"role":"user","content":[{"type":"text","text":"abcd"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"efgh"}]}]`, 3 + 4 + 2},
		{"null content", `[{"role":"assistant","content":null}]`, 3 + 4},
		{"multibyte counts bytes", `[{"role":"user","content":"ééé"}]`, 3 + 4 + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, e := parseRequest([]byte(`{"model":"m","messages":`+tt.messages+`}`), true)
			if e != nil {
				t.Fatal(e)
			}
			if p.promptTokens != tt.want {
				t.Errorf("prompt tokens = %d, want %d", p.promptTokens, tt.want)
			}
		})
	}
	// The probe calibrates prompt length against usage: tokens must grow
	// linearly with the text.
	var prev int
	for n := 4000; n <= 16000; n += 4000 {
		p, _ := parseRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"`+strings.Repeat("w", n)+`"}]}`), true)
		if prev != 0 && p.promptTokens-prev != 1000 {
			t.Errorf("4000 more bytes added %d tokens, want 1000", p.promptTokens-prev)
		}
		prev = p.promptTokens
	}
}

func TestBadRequests(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		status                   int
		typ, param, code         string
	}{
		{"malformed JSON", "POST", "/chat/completions", `{"model":`, 400, "invalid_request_error", "", ""},
		{"missing messages", "POST", "/chat/completions", `{"model":"sim-model"}`, 400, "invalid_request_error", "messages", ""},
		{"empty messages", "POST", "/chat/completions", `{"model":"sim-model","messages":[]}`, 400, "invalid_request_error", "messages", ""},
		{"missing model", "POST", "/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "model", ""},
		{"bad content", "POST", "/chat/completions", `{"model":"sim-model","messages":[{"role":"user","content":42}]}`, 400, "invalid_request_error", "messages.[0].content", ""},
		{"max_tokens zero", "POST", "/chat/completions", `{"model":"sim-model","messages":[{"role":"user","content":"x"}],"max_tokens":0}`, 400, "invalid_request_error", "max_tokens", ""},
		{"max_completion_tokens negative", "POST", "/chat/completions", `{"model":"sim-model","messages":[{"role":"user","content":"x"}],"max_completion_tokens":-1}`, 400, "invalid_request_error", "max_completion_tokens", ""},
		{"max_tokens not a number", "POST", "/chat/completions", `{"model":"sim-model","messages":[{"role":"user","content":"x"}],"max_tokens":"ten"}`, 400, "invalid_request_error", "", ""},
		{"unknown model", "POST", "/chat/completions", `{"model":"gpt-9","messages":[{"role":"user","content":"x"}]}`, 404, "invalid_request_error", "", "model_not_found"},
		{"wrong method", "GET", "/chat/completions", ``, 405, "invalid_request_error", "", ""},
		{"unknown path", "POST", "/embeddings", `{}`, 404, "invalid_request_error", "", ""},
	}
	srv, base := startSim(t, fast)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, base+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.status)
			}
			checkError(t, resp, tt.typ, tt.param, tt.code)
		})
	}
	var statuses []int
	for _, a := range srv.Arrivals() {
		statuses = append(statuses, a.Status)
	}
	if want := []int{400, 400, 400, 400, 400, 400, 400, 400, 404, 405}; !slices.Equal(statuses, want) {
		t.Errorf("arrival statuses = %v, want %v", statuses, want)
	}
}

// checkError asserts OpenAI's error shape with the given type, param and
// code ("" for null).
func checkError(t *testing.T, resp *http.Response, typ, param, code string) {
	t.Helper()
	var body map[string]map[string]json.RawMessage
	decodeJSON(t, resp, &body)
	e, ok := body["error"]
	if !ok {
		t.Fatalf("no error object: %v", body)
	}
	for _, key := range []string{"message", "type", "param", "code"} {
		if _, ok := e[key]; !ok {
			t.Errorf("error lacks %q", key)
		}
	}
	var msg string
	if json.Unmarshal(e["message"], &msg) != nil || msg == "" {
		t.Errorf("message = %s", e["message"])
	}
	for key, want := range map[string]string{"type": typ, "param": param, "code": code} {
		wantJSON := "null"
		if want != "" {
			wantJSON = fmt.Sprintf("%q", want)
		}
		if string(e[key]) != wantJSON {
			t.Errorf("%s = %s, want %s", key, e[key], wantJSON)
		}
	}
}

func TestAPIKey(t *testing.T) {
	_, base := startSim(t, Config{APIKey: "s3cret", TTFT: time.Microsecond, ITL: time.Microsecond})
	body := chatBody("sim-model", 2, false, false, true)
	tests := []struct {
		name   string
		header []string
		status int
	}{
		{"no key", nil, 401},
		{"wrong key", []string{"Authorization", "Bearer nope"}, 401},
		{"not bearer", []string{"Authorization", "s3cret"}, 401},
		{"right key", []string{"Authorization", "Bearer s3cret"}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, base, body, tt.header...)
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.status == 401 {
				checkError(t, resp, "invalid_request_error", "", "invalid_api_key")
			} else {
				resp.Body.Close()
			}
		})
	}
	resp, err := http.Get(base + "/models")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 401 {
		t.Errorf("/models without key: status %d, want 401", resp.StatusCode)
	}
	checkError(t, resp, "invalid_request_error", "", "invalid_api_key")
}

func TestOutputLengths(t *testing.T) {
	const maxTokens = 24
	lengths := func(seed uint64, ignoreEOS bool) []int {
		cfg := fast
		cfg.OutputTokens = 16
		cfg.Seed = seed
		_, base := startSim(t, cfg)
		var out []int
		for range 30 {
			var c completion
			decodeJSON(t, post(t, base, chatBody("sim-model", maxTokens, false, false, ignoreEOS)), &c)
			n := c.Usage.CompletionTokens
			if n < 1 || n > maxTokens {
				t.Fatalf("completion tokens %d outside [1, %d]", n, maxTokens)
			}
			if want := map[bool]string{true: "length", false: "stop"}[n == maxTokens]; c.Choices[0].FinishReason != want {
				t.Errorf("%d tokens: finish_reason %q, want %q", n, c.Choices[0].FinishReason, want)
			}
			out = append(out, n)
		}
		return out
	}

	a, b, other := lengths(7, false), lengths(7, false), lengths(8, false)
	if !slices.Equal(a, b) {
		t.Errorf("same seed gave different lengths:\n%v\n%v", a, b)
	}
	if slices.Equal(a, other) {
		t.Errorf("different seeds gave the same lengths %v", a)
	}
	distinct := slices.Compact(slices.Sorted(slices.Values(a)))
	if len(distinct) < 5 {
		t.Errorf("lengths barely vary: %v", a)
	}
	for _, n := range lengths(7, true) {
		if n != maxTokens {
			t.Fatalf("ignore_eos gave %d tokens, want %d", n, maxTokens)
		}
	}
}

func TestDefaultMaxTokensAndMaxCompletionTokens(t *testing.T) {
	_, base := startSim(t, fast)
	tests := []struct {
		name string
		body string
		want int
	}{
		{"max_completion_tokens", `{"model":"sim-model","messages":[{"role":"user","content":"x"}],"max_completion_tokens":3,"ignore_eos":true}`, 3},
		{"max_completion_tokens wins", `{"model":"sim-model","messages":[{"role":"user","content":"x"}],"max_tokens":9,"max_completion_tokens":4,"ignore_eos":true}`, 4},
		{"content parts", `{"model":"sim-model","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"max_tokens":2,"ignore_eos":true}`, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c completion
			decodeJSON(t, post(t, base, tt.body), &c)
			if c.Usage.CompletionTokens != tt.want {
				t.Errorf("completion tokens = %d, want %d", c.Usage.CompletionTokens, tt.want)
			}
		})
	}
}

func TestArrivals(t *testing.T) {
	srv, base := startSim(t, fast)
	before := time.Now()
	post(t, base, chatBody("sim-model", 3, false, false, true)).Body.Close()
	post(t, base, `{"model":"sim-model","messages":[{"role":"user","content":"abcdefgh"}]}`).Body.Close()
	post(t, base, chatBody("nope", 3, false, false, true)).Body.Close()
	got := srv.Arrivals()
	const chat = "/v1/chat/completions"
	want := []Arrival{{Status: 200, Path: chat, PromptTokens: 11, MaxTokens: 3}, {Status: 200, Path: chat, PromptTokens: 9}, {Status: 404, Path: chat, PromptTokens: 11, MaxTokens: 3}}
	if len(got) != len(want) {
		t.Fatalf("arrivals = %+v", got)
	}
	for i := range got {
		if got[i].At.Before(before) || (i > 0 && got[i].At.Before(got[i-1].At)) {
			t.Errorf("arrival %d at %v, out of order", i, got[i].At)
		}
		got[i].At = time.Time{}
		if got[i] != want[i] {
			t.Errorf("arrival %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestArrivalsBounded(t *testing.T) {
	srv, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for i := range maxArrivals + 10 {
		srv.record(Arrival{At: t0.Add(time.Duration(i)), Status: 200, MaxTokens: i})
	}
	got := srv.Arrivals()
	if len(got) != maxArrivals || got[0].MaxTokens != 10 || got[len(got)-1].MaxTokens != maxArrivals+9 {
		t.Fatalf("kept %d arrivals from %d to %d", len(got), got[0].MaxTokens, got[len(got)-1].MaxTokens)
	}
}

func TestTokenChunksMatchText(t *testing.T) {
	e := newChunkEncoder("chatcmpl-x", 1, []byte(`"m"`), false, false)
	var streamed, whole strings.Builder
	for i := range 3*len(words) + 1 {
		e.buf = e.buf[:0]
		e.tokenChunk(0, i, "", true, "")
		var c testChunk
		if err := json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimPrefix(string(e.buf), "data: "), "\n\n")), &c); err != nil {
			t.Fatalf("token %d: %v", i, err)
		}
		streamed.WriteString(*c.Choices[0].Delta.Content)
		whole.WriteString(token(i))
	}
	if streamed.String() != whole.String() || strings.Count(whole.String(), " ") != 3*len(words) {
		t.Errorf("streamed %q, whole %q", streamed.String(), whole.String())
	}
}

// TestInjectedFailures: with FailRate 0.25 about a quarter of the requests
// fail whatever the load, the same ones for the same seed; 429s ask for
// FailRetryAfter, 500s are server errors.
func TestInjectedFailures(t *testing.T) {
	statuses := func(status int, seed uint64) []int {
		cfg := fast
		cfg.FailRate, cfg.FailStatus, cfg.Seed, cfg.FailRetryAfter = 0.25, status, seed, 30*time.Millisecond
		_, base := startSim(t, cfg)
		var out []int
		for range 400 {
			resp := post(t, base, chatBody("sim-model", 1, false, false, true))
			if resp.StatusCode == http.StatusTooManyRequests {
				if resp.Header.Get("retry-after-ms") != "30" || resp.Header.Get("retry-after") != "1" {
					t.Errorf("injected 429 headers: %v", resp.Header)
				}
				checkError(t, resp, "rate_limit_exceeded", "", "rate_limit_exceeded")
			} else {
				resp.Body.Close()
			}
			out = append(out, resp.StatusCode)
		}
		return out
	}
	for _, status := range []int{429, 500} {
		a, b := statuses(status, 5), statuses(status, 5)
		if !slices.Equal(a, b) {
			t.Errorf("status %d: the same seed failed different requests", status)
		}
		failed := 0
		for _, s := range a {
			switch s {
			case status:
				failed++
			case http.StatusOK:
			default:
				t.Fatalf("status %d among injected %d failures", s, status)
			}
		}
		// Binomial(400, 0.25): mean 100, sd 8.7; the seed is fixed.
		if failed < 70 || failed > 130 {
			t.Errorf("%d of 400 requests failed with %d, want about 100", failed, status)
		}
	}
}

// TestServedModel: with ServedModel, requests still name Model, and every
// answer (each streamed chunk, the usage chunk, a whole answer) and the
// model's root in /v1/models name ServedModel.
func TestServedModel(t *testing.T) {
	cfg := fast
	cfg.Model, cfg.ServedModel = "gpt-4o", "gpt-4o-mini"
	_, base := startSim(t, cfg)
	s := stream(t, base, chatBody("gpt-4o", 3, true, true, true))
	chunks := 0
	for _, ev := range s.events[:len(s.events)-1] {
		var c testChunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatal(err)
		}
		if c.Model != "gpt-4o-mini" {
			t.Errorf("chunk names %q: %s", c.Model, ev)
		}
		chunks++
	}
	if chunks < 4 || !strings.Contains(s.events[len(s.events)-2], `"usage":{`) {
		t.Errorf("%d chunks, the last %s", chunks, s.events[len(s.events)-2])
	}
	var whole struct {
		Model string `json:"model"`
	}
	decodeJSON(t, post(t, base, chatBody("gpt-4o", 3, false, false, true)), &whole)
	if whole.Model != "gpt-4o-mini" {
		t.Errorf("a whole answer names %q", whole.Model)
	}
	if resp := post(t, base, chatBody("gpt-4o-mini", 3, false, false, true)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a request naming the served model: %d, want 404 (requests name the model)", resp.StatusCode)
	}
	resp, err := http.Get(base + "/models")
	if err != nil {
		t.Fatal(err)
	}
	var models modelList
	decodeJSON(t, resp, &models)
	if m := models.Data[0]; m.ID != "gpt-4o" || m.Root != "gpt-4o-mini" {
		t.Errorf("/v1/models lists %+v", m)
	}
}
