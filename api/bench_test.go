package api

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/model"
)

// BenchmarkCreatePlanThreeClasses answers POST /v1/plans for
// docs/examples/three-classes.yaml in process: decoding, validation,
// planning and encoding, without the network (docs/benchmarks.md measures
// the server over loopback).
func BenchmarkCreatePlanThreeClasses(b *testing.B) {
	s := newServer(b, Options{})
	body := mustJSON(b, map[string]any{"scenario": exampleDoc(b, "three-classes")})
	b.ReportAllocs()
	for b.Loop() {
		if rec := send(s, http.MethodPost, "/v1/plans", body); rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

// whatIfBody is a what-if request over a shipped example.
func whatIfBody(b *testing.B, example string, vars ...map[string]any) []byte {
	return mustJSON(b, map[string]any{"scenario": exampleDoc(b, example), "variations": vars})
}

// values are n numbers from lo in steps of step.
func values(n int, lo, step float64) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = lo + float64(i)*step
	}
	return out
}

// benchWhatIf answers one what-if request per iteration on a new server,
// so that no cell comes from an earlier iteration's caches, and reports the
// process's peak heap growth in MB.
func benchWhatIf(b *testing.B, body []byte) {
	b.ReportAllocs()
	var peak uint64
	for b.Loop() {
		b.StopTimer()
		s := newServer(b, Options{Store: fakeStore{}, PlanTimeout: time.Minute})
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		done := make(chan struct{})
		var top uint64
		go func() {
			var m runtime.MemStats
			for {
				select {
				case <-done:
					return
				default:
				}
				runtime.ReadMemStats(&m)
				if m.HeapInuse > top {
					top = m.HeapInuse
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
		b.StartTimer()
		rec := send(s, http.MethodPost, "/v1/what-if", body)
		b.StopTimer()
		close(done)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %.300s", rec.Code, rec.Body)
		}
		if top > before.HeapInuse {
			peak = max(peak, top-before.HeapInuse)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)/(1<<20), "MB-heap-growth")
}

// BenchmarkWhatIfMeasuredCurve50 is a 50-cell what-if over
// docs/examples/measured-curve.yaml, the assistant's demand from 0.5 to
// 5.4 req/s: every cell plans a curve endpoint anew.
func BenchmarkWhatIfMeasuredCurve50(b *testing.B) {
	benchWhatIf(b, whatIfBody(b, "measured-curve",
		map[string]any{"path": "/classes/0/demand/rps", "values": values(50, 0.5, 0.1)}))
}

// BenchmarkWhatIfThreeClasses400 is a 20 × 20 what-if over
// docs/examples/three-classes.yaml, the heaviest shipped example (three
// classes on one key with demand and SLOs): the chat demand by the key's
// tokens per minute.
func BenchmarkWhatIfThreeClasses400(b *testing.B) {
	benchWhatIf(b, whatIfBody(b, "three-classes",
		map[string]any{"path": "/classes/0/demand/rps", "values": values(20, 1, 0.5)},
		map[string]any{"path": "/quotas/0/tpm", "values": values(20, 500000, 150000)}))
}

// BenchmarkWhatIfMeasuredCurve400 is a 20 × 20 what-if over the measured
// curve: the assistant's demand by the knee.
func BenchmarkWhatIfMeasuredCurve400(b *testing.B) {
	benchWhatIf(b, whatIfBody(b, "measured-curve",
		map[string]any{"path": "/classes/0/demand/rps", "values": values(20, 0.5, 0.2)},
		map[string]any{"path": "/latency/knee", "values": values(20, 8, 2)}))
}

// BenchmarkServeCachedPlans serves the API on a real listener
// (httptest.NewServer on 127.0.0.1, access logs encoded as JSON and
// discarded, as `planner serve` writes them) and answers POST /v1/plans
// for docs/examples/three-classes.yaml, the plan from the engine's cache
// after the first, to clients over HTTP/1.1 keep-alive connections in the
// same process: the server and its clients share the machine's cores.
//
//   - closed/clients=4: four clients each send the next request as soon as
//     the answer before it is read;
//   - open/rate=2000: requests are due at 2,000 a second whatever the
//     answers, each on a goroutine of its own over at most 256
//     connections, and a request's latency is from when it was due, so
//     that a server falling behind shows in it (no coordinated omission).
//
// Metrics: plans/s (answers over the wall time of the run), the
// latency's p50, p90 and p99 in ms, and the CPU time of the process
// (server and clients together, user + system) per plan, which does not
// depend on how busy the machine is as the others do. Every answer must be a 200. Run it with
//
//	go test ./api -run '^$' -bench ServeCachedPlans -benchtime 20000x -count 3
func BenchmarkServeCachedPlans(b *testing.B) {
	s := newServer(b, Options{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	srv := httptest.NewServer(s)
	defer srv.Close()
	body := mustJSON(b, map[string]any{"scenario": exampleDoc(b, "three-classes")})
	// At most 256 connections: past them, a request due waits for one,
	// and the wait is in its latency.
	tr := &http.Transport{MaxConnsPerHost: 256, MaxIdleConnsPerHost: 256}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	url := srv.URL + "/v1/plans"
	post := func() error {
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return err
	}
	if err := post(); err != nil { // plans the scenario once, into the cache
		b.Fatal(err)
	}
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	report := func(b *testing.B, lat []time.Duration, wall, used time.Duration) {
		ms := make([]float64, len(lat))
		for i, d := range lat {
			ms[i] = float64(d) / float64(time.Millisecond)
		}
		slices.Sort(ms)
		b.ReportMetric(float64(len(lat))/wall.Seconds(), "plans/s")
		b.ReportMetric(float64(used.Microseconds())/float64(len(lat)), "cpu-us/plan")
		b.ReportMetric(model.QuantileSorted(ms, 0.5), "p50-ms")
		b.ReportMetric(model.QuantileSorted(ms, 0.9), "p90-ms")
		b.ReportMetric(model.QuantileSorted(ms, 0.99), "p99-ms")
	}
	b.Run("closed/clients=4", func(b *testing.B) {
		const clients = 4
		lat := make([]time.Duration, b.N)
		var next atomic.Int64
		var failed atomic.Pointer[error]
		var wg sync.WaitGroup
		b.ResetTimer()
		start, cpu0 := time.Now(), cpu()
		for range clients {
			wg.Go(func() {
				for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
					t := time.Now()
					if err := post(); err != nil {
						failed.Store(&err)
						return
					}
					lat[i] = time.Since(t)
				}
			})
		}
		wg.Wait()
		wall, used := time.Since(start), cpu()-cpu0
		b.StopTimer()
		if err := failed.Load(); err != nil {
			b.Fatal(*err)
		}
		report(b, lat, wall, used)
	})
	b.Run("open/rate=2000", func(b *testing.B) {
		const rate = 2000
		lat := make([]time.Duration, b.N)
		var failed atomic.Pointer[error]
		var wg sync.WaitGroup
		b.ResetTimer()
		start, cpu0 := time.Now(), cpu()
		for i := range b.N {
			due := start.Add(time.Duration(i) * time.Second / rate)
			time.Sleep(time.Until(due))
			wg.Go(func() {
				if err := post(); err != nil {
					failed.Store(&err)
					return
				}
				lat[i] = time.Since(due)
			})
		}
		wg.Wait()
		wall, used := time.Since(start), cpu()-cpu0
		b.StopTimer()
		if err := failed.Load(); err != nil {
			b.Fatal(*err)
		}
		report(b, lat, wall, used)
	})
}

// BenchmarkCreateAnalysisWorkshopCSV answers POST /v1/analyses for a
// workshop ramp CSV of one step (the row step,idx,ok,code,ms,wall_s
// "1,0,True,200,5.0,8.00" repeated) in process: decoding the body,
// importing the file and analysing it. It reports the body's size and the
// bytes allocated per byte of body.
func BenchmarkCreateAnalysisWorkshopCSV(b *testing.B) {
	for _, n := range []int{100_000, 500_000, 1_000_000} {
		content := "step,idx,ok,code,ms,wall_s\n" + strings.Repeat("1,0,True,200,5.0,8.00\n", n)
		body := mustJSON(b, map[string]any{"file": map[string]any{"name": "a.csv", "content": content}})
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			s := newServer(b, Options{})
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				if rec := send(s, http.MethodPost, "/v1/analyses", body); rec.Code != http.StatusOK {
					b.Fatalf("status %d: %.300s", rec.Code, rec.Body)
				}
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(len(body)), "alloc-B/body-B")
		})
	}
}
