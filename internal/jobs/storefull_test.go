package jobs

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/store"
)

// fillingStore is a real store whose writes can be refused as a full one
// refuses them (package store's tests fill a real file; here the test
// must also free it in the middle of a job).
type fillingStore struct {
	*store.Store
	full atomic.Bool
}

func (f *fillingStore) refuse(what string) error {
	if f.full.Load() {
		return fmt.Errorf("%s: database or disk is full: %w", what, store.ErrFull)
	}
	return nil
}

func (f *fillingStore) SetProbeStatus(ctx context.Context, id string, status store.Status, msg string) error {
	if err := f.refuse("set probe status"); err != nil {
		return err
	}
	return f.Store.SetProbeStatus(ctx, id, status, msg)
}

func (f *fillingStore) AppendRecords(ctx context.Context, id string, recs []measure.Record) error {
	if err := f.refuse("append records"); err != nil {
		return err
	}
	return f.Store.AppendRecords(ctx, id, recs)
}

func (f *fillingStore) AppendEvents(ctx context.Context, id string, evs []store.ProbeEvent) error {
	if err := f.refuse("append events"); err != nil {
		return err
	}
	return f.Store.AppendEvents(ctx, id, evs)
}

func (f *fillingStore) SaveProbeResult(ctx context.Context, id string, r store.ProbeResult) error {
	if err := f.refuse("save probe result"); err != nil {
		return err
	}
	return f.Store.SaveProbeResult(ctx, id, r)
}

// TestFullStoreEndsTheRunFailedOnceItCanWrite fills the store while a
// probe runs: its rows wait in memory, its end cannot be written, and the
// run stays running in the store while the job tries again. Once the store
// can write, every row, the result and the end are there, the end as
// failed with why, and the subscribers are told so.
func TestFullStoreEndsTheRunFailedOnceItCanWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &fillingStore{Store: openStore(t)}
		m := New(st, Options{})
		started, err := start(m, spec(serve(t, slow()), []int{1, 2}, 42))
		if err != nil {
			t.Fatal(err)
		}
		id := started.ID
		followed := followLater(t, m, id)
		time.Sleep(time.Second) // a few rows written
		synctest.Wait()
		if run := stored(t, st.Store, id); run.Counts.Records == 0 {
			t.Fatal("no rows written before the store filled")
		}
		st.full.Store(true)
		time.Sleep(time.Minute) // the probe has ended; its end is refused
		synctest.Wait()
		run := stored(t, st.Store, id)
		if run.Status != store.StatusRunning || !m.Running(id) || run.Counts.Records >= 84 {
			t.Fatalf("while the store is full: %s, %d rows, running here %v", run.Status, run.Counts.Records, m.Running(id))
		}

		st.full.Store(false)
		evs := <-followed
		run = stored(t, st.Store, id)
		if run.Status != store.StatusFailed || run.Counts.Records != 84 || run.Result == nil || len(run.Result.Analysis.Steps) != 2 || run.FinishedAt.IsZero() {
			t.Fatalf("once the store can write: %+v", run)
		}
		for _, want := range []string{"could not record the end of the run (succeeded)", "the store was full", "recorded once the store could write again"} {
			if !strings.Contains(run.Error, want) {
				t.Errorf("the error %q lacks %q", run.Error, want)
			}
		}
		if last := evs[len(evs)-1]; last.Kind != EventDone || last.Status != store.StatusFailed {
			t.Errorf("last event %+v", last)
		}
		recs, err := st.Records(context.Background(), id)
		if err != nil || len(recs) != 84 {
			t.Fatalf("%d rows stored: %v", len(recs), err)
		}
	})
}

// TestShutdownWhileTheStoreIsFull stops the service while a job waits for
// the store to take its end: the shutdown does not wait for room.
func TestShutdownWhileTheStoreIsFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &fillingStore{Store: openStore(t)}
		m := New(st, Options{})
		started, err := start(m, spec(serve(t, slow()), []int{1}, 41))
		if err != nil {
			t.Fatal(err)
		}
		st.full.Store(true)
		time.Sleep(time.Minute)
		synctest.Wait()
		if !m.Running(started.ID) {
			t.Fatal("the job ended although its end was not written")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		// Its end never reached the store, so the next start marks it
		// interrupted.
		if run := stored(t, st.Store, started.ID); run.Status.Ended() {
			t.Errorf("the store says %s", run.Status)
		}
	})
}
