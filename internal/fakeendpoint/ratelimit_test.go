package fakeendpoint

import (
	"io"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

func TestFormatReset(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{time.Microsecond, "1ms"},
		{120 * time.Millisecond, "120ms"},
		{time.Second, "1s"},
		{1500 * time.Millisecond, "1.5s"},
		{6 * time.Minute, "6m0s"},
		{6*time.Minute + 999*time.Microsecond + 1, "6m0.001s"},
	}
	for _, tt := range tests {
		if got := formatReset(tt.in); got != tt.want {
			t.Errorf("formatReset(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// headerInt parses an integer header or fails.
func headerInt(t *testing.T, h http.Header, name string) int {
	t.Helper()
	v, err := strconv.Atoi(h.Get(name))
	if err != nil {
		t.Fatalf("header %s = %q: %v", name, h.Get(name), err)
	}
	return v
}

// TestRPMLimit runs under a fake clock, so that the bucket refills by
// exactly the time that passes between the requests.
func TestRPMLimit(t *testing.T) {
	synctest.Test(t, testRPMLimit)
}

func testRPMLimit(t *testing.T) {
	const rpm = 120 // refills one request every 500ms
	cfg := fast
	cfg.RPM = rpm
	srv, base := startBubble(t, cfg)
	body := chatBody("sim-model", 1, false, false, true)
	for i := range rpm {
		resp := post(t, base, body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
		h := resp.Header
		if headerInt(t, h, "x-ratelimit-limit-requests") != rpm {
			t.Errorf("limit-requests = %q", h.Get("x-ratelimit-limit-requests"))
		}
		if got, want := headerInt(t, h, "x-ratelimit-remaining-requests"), rpm-1-i; got != want {
			t.Errorf("request %d: remaining-requests = %d, want %d", i, got, want)
		}
		if _, err := time.ParseDuration(h.Get("x-ratelimit-reset-requests")); err != nil {
			t.Errorf("reset-requests = %q: %v", h.Get("x-ratelimit-reset-requests"), err)
		}
		if h.Get("x-ratelimit-limit-tokens") != "" {
			t.Error("token headers sent without a TPM limit")
		}
	}

	resp := post(t, base, body)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("request %d: status %d, want 429", rpm, resp.StatusCode)
	}
	h := resp.Header
	retryMS := headerInt(t, h, "retry-after-ms")
	if retryMS != 500 {
		t.Errorf("retry-after-ms = %d, want 500: the bucket is empty and refills one request per 500 ms", retryMS)
	}
	if got := headerInt(t, h, "retry-after"); got != (retryMS+999)/1000 {
		t.Errorf("retry-after = %d, want %d (seconds, rounded up)", got, (retryMS+999)/1000)
	}
	if headerInt(t, h, "x-ratelimit-remaining-requests") != 0 || h.Get("x-ratelimit-limit-requests") != "120" {
		t.Errorf("429 rate-limit headers: %v", h)
	}
	checkError(t, resp, "rate_limit_exceeded", "", "rate_limit_exceeded")
	refused := time.Now()

	// Retried at once it is still refused; after retry-after-ms it fits.
	resp = post(t, base, body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("immediate retry: status %d, want 429", resp.StatusCode)
	}
	time.Sleep(time.Until(refused.Add(time.Duration(retryMS)*time.Millisecond - time.Millisecond)))
	resp = post(t, base, body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a millisecond before retry-after-ms: status %d, want 429", resp.StatusCode)
	}
	time.Sleep(time.Millisecond)
	resp = post(t, base, body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("retry after retry-after-ms: status %d, want 200", resp.StatusCode)
	}

	statuses := map[int]int{}
	for _, a := range srv.Arrivals() {
		statuses[a.Status]++
	}
	if statuses[200] != rpm+1 || statuses[429] != 3 {
		t.Errorf("arrivals by status = %v", statuses)
	}
}

func TestTPMAccounting(t *testing.T) {
	const tpm, maxTokens, prompt = 1000, 400, 11
	tests := []struct {
		accounting string
		// remaining-tokens seen by the first and the second request, each
		// sent after the previous one completed
		first, second int
		// requests admitted before the first 429
		admitted int
	}{
		// prompt + max_tokens charged at admission: two fit.
		{AccountingMaxTokens, tpm - (prompt + maxTokens), tpm - 2*(prompt+maxTokens), 2},
		// prompt at admission, completion once done: a third fits, and the
		// bucket goes into debt.
		{AccountingActual, tpm - prompt, tpm - (prompt + maxTokens) - prompt, 3},
	}
	for _, tt := range tests {
		// Under a fake clock the bucket refills (1000/60 tokens a second)
		// by exactly the microseconds the requests take: nothing.
		t.Run(tt.accounting, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := fast
				cfg.TPM, cfg.TokenAccounting = tpm, tt.accounting
				_, base := startBubble(t, cfg)
				body := chatBody("sim-model", maxTokens, true, false, true)
				var remaining []int
				for {
					resp := post(t, base, body)
					if resp.StatusCode == http.StatusTooManyRequests {
						if ms := headerInt(t, resp.Header, "retry-after-ms"); ms < 1000 || ms > 60000 {
							t.Errorf("retry-after-ms = %d", ms)
						}
						checkError(t, resp, "rate_limit_exceeded", "", "rate_limit_exceeded")
						break
					}
					h := resp.Header
					if headerInt(t, h, "x-ratelimit-limit-tokens") != tpm || h.Get("x-ratelimit-limit-requests") != "" {
						t.Errorf("rate-limit headers %v", h)
					}
					remaining = append(remaining, headerInt(t, h, "x-ratelimit-remaining-tokens"))
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if len(remaining) > tt.admitted {
						t.Fatalf("admitted %d requests, want %d", len(remaining), tt.admitted)
					}
				}
				if len(remaining) != tt.admitted {
					t.Fatalf("admitted %d requests, want %d", len(remaining), tt.admitted)
				}
				for i, want := range []int{tt.first, tt.second} {
					if got := remaining[i]; got != want {
						t.Errorf("request %d: remaining-tokens = %d, want %d", i, got, want)
					}
				}
			})
		})
	}
}

func TestRequestLargerThanTPM(t *testing.T) {
	cfg := fast
	cfg.TPM, cfg.TokenAccounting = 100, AccountingMaxTokens
	_, base := startSim(t, cfg)
	resp := post(t, base, chatBody("sim-model", 400, false, false, true))
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429", resp.StatusCode)
	}
	if resp.Header.Get("retry-after") != "" || resp.Header.Get("retry-after-ms") != "" {
		t.Error("a request that can never fit must not be told when to retry")
	}
	checkError(t, resp, "rate_limit_exceeded", "", "rate_limit_exceeded")
}

func TestBucketRetryIsHonest(t *testing.T) {
	t0 := time.Now()
	tests := []struct {
		perMinute int
		level     float64
		need      float64
	}{
		{60, 0, 1},
		{7, 0.3, 1},
		{1000, -250, 408},
		{90000, 17.5, 4000},
	}
	for _, tt := range tests {
		b := newBucket(tt.perMinute, t0)
		b.Level = tt.level
		w := ceilMillis(b.wait(tt.need))
		if w <= 0 {
			t.Fatalf("%+v: wait %v", tt, w)
		}
		b.advance(t0.Add(w))
		if b.wait(tt.need) != 0 {
			t.Errorf("%+v: after waiting %v the bucket holds %v, short of %v", tt, w, b.Level, tt.need)
		}
		if early := w - 2*time.Millisecond; early > 0 {
			c := newBucket(tt.perMinute, t0)
			c.Level = tt.level
			c.advance(t0.Add(early))
			if c.wait(tt.need) == 0 {
				t.Errorf("%+v: fits already after %v, advertised %v", tt, early, w)
			}
		}
	}
}
