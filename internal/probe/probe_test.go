package probe

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/optional"
	"github.com/plannerdev/planner/internal/target"
	"github.com/plannerdev/planner/internal/testutil"
)

// fastSim answers in well under a millisecond of simulated time, for tests
// that do not measure timing.
var fastSim = fakeendpoint.Config{TTFT: time.Microsecond, ITL: time.Microsecond, ITLGrowth: fakeendpoint.NoGrowth, MaxNumSeqs: 64}

// startSim serves a simulator on 127.0.0.1 and returns it with its base URL.
func startSim(t testing.TB, cfg fakeendpoint.Config) (*fakeendpoint.Server, string) {
	t.Helper()
	srv, err := fakeendpoint.New(cfg)
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts.URL + "/v1"
}

// bubble runs f under testing/synctest against a simulator served over
// an in-memory network: the fake clock makes every time the simulator
// schedules exact, whatever the machine's load. cfg gets TimersOnly; the
// probe must dial with dial.
func bubble(t *testing.T, cfg fakeendpoint.Config, f func(t *testing.T, srv *fakeendpoint.Server, base string, dial dialFunc)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		cfg.TimersOnly = true
		srv, err := fakeendpoint.New(cfg)
		if err != nil {
			t.Fatalf("sim.New: %v", err)
		}
		base, dial := testutil.PipeServer(t, srv)
		f(t, srv, base+"/v1", dial)
	})
}

type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// quick is a small, fast probe configuration against base.
func quick(base string) Config {
	return Config{
		BaseURL: base, Model: fakeendpoint.DefaultModel, MaxTokens: optional.Of(4), IgnoreEOS: true, InputTokens: optional.Of(32),
		Steps: []int{1, 2, 4}, Pause: optional.Of(time.Millisecond), Deadline: optional.Of(5 * time.Second),
	}
}

func run(t *testing.T, ctx context.Context, cfg Config, obs Observer) *Result {
	t.Helper()
	res, err := Run(ctx, cfg, obs)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func stepAt(t *testing.T, res *Result, c int) measure.Step {
	t.Helper()
	for _, s := range res.Analysis.Steps {
		if s.Concurrency == c {
			return s
		}
	}
	t.Fatalf("no step at concurrency %d in %+v", c, res.Analysis.Steps)
	return measure.Step{}
}

// retryAfterLog records the retry-after-ms each answer announced, in
// order; the handler is sequential at concurrency 1.
type retryAfterLog struct {
	mu   sync.Mutex
	next http.Handler
	ms   []string
}

func (l *retryAfterLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.next.ServeHTTP(w, r)
	l.mu.Lock()
	l.ms = append(l.ms, w.Header().Get("retry-after-ms"))
	l.mu.Unlock()
}

// TestQuotaLimitedAgainstSim runs against a key whose RPM bucket is already
// empty: every request meets a 429 first, waits what the 429 announced and
// gets through on its retry. The probe calls the run quota-limited (the
// rate-limit headers show the key exhausted), stops by the 429 rule, and
// never retries before the wait a 429 asked for.
func TestQuotaLimitedAgainstSim(t *testing.T) {
	const rpm = 240 // refills one request every 250 ms
	synctest.Test(t, func(t *testing.T) {
		cfg := fastSim
		cfg.RPM, cfg.TimersOnly = rpm, true
		srv, err := fakeendpoint.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		log := &retryAfterLog{next: srv}
		base, dial := testutil.PipeServer(t, log)
		base += "/v1"

		// Spend the bucket the way other traffic on the same key would.
		drain := quick(base)
		drain.DialContext = dial
		drain.Steps, drain.RequestsPerStep, drain.MaxAttempts = []int{32}, optional.Of(rpm+32), optional.Of(1)
		if res := run(t, t.Context(), drain, nil); res.Analysis.Steps[0].RateLimited == 0 {
			t.Fatalf("the bucket did not run dry: %+v", res.Analysis.Steps)
		}
		before := len(srv.Arrivals())
		log.mu.Lock()
		log.ms = nil
		log.mu.Unlock()

		p := quick(base)
		p.DialContext = dial
		res := run(t, t.Context(), p, nil)

		if res.StopReason != StopMax429Ratio || len(res.Analysis.Steps) != 1 {
			t.Errorf("stop = %s (%s) after %d steps, want %s after the first", res.StopReason, res.StopDetail, len(res.Analysis.Steps), StopMax429Ratio)
		}
		if !res.Analysis.QuotaLimited {
			t.Errorf("quota_limited = false; notes %v", res.Analysis.Notes)
		}
		s := res.Analysis.Steps[0]
		if s.RateLimited == 0 || s.RateLimited < s.RateLimitedFailed {
			t.Errorf("429 answers %d, failed as 429 %d: retried 429s must count", s.RateLimited, s.RateLimitedFailed)
		}
		retried := 0
		for _, rec := range res.Records {
			if rec.Attempts > 1 {
				retried++
				if rec.RetryAfterMs <= 0 || rec.E2EWithRetriesMs < rec.RetryAfterMs {
					t.Errorf("a retried request recorded no wait: %+v", rec)
				}
			}
		}
		if retried == 0 {
			t.Fatal("no request was retried")
		}
		if rl := res.RateLimits.Requests; rl == nil || rl.Limit == nil || *rl.Limit != rpm {
			t.Errorf("announced request limit = %+v, want %d", rl, rpm)
		}

		arr := srv.Arrivals()[before:]
		log.mu.Lock()
		announced := slices.Clone(log.ms)
		log.mu.Unlock()
		if len(arr) != len(announced) {
			t.Fatalf("%d arrivals but %d answers logged", len(arr), len(announced))
		}
		checked := 0
		for i := 0; i+1 < len(arr); i++ {
			if arr[i].Status != http.StatusTooManyRequests {
				continue
			}
			wait, err := strconv.Atoi(announced[i])
			if err != nil {
				t.Fatalf("429 without retry-after-ms: %q", announced[i])
			}
			// At concurrency 1 the next arrival is this request's retry.
			if gap := arr[i+1].At.Sub(arr[i].At); gap < time.Duration(wait)*time.Millisecond {
				t.Errorf("retry sent %v after a 429 that asked for %d ms", gap, wait)
			}
			checked++
		}
		if checked == 0 {
			t.Error("no 429 to check")
		}
	})
}

// TestTimingFidelity checks the probe's clock against a simulator whose
// TTFT is fixed, under a fake clock: every TTFT measured at concurrency
// 64 equals the configured one, and every E2E is TTFT plus the tokens'
// intervals. Answers have lognormal lengths, as real ones do. (The
// timing error on a real machine is measured by BenchmarkProbeStreams.)
func TestTimingFidelity(t *testing.T) {
	const ttft, itl = 200 * time.Millisecond, 10 * time.Millisecond
	bubble(t, fakeendpoint.Config{MaxNumSeqs: 128, TTFT: ttft, ITL: itl, ITLGrowth: fakeendpoint.NoGrowth, OutputTokens: 8}, func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
		cfg := quick(base)
		cfg.DialContext = dial
		cfg.Steps, cfg.MaxTokens, cfg.IgnoreEOS = []int{64}, optional.Of(32), false
		res := run(t, t.Context(), cfg, nil)
		n := 0
		for _, rec := range res.Records {
			if !rec.OK {
				t.Fatalf("a request failed: %+v (%v)", rec, res.ErrorSamples)
			}
			want := ms(ttft) + float64(rec.OutputTokens-1)*ms(itl)
			if rec.TTFTMs != ms(ttft) || rec.E2EMs != want {
				t.Errorf("TTFT %.3f ms, E2E %.3f ms for %d tokens; want %.3f and %.3f", rec.TTFTMs, rec.E2EMs, rec.OutputTokens, ms(ttft), want)
			}
			n++
		}
		if n < 64 {
			t.Fatalf("%d requests, want at least 64", n)
		}
	})
}

func TestBudgetsAndCancel(t *testing.T) {
	t.Run("requests", func(t *testing.T) {
		bubble(t, fastSim, func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
			cfg := quick(base)
			cfg.DialContext = dial
			cfg.Budget.MaxRequests = optional.Of(5)
			res := run(t, t.Context(), cfg, nil)
			if res.StopReason != StopBudgetRequests || len(res.Records) != 5 || res.Sent != 5 {
				t.Errorf("stop %s, %d records, %d sent; want %s, 5, 5", res.StopReason, len(res.Records), res.Sent, StopBudgetRequests)
			}
			if !slices.ContainsFunc(res.Analysis.Notes, func(n string) bool { return strings.Contains(n, "sent 5 of its 41 requests") }) {
				t.Errorf("no note about the cut step: %v", res.Analysis.Notes)
			}
			if res.Analysis.Knee != nil || !res.Analysis.Steps[0].TooShort {
				t.Errorf("a step cut at 5 requests gave knee %v: %+v", res.Analysis.Knee, res.Analysis.Steps)
			}
		})
	})
	t.Run("tokens", func(t *testing.T) {
		bubble(t, fastSim, func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
			cfg := quick(base)
			cfg.DialContext = dial
			cfg.Budget.MaxTokens = optional.Of(600)
			res := run(t, t.Context(), cfg, nil)
			if res.StopReason != StopBudgetTokens || res.TokensUsed > 600 || len(res.Records) == 0 {
				t.Errorf("stop %s, %d tokens used, %d records; want %s within 600", res.StopReason, res.TokensUsed, len(res.Records), StopBudgetTokens)
			}
			var sum int
			for _, rec := range res.Records {
				sum += rec.InputTokens + rec.OutputTokens
			}
			if sum != res.TokensUsed {
				t.Errorf("tokens used %d, records say %d", res.TokensUsed, sum)
			}
		})
	})
	t.Run("duration cancels requests in flight", func(t *testing.T) {
		bubble(t, fakeendpoint.Config{TTFT: 5 * time.Second, MaxNumSeqs: 64}, func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
			cfg := quick(base)
			cfg.DialContext = dial
			cfg.Budget.MaxDuration = optional.Of(200 * time.Millisecond)
			cfg.Deadline = optional.Of(10 * time.Second)
			start := time.Now()
			res := run(t, t.Context(), cfg, nil)
			if el := time.Since(start); el != 200*time.Millisecond {
				t.Errorf("the run took %v with a 200ms budget", el)
			}
			if res.StopReason != StopBudgetDuration || len(res.Records) != 1 {
				t.Fatalf("stop %s with %d records, want %s with the one request in flight", res.StopReason, len(res.Records), StopBudgetDuration)
			}
			if rec := res.Records[0]; rec.ErrorClass != measure.ErrCancelled || rec.E2EWithRetriesMs != 200 {
				t.Errorf("record %+v, want it cancelled at 200 ms", rec)
			}
			// No one cancelled the run: its failure names the budget that
			// stopped it, not a cancellation.
			want := "no request succeeded before the run stopped: the time budget of 200ms was spent at concurrency 1, with 1 request in flight cut short"
			if err := res.Failure(); err == nil || err.Error() != want {
				t.Errorf("failure %v, want %q", err, want)
			}
		})
	})
	t.Run("cancel keeps what was measured", func(t *testing.T) {
		bubble(t, fastSim, func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			cfg := quick(base)
			cfg.DialContext = dial
			cfg.Steps = []int{1, 2, 4, 8}
			cfg.Pause = optional.Of(time.Minute)
			obs := &countingObserver{onStepDone: cancel}
			res := run(t, ctx, cfg, obs)
			if res.StopReason != StopCancelled || len(res.Analysis.Steps) != 1 || len(res.Records) != 41 {
				t.Errorf("stop %s, %d steps, %d records; want cancelled after one step of 41", res.StopReason, len(res.Analysis.Steps), len(res.Records))
			}
		})
	})
}

// TestStopInThePause: a run that a cancel or its time budget ends in the
// pause after its first step says so, naming the step that ended and the
// one that had yet to start, not the last step as if it were cut short.
func TestStopInThePause(t *testing.T) {
	for _, tc := range []struct {
		name   string
		open   bool
		budget bool
		stop   string
		detail string
	}{
		{"ladder cancelled", false, false, StopCancelled, "cancelled after the step at concurrency 1, in the pause before the step at concurrency 2"},
		{"ladder out of time", false, true, StopBudgetDuration, "the time budget of 30s was spent after the step at concurrency 1, in the pause before the step at concurrency 2"},
		{"open loop cancelled", true, false, StopCancelled, "cancelled after the step at 10 req/s, in the pause before the step at 20 req/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bubble(t, fastSim, func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				cfg := quick(base)
				cfg.DialContext = dial
				cfg.Steps = []int{1, 2, 4}
				if tc.open {
					cfg.Steps, cfg.Open = nil, &OpenLoop{Rates: []float64{10, 20}, MaxInFlight: 4, Requests: optional.Of(60)}
				}
				cfg.Pause = optional.Of(time.Minute)
				// The cancel lands a second into the minute's pause.
				var obs Observer = &countingObserver{onStepDone: func() { time.AfterFunc(time.Second, cancel) }}
				if tc.budget {
					cfg.Budget.MaxDuration = optional.Of(30 * time.Second)
					obs = nil
				}
				res := run(t, ctx, cfg, obs)
				if res.StopReason != tc.stop || res.StopDetail != tc.detail || len(res.Analysis.Steps) != 1 {
					t.Errorf("stop %s (%s) after %d steps, want %s (%s) after 1", res.StopReason, res.StopDetail, len(res.Analysis.Steps), tc.stop, tc.detail)
				}
			})
		})
	}
}

// countingObserver counts calls and checks their order; it is not safe for
// concurrent use, so the race detector checks that calls are serialized.
type countingObserver struct {
	started, records, done int
	inStep                 bool
	onStepDone             func()
	order                  []string
}

func (o *countingObserver) StepStarted(c, n int) {
	o.started++
	o.inStep = true
	o.order = append(o.order, "start")
}

func (o *countingObserver) Record(measure.Record) {
	o.records++
	if !o.inStep {
		o.order = append(o.order, "record outside a step")
	}
}

func (o *countingObserver) StepDone(measure.Step) {
	o.done++
	o.inStep = false
	o.order = append(o.order, "done")
	if o.onStepDone != nil {
		o.onStepDone()
	}
}

func TestObserver(t *testing.T) {
	_, base := startSim(t, fastSim)
	obs := &countingObserver{}
	res := run(t, t.Context(), quick(base), obs)
	want := []string{"start", "done", "start", "done", "start", "done"}
	if !slices.Equal(obs.order, want) || obs.records != len(res.Records) {
		t.Errorf("calls %v with %d records, want %v with %d", obs.order, obs.records, want, len(res.Records))
	}
}

// TestOpenLoop runs one open-loop step per rate: at 10 req/s four slots
// of 40 ms never fill; at 400 req/s they hold at most 100 req/s, so
// arrivals are shed.
func TestOpenLoop(t *testing.T) {
	bubble(t, fakeendpoint.Config{TTFT: 40 * time.Millisecond, ITL: time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth, MaxNumSeqs: 64}, func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
		cfg := quick(base)
		cfg.DialContext = dial
		cfg.Steps, cfg.Open = nil, &OpenLoop{Rates: []float64{10, 400}, MaxInFlight: 4, Requests: optional.Of(60)}
		cfg.Seed = 3
		res := run(t, t.Context(), cfg, nil)
		if res.Shed == 0 || len(res.Records)+res.Shed != 120 {
			t.Errorf("%d records and %d shed, want some shed and 120 in all", len(res.Records), res.Shed)
		}
		ss := res.Analysis.Steps
		if len(ss) != 2 || ss[0].RateRPS != 10 || ss[1].RateRPS != 400 || ss[0].Concurrency != 4 || ss[1].Concurrency != 4 {
			t.Fatalf("steps = %+v", ss)
		}
		if ss[0].Requests != 56 || ss[1].Requests >= 56 {
			t.Errorf("measured %d at 10 req/s (want all 56 after warm-up) and %d at 400 req/s (want fewer: shed)", ss[0].Requests, ss[1].Requests)
		}
		if sp := res.Spent(); len(sp) != 1 || sp[0].Part != "open_loop" || sp[0].Steps != 2 {
			t.Errorf("spent %+v", sp)
		}
		// The step at 400 req/s sent fewer than its 60 arrivals because
		// the cap shed them, not because the run stopped; the note names
		// the step by its rate, as every step of the loop has the cap's
		// concurrency.
		sent := len(res.Records) - 60
		want := fmt.Sprintf("the step at 400 req/s sent %d of its 60 arrivals: %d found the in-flight cap of 4 reached and were shed", sent, 60-sent)
		var short []string
		for _, n := range res.Analysis.Notes {
			if strings.Contains(n, "of its 60") {
				short = append(short, n)
			}
		}
		if len(short) != 1 || short[0] != want {
			t.Errorf("notes on short steps %q, want only %q", short, want)
		}
		// Its steps are at the cap's concurrency, not what they held:
		// no curve.yaml, which a plan would read as what 4 slots carry.
		files, err := WriteFiles(t.TempDir(), res)
		if err != nil || slices.ContainsFunc(files, func(f string) bool { return strings.HasSuffix(f, CurveFile) }) {
			t.Errorf("an open loop wrote %q (%v), want no %s", files, err, CurveFile)
		}
	})
}

// TestOpenLoopStopNamesTheRate stops an open loop by its time budget in
// its first step: the stop's detail and the note on the step cut short
// name the step by its rate.
func TestOpenLoopStopNamesTheRate(t *testing.T) {
	bubble(t, fastSim, func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
		cfg := quick(base)
		cfg.DialContext = dial
		cfg.Steps, cfg.Open = nil, &OpenLoop{Rates: []float64{2, 4}, MaxInFlight: 4, Requests: optional.Of(60)}
		cfg.Budget.MaxDuration = optional.Of(5 * time.Second)
		res := run(t, t.Context(), cfg, nil)
		if want := "the time budget of 5s was spent at 2 req/s"; res.StopReason != StopBudgetDuration || res.StopDetail != want {
			t.Errorf("stop %s (%s), want %s (%s)", res.StopReason, res.StopDetail, StopBudgetDuration, want)
		}
		want := fmt.Sprintf("the step at 2 req/s sent %d of its 60 arrivals (stopped: %s)", len(res.Records), StopBudgetDuration)
		if !slices.Contains(res.Analysis.Notes, want) {
			t.Errorf("notes %q, want %q", res.Analysis.Notes, want)
		}
	})
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestUnreachable(t *testing.T) {
	res := run(t, t.Context(), quick("http://"+closedPort(t)+"/v1"), nil)
	err := res.Failure()
	if err == nil || !strings.Contains(err.Error(), "unreachable") || res.StopReason != StopNoSuccess {
		t.Errorf("failure = %v, stop %s", err, res.StopReason)
	}
	if len(res.Analysis.Steps) != 1 {
		t.Errorf("the ramp went on after a step with no success: %+v", res.Analysis.Steps)
	}
}

// TestAnswers drives the request path against hand-made endpoints, under
// a fake clock, and checks the first request of a one-step run.
func TestAnswers(t *testing.T) {
	stream := sse("\n", contentChunk, contentChunk, usageChunk) + "data: [DONE]\n\n"
	tests := []struct {
		name     string
		handler  func(n int, w http.ResponseWriter) // n counts requests from 0
		deadline time.Duration
		class    string
		status   int
		attempts int
		retryMs  float64
		// ttftMs and withRetriesMs, when set, are the times expected.
		ttftMs, withRetriesMs float64
	}{
		{name: "ok", handler: func(_ int, w http.ResponseWriter) { writeStream(w, stream) }, status: 200, attempts: 1},
		{name: "CR line endings", handler: func(_ int, w http.ResponseWriter) {
			writeStream(w, sse("\r", contentChunk, contentChunk, usageChunk)+"data: [DONE]\r\r")
		}, status: 200, attempts: 1},
		{name: "headers past the cap", handler: func(_ int, w http.ResponseWriter) {
			for i := range 4 {
				w.Header().Set(fmt.Sprintf("X-Pad-%d", i), strings.Repeat("a", target.MaxResponseHeaderBytes/4))
			}
			writeStream(w, stream)
		}, class: measure.ErrTransport, attempts: 1},
		{name: "500", handler: func(_ int, w http.ResponseWriter) { http.Error(w, `{"error":{"message":"boom"}}`, 500) },
			class: measure.ErrServer, status: 500, attempts: 1},
		{name: "404 wrong model", handler: func(_ int, w http.ResponseWriter) { http.Error(w, "no such model", 404) },
			class: measure.ErrClient, status: 404, attempts: 1},
		{name: "429 then ok, backoff without retry-after", handler: func(n int, w http.ResponseWriter) {
			if n == 0 {
				w.WriteHeader(429)
				return
			}
			writeStream(w, stream)
		}, status: 200, attempts: 2},
		{name: "retry-after 0 still backs off", handler: func(n int, w http.ResponseWriter) {
			if n == 0 {
				w.Header().Set("retry-after", "0")
				w.WriteHeader(429)
				return
			}
			writeStream(w, stream)
		}, status: 200, attempts: 2},
		{name: "retried 429: timed from the attempt that succeeded", handler: func(n int, w http.ResponseWriter) {
			if n == 0 {
				w.Header().Set("retry-after-ms", "300")
				w.WriteHeader(429)
				return
			}
			time.Sleep(50 * time.Millisecond)
			writeStream(w, stream)
		}, status: 200, attempts: 2, retryMs: 300, ttftMs: 50, withRetriesMs: 350},
		{name: "429 on every attempt", handler: func(_ int, w http.ResponseWriter) {
			w.Header().Set("retry-after-ms", "5")
			w.WriteHeader(429)
		}, class: measure.ErrRateLimited, status: 429, attempts: 3, retryMs: 5},
		{name: "retry-after past the deadline: no retry", handler: func(_ int, w http.ResponseWriter) {
			w.Header().Set("retry-after", "30")
			w.WriteHeader(429)
		}, class: measure.ErrRateLimited, status: 429, attempts: 1, retryMs: 30000},
		{name: "not a stream", handler: func(_ int, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"choices":[{"message":{"content":"hi"}}]}`))
		}, class: measure.ErrBadStream, status: 200, attempts: 1},
		{name: "stalls past the deadline", handler: func(_ int, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			time.Sleep(300 * time.Millisecond)
		}, deadline: 100 * time.Millisecond, class: measure.ErrTimeout, status: 200, attempts: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				n := 0
				base, dial := testutil.PipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					i := n
					n++
					mu.Unlock()
					tc.handler(i, w)
				}))
				cfg := quick(base)
				cfg.DialContext = dial
				cfg.Steps = []int{1}
				cfg.BackoffBase, cfg.BackoffCap = optional.Of(10*time.Millisecond), optional.Of(20*time.Millisecond)
				cfg.Deadline = optional.Of(cmp.Or(tc.deadline, 2*time.Second))
				res := run(t, t.Context(), cfg, nil)
				if len(res.Records) == 0 || res.Records[0].Index != 0 {
					t.Fatalf("records %+v", res.Records)
				}
				rec := res.Records[0]
				if rec.ErrorClass != tc.class || rec.Status != tc.status || rec.Attempts != tc.attempts || rec.RetryAfterMs != tc.retryMs {
					t.Errorf("record %+v (%v), want class %q status %d attempts %d retry %g", rec, res.ErrorSamples, tc.class, tc.status, tc.attempts, tc.retryMs)
				}
				if rec.OK != (tc.class == "") {
					t.Errorf("ok = %v", rec.OK)
				}
				if tc.class != "" && res.ErrorSamples[tc.class] == "" {
					t.Errorf("no error sample for %s", tc.class)
				}
				if tc.ttftMs > 0 && (rec.TTFTMs != tc.ttftMs || rec.E2EMs != tc.ttftMs || rec.E2EWithRetriesMs != tc.withRetriesMs) {
					t.Errorf("TTFT %g, E2E %g, with retries %g ms; want %g, %g, %g", rec.TTFTMs, rec.E2EMs, rec.E2EWithRetriesMs, tc.ttftMs, tc.ttftMs, tc.withRetriesMs)
				}
			})
		})
	}
}

// TestCalibrationBoundedAgainstTheEndpoint: an endpoint that answers
// usage.prompt_tokens 1, then 7, then 1 would have calibration grow the
// synthetic prompt from 1 KB to 262 KB, then 9.6 MB, then 2.46 GB; each
// answer moves it by at most maxCalibrationFactor, and it never passes
// maxCharsPerToken characters per target token.
func TestCalibrationBoundedAgainstTheEndpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counts := []int{1, 7, 1} // the answers that once grew a request to 2.46 GB at the fourth
		var mu sync.Mutex
		var lengths []int
		base, dial := testutil.PipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var req struct {
				Messages []message `json:"messages"`
			}
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 1 {
				http.Error(w, "bad request", 400)
				return
			}
			mu.Lock()
			lengths = append(lengths, len(req.Messages[0].Content))
			n := counts[(len(lengths)-1)%len(counts)]
			mu.Unlock()
			writeStream(w, sse("\n", contentChunk, fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":1}}`, n))+"data: [DONE]\n\n")
		}))
		cfg := quick(base)
		cfg.DialContext, cfg.Steps, cfg.InputTokens = dial, []int{1}, optional.Of(256)
		cfg.Budget.MaxRequests = optional.Of(len(counts))
		run(t, t.Context(), cfg, nil)
		if len(lengths) != len(counts) || lengths[0] != 256*charsPerToken {
			t.Fatalf("prompt lengths %v", lengths)
		}
		for i, n := range lengths {
			if n > 256*maxCharsPerToken || n < 256*minCharsPerToken {
				t.Errorf("request %d: a prompt of %d characters for 256 tokens (lengths %v)", i, n, lengths)
			}
			if i > 0 && (n > maxCalibrationFactor*lengths[i-1] || n*maxCalibrationFactor < lengths[i-1]) {
				t.Errorf("request %d: the prompt went from %d to %d characters on one answer", i, lengths[i-1], n)
			}
		}
	})
}

func writeStream(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = w.Write([]byte(body))
}

// TestValidate locates each rule's problem at its field, in the names of
// the configuration's JSON, and lets a set zero mean what it says.
func TestValidate(t *testing.T) {
	ok := Config{BaseURL: "https://api.example.test/v1?api-version=2024-10-21", Model: "m"}
	if errs := ok.Validate(); len(errs) > 0 {
		t.Fatalf("valid config: %v", errs)
	}
	open := func(o OpenLoop) func(*Config) { return func(c *Config) { c.Open = &o } }
	tests := []struct {
		name       string
		edit       func(*Config)
		path, want string
	}{
		{"no model", func(c *Config) { c.Model = "" }, "model", "required"},
		{"a blank model", func(c *Config) { c.Model = " \t" }, "model", "required"},
		{"bad scheme", func(c *Config) { c.BaseURL = "ftp://x" }, "base_url", "scheme"},
		{"no host", func(c *Config) { c.BaseURL = "http:///v1" }, "base_url", "no host"},
		{"a fragment", func(c *Config) { c.BaseURL = "http://127.0.0.1:8000/v1#access_token=abcdefgh12345678" }, "base_url", "a fragment"},
		{"an empty fragment", func(c *Config) { c.BaseURL = "http://127.0.0.1:8000/v1#" }, "base_url", "a fragment"},
		{"no steps", func(c *Config) { c.Steps = []int{} }, "steps", "0 steps, want 1 to 64"},
		{"steps not ascending", func(c *Config) { c.Steps = []int{1, 4, 2} }, "steps[2]", "strictly ascending (2 after 4)"},
		{"step too large", func(c *Config) { c.Steps = []int{MaxConcurrency + 1} }, "steps[0]", "outside 1..10000"},
		{"ratio above 1", func(c *Config) { c.Max429Ratio = optional.Of(1.5) }, "max_429_ratio", "outside (0, 1]"},
		{"ratio of 0", func(c *Config) { c.Max429Ratio = optional.Of(0.0) }, "max_429_ratio", "outside (0, 1]"},
		{"negative deadline", func(c *Config) { c.Deadline = optional.Of(-time.Second) }, "deadline", "must be positive"},
		{"deadline of 0", func(c *Config) { c.Deadline = optional.Of(time.Duration(0)) }, "deadline", "must be positive"},
		{"negative pause", func(c *Config) { c.Pause = optional.Of(-time.Second) }, "pause", "negative"},
		{"negative warm-up", func(c *Config) { c.Warmup = optional.Of(-1) }, "warmup", "outside 0..1000000 (0: none)"},
		{"bad key header", func(c *Config) { c.APIKeyHeader = "X-Key" }, "api_key_header", "neither"},
		{"prompts too long", func(c *Config) { c.InputTokens = optional.Of(MaxInputTokens + 1) }, "input_tokens", "outside 1..1000000"},
		{"answers too long", func(c *Config) { c.MaxTokens = optional.Of(0) }, "max_tokens", "outside 1..1000000"},
		{"too many attempts", func(c *Config) { c.MaxAttempts = optional.Of(21) }, "max_attempts", "outside 1..20"},
		{"a budget of no requests", func(c *Config) { c.Budget.MaxRequests = optional.Of(0) }, "budget.max_requests", "at least 1"},
		{"open loop without a rate", open(OpenLoop{MaxInFlight: 2}), "open_loop.rates_rps", "0 rates"},
		{"open loop without a cap", open(OpenLoop{Rates: []float64{1}}), "open_loop.max_in_flight", "needs a cap"},
		{"open loop rates not ascending", open(OpenLoop{MaxInFlight: 2, Rates: []float64{4, 2}}), "open_loop.rates_rps[1]", "strictly ascending"},
		{"open loop too short", open(OpenLoop{MaxInFlight: 2, Rates: []float64{1}, Requests: optional.Of(20)}), "open_loop.requests", "fewer than the minimum"},
		{"too few requests per step", func(c *Config) { c.RequestsPerStep = optional.Of(16) }, "requests_per_step",
			"16 requests with 1 warm-up leave 15 measured at concurrency 1, fewer than the minimum max(40, 3c) = 40"},
		{"too few for the last step", func(c *Config) { c.RequestsPerStep = optional.Of(100) }, "requests_per_step", "at concurrency 32, fewer than the minimum max(40, 3c) = 96"},
		{"a warm-up that leaves too few", func(c *Config) { c.Warmup = optional.Of(10_000) }, "warmup", "fewer than the minimum"},
		{"search and open loop", func(c *Config) { c.Search, c.Open = true, &OpenLoop{MaxInFlight: 2, Rates: []float64{1}} }, "search", "closed loop"},
		{"search with steps", func(c *Config) { c.Search, c.Steps = true, []int{1, 2} }, "steps", "a knee search chooses its own steps"},
		{"search with a step size", func(c *Config) { c.Search, c.RequestsPerStep = true, optional.Of(100) }, "requests_per_step", "a search sizes its steps itself"},
		{"search top without a search", func(c *Config) { c.SearchMax = optional.Of(8) }, "search_max_concurrency", "bounds a knee search"},
		{"search top too high", func(c *Config) { c.Search, c.SearchMax = true, optional.Of(MaxConcurrency+1) }, "search_max_concurrency", "outside 1..10000"},
		{"collapse tolerance", func(c *Config) { c.CollapseTolerancePct = optional.Of(120.0) }, "collapse_tolerance_pct", "outside (0, 100)"},
		{"collapse tolerance of 0", func(c *Config) { c.CollapseTolerancePct = optional.Of(0.0) }, "collapse_tolerance_pct", "outside (0, 100)"},
		{"bad prompt", func(c *Config) { c.Prompts = []Prompt{{Text: "a"}, {}} }, "prompts[1]", "needs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			errs := c.Validate()
			if len(errs) != 1 || errs[0].Path != tc.path || !strings.Contains(errs[0].Message, tc.want) {
				t.Errorf("problems %v, want one at %s saying %q", errs, tc.path, tc.want)
			}
			if again := c.WithDefaults().Validate(); !slices.Equal(again, errs) {
				t.Errorf("with its defaults applied, the configuration has other problems: %v, not %v", again, errs)
			}
		})
	}
	set := ok
	set.Pause, set.Warmup = optional.Of(time.Duration(0)), optional.Of(0)
	if errs := set.Validate(); len(errs) > 0 {
		t.Errorf("no pause and no warm-up are valid settings: %v", errs)
	}
	if d := set.WithDefaults(); d.pause() != 0 || d.warmupFor(4, 100) != 0 {
		t.Errorf("a pause and a warm-up of 0 became %s and %d", d.pause(), d.warmupFor(4, 100))
	}
	if u, _ := ok.endpoint(); u != "https://api.example.test/v1/chat/completions?api-version=2024-10-21" {
		t.Errorf("endpoint = %s", u)
	}
}
