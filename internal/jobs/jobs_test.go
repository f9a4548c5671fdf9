package jobs

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plannerdev/planner/internal/optional"
	"github.com/plannerdev/planner/internal/probe"
	"github.com/plannerdev/planner/internal/store"
	"github.com/plannerdev/planner/internal/testutil"
)

// The tests run in testing/synctest bubbles against an endpoint that
// answers over in-memory pipes on the bubble's fake clock
// (testutil.ChatEndpoint), so that what they assert about timing (a flush
// interval, a subscriber that falls behind) holds however loaded the
// machine is.

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "planner.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// slow is an endpoint that answers in about 200 ms.
func slow() *testutil.ChatEndpoint {
	return &testutil.ChatEndpoint{TTFT: 100 * time.Millisecond, ITL: 10 * time.Millisecond, Tokens: 8}
}

// serve serves the endpoint for the test over in-memory pipes.
func serve(t *testing.T, e *testutil.ChatEndpoint) *testutil.PipeNet {
	t.Helper()
	return testutil.ServePipe(t, e)
}

// spec is a probe of the endpoint behind n.
func spec(n *testutil.PipeNet, steps []int, requests int) Spec {
	const url, model = "http://endpoint.test/v1", "test-model"
	return Spec{
		Config: probe.Config{BaseURL: url, Model: model, Steps: steps, RequestsPerStep: optional.Of(requests), MaxTokens: optional.Of(8), IgnoreEOS: true, Pause: optional.Of(time.Duration(0)), DialContext: n.DialContext},
		Run:    store.ProbeRun{BaseURL: url, Model: model, Label: "test"},
	}
}

// start runs a probe in a new slot, as the API does.
func start(m *Manager, s Spec) (store.ProbeRun, error) {
	slot, err := m.Acquire(context.Background())
	if err != nil {
		return store.ProbeRun{}, err
	}
	defer slot.Release()
	return slot.Start(s)
}

// follow collects a probe's events until done.
func follow(t *testing.T, m *Manager, id string) []Event {
	t.Helper()
	var evs []Event
	if err := m.Follow(context.Background(), id, func(ev Event) error { evs = append(evs, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	return evs
}

// followLater follows a probe in the background; the channel delivers its
// events once done came.
func followLater(t *testing.T, m *Manager, id string) <-chan []Event {
	out := make(chan []Event, 1)
	go func() {
		var evs []Event
		err := m.Follow(context.Background(), id, func(ev Event) error { evs = append(evs, ev); return nil })
		if err != nil {
			t.Error(err)
		}
		out <- evs
	}()
	return out
}

// stored returns the probe as the store holds it.
func stored(t *testing.T, st *store.Store, id string) store.ProbeRun {
	t.Helper()
	run, err := st.GetProbe(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestJobRunsAndReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t)
		m := New(st, Options{ProgressInterval: 20 * time.Millisecond})
		// 42 requests a step: the least a step at 2 may measure, plus its warm-up.
		started, err := start(m, spec(serve(t, slow()), []int{1, 2}, 42))
		if err != nil {
			t.Fatal(err)
		}
		id := started.ID
		if started.Status != store.StatusQueued || started.CreatedAt.IsZero() {
			t.Fatalf("Start returned %+v, want the probe as accepted: queued", started)
		}
		evs := follow(t, m, id)
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
				if ev.Progress.Requests < 0 || ev.Progress.Requests > 42 || ev.Progress.Step < 1 {
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
		// The final status is stored before done is published.
		run := stored(t, st, id)
		if run.Status != store.StatusSucceeded || run.Counts.Records != 84 || run.Counts.OK != 84 || run.Result == nil || len(run.Result.Analysis.Steps) != 2 ||
			run.Result.StopReason != probe.StopCompleted || run.Label != "test" || run.StartedAt.IsZero() || run.FinishedAt.IsZero() {
			t.Fatalf("stored run %+v result %+v", run, run.Result)
		}
		synctest.Wait() // the job has left the manager
		if evs := follow(t, m, id); len(evs) != 1 || evs[0].Kind != EventDone || evs[0].Status != store.StatusSucceeded {
			t.Errorf("following an ended job: %+v", evs)
		}
		if m.Running(id) {
			t.Error("an ended job still runs")
		}
	})
}

// TestRowsArriveWhileRunning checks that rows are in the store within a
// flush interval of being measured, long before the probe ends, so that a
// kill loses at most the last batch.
func TestRowsArriveWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t)
		m := New(st, Options{})
		started, err := start(m, spec(serve(t, slow()), []int{1}, 41)) // about 8 s
		if err != nil {
			t.Fatal(err)
		}
		id := started.ID
		// Two requests of about 200 ms each, then one flush interval.
		time.Sleep(2*250*time.Millisecond + DefaultFlushInterval)
		synctest.Wait()
		run := stored(t, st, id)
		if run.Counts.Records < 2 || run.Status != store.StatusRunning {
			t.Fatalf("after half a second: status %s with %d rows", run.Status, run.Counts.Records)
		}
		if err := m.Cancel(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		run = stored(t, st, id)
		recs, err := st.Records(context.Background(), id)
		if run.Status != store.StatusCancelled || err != nil || len(recs) != run.Counts.Records || len(recs) < 2 {
			t.Fatalf("status %s; %d rows stored, counts %d: %v", run.Status, len(recs), run.Counts.Records, err)
		}
		if err := m.Cancel(context.Background(), id); !errors.Is(err, ErrNotRunning) {
			t.Errorf("cancel of an ended job: %v", err)
		}
	})
}

func TestMaxRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t)
		m := New(st, Options{MaxRunning: 1})
		n := serve(t, slow())
		started, err := start(m, spec(n, []int{1}, 100))
		if err != nil {
			t.Fatal(err)
		}
		var busy *BusyError
		if _, err := start(m, spec(n, []int{1}, 1)); !errors.As(err, &busy) || busy.Limit != 1 {
			t.Fatalf("second start: %v", err)
		}
		if _, err := m.Acquire(context.Background()); !errors.As(err, &busy) {
			t.Fatalf("acquire beside a running job: %v", err)
		}
		if err := m.Cancel(context.Background(), started.ID); err != nil {
			t.Fatal(err)
		}
		slot, err := m.Acquire(context.Background())
		if err != nil {
			t.Fatalf("acquire once the job ended: %v", err)
		}
		slot.Release()
		slot.Release() // a second release frees nothing more
		again, err := m.Acquire(context.Background())
		if err != nil {
			t.Fatalf("acquire after the release: %v", err)
		}
		again.Release()
		if _, err := slot.Start(spec(n, []int{1}, 1)); !errors.Is(err, errSlotUsed) {
			t.Fatalf("start in a released slot: %v", err)
		}
	})
}

func TestShutdownInterrupts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t)
		m := New(st, Options{})
		started, err := start(m, spec(serve(t, slow()), []int{1, 2}, 100))
		if err != nil {
			t.Fatal(err)
		}
		id := started.ID
		followed := followLater(t, m, id)
		time.Sleep(300 * time.Millisecond) // the bubble's clock: the first request has ended
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		run := stored(t, st, id)
		if run.Status != store.StatusInterrupted || run.Counts.Records == 0 || run.Result == nil || run.Result.StopReason != probe.StopCancelled || run.FinishedAt.IsZero() {
			t.Fatalf("interrupted run %+v", run)
		}
		evs := <-followed
		if last := evs[len(evs)-1]; last.Kind != EventDone || last.Status != store.StatusInterrupted {
			t.Fatalf("last event %+v", last)
		}
		if _, err := start(m, spec(serve(t, slow()), []int{1}, 1)); !errors.Is(err, ErrClosed) {
			t.Fatalf("start after shutdown: %v", err)
		}
	})
}

// TestSlowFollowerDoesNotHoldTheProbe follows a job with a follower that
// takes nothing until the job has ended: the job runs to its end at its
// own pace, and the follower then reads the rest from the store, every
// step and the final status included, up to done.
func TestSlowFollowerDoesNotHoldTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t)
		m := New(st, Options{ProgressInterval: time.Millisecond})
		quick := &testutil.ChatEndpoint{TTFT: time.Millisecond, ITL: 100 * time.Microsecond, Tokens: 8}
		started, err := start(m, spec(serve(t, quick), []int{8, 16}, 1500)) // a change every millisecond for about half a second
		if err != nil {
			t.Fatal(err)
		}
		id := started.ID
		ended := make(chan struct{})
		var evs []Event
		followed := make(chan error, 1)
		go func() {
			followed <- m.Follow(context.Background(), id, func(ev Event) error {
				if len(evs) == 0 {
					<-ended // stuck on its first event until the job has ended
				}
				evs = append(evs, ev)
				return nil
			})
		}()
		for m.Running(id) {
			time.Sleep(10 * time.Millisecond)
		}
		if run := stored(t, st, id); run.Status != store.StatusSucceeded {
			t.Fatalf("status %s", run.Status)
		}
		close(ended)
		if err := <-followed; err != nil {
			t.Fatal(err)
		}
		var steps []int
		for _, ev := range evs {
			if ev.Kind == EventStep {
				steps = append(steps, ev.Step.Concurrency)
			}
		}
		n := len(evs)
		if n < 3 || evs[n-1].Kind != EventDone || evs[n-2].Kind != EventStatus || evs[n-2].Status != store.StatusSucceeded ||
			len(steps) != 2 || steps[0] != 8 || steps[1] != 16 {
			t.Fatalf("the slow follower got %d events, steps %v, ending %+v", n, steps, evs[max(n-2, 0):])
		}
	})
}

// TestSlotPassesToTheJob: a probe started in a slot keeps it until the
// probe ends, though the caller releases the slot as it returns; the slot
// cannot start a second probe.
func TestSlotPassesToTheJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t)
		m := New(st, Options{MaxRunning: 1})
		n := serve(t, slow())
		slot, err := m.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		started, err := slot.Start(spec(n, []int{1}, 100)) // about 20 s unless cancelled
		if err != nil {
			t.Fatal(err)
		}
		slot.Release()
		if _, err := slot.Start(spec(n, []int{1}, 1)); !errors.Is(err, errSlotUsed) {
			t.Errorf("a second start in the slot: %v", err)
		}
		var busy *BusyError
		if _, err := m.Acquire(context.Background()); !errors.As(err, &busy) {
			t.Fatalf("acquire while the job holds the only slot: %v", err)
		}
		if err := m.Cancel(context.Background(), started.ID); err != nil {
			t.Fatal(err)
		}
		next, err := m.Acquire(context.Background())
		if err != nil {
			t.Fatalf("acquire once the job ended: %v", err)
		}
		next.Release()
	})
}

// TestShutdownEndsHeldSlots: a shutdown ends the context of every held
// slot (a validation, a probe's preflight), with a cause the holder can
// tell from a client's cancel, waits for their release, and refuses new
// slots.
func TestShutdownEndsHeldSlots(t *testing.T) {
	m := New(openStore(t), Options{MaxRunning: 2})
	released := make(chan bool, 2)
	for range 2 {
		slot, err := m.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			<-slot.Context().Done()
			shutDown := slot.ShutDown()
			slot.Release()
			released <- shutDown
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if !<-released {
			t.Error("a slot's context did not end by shutdown")
		}
	}
	if _, err := m.Acquire(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("acquire after shutdown: %v", err)
	}

	// A slot that its holder never releases: Shutdown gives up when its
	// context ends.
	m = New(openStore(t), Options{})
	held, err := m.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ended, stop := context.WithCancel(context.Background())
	stop()
	if err := m.Shutdown(ended); err == nil {
		t.Error("Shutdown returned while a slot was held")
	}
	held.Release()

	// A slot released by its own holder says so, not shutdown.
	m = New(openStore(t), Options{})
	own, err := m.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	own.Release()
	if own.Context().Err() == nil || own.ShutDown() {
		t.Errorf("a released slot: context %v, shut down %v", own.Context().Err(), own.ShutDown())
	}
}

// deaf is a store whose watchers are never woken: every notification is
// lost.
type deaf struct{ *store.Store }

func (deaf) WatchEvents(string) (<-chan struct{}, func()) { return make(chan struct{}), func() {} }

// A follower that never hears of the run's new events still sees it end:
// it reads the run again after followRecheck, and its stream ends with
// the final status and done.
func TestFollowSurvivesLostWakeUps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t)
		m := New(deaf{st}, Options{ProgressInterval: 20 * time.Millisecond})
		started, err := start(m, spec(serve(t, slow()), []int{1}, 41))
		if err != nil {
			t.Fatal(err)
		}
		evs := follow(t, m, started.ID)
		last := evs[len(evs)-1]
		if last.Kind != EventDone || last.Status != store.StatusSucceeded ||
			evs[len(evs)-2].Kind != EventStatus || evs[len(evs)-2].Status != store.StatusSucceeded {
			t.Fatalf("events end with %+v, want the final status and done", evs[max(0, len(evs)-2):])
		}
		steps := 0
		for _, ev := range evs {
			if ev.Kind == EventStep {
				steps++
			}
		}
		if steps != 1 {
			t.Errorf("%d step summaries, want 1", steps)
		}
	})
}
