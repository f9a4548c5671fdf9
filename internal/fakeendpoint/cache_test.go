package fakeendpoint

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// cacheSim has a prefix cache of 4,096 tokens, a base TTFT of 100 ms and
// 20 ms of prefill per 1,000 uncached tokens.
var cacheSim = Config{TTFT: 100 * time.Millisecond, PrefillPer1K: 20 * time.Millisecond, ITL: time.Millisecond, ITLGrowth: NoGrowth,
	PrefixCacheTokens: 4096}

// cachedBody is a streamed chat request of one user message, with usage.
func cachedBody(text, salt string) string {
	extra := ""
	if salt != "" {
		extra = fmt.Sprintf(`,"cache_salt":%q`, salt)
	}
	return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}],"max_tokens":2,"ignore_eos":true,"stream":true,`+
		`"stream_options":{"include_usage":true}%s}`, DefaultModel, text, extra)
}

// usageOf is the usage chunk of a stream.
func usageOf(t *testing.T, s streamed) usage {
	t.Helper()
	for _, e := range s.events {
		var c testChunk
		if json.Unmarshal([]byte(e), &c) == nil && c.Usage != nil {
			return *c.Usage
		}
	}
	t.Fatalf("no usage in %q", s.events)
	return usage{}
}

// cachedTokens is usage.prompt_tokens_details.cached_tokens, failing
// when the usage has no details.
func cachedTokens(t *testing.T, u usage) int {
	t.Helper()
	if u.PromptTokensDetails == nil {
		t.Fatalf("usage %+v has no prompt_tokens_details", u)
	}
	return u.PromptTokensDetails.CachedTokens
}

// TestPrefixCacheByHand: a user message of 4,000 bytes is 3 + 4 + 1,000 =
// 1,007 prompt tokens, of which the message's 1,004 can be cached in
// whole blocks of 16: 62 blocks, 992 tokens. The first request prefills
// all of them, 100 + 20 · 1.007 = 120.14 ms to its first token; the same
// prompt again gets 992 cached and prefills 15, 100.3 ms. A prompt that
// shares only its first 2,048 bytes (4 + 512 tokens: 32 whole blocks) has
// 512 cached; a prompt of another start, or the same under another
// cache_salt, none.
func TestPrefixCacheByHand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, base := startBubble(t, cacheSim)
		long := strings.Repeat("abcd", 1000)
		for i, tc := range []struct {
			name, text, salt string
			cached           int
			ttft             time.Duration
		}{
			{"first", long, "", 0, 120140 * time.Microsecond},
			{"again", long, "", 992, 100300 * time.Microsecond},
			{"shared start", long[:2048] + strings.Repeat("wxyz", 488), "", 512, 109900 * time.Microsecond},
			{"another start", "z" + long[1:], "", 0, 120140 * time.Microsecond},
			{"another salt", long, "tenant-b", 0, 120140 * time.Microsecond},
		} {
			s := stream(t, base, cachedBody(tc.text, tc.salt))
			u := usageOf(t, s)
			if got := cachedTokens(t, u); got != tc.cached || u.PromptTokens != 1007 {
				t.Errorf("%d %s: %d of %d prompt tokens cached, want %d of 1007", i, tc.name, got, u.PromptTokens, tc.cached)
			}
			if s.ttft != tc.ttft {
				t.Errorf("%d %s: TTFT %s, want %s", i, tc.name, ms(s.ttft), ms(tc.ttft))
			}
		}
	})
}

// TestPrefixCacheMinimumAndEviction: under a minimum of 1,024 tokens the
// 512 shared tokens count for nothing; a cache of 1,024 tokens (64
// blocks) that took 62 blocks of one prompt and then 62 of another has
// evicted the first prompt's leading blocks, so it serves it nothing.
func TestPrefixCacheMinimumAndEviction(t *testing.T) {
	long := strings.Repeat("abcd", 1000)
	synctest.Test(t, func(t *testing.T) {
		cfg := cacheSim
		cfg.PrefixCacheMinTokens = 1024
		_, base := startBubble(t, cfg)
		stream(t, base, cachedBody(long, ""))
		if got := cachedTokens(t, usageOf(t, stream(t, base, cachedBody(long[:2048]+strings.Repeat("wxyz", 488), "")))); got != 0 {
			t.Errorf("512 shared tokens under a minimum of 1024: %d cached, want 0", got)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		cfg := cacheSim
		cfg.PrefixCacheTokens = 1024
		_, base := startBubble(t, cfg)
		stream(t, base, cachedBody(long, ""))
		stream(t, base, cachedBody("z"+long[1:], ""))
		if got := cachedTokens(t, usageOf(t, stream(t, base, cachedBody(long, "")))); got != 0 {
			t.Errorf("an evicted prompt: %d cached, want 0", got)
		}
	})
}

// TestPrefixCacheWhilePrefilling: two requests of one prompt admitted at
// once both prefill it (neither block is ready while the other computes
// it); a third after them is served from the cache.
func TestPrefixCacheWhilePrefilling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, base := startBubble(t, cacheSim)
		long := strings.Repeat("abcd", 1000)
		a, b := goStream(t, base, cachedBody(long, "")), goStream(t, base, cachedBody(long, ""))
		for _, ch := range []<-chan timed{a, b} {
			if got := cachedTokens(t, usageOf(t, (<-ch).s)); got != 0 {
				t.Errorf("a request admitted during the other's prefill: %d cached, want 0", got)
			}
		}
		if got := cachedTokens(t, usageOf(t, stream(t, base, cachedBody(long, "")))); got != 992 {
			t.Errorf("after both: %d cached, want 992", got)
		}
	})
}

// TestPrefixCacheOffByDefault: without a cache the usage has no
// prompt_tokens_details and the metrics no prefix-cache counters; with
// one, a whole answer's usage has them too, and /metrics counts the
// tokens asked for and served.
func TestPrefixCacheOffByDefault(t *testing.T) {
	body := strings.Replace(cachedBody(strings.Repeat("abcd", 1000), ""), `"stream":true`, `"stream":false`, 1)
	_, plain := startSim(t, fast)
	resp := post(t, plain, body)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(raw), "prompt_tokens_details") {
		t.Errorf("a simulator without a cache sent %s", raw)
	}
	if m := metricsText(t, plain); strings.Contains(m, "prefix_cache") {
		t.Errorf("prefix-cache metrics without a cache:\n%s", m)
	}
	cfg := fast
	cfg.PrefixCacheTokens = 4096
	_, cached := startSim(t, cfg)
	var c completion
	for range 2 {
		decodeJSON(t, post(t, cached, body), &c)
	}
	if got := cachedTokens(t, c.Usage); got != 992 {
		t.Errorf("a whole answer's usage: %d cached, want 992", got)
	}
	m := metricsText(t, cached)
	for _, want := range []string{`vllm:prefix_cache_queries_total{engine="0",model_name="sim-model"} 2014`, `vllm:prefix_cache_hits_total{engine="0",model_name="sim-model"} 992`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, m)
		}
	}
}

// metricsText is the /metrics page of the simulator at base.
func metricsText(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(base, "/v1") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPrefixCacheConfig(t *testing.T) {
	for _, cfg := range []Config{{PrefixCacheTokens: -1}, {PrefixCacheMinTokens: -1, PrefixCacheTokens: 10}, {PrefixCacheMinTokens: 1024}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) took it", cfg)
		}
	}
}
