package jobs

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/store"
	"github.com/plannerdev/planner/internal/testutil"
	"github.com/plannerdev/planner/internal/testutil/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// testLease is short, so that an expired lease is seen within a second or
// two; the keeper renews every third of it.
const testLease = 1500 * time.Millisecond

// service is one service on a shared database: its store and manager,
// shut down after the test.
func service(t *testing.T, db, name string, maxRunning int) (*store.Store, *Manager) {
	t.Helper()
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	m := New(st, Options{MaxRunning: maxRunning, Lease: testLease, Replica: name, ProgressInterval: 20 * time.Millisecond})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		st.Close()
	})
	return st, m
}

// TestTwoServicesShareProbes runs two services on one PostgreSQL
// database: a probe started on one is followed on the other to its end,
// a cancel asked on the other stops it on the first, and the limit on
// probes at once holds across both.
func TestTwoServicesShareProbes(t *testing.T) {
	db := pgtest.DSN(t)
	st1, one := service(t, db, "one", 1)
	_, two := service(t, db, "two", 1)
	n := testutil.ServePipe(t, slow())
	started, err := start(one, spec(n, []int{1}, 100)) // about 20 s unless cancelled
	if err != nil {
		t.Fatal(err)
	}
	var busy *BusyError
	if _, err := two.Acquire(context.Background()); !errors.As(err, &busy) || busy.Limit != 1 {
		t.Fatalf("a place on the second service beside the first's probe: %v", err)
	}
	followed := followLater(t, two, started.ID)
	// Rows and progress reach the second service while the probe runs.
	var progress bool
	ctx, stop := context.WithCancel(context.Background())
	_ = two.Follow(ctx, started.ID, func(ev Event) error {
		if ev.Kind == EventProgress && ev.Progress.Requests >= 2 {
			progress = true
			stop()
		}
		return nil
	})
	stop()
	if !progress || stored(t, st1, started.ID).Counts.Records < 2 {
		t.Fatal("the second service saw no progress")
	}
	if err := two.Cancel(context.Background(), started.ID); err != nil {
		t.Fatal(err)
	}
	// The first service stored the end, which its job does once the
	// probe has stopped; the job then frees its place and leaves.
	run := stored(t, st1, started.ID)
	if run.Status != store.StatusCancelled || run.Counts.Records < 2 {
		t.Fatalf("after the cancel on the second service: %+v", run)
	}
	if err := one.Cancel(context.Background(), started.ID); err != nil && !errors.Is(err, ErrNotRunning) {
		t.Fatalf("wait for the first service's job to leave: %v", err)
	}
	if one.Running(started.ID) {
		t.Fatal("the job still runs on the first service")
	}
	evs := <-followed
	var kinds []EventKind
	for _, ev := range evs {
		if len(kinds) == 0 || kinds[len(kinds)-1] != ev.Kind {
			kinds = append(kinds, ev.Kind)
		}
	}
	if last := evs[len(evs)-1]; last.Kind != EventDone || last.Status != store.StatusCancelled || !slices.Contains(kinds, EventProgress) {
		t.Fatalf("the second service followed %v, last %+v", kinds, last)
	}
	if err := two.Cancel(context.Background(), started.ID); !errors.Is(err, ErrNotRunning) {
		t.Errorf("a second cancel: %v", err)
	}
	slot, err := two.Acquire(context.Background())
	if err != nil {
		t.Fatalf("a place once the probe ended: %v", err)
	}
	slot.Release()
}

// TestExpiredLeaseInterrupts: a service that stops renewing its lease (it
// was killed) leaves its probe running in the store; another service marks
// it interrupted once the lease has expired, its rows kept, and its
// followers get the end.
func TestExpiredLeaseInterrupts(t *testing.T) {
	db := pgtest.DSN(t)
	ghost, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer ghost.Close()
	ctx := context.Background()
	// What a killed service leaves: a place it no longer renews, a run
	// with rows.
	taken := time.Now()
	l, err := ghost.AcquireSlot(ctx, "ghost", 1, testLease)
	if err != nil {
		t.Fatal(err)
	}
	id, err := ghost.StartProbe(ctx, l, store.ProbeRun{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ghost.SetProbeStatus(ctx, id, store.StatusRunning, ""); err != nil {
		t.Fatal(err)
	}
	if err := ghost.AppendRecords(ctx, id, []measure.Record{{Step: 1, OK: true, Status: 200}, {Step: 1, Index: 1, OK: true, Status: 200}}); err != nil {
		t.Fatal(err)
	}
	st, other := service(t, db, "other", 1)
	evs := follow(t, other, id)
	took := time.Since(taken)
	run := stored(t, st, id)
	if run.Status != store.StatusInterrupted || run.Counts.Records != 2 || !strings.Contains(run.Error, "lease expired") {
		t.Fatalf("the run after its lease expired: %+v", run)
	}
	if last := evs[len(evs)-1]; last.Kind != EventDone || last.Status != store.StatusInterrupted {
		t.Fatalf("the follower's last event %+v", last)
	}
	// The keeper looks again when the first lease of another service
	// expires: well within a second of it, however loaded the machine.
	if took < testLease || took > testLease+5*time.Second {
		t.Errorf("interrupted %v after the lease was taken, the lease being %v", took, testLease)
	}
	slot, err := other.Acquire(ctx)
	if err != nil {
		t.Fatalf("the freed place: %v", err)
	}
	slot.Release()
}
