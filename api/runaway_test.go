package api

import (
	"context"
	"net/http"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// runaway are scenarios within the schema's bounds whose numbers once made
// a plan compute forever: a lognormal TTFT with a p95 a billion times its
// p50, and a fixed TPOT of 1e9 ms with 1e9 output tokens.
var runaway = map[string]string{
	"lognormal spread": `{"quotas":[{"name":"k","rpm":1e12}],
		"latency":{"ttft_ms":{"p50":1,"p95":1e9},"tpot_ms":{"p50":20,"p95":30}},
		"classes":[{"name":"c","quota":"k","mode":"interactive","demand":{"rps":1e7},
		"input_tokens":{"fixed":100},"output_tokens":{"fixed":100},"slo":{"e2e_p95_ms":1e9}}]}`,
	"fixed giants": `{"quotas":[{"name":"k","rpm":1e12,"tpm":1e13}],
		"latency":{"ttft_ms":{"fixed":1e9},"tpot_ms":{"fixed":1e9}},
		"classes":[{"name":"c","quota":"k","mode":"batch","demand":{"rpm":1e9},
		"input_tokens":{"fixed":1e9},"output_tokens":{"fixed":1e9},"max_tokens":10000000}]}`,
	"curve giants": `{"quotas":[{"name":"k","rpm":1e12}],
		"latency":{"curve":[{"concurrency":1,"ttft_p50_ms":1e7,"ttft_p95_ms":1e7,"tpot_p50_ms":1e6,"tpot_p95_ms":1e6},
		                    {"concurrency":100000,"ttft_p50_ms":1e7,"ttft_p95_ms":1e7,"tpot_p50_ms":1e6,"tpot_p95_ms":1e6,"throughput_rps":1e-9}]},
		"classes":[{"name":"c","quota":"k","mode":"semi","demand":{"rps":1e7},
		"input_tokens":{"fixed":1e9},"output_tokens":{"fixed":1e9},"max_tokens":10000000}]}`,
}

// cpuTime is the CPU time the process has used.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestRunawayInputsEndAndLeaveNothingRunning: each runaway scenario gets a
// 422 naming the class (or a plan) from POST /v1/plans and from a what-if
// over it, and once the answers are in, no computation holds a slot and
// the process's CPU is idle: nothing goes on computing after the answer.
func TestRunawayInputsEndAndLeaveNothingRunning(t *testing.T) {
	s := newServer(t, Options{PlanTimeout: 5 * time.Second})
	for name, sc := range runaway {
		t.Run(name, func(t *testing.T) {
			rec := send(s, http.MethodPost, "/v1/plans", []byte(`{"scenario":`+sc+`}`))
			switch rec.Code {
			case http.StatusOK:
			case http.StatusUnprocessableEntity:
				p := readProblem(t, rec)
				if len(p.Errors) == 0 || p.Errors[0].Location != "body.scenario.classes[0]" {
					t.Fatalf("422 without the class named: %s", rec.Body)
				}
			default:
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			rec = send(s, http.MethodPost, "/v1/what-if", []byte(`{"scenario":`+sc+`,"variations":[{"path":"/quotas/0/rpm","values":[1e6,1e9,1e12]}]}`))
			if rec.Code != http.StatusOK && rec.Code != http.StatusUnprocessableEntity {
				t.Fatalf("what-if: status %d: %s", rec.Code, rec.Body)
			}
		})
	}
	if n := s.engine.Running(); n != 0 {
		t.Fatalf("%d computations still hold a slot after their answers", n)
	}
	// A computation left running would take a whole core; over a quarter
	// of a second the process uses a small fraction of one.
	before, start := cpuTime(t), time.Now()
	time.Sleep(250 * time.Millisecond)
	used, wall := cpuTime(t)-before, time.Since(start)
	if used > wall/2 {
		t.Fatalf("the process used %s of CPU in %s after the last answer: a computation is still running", used, wall)
	}
}

// TestComputeLimitAnswers503WhenFull: with every slot taken and the queue
// full, a plan request gets 503 with a Retry-After, and it is answered
// again once a slot frees.
func TestComputeLimitAnswers503WhenFull(t *testing.T) {
	s := newServer(t, Options{MaxComputations: 1})
	hold, held, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		done <- s.engine.Run(context.Background(), func(context.Context) error { close(held); <-hold; return nil })
	}()
	<-held
	// Fill the queue of waiters (2 × slots) with requests that wait.
	var wg sync.WaitGroup
	codes := make(chan int, 2)
	for range 2 {
		wg.Go(func() {
			codes <- send(s, http.MethodPost, "/v1/plans", []byte(`{"scenario":`+runawayFree+`}`)).Code
		})
	}
	for s.engine.Waiting() < 2 {
		runtime.Gosched()
	}
	rec := send(s, http.MethodPost, "/v1/plans", []byte(`{"scenario":`+runawayFree+`}`))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("status %d Retry-After %q, want 503 with Retry-After: %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if p := readProblem(t, rec); p.Status != http.StatusServiceUnavailable {
		t.Fatalf("problem %+v", p)
	}
	close(hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Fatalf("a waiting request got %d once the slot freed", c)
		}
	}
}

// runawayFree is a small scenario that plans at once.
const runawayFree = `{"quotas":[{"name":"k","rpm":600}],"latency":{"ttft_ms":{"fixed":500},"tpot_ms":{"fixed":20}},
	"classes":[{"name":"c","quota":"k","mode":"interactive","input_tokens":{"fixed":1000},"output_tokens":{"fixed":101}}]}`
