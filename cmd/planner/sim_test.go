package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startSimCmd runs `planner sim` with args in the background and returns its
// base URL, a cancel that stops it, and the exit code once it has stopped.
func startSimCmd(t *testing.T, args ...string) (url string, cancel context.CancelFunc, exit <-chan int, stderr *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pr, pw := io.Pipe()
	stderr = &bytes.Buffer{}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, append([]string{"sim", "--listen", "127.0.0.1:0"}, args...), strings.NewReader(""), pw, stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("reading the base URL: %v (exit %d)", err, <-code)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	return strings.TrimSpace(line), cancel, code, stderr
}

func TestSimCommandServesAndStops(t *testing.T) {
	url, cancel, exit, stderr := startSimCmd(t, "--ttft", "5ms", "--itl", "1ms", "--model", "rehearsal")
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/v1") || strings.HasSuffix(url, ":0/v1") {
		t.Fatalf("printed URL %q", url)
	}
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(
		`{"model":"rehearsal","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"ignore_eos":true}`))
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Model string `json:"model"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || body.Model != "rehearsal" || body.Usage.CompletionTokens != 4 {
		t.Fatalf("status %d, body %+v, err %v", resp.StatusCode, body, err)
	}
	cancel()
	select {
	case code := <-exit:
		if code != exitOK {
			t.Fatalf("exit code %d, want 0; stderr: %s", code, stderr)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("sim did not stop after cancel")
	}
	if !strings.Contains(stderr.String(), "sim listening") {
		t.Errorf("stderr lacks the start message: %q", stderr)
	}
}

func TestSimCommandAPIKeyEnv(t *testing.T) {
	t.Setenv("PLANNER_TEST_SIM_KEY", "k-123")
	url, cancel, exit, _ := startSimCmd(t, "--api-key-env", "PLANNER_TEST_SIM_KEY", "--ttft", "1ms", "--itl", "1ms")
	for _, tt := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer k-123", 200}} {
		req, _ := http.NewRequest(http.MethodGet, url+"/models", nil)
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("Authorization %q: status %d, want %d", tt.auth, resp.StatusCode, tt.want)
		}
	}
	cancel()
	if code := <-exit; code != exitOK {
		t.Fatalf("exit code %d", code)
	}
}

func TestSimCommandBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		flag string // named in the message
	}{
		{"unparsable duration", []string{"--ttft", "soon"}, "ttft"},
		{"zero max-num-seqs", []string{"--max-num-seqs", "0"}, "max-num-seqs"},
		{"negative max-num-seqs", []string{"--max-num-seqs", "-2"}, "max-num-seqs"},
		{"zero itl", []string{"--itl", "0s"}, "itl"},
		{"negative itl-growth", []string{"--itl-growth", "-0.1"}, "itl-growth"},
		{"itl-growth not a number", []string{"--itl-growth", "NaN"}, "--itl-growth must be a finite number"},
		{"infinite itl-growth", []string{"--itl-growth", "Inf"}, "--itl-growth must be a finite number"},
		{"ttft-growth not a number", []string{"--ttft-growth", "NaN"}, "--ttft-growth"},
		{"negative prefill", []string{"--prefill-per-1k", "-1ms"}, "prefill-per-1k"},
		{"negative rpm", []string{"--rpm", "-5"}, "rpm"},
		{"negative cache", []string{"--prefix-cache-tokens", "-5"}, "prefix-cache-tokens"},
		{"a minimum without a cache", []string{"--prefix-cache-min-tokens", "1024"}, "prefix-cache-min-tokens"},
		{"unknown accounting", []string{"--token-accounting", "guess"}, "token-accounting"},
		{"unset key variable", []string{"--api-key-env", "PLANNER_TEST_SIM_UNSET"}, "api-key-env"},
		{"positional argument", []string{"extra"}, "extra"},
		// An empty name would serve the default while the URL line, the
		// JSON and the log named no model.
		{"empty model", []string{"--model", ""}, "--model must be a model id, got \"\""},
		{"blank model", []string{"--model", "  "}, "--model must be a model id"},
		{"empty served model", []string{"--served-model", ""}, "--served-model must be a model id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"sim", "--listen", "127.0.0.1:0"}, tt.args...)
			// A flag taken as good serves until the context ends.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if code := run(ctx, args, strings.NewReader(""), &out, &errOut); code != exitUsage {
				t.Fatalf("exit code %d, want %d; stderr: %s", code, exitUsage, errOut.String())
			}
			if !strings.Contains(errOut.String(), tt.flag) {
				t.Errorf("stderr %q does not name %q", errOut.String(), tt.flag)
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q, want nothing", out.String())
			}
		})
	}
}

func TestSimCommandListenError(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"sim", "--listen", "127.0.0.1:notaport"}, strings.NewReader(""), &out, &errOut)
	if code != exitError || !strings.Contains(errOut.String(), "listening on") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}

// TestSimCommandInjectsFailures: --fail-rate 1 --fail-status 500 refuses
// every request with a 500; -o json prints the URL and the setting.
func TestSimCommandInjectsFailures(t *testing.T) {
	line, cancel, _, _ := startSimCmd(t, "--fail-rate", "1", "--fail-status", "500", "--ttft", "1ms", "--itl", "1ms", "-o", "json")
	defer cancel()
	var info simInfo
	if err := json.Unmarshal([]byte(line), &info); err != nil || info.FailRate != 1 || info.FailStatus != 500 || !strings.HasSuffix(info.BaseURL, "/v1") {
		t.Fatalf("-o json printed %q (%v)", line, err)
	}
	resp, err := http.Post(info.BaseURL+"/chat/completions", "application/json", strings.NewReader(
		`{"model":"sim-model","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("status %d, want 500", resp.StatusCode)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--fail-rate", "2"}, "planner: --fail-rate must be between 0 and 1 (got 2)\n"},
		{[]string{"--fail-status", "503"}, "planner: --fail-status must be 429 or 500 (got 503)\n"},
		{[]string{"--ttft-growth", "Inf"}, "planner: --ttft-growth must be a finite number, not negative (got +Inf)\n"},
		{[]string{"--prefix-cache-min-tokens", "1024"}, "planner: --prefix-cache-min-tokens must not be negative, and needs --prefix-cache-tokens (got 1024)\n"},
		{[]string{"-o", "yaml"}, "-o/--output: the output format must be one of table, json"},
	} {
		code, _, errOut := runCLI(t, "", append([]string{"sim", "--listen", "127.0.0.1:0"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.says) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
		}
	}
}

// TestSimCommandPrefixCache: with --prefix-cache-tokens the same prompt
// twice is served from the cache the second time, as usage says.
func TestSimCommandPrefixCache(t *testing.T) {
	url, cancel, _, _ := startSimCmd(t, "--ttft", "1ms", "--itl", "1ms", "--prefill-per-1k", "1ms", "--prefix-cache-tokens", "100000")
	defer cancel()
	body := `{"model":"sim-model","messages":[{"role":"user","content":"` + strings.Repeat("abcd", 1000) + `"}],"max_tokens":2,"ignore_eos":true}`
	var cached []int
	for range 2 {
		resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Usage struct {
				Details struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		err = json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		cached = append(cached, c.Usage.Details.Cached)
	}
	if cached[0] != 0 || cached[1] != 992 {
		t.Errorf("cached tokens %v, want [0 992]", cached)
	}
}
