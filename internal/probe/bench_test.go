//go:build unix

package probe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/optional"
)

// benchSimEnv, when set to a fakeendpoint.Config in JSON, turns the test binary into
// a simulator process for BenchmarkProbeStreams, so that the probe's CPU
// time is measured apart from the simulator's.
const benchSimEnv = "PLANNER_PROBE_BENCH_SIM"

func TestMain(m *testing.M) {
	if cfg := os.Getenv(benchSimEnv); cfg != "" {
		os.Exit(serveSimProcess(cfg))
	}
	os.Exit(m.Run())
}

// serveSimProcess serves a simulator on 127.0.0.1, prints its address, and
// runs until its standard input closes.
func serveSimProcess(js string) int {
	var cfg fakeendpoint.Config
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "sim config:", err)
		return 2
	}
	srv, err := fakeendpoint.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(l.Addr())
	go func() { _ = http.Serve(l, srv) }()
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// simProcess is a simulator running in a child process.
type simProcess struct {
	cmd   *exec.Cmd
	stdin io.Closer
	base  string
}

func startSimProcess(b *testing.B, cfg fakeendpoint.Config) *simProcess {
	b.Helper()
	js, err := json.Marshal(cfg)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), benchSimEnv+"="+string(js))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("the simulator process did not start: %v", err)
	}
	return &simProcess{cmd: cmd, stdin: stdin, base: "http://" + strings.TrimSpace(addr) + "/v1"}
}

// stop ends the simulator and returns the CPU time it used.
func (p *simProcess) stop(b *testing.B) time.Duration {
	b.Helper()
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		b.Fatalf("simulator process: %v", err)
	}
	return p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchTTFT is the simulator's fixed time to first token.
const benchTTFT = 200 * time.Millisecond

// BenchmarkProbeStreams measures the probe's own cost: a two-step ramp,
// streams/4 then streams, of N = 3·c requests per step, against a
// simulator in another process whose TTFT is fixed (200 ms, no growth, a
// slot for every stream) and whose answers have lognormal lengths (median
// 16 tokens, 20 ms apart). Metrics: ttft-err-p50-ms and ttft-err-p95-ms are
// the measured TTFT minus the configured one over the last step's requests
// after its warm-up; cpu-ns/req is the probe process's CPU time per
// request; sim-cpu-ns/req the simulator's. Run it with
//
//	go test ./internal/probe -run '^$' -bench ProbeStreams -benchtime 1x
func BenchmarkProbeStreams(b *testing.B) {
	for _, streams := range []int{64, 250, 500, 750, 1000, 1500, 2000} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			p := startSimProcess(b, fakeendpoint.Config{
				MaxNumSeqs: streams, TTFT: benchTTFT, ITL: 20 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth, OutputTokens: 16,
			})
			cfg := Config{
				BaseURL: p.base, Model: fakeendpoint.DefaultModel, Steps: []int{streams / 4, streams},
				MaxTokens: optional.Of(64), InputTokens: optional.Of(64), Deadline: optional.Of(time.Minute), Pause: optional.Of(100 * time.Millisecond),
			}
			var cpu time.Duration
			var requests int
			var errs []float64
			for b.Loop() {
				before := processCPU(b)
				res, err := Run(b.Context(), cfg, nil)
				cpu += processCPU(b) - before
				if err != nil {
					b.Fatal(err)
				}
				for _, rec := range res.Records {
					if !rec.OK {
						b.Fatalf("a request failed: %+v %v", rec, res.ErrorSamples)
					}
					if !rec.Warmup && rec.Step == streams {
						errs = append(errs, rec.TTFTMs-float64(benchTTFT.Milliseconds()))
					}
				}
				requests += len(res.Records)
			}
			simCPU := p.stop(b)
			slices.Sort(errs)
			b.ReportMetric(model.QuantileSorted(errs, 0.5), "ttft-err-p50-ms")
			b.ReportMetric(model.QuantileSorted(errs, 0.95), "ttft-err-p95-ms")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(requests), "cpu-ns/req")
			b.ReportMetric(float64(simCPU.Nanoseconds())/float64(requests), "sim-cpu-ns/req")
		})
	}
}

// BenchmarkProbeAgainstBareReader runs the same load against one
// simulator in another process, with the probe and with two bare readers
// that send a fixed body of the probe's size and copy each answer to
// io.Discard without parsing it: 64 streams in a closed loop sharing
// 20,000 requests of 16 tokens (ignore_eos; TTFT 20 ms, 2 ms per token, no
// growth, a slot for every stream). The bare readers are hey's (it does
// per request what github.com/rakyll/hey does: a prepared request cloned,
// six timing hooks, a client timeout, a transport per worker, a result
// sent to a channel read at the end) and a minimal one (one transport,
// http.NewRequest, Do, io.Copy, nothing else). The probe runs one step of
// 64 with its warm-up. Each iteration runs the three, in an order that
// turns from one iteration to the next, and measures each one's CPU time
// per request (this process's user and system time, from getrusage, a
// collection included after each run so that none pays for another's
// garbage). Metrics: the CPU per request of each over all iterations, and
// the median over iterations of the probe's against each reader's. Run it
// with
//
//	go test ./internal/probe -run '^$' -bench ProbeAgainstBareReader -benchtime 5x
func BenchmarkProbeAgainstBareReader(b *testing.B) {
	const streams, tokens, requests = 64, 16, 20_000
	p := startSimProcess(b, fakeendpoint.Config{
		MaxNumSeqs: streams, TTFT: 20 * time.Millisecond, ITL: 2 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth,
	})
	defer p.stop(b)
	cfg := Config{
		BaseURL: p.base, Model: fakeendpoint.DefaultModel, Steps: []int{streams}, RequestsPerStep: optional.Of(requests),
		MaxTokens: optional.Of(tokens), IgnoreEOS: true, InputTokens: optional.Of(64), Pause: optional.Of(time.Duration(0)),
	}
	url, body := bareRequest(b, cfg)
	measure := func(f func() int) (time.Duration, int) {
		runtime.GC()
		before := processCPU(b)
		n := f()
		runtime.GC()
		return processCPU(b) - before, n
	}
	loads := []func() int{
		func() int {
			res, err := Run(b.Context(), cfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			for _, rec := range res.Records {
				if !rec.OK {
					b.Fatalf("a request failed: %+v %v", rec, res.ErrorSamples)
				}
			}
			return len(res.Records)
		},
		func() int { return heyRead(b, url, body, streams, requests, cfg.WithDefaults().deadline()) },
		func() int { return bareRead(b, url, body, streams, requests) },
	}
	var cpu [3]time.Duration
	var n [3]int
	var vsHey, vsMinimal []float64
	turn := 0
	for b.Loop() {
		var per [3]float64
		for k := range loads {
			i := (k + turn) % len(loads)
			c, m := measure(loads[i])
			cpu[i], n[i] = cpu[i]+c, n[i]+m
			per[i] = float64(c) / float64(m)
		}
		vsHey, vsMinimal = append(vsHey, per[0]/per[1]), append(vsMinimal, per[0]/per[2])
		turn++
	}
	us := func(i int) float64 { return float64(cpu[i].Microseconds()) / float64(n[i]) }
	b.ReportMetric(us(0), "probe-cpu-us/req")
	b.ReportMetric(us(1), "hey-cpu-us/req")
	b.ReportMetric(us(2), "minimal-cpu-us/req")
	slices.Sort(vsHey)
	slices.Sort(vsMinimal)
	b.ReportMetric(model.QuantileSorted(vsHey, 0.5), "probe/hey")
	b.ReportMetric(model.QuantileSorted(vsMinimal, 0.5), "probe/minimal")
}

// heyRead sends requests of body to url as hey does (requester.go of
// github.com/rakyll/hey): streams workers, each with its own transport
// and a client with a timeout, share the requests; each request is a
// clone of a prepared one, traced by hey's six timing hooks, its answer
// copied to io.Discard, and its result sent to a channel that is read
// once all are done. It returns the requests sent.
func heyRead(b *testing.B, url string, body []byte, streams, requests int, timeout time.Duration) int {
	type result struct {
		err                                     error
		statusCode                              int
		duration, connDuration, dnsDuration     time.Duration
		reqDuration, resDuration, delayDuration time.Duration
		contentLength                           int64
	}
	prepared, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	prepared.Header.Set("Content-Type", "application/json")
	prepared.Header.Set("User-Agent", "hey/0.0.1")
	results := make(chan *result, requests)
	makeRequest := func(c *http.Client) {
		s := time.Now()
		var size int64
		var code int
		var dnsStart, connStart, resStart, reqStart, delayStart time.Time
		var dnsDuration, connDuration, reqDuration, delayDuration time.Duration
		req := new(http.Request)
		*req = *prepared
		req.Header = make(http.Header, len(prepared.Header))
		for k, v := range prepared.Header {
			req.Header[k] = append([]string(nil), v...)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		trace := &httptrace.ClientTrace{
			DNSStart:     func(httptrace.DNSStartInfo) { dnsStart = time.Now() },
			DNSDone:      func(httptrace.DNSDoneInfo) { dnsDuration = time.Since(dnsStart) },
			GetConn:      func(string) { connStart = time.Now() },
			GotConn:      func(httptrace.GotConnInfo) { connDuration, reqStart = time.Since(connStart), time.Now() },
			WroteRequest: func(httptrace.WroteRequestInfo) { reqDuration, delayStart = time.Since(reqStart), time.Now() },
			GotFirstResponseByte: func() {
				delayDuration, resStart = time.Since(delayStart), time.Now()
			},
		}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
		resp, err := c.Do(req)
		if err == nil {
			size, code = resp.ContentLength, resp.StatusCode
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		t := time.Now()
		results <- &result{err: err, statusCode: code, duration: t.Sub(s), contentLength: size, connDuration: connDuration,
			dnsDuration: dnsDuration, reqDuration: reqDuration, resDuration: t.Sub(resStart), delayDuration: delayDuration}
	}
	var wg sync.WaitGroup
	for w := range streams {
		n := requests / streams
		if w < requests%streams {
			n++
		}
		wg.Go(func() {
			tr := &http.Transport{DisableCompression: true, Proxy: http.ProxyFromEnvironment}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: timeout}
			for range n {
				makeRequest(c)
			}
		})
	}
	wg.Wait()
	close(results)
	sent := 0
	var total time.Duration
	for r := range results {
		if r.err != nil || r.statusCode != http.StatusOK {
			b.Fatalf("hey's request failed: %v, HTTP %d", r.err, r.statusCode)
		}
		total += r.duration
		sent++
	}
	if total <= 0 {
		b.Fatal("no time measured")
	}
	return sent
}

// bareRead sends requests of body to url over streams connections in a
// closed loop and reads each answer to its end without looking at it; it
// returns the requests sent.
func bareRead(b *testing.B, url string, body []byte, streams, requests int) int {
	tr := newTransport(streams, nil, nil)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range streams {
		wg.Go(func() {
			for next.Add(1) <= int64(requests) {
				req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("HTTP %d", resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	return requests
}

// BenchmarkSearchAgainstLadder runs the default ladder 1, 2, 4, … 4 ×
// slots and the knee search up to the same top against a simulator on
// 127.0.0.1 with real sockets and a real clock, for 4, 8, 12, 16 and 64
// slots: requests of 8 tokens (ignore_eos) taking 270 ms below the slot
// count (TTFT 200 ms, 10 ms per token, no growth), 100 ms between steps.
// Metrics: the knee of each and the search's knee_refined; requests
// (sends, retries included), tokens and wall time of the ladder, of the
// search's doubling steps and of its refinement. Run it with
//
//	go test ./internal/probe -run '^$' -bench SearchAgainstLadder -benchtime 1x
func BenchmarkSearchAgainstLadder(b *testing.B) {
	for _, slots := range []int{4, 8, 12, 16, 64} {
		b.Run(fmt.Sprintf("slots=%d", slots), func(b *testing.B) {
			_, base := startSim(b, fakeendpoint.Config{MaxNumSeqs: slots, TTFT: 200 * time.Millisecond, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
			var ladder []int
			for c := 1; c <= 4*slots; c *= 2 {
				ladder = append(ladder, c)
			}
			for b.Loop() {
				for _, search := range []bool{false, true} {
					cfg := Config{BaseURL: base, Model: fakeendpoint.DefaultModel, MaxTokens: optional.Of(8), IgnoreEOS: true, InputTokens: optional.Of(32),
						Pause: optional.Of(100 * time.Millisecond), Steps: ladder}
					if search {
						cfg.Steps, cfg.Search, cfg.SearchMax = nil, true, optional.Of(4*slots)
					}
					res, err := Run(b.Context(), cfg, nil)
					if err != nil || res.Analysis.Knee == nil {
						b.Fatalf("search %v: %v, knee %v", search, err, res.Analysis.Knee)
					}
					sp := res.Spent()
					if !search {
						b.ReportMetric(float64(*res.Analysis.Knee), "knee-ladder")
						b.ReportMetric(float64(sp[0].Requests), "req-ladder")
						b.ReportMetric(float64(sp[0].Tokens), "tok-ladder")
						b.ReportMetric(sp[0].WallS, "s-ladder")
						continue
					}
					b.ReportMetric(float64(*res.Analysis.Knee), "knee-search")
					if r := res.Analysis.KneeRefined; r != nil {
						b.ReportMetric(float64(*r), "knee-refined")
						b.ReportMetric(float64(*res.Analysis.KneeResolution), "resolution")
					}
					b.ReportMetric(float64(sp[0].Requests), "req-search")
					b.ReportMetric(float64(sp[0].Tokens), "tok-search")
					b.ReportMetric(sp[0].WallS, "s-search")
					b.ReportMetric(float64(sp[1].Requests), "req-refine")
					b.ReportMetric(float64(sp[1].Tokens), "tok-refine")
					b.ReportMetric(sp[1].WallS, "s-refine")
				}
			}
		})
	}
}

// BenchmarkRequestAllocs counts what one streamed request allocates, one
// request after another over a kept-alive connection to a simulator in
// another process (so that only this side's allocations count): the bare
// reader (net/http, the body copied to io.Discard) and the probe's
// request path (prompt, body, send with its deadline and connection
// timing, SSE reading, chunk scanning, the row and its bookkeeping), at
// 16 and 64 tokens an answer: the same count at both lengths is nothing
// allocated per chunk. Run it with
//
//	go test ./internal/probe -run '^$' -bench RequestAllocs -benchmem
func BenchmarkRequestAllocs(b *testing.B) {
	p := startSimProcess(b, fakeendpoint.Config{MaxNumSeqs: 4, TTFT: time.Millisecond, ITL: 100 * time.Microsecond, ITLGrowth: fakeendpoint.NoGrowth})
	defer p.stop(b)
	for _, tokens := range []int{16, 64} {
		cfg := Config{BaseURL: p.base, Model: fakeendpoint.DefaultModel, Steps: []int{1}, MaxTokens: optional.Of(tokens), IgnoreEOS: true,
			InputTokens: optional.Of(64)}.WithDefaults()
		b.Run(fmt.Sprintf("bare/tokens=%d", tokens), func(b *testing.B) {
			url, body := bareRequest(b, cfg)
			tr := newTransport(1, nil, nil)
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: cfg.deadline()}
			b.ReportAllocs()
			for b.Loop() {
				req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
		b.Run(fmt.Sprintf("probe/tokens=%d", tokens), func(b *testing.B) {
			r, err := newRunner(cfg, nil, 1)
			if err != nil {
				b.Fatal(err)
			}
			defer r.close()
			r.records = make([]measure.Record, 0, 1<<14)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				rec, ok := r.request(b.Context(), stepKey{c: 1}, i, false, false)
				if !ok || !rec.OK || rec.OutputTokens != tokens {
					b.Fatalf("request %d: %+v", i, rec)
				}
				i++
			}
		})
	}
}
