package api

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/simulate"
	"github.com/plannerdev/planner/internal/testutil"
)

// panicking computes nothing: each of its computations panics inside the
// server's engine, as a bug in the engine would.
type panicking struct{ eng *plan.Engine }

func (p panicking) fail(ctx context.Context, s scenario.Scenario) error {
	return p.eng.Run(ctx, func(context.Context) error {
		_ = s.Classes[len(s.Classes)] // index out of range
		return nil
	})
}

func (p panicking) Plan(ctx context.Context, s scenario.Scenario) (*plan.Plan, error) {
	return nil, p.fail(ctx, s)
}

func (p panicking) WhatIf(ctx context.Context, s scenario.Scenario, _ []plan.Variation, _ bool) (*plan.WhatIf, error) {
	return nil, p.fail(ctx, s)
}

func (p panicking) Simulate(ctx context.Context, s scenario.Scenario, _ simulate.Options) (*simulate.Simulation, error) {
	return nil, p.fail(ctx, s)
}

// TestPanicInAComputationIsA500: a plan, a what-if grid and a simulation
// whose computation panics each answer 500 without a word of the panic,
// log it with its stack, give their slot back, and the service goes on
// planning in that same, only slot.
func TestPanicInAComputationIsA500(t *testing.T) {
	var logs bytes.Buffer
	s := newServer(t, Options{MaxComputations: 1, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	real := s.app
	s.app = panicking{s.engine}
	sc := `{"scenario":` + runawayFree
	for _, req := range []struct{ path, body string }{
		{"/v1/plans", sc + `}`},
		{"/v1/what-if", sc + `,"variations":[{"path":"/quotas/0/rpm","values":[600,1200]}]}`},
		{"/v1/simulations", sc + `,"duration_s":60}`},
	} {
		rec := send(s, http.MethodPost, req.path, []byte(req.body))
		if rec.Code != http.StatusInternalServerError {
			t.Fatalf("%s: status %d, want 500: %s", req.path, rec.Code, rec.Body)
		}
		readProblem(t, rec)
		for _, leak := range []string{"index out of range", "goroutine", "limits.go"} {
			if strings.Contains(rec.Body.String(), leak) {
				t.Errorf("%s: the answer tells of the panic (%q): %s", req.path, leak, rec.Body)
			}
		}
		if n := s.engine.Running(); n != 0 {
			t.Fatalf("%s: %d slots held after the panic", req.path, n)
		}
	}
	if got := strings.Count(logs.String(), `"msg":"a computation panicked"`); got != 3 {
		t.Errorf("%d panics logged, want 3:\n%s", got, logs.String())
	}
	if !strings.Contains(logs.String(), "guard_test.go") {
		t.Errorf("the log has no stack of the panic:\n%s", logs.String())
	}
	s.app = real
	if rec := send(s, http.MethodPost, "/v1/plans", []byte(sc+`}`)); rec.Code != http.StatusOK {
		t.Fatalf("a plan after the panics: %d %s", rec.Code, rec.Body)
	}
}

// TestShedRequestsAreNotErrors: a plan request turned away because every
// slot is taken and the queue is full is counted with status class
// "shed", not "5xx", and logged as a warning, not an error.
func TestShedRequestsAreNotErrors(t *testing.T) {
	var logs testutil.SyncBuffer
	s := newServer(t, Options{MaxComputations: 1, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	hold, held, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		done <- s.engine.Run(context.Background(), func(context.Context) error { close(held); <-hold; return nil })
	}()
	<-held
	var wg sync.WaitGroup
	for range 2 { // the queue: twice the slots
		wg.Go(func() { send(s, http.MethodPost, "/v1/plans", []byte(`{"scenario":`+runawayFree+`}`)) })
	}
	for s.engine.Waiting() < 2 {
		time.Sleep(time.Millisecond)
	}
	if rec := send(s, http.MethodPost, "/v1/plans", []byte(`{"scenario":`+runawayFree+`}`)); rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", rec.Code)
	}
	close(hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	metrics := send(s, http.MethodGet, "/metrics", nil).Body.String()
	for _, want := range []string{
		`planner_http_requests_total{operation="create-plan",status_class="shed"} 1`,
		`planner_http_requests_total{operation="create-plan",status_class="2xx"} 2`,
		`planner_compute_refused_total 1`,
		`planner_compute_running 0`,
		`planner_compute_waiting 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(metrics, `status_class="5xx"`) {
		t.Errorf("a shed request counted as 5xx")
	}
	var shedLine string
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, `"status":503`) {
			shedLine = line
		}
	}
	if !strings.Contains(shedLine, `"level":"WARN"`) {
		t.Errorf("the shed request is logged as %q, want a warning", shedLine)
	}
}

// TestCloseAnswersRunningComputations503: when the service shuts down, a
// plan that is computing is stopped and answered 503 at once, long before
// its plan_timeout, and later computations are refused the same way.
func TestCloseAnswersRunningComputations503(t *testing.T) {
	s := newServer(t, Options{PlanTimeout: 10 * time.Minute})
	answered := make(chan *http.Response, 1)
	body := []byte(`{"scenario":` + testutil.SlowScenario + `}`)
	go func() {
		rec := send(s, http.MethodPost, "/v1/plans", body)
		answered <- rec.Result()
	}()
	for s.engine.Running() == 0 {
		time.Sleep(time.Millisecond)
	}
	s.Close()
	select {
	case resp := <-answered:
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("status %d, want 503", resp.StatusCode)
		}
	case <-time.After(time.Minute): // the plan alone computes for far longer
		t.Fatal("the running plan was not stopped")
	}
	rec := send(s, http.MethodPost, "/v1/what-if", []byte(`{"scenario":`+runawayFree+`,"variations":[{"path":"/quotas/0/rpm","values":[700]}]}`))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "shutting down") {
		t.Fatalf("a what-if after Close: %d %s", rec.Code, rec.Body)
	}
}
