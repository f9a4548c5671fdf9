package api

import (
	"net/http"
	"runtime"
	"testing"
	"time"
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
