package fakeendpoint

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The timing tests run under testing/synctest: the simulator and its
// clients share a fake clock that moves only when every goroutine waits,
// so the schedule the simulator keeps is observed exactly, whatever the
// load of the machine running the tests. (The timing error on a real
// clock is measured by BenchmarkProbeStreams in package probe.)

// queued reports how many sequences wait for a slot.
func (b *batcher) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.queue.Len()
}

// settled waits until every goroutine of the bubble is blocked, then
// checks cond: what the simulator does at this instant is done.
func settled(t *testing.T, what string, cond func() bool) {
	t.Helper()
	synctest.Wait()
	if !cond() {
		t.Fatalf("not so once settled: %s", what)
	}
}

// timed is a stream's client-side timeline in absolute times.
type timed struct {
	start, first, last time.Time
	s                  streamed
}

// goStream streams body in a goroutine; the result arrives on the channel.
func goStream(t *testing.T, base, body string) <-chan timed {
	ch := make(chan timed, 1)
	go func() {
		start := time.Now()
		s, err := streamE(base, body)
		if err != nil {
			t.Error(err)
		}
		ch <- timed{start: start, first: start.Add(s.ttft), last: start.Add(s.e2e), s: s}
	}()
	return ch
}

// openStream starts a stream and returns once its headers arrived, with a
// cancel that drops the connection.
func openStream(t *testing.T, base, body string) (drop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client(base).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		cancel()
		resp.Body.Close()
	}
}

func TestTTFTAndE2EAtLowLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttft, itl, tokens = 50 * time.Millisecond, 2 * time.Millisecond, 5
		_, base := startBubble(t, Config{TTFT: ttft, ITL: itl, ITLGrowth: NoGrowth})
		wantE2E := ttft + (tokens-1)*itl
		for range 5 {
			s := stream(t, base, chatBody("sim-model", tokens, true, true, true))
			if s.ttft != ttft || s.ack != ttft || s.e2e != wantE2E {
				t.Errorf("ack %s, TTFT %s, E2E %s, want %s, %s, %s", ms(s.ack), ms(s.ttft), ms(s.e2e), ms(ttft), ms(ttft), ms(wantE2E))
			}
		}
	})
}

func TestTTFTFormula(t *testing.T) {
	const base = 40 * time.Millisecond
	tests := []struct {
		name        string
		cfg         Config
		background  int // sequences already running
		promptBytes int
		want        time.Duration
	}{
		{"base", Config{}, 0, 14, base},
		// 3 + 4 + ceil(7988/4) = 2004 prompt tokens.
		{"prefill", Config{PrefillPer1K: 20 * time.Millisecond}, 0, 7988, base + 40080*time.Microsecond},
		{"growth with 3 running", Config{TTFTGrowth: 0.5}, 2, 14, 2 * base},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := tt.cfg
				cfg.TTFT, cfg.ITL, cfg.ITLGrowth = base, 5*time.Millisecond, NoGrowth
				srv, url := startBubble(t, cfg)
				for range tt.background {
					defer openStream(t, url, chatBody("sim-model", 1000, true, false, true))()
				}
				settled(t, "background sequences running", func() bool { return srv.batch.current() == tt.background })
				body := `{"model":"sim-model","messages":[{"role":"user","content":"` + strings.Repeat("p", tt.promptBytes) +
					`"}],"max_tokens":1,"stream":true}`
				if s := stream(t, url, body); s.ttft != tt.want {
					t.Errorf("TTFT %s, want %s", ms(s.ttft), ms(tt.want))
				}
			})
		})
	}
}

func TestFIFOBatching(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttft, itl, tokens = 30 * time.Millisecond, 2 * time.Millisecond, 10
		srv, base := startBubble(t, Config{MaxNumSeqs: 1, TTFT: ttft, ITL: itl, ITLGrowth: NoGrowth})
		body := chatBody("sim-model", tokens, true, true, true)
		decode := (tokens - 1) * itl
		var results []<-chan timed
		for i := range 3 {
			results = append(results, goStream(t, base, body))
			if i == 0 {
				settled(t, "first request running", func() bool { return srv.batch.current() == 1 })
			} else {
				settled(t, "request queued", func() bool { return srv.batch.queued() == i })
			}
		}
		var got []timed
		for _, ch := range results {
			got = append(got, <-ch)
		}
		for i := 1; i < len(got); i++ {
			// Each waits for the previous one's whole schedule, then sees a
			// full TTFT of its own.
			if want := got[0].start.Add(time.Duration(i+1)*ttft + time.Duration(i)*decode); !got[i].first.Equal(want) {
				t.Errorf("request %d: first token %s after the first request's send, want %s", i, ms(got[i].first.Sub(got[0].start)), ms(want.Sub(got[0].start)))
			}
			if gap := got[i].first.Sub(got[i-1].last); gap != ttft {
				t.Errorf("request %d: first token %s after the previous one's last, want %s", i, ms(gap), ms(ttft))
			}
			if d := got[i].last.Sub(got[i].first); d != decode {
				t.Errorf("request %d decoded in %s, want %s", i, ms(d), ms(decode))
			}
		}
	})
}

func TestDisconnectFreesSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttft = 20 * time.Millisecond
		srv, base := startBubble(t, Config{MaxNumSeqs: 1, TTFT: ttft, ITL: 5 * time.Millisecond})
		long := chatBody("sim-model", 1000, true, false, true)

		// A running sequence dropped mid-stream hands its slot to the queue.
		cancelRunning := openStream(t, base, long)
		settled(t, "running", func() bool { return srv.batch.current() == 1 })
		cancelQueued := openStream(t, base, long)
		settled(t, "queued", func() bool { return srv.batch.queued() == 1 })

		// A queued sequence dropped before admission leaves the queue.
		cancelQueued()
		settled(t, "queue empty", func() bool { return srv.batch.queued() == 0 })

		next := goStream(t, base, chatBody("sim-model", 2, true, false, true))
		settled(t, "next queued", func() bool { return srv.batch.queued() == 1 })
		dropped := time.Now()
		cancelRunning()
		got := <-next
		if wait := got.first.Sub(dropped); wait != ttft {
			t.Errorf("first token %s after the disconnect, want %s", ms(wait), ms(ttft))
		}
		settled(t, "batch empty", func() bool { return srv.batch.current() == 0 })
	})
}

// TestITLGrowth: with 8 sequences decoding together the per-token interval
// grows by ITLGrowth per additional sequence, 1 + 0.1 × 7 = 1.7 times.
func TestITLGrowth(t *testing.T) {
	const itl, growth, tokens = 4 * time.Millisecond, 0.1, 30
	meanITL := func(t *testing.T, concurrent int) time.Duration {
		var mean time.Duration
		synctest.Test(t, func(t *testing.T) {
			_, base := startBubble(t, Config{TTFT: 20 * time.Millisecond, ITL: itl, ITLGrowth: growth})
			body := chatBody("sim-model", tokens, true, false, true)
			var mu sync.Mutex
			var sum time.Duration
			var wg sync.WaitGroup
			for range concurrent {
				wg.Go(func() {
					s, err := streamE(base, body)
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					sum += (s.e2e - s.ttft) / (tokens - 1)
					mu.Unlock()
				})
			}
			wg.Wait()
			mean = sum / time.Duration(concurrent)
		})
		return mean
	}
	one, eight := meanITL(t, 1), meanITL(t, 8)
	if one != itl {
		t.Errorf("mean ITL with 1 running = %s, want %s", ms(one), ms(itl))
	}
	if want := time.Duration(float64(itl) * (1 + growth*7)); eight != want {
		t.Errorf("mean ITL with 8 running = %s, want %s", ms(eight), ms(want))
	}
}

func TestScheduleFormulas(t *testing.T) {
	srv, err := New(Config{TTFT: 100 * time.Millisecond, TTFTGrowth: 0.25, PrefillPer1K: 10 * time.Millisecond,
		ITL: 20 * time.Millisecond, ITLGrowth: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		running, prompt int
		ttft, itl       time.Duration
	}{
		{1, 0, 100 * time.Millisecond, 20 * time.Millisecond},
		{1, 1000, 110 * time.Millisecond, 20 * time.Millisecond},
		{5, 500, 205 * time.Millisecond, 24 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := srv.ttft(tt.running, tt.prompt); got != tt.ttft {
			t.Errorf("ttft(%d, %d) = %s, want %s", tt.running, tt.prompt, got, tt.ttft)
		}
		if got := srv.itl(tt.running); got != tt.itl {
			t.Errorf("itl(%d) = %s, want %s", tt.running, got, tt.itl)
		}
	}
}
