package jobs

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/sim"
	"github.com/plannerdev/planner/internal/store"
)

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "planner.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// simURL serves a simulator on loopback for the test and returns its API
// root.
func simURL(t *testing.T, cfg sim.Config) string {
	t.Helper()
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// fast answers in about 15 ms; slow in about 200 ms.
var (
	fast = sim.Config{MaxNumSeqs: 64, TTFT: 5 * time.Millisecond, ITL: time.Millisecond, ITLGrowth: sim.NoGrowth}
	slow = sim.Config{MaxNumSeqs: 64, TTFT: 100 * time.Millisecond, ITL: 10 * time.Millisecond, ITLGrowth: sim.NoGrowth}
)

func spec(url string, steps []int, n int) Spec {
	return Spec{
		Config: probe.Config{BaseURL: url, Model: sim.DefaultModel, Steps: steps, RequestsPerStep: n, MaxTokens: 8, IgnoreEOS: true, Pause: -1},
		Run:    store.ProbeRun{BaseURL: url, Model: sim.DefaultModel, Label: "test"},
	}
}

// collect reads a subscription until it closes.
func collect(t *testing.T, sub *Subscription) []Event {
	t.Helper()
	var evs []Event
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-timeout:
			t.Fatal("the subscription did not end")
		}
	}
}

func waitStatus(t *testing.T, st *store.Store, id string, want store.Status) store.ProbeRun {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		run, err := st.GetProbe(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status == want {
			return run
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("probe %s never became %s", id, want)
	return store.ProbeRun{}
}

func TestJobRunsAndReports(t *testing.T) {
	st := openStore(t)
	m := New(st, Options{ProgressInterval: 20 * time.Millisecond})
	started, err := m.Start(spec(simURL(t, fast), []int{1, 2}, 42)) // the least a step at 2 may measure, plus warm-up
	if err != nil {
		t.Fatal(err)
	}
	id := started.ID
	if started.Status != store.StatusQueued || started.CreatedAt.IsZero() {
		t.Fatalf("Start returned %+v, want the probe as accepted: queued", started)
	}
	sub, ok := m.Subscribe(id)
	if !ok {
		t.Fatal("a job just started is not running")
	}
	evs := collect(t, sub)
	if sub.Dropped() {
		t.Fatal("a reading subscriber was dropped")
	}
	var kinds []EventKind
	var steps []int
	progress := 0
	for _, ev := range evs {
		if len(kinds) == 0 || kinds[len(kinds)-1] != ev.Kind {
			kinds = append(kinds, ev.Kind)
		}
		switch ev.Kind {
		case EventStep:
			steps = append(steps, ev.Step.Concurrency)
		case EventProgress:
			progress++
			if ev.Progress.Requests < 0 || ev.Progress.Requests > 84 || ev.Progress.Step < 1 {
				t.Errorf("progress %+v", ev.Progress)
			}
		}
	}
	last := evs[len(evs)-1]
	if last.Kind != EventDone || last.Status != store.StatusSucceeded || progress == 0 || len(steps) != 2 || steps[0] != 1 || steps[1] != 2 {
		t.Fatalf("events %v; steps %v; %d progress events; last %+v", kinds, steps, progress, last)
	}
	if evs[len(evs)-2].Kind != EventStatus || evs[len(evs)-2].Status != store.StatusSucceeded {
		t.Errorf("the final status does not come before done: %v", kinds)
	}
	run := waitStatus(t, st, id, store.StatusSucceeded)
	// 42 requests a step; a step whose goodput gain lies within its noise
	// of the knee rule's threshold (a busy machine) is measured twice as
	// long, once, and says so.
	want := 84
	if run.Result != nil && slices.ContainsFunc(run.Result.Analysis.Notes, func(n string) bool { return strings.Contains(n, "measured twice as long") }) {
		want = run.Counts.Records
		if want != 126 {
			t.Errorf("%d rows with a step measured twice as long, want 126", want)
		}
	}
	if run.Counts.Records != want || run.Counts.OK != want || run.Result == nil || len(run.Result.Analysis.Steps) != 2 ||
		run.Result.StopReason != probe.StopCompleted || run.Label != "test" || run.StartedAt.IsZero() || run.FinishedAt.IsZero() {
		t.Fatalf("stored run %+v result %+v", run, run.Result)
	}
	if _, ok := m.Subscribe(id); ok {
		t.Error("an ended job still takes subscribers")
	}
	if m.Running(id) {
		t.Error("an ended job still runs")
	}
}

// TestRowsArriveWhileRunning checks that rows are in the store long
// before the probe ends, so that a kill loses at most the last batch.
func TestRowsArriveWhileRunning(t *testing.T) {
	st := openStore(t)
	m := New(st, Options{})
	started, err := m.Start(spec(simURL(t, slow), []int{1}, 41)) // about 5 s
	id := started.ID
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		run, err := st.GetProbe(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Counts.Records >= 2 {
			if run.Status != store.StatusRunning {
				t.Fatalf("status %s with %d rows", run.Status, run.Counts.Records)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no rows stored after 5 s (%d)", run.Counts.Records)
		}
		time.Sleep(20 * time.Millisecond)
	}
	done, err := m.Cancel(id)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	run := waitStatus(t, st, id, store.StatusCancelled)
	recs, err := st.Records(context.Background(), id)
	if err != nil || len(recs) != run.Counts.Records || len(recs) < 2 {
		t.Fatalf("%d rows stored, counts %d: %v", len(recs), run.Counts.Records, err)
	}
	if _, err := m.Cancel(id); !errors.Is(err, ErrNotRunning) {
		t.Errorf("cancel of an ended job: %v", err)
	}
}

func TestMaxRunning(t *testing.T) {
	st := openStore(t)
	m := New(st, Options{MaxRunning: 1})
	url := simURL(t, slow)
	started, err := m.Start(spec(url, []int{1}, 100))
	id := started.ID
	if err != nil {
		t.Fatal(err)
	}
	var busy *BusyError
	if _, err := m.Start(spec(url, []int{1}, 41)); !errors.As(err, &busy) || busy.Limit != 1 {
		t.Fatalf("second start: %v", err)
	}
	if _, err := m.Acquire(); !errors.As(err, &busy) {
		t.Fatalf("acquire beside a running job: %v", err)
	}
	done, err := m.Cancel(id)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	release, err := m.Acquire()
	if err != nil {
		t.Fatalf("acquire once the job ended: %v", err)
	}
	release()
	release() // a second release frees nothing more
	if m.running != 0 {
		t.Fatalf("%d slots taken after release", m.running)
	}
}

func TestShutdownInterrupts(t *testing.T) {
	st := openStore(t)
	m := New(st, Options{})
	started, err := m.Start(spec(simURL(t, slow), []int{1, 2}, 100))
	id := started.ID
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := m.Subscribe(id)
	time.Sleep(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	run := waitStatus(t, st, id, store.StatusInterrupted)
	if run.Result == nil || run.Result.StopReason != probe.StopCancelled || run.FinishedAt.IsZero() {
		t.Fatalf("interrupted run %+v", run)
	}
	evs := collect(t, sub)
	if last := evs[len(evs)-1]; last.Kind != EventDone || last.Status != store.StatusInterrupted {
		t.Fatalf("last event %+v", last)
	}
	if _, err := m.Start(spec("http://127.0.0.1:1/v1", []int{1}, 41)); !errors.Is(err, ErrClosed) {
		t.Fatalf("start after shutdown: %v", err)
	}
}

// TestSlowSubscriberIsDropped follows a job with a subscriber that never
// reads: the job runs to its end at its own pace, and the subscriber is
// dropped rather than waited for.
func TestSlowSubscriberIsDropped(t *testing.T) {
	st := openStore(t)
	m := New(st, Options{ProgressInterval: time.Millisecond})
	quick := sim.Config{MaxNumSeqs: 64, TTFT: time.Millisecond, ITL: 100 * time.Microsecond, ITLGrowth: sim.NoGrowth}
	started, err := m.Start(spec(simURL(t, quick), []int{8, 16}, 1500)) // a change every millisecond for about half a second
	id := started.ID
	if err != nil {
		t.Fatal(err)
	}
	stuck, _ := m.Subscribe(id)
	reader, _ := m.Subscribe(id)
	start := time.Now()
	evs := collect(t, reader)
	if reader.Dropped() || evs[len(evs)-1].Kind != EventDone {
		t.Fatalf("the reading subscriber: dropped %v, %d events", reader.Dropped(), len(evs))
	}
	waitStatus(t, st, id, store.StatusSucceeded)
	n := 0
	for range stuck.C {
		n++
	}
	if !stuck.Dropped() || n > subscriberBuffer+1 {
		t.Fatalf("the stuck subscriber: dropped %v after %d events (%d delivered to the reader in %s)", stuck.Dropped(), n, len(evs), time.Since(start))
	}
}
