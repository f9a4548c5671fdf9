package fakeendpoint

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// postTo sends body to path under base (the /v1 URL).
func postTo(t *testing.T, base, path, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client(base).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return resp
}

// events reads a whole event stream into its data payloads.
func events(t *testing.T, resp *http.Response) []string {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, data)
		}
	}
	return out
}

// textChunk is a streamed text_completion chunk as a client decodes it.
type textChunk struct {
	Object  string `json:"object"`
	Choices []struct {
		Index        int     `json:"index"`
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

// TestCompletions serves /v1/completions as vLLM bench serve's default
// backend calls it: a string prompt, streamed with usage, and whole.
func TestCompletions(t *testing.T) {
	_, base := startSim(t, fast)
	body := `{"model":"sim-model","prompt":"abcdefgh","max_tokens":5,"ignore_eos":true,"stream":true,` +
		`"stream_options":{"include_usage":true},"temperature":0.0,"repetition_penalty":1.0,"logprobs":null}`
	evs := events(t, postTo(t, base, "/completions", body))
	if evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", evs)
	}
	var text strings.Builder
	var finish string
	var u *usage
	for _, ev := range evs[:len(evs)-1] {
		var c textChunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatalf("chunk %q: %v", ev, err)
		}
		if c.Object != "text_completion" {
			t.Errorf("object %q", c.Object)
		}
		if c.Usage != nil {
			u = c.Usage
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Text)
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if text.String() != "the quick brown fox jumps" || finish != "length" {
		t.Errorf("text %q, finish %q", text.String(), finish)
	}
	// "abcdefgh" is ceil(8/4) = 2 prompt tokens.
	if u == nil || u.PromptTokens != 2 || u.CompletionTokens != 5 || u.TotalTokens != 7 {
		t.Errorf("usage %+v", u)
	}

	var whole textCompletion
	decodeJSON(t, postTo(t, base, "/completions", `{"model":"sim-model","prompt":[1,2,3],"max_tokens":2,"ignore_eos":true}`), &whole)
	if whole.Object != "text_completion" || !strings.HasPrefix(whole.ID, "cmpl-") || len(whole.Choices) != 1 ||
		whole.Choices[0].Text != "the quick" || whole.Usage.PromptTokens != 3 {
		t.Errorf("completion %+v", whole)
	}
}

// TestChoicesAndStop: n choices, each the same text, and a stop sequence
// that ends the output before it with finish_reason stop.
func TestChoicesAndStop(t *testing.T) {
	_, base := startSim(t, fast)
	var c completion
	decodeJSON(t, post(t, base, `{"model":"sim-model","messages":[{"role":"user","content":"x"}],"max_tokens":9,"ignore_eos":true,"n":3,"stop":[" jumps","never"]}`), &c)
	if len(c.Choices) != 3 {
		t.Fatalf("%d choices, want 3", len(c.Choices))
	}
	for i, ch := range c.Choices {
		// The stop " jumps" completes at token 5 ("the quick brown fox jumps").
		if ch.Index != i || ch.Message.Content != "the quick brown fox" || ch.FinishReason != "stop" {
			t.Errorf("choice %d: %+v", i, ch)
		}
	}
	if c.Usage.CompletionTokens != 15 { // 5 tokens × 3 choices
		t.Errorf("usage %+v", c.Usage)
	}
	// Streamed: every token step carries each choice; the text stops
	// before the stop sequence there too.
	evs := events(t, postTo(t, base, "/completions", `{"model":"sim-model","prompt":"x","max_tokens":9,"ignore_eos":true,"n":2,"stop":"fox","stream":true}`))
	texts := map[int]string{}
	for _, ev := range evs[:len(evs)-1] {
		var tc textChunk
		if err := json.Unmarshal([]byte(ev), &tc); err != nil {
			t.Fatal(err)
		}
		for _, ch := range tc.Choices {
			texts[ch.Index] += ch.Text
		}
	}
	if len(texts) != 2 || texts[0] != "the quick brown " || texts[1] != texts[0] {
		t.Errorf("streamed choices %v", texts)
	}
}

// TestUnsimulatedOptionsAreRefused: an option that would change the answer
// and is not simulated is a 400 that names it; an inert one, or one at
// the value where it does nothing, is accepted.
func TestUnsimulatedOptionsAreRefused(t *testing.T) {
	_, base := startSim(t, fast)
	for _, tc := range []struct {
		path, extra, param string
	}{
		{"/chat/completions", `"tools":[{"type":"function","function":{"name":"f"}}]`, "tools"},
		{"/chat/completions", `"response_format":{"type":"json_object"}`, "response_format"},
		{"/chat/completions", `"logprobs":true,"top_logprobs":2`, "logprobs"},
		{"/completions", `"echo":true`, "echo"},
		{"/completions", `"suffix":"!"`, "suffix"},
	} {
		body := `{"model":"sim-model","max_tokens":2,` + tc.extra + `,`
		if tc.path == "/completions" {
			body += `"prompt":"x"}`
		} else {
			body += `"messages":[{"role":"user","content":"x"}]}`
		}
		resp := postTo(t, base, tc.path, body)
		var e struct {
			Error apiError `json:"error"`
		}
		decodeJSON(t, resp, &e)
		if resp.StatusCode != http.StatusBadRequest || e.Error.Param == nil || *e.Error.Param != tc.param ||
			!strings.Contains(e.Error.Message, "does not simulate "+tc.param) {
			t.Errorf("%s with %s: %d %+v", tc.path, tc.extra, resp.StatusCode, e.Error)
		}
	}
	resp := post(t, base, `{"model":"sim-model","messages":[{"role":"user","content":"x"}],"max_tokens":2,"logprobs":false,"top_p":0.9,"seed":7,"stop":null}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("inert options refused: %d", resp.StatusCode)
	}
}

// TestVLLMRoutes: /health, root in /v1/models, x-request-id on every answer,
// and /metrics with vLLM's names counting what was served.
func TestVLLMRoutes(t *testing.T) {
	_, base := startSim(t, fast)
	root := strings.TrimSuffix(base, "/v1")
	resp, err := client(base).Get(root + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("/health: %d, x-request-id %q", resp.StatusCode, resp.Header.Get("X-Request-Id"))
	}

	var models struct {
		Data []modelInfo `json:"data"`
	}
	resp, err = client(base).Get(base + "/models")
	if err != nil {
		t.Fatal(err)
	}
	decodeJSON(t, resp, &models)
	if len(models.Data) != 1 || models.Data[0].Root != "sim-model" || models.Data[0].Parent != nil {
		t.Errorf("models %+v", models.Data)
	}

	resp = post(t, base, chatBody("sim-model", 4, false, false, true), "X-Request-Id", "bench-42")
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); got != "bench-42" {
		t.Errorf("x-request-id %q, want the request's own", got)
	}
	resp = postTo(t, base, "/completions", `{"model":"sim-model","prompt":"x","max_tokens":3,"ignore_eos":true}`)
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); len(got) != requestIDLength {
		t.Errorf("generated x-request-id %q", got)
	}

	resp, err = client(base).Get(root + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(b)
	labels := `{engine="0",model_name="sim-model"}`
	for _, want := range []string{
		"vllm:num_requests_running" + labels + " 0",
		"vllm:num_requests_waiting" + labels + " 0",
		"vllm:time_to_first_token_seconds_count" + labels + " 2",
		"vllm:inter_token_latency_seconds_count" + labels + " 5", // 3 + 2 gaps
		"vllm:e2e_request_latency_seconds_count" + labels + " 2",
		"vllm:request_queue_time_seconds_count" + labels + " 2",
		"vllm:generation_tokens_total" + labels + " 7",
		"vllm:prompt_tokens_total" + labels + " 12", // 11 + 1
		`vllm:request_success_total{engine="0",finished_reason="length",model_name="sim-model"} 2`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", want, text)
		}
	}
}
