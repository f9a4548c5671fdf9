package sim

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// lateSlack is how late a client may see a token against the schedule:
// the simulator aims at well under a millisecond; the rest is for the
// client's own scheduling on a busy test machine (more under the race
// detector, see race_test.go).
var lateSlack = 3 * time.Millisecond

// misses collects timing misses that a busy machine can cause (lateness,
// never earliness), so that a test can retry them.
type misses []string

func (m *misses) addf(format string, args ...any) { *m = append(*m, fmt.Sprintf(format, args...)) }

// retryLate runs attempt up to three times until it reports no misses; the
// last attempt's misses fail the test.
func retryLate(t *testing.T, attempt func(m *misses)) {
	t.Helper()
	var m misses
	for i := range 3 {
		m = nil
		attempt(&m)
		if len(m) == 0 {
			return
		}
		t.Logf("attempt %d missed: %v", i+1, m)
	}
	for _, s := range m {
		t.Error(s)
	}
}

// queued reports how many sequences wait for a slot.
func (b *batcher) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.queue.Len()
}

// waitFor polls cond until it holds or a second has passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
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
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		cancel()
		resp.Body.Close()
	}
}

// median of durations.
func median(ds []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	return s[len(s)/2]
}

func TestTTFTAndE2EAtLowLoad(t *testing.T) {
	const ttft, itl, tokens = 50 * time.Millisecond, 2 * time.Millisecond, 5
	_, base := startSim(t, Config{TTFT: ttft, ITL: itl, ITLGrowth: NoGrowth})
	wantE2E := ttft + (tokens-1)*itl
	retryLate(t, func(m *misses) {
		var ttfts, e2es []time.Duration
		for range 5 {
			s := stream(t, base, chatBody("sim-model", tokens, true, true, true))
			if s.ttft < ttft || s.ack < ttft || s.e2e < wantE2E {
				t.Errorf("early: ack %s, TTFT %s, E2E %s, want ≥ %s, %s", ms(s.ack), ms(s.ttft), ms(s.e2e), ms(ttft), ms(wantE2E))
			}
			ttfts = append(ttfts, s.ttft)
			e2es = append(e2es, s.e2e)
		}
		if md := median(ttfts); md > ttft+lateSlack {
			m.addf("median TTFT %s, want %s within %s (all: %v)", ms(md), ms(ttft), lateSlack, ttfts)
		}
		if md := median(e2es); md > wantE2E+lateSlack {
			m.addf("median E2E %s, want %s within %s (all: %v)", ms(md), ms(wantE2E), lateSlack, e2es)
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
			cfg := tt.cfg
			cfg.TTFT, cfg.ITL, cfg.ITLGrowth = base, 5*time.Millisecond, NoGrowth
			srv, url := startSim(t, cfg)
			for range tt.background {
				defer openStream(t, url, chatBody("sim-model", 1000, true, false, true))()
			}
			waitFor(t, "background sequences", func() bool { return srv.batch.current() == tt.background })
			body := `{"model":"sim-model","messages":[{"role":"user","content":"` + strings.Repeat("p", tt.promptBytes) +
				`"}],"max_tokens":1,"stream":true}`
			retryLate(t, func(m *misses) {
				s := stream(t, url, body)
				if s.ttft < tt.want {
					t.Errorf("TTFT %s, want %s", ms(s.ttft), ms(tt.want))
				}
				if s.ttft > tt.want+lateSlack {
					m.addf("TTFT %s, want %s", ms(s.ttft), ms(tt.want))
				}
			})
		})
	}
}

func TestFIFOBatching(t *testing.T) {
	const ttft, itl, tokens = 30 * time.Millisecond, 2 * time.Millisecond, 10
	srv, base := startSim(t, Config{MaxNumSeqs: 1, TTFT: ttft, ITL: itl, ITLGrowth: NoGrowth})
	body := chatBody("sim-model", tokens, true, true, true)
	decode := (tokens - 1) * itl
	retryLate(t, func(m *misses) {
		var results []<-chan timed
		for i := range 3 {
			results = append(results, goStream(t, base, body))
			if i == 0 {
				waitFor(t, "first request running", func() bool { return srv.batch.current() == 1 })
			} else {
				waitFor(t, "request queued", func() bool { return srv.batch.queued() == i })
			}
		}
		var got []timed
		for _, ch := range results {
			got = append(got, <-ch)
		}
		if got[1].s.ttft < got[0].s.e2e {
			m.addf("second TTFT %s < first E2E %s", ms(got[1].s.ttft), ms(got[0].s.e2e))
		}
		for i := 1; i < len(got); i++ {
			// Each waits for the previous one's whole schedule, then sees a
			// full TTFT of its own.
			if earliest := got[0].start.Add(time.Duration(i+1)*ttft + time.Duration(i)*decode); got[i].first.Before(earliest) {
				t.Errorf("request %d: first token %s before its earliest possible time", i, ms(earliest.Sub(got[i].first)))
			}
			if gap := got[i].first.Sub(got[i-1].last); gap < ttft-lateSlack || gap > ttft+lateSlack {
				m.addf("request %d: first token %s after the previous one's last, want %s", i, ms(gap), ms(ttft))
			}
			if d := got[i].last.Sub(got[i].first); d < decode-lateSlack || d > decode+lateSlack {
				m.addf("request %d decoded in %s, want %s", i, ms(d), ms(decode))
			}
		}
	})
}

func TestDisconnectFreesSlot(t *testing.T) {
	const ttft = 20 * time.Millisecond
	srv, base := startSim(t, Config{MaxNumSeqs: 1, TTFT: ttft, ITL: 5 * time.Millisecond})
	long := chatBody("sim-model", 1000, true, false, true)

	// A running sequence dropped mid-stream hands its slot to the queue.
	cancelRunning := openStream(t, base, long)
	waitFor(t, "running", func() bool { return srv.batch.current() == 1 })
	cancelQueued := openStream(t, base, long)
	waitFor(t, "queued", func() bool { return srv.batch.queued() == 1 })

	// A queued sequence dropped before admission leaves the queue.
	cancelQueued()
	waitFor(t, "queue empty", func() bool { return srv.batch.queued() == 0 })

	next := goStream(t, base, chatBody("sim-model", 2, true, false, true))
	waitFor(t, "next queued", func() bool { return srv.batch.queued() == 1 })
	dropped := time.Now()
	cancelRunning()
	got := <-next
	// Generous: the drop must reach the server over the loopback first.
	if wait := got.first.Sub(dropped); wait < ttft || wait > ttft+50*time.Millisecond {
		t.Errorf("first token %s after the disconnect, want %s", ms(wait), ms(ttft))
	}
	waitFor(t, "batch empty", func() bool { return srv.batch.current() == 0 })
}

func TestITLGrowth(t *testing.T) {
	const itl, growth, tokens = 4 * time.Millisecond, 0.1, 30
	meanITL := func(concurrent int) time.Duration {
		_, base := startSim(t, Config{TTFT: 20 * time.Millisecond, ITL: itl, ITLGrowth: growth})
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
		return sum / time.Duration(concurrent)
	}
	retryLate(t, func(m *misses) {
		one, eight := meanITL(1), meanITL(8)
		if one < itl-itl/10 || one > itl+itl/10 {
			m.addf("mean ITL with 1 running = %s, want %s", ms(one), ms(itl))
		}
		ratio, want := float64(eight)/float64(one), 1+growth*7
		if ratio < want-0.15 || ratio > want+0.1 {
			m.addf("mean ITL with 8 running / with 1 = %s / %s = %.2f, want about %.2f", ms(eight), ms(one), ratio, want)
		}
	})
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
