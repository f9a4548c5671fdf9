package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/testutil/pgtest"
)

const ttl = time.Hour

// statuses are the statuses of a run's status events, in order.
func statuses(t *testing.T, s *Store, id string) []Status {
	t.Helper()
	evs, err := s.Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []Status
	for _, ev := range evs {
		if ev.Kind != EventStatus {
			continue
		}
		var se StatusEvent
		if err := json.Unmarshal(ev.Data, &se); err != nil {
			t.Fatal(err)
		}
		out = append(out, se.Status)
	}
	return out
}

// TestPlacesAndLeases: places are taken up to the limit, a run is created
// in its place, a cancel marks the place, and the places of a service
// whose lease expired are freed by another, which marks their runs
// interrupted with their rows kept; a service never reaps its own.
func TestPlacesAndLeases(t *testing.T) {
	eachBackend(t, func(t *testing.T, db string) {
		s := openDB(t, db)
		ctx := context.Background()
		a, err := s.AcquireSlot(ctx, "one", 2, ttl)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.AcquireSlot(ctx, "one", 2, ttl)
		if err != nil || a.Slot == b.Slot || a.ID == b.ID {
			t.Fatalf("two places: %+v %+v %v", a, b, err)
		}
		if _, err := s.AcquireSlot(ctx, "two", 2, ttl); !errors.Is(err, ErrBusy) {
			t.Fatalf("a third place of two: %v", err)
		}
		if c, err := s.AcquireSlot(ctx, "two", 3, ttl); err != nil || c.Slot != 3 {
			t.Fatalf("a third place of three: %+v %v", c, err)
		} else if err := s.ReleaseSlot(ctx, c); err != nil {
			t.Fatal(err)
		}
		id, err := s.StartProbe(ctx, a, ProbeRun{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SetProbeStatus(ctx, id, StatusRunning, ""); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendRecords(ctx, id, []measure.Record{record(1, 0), record(1, 1)}); err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseSlot(ctx, b); err != nil {
			t.Fatal(err)
		}
		if _, err := s.StartProbe(ctx, b, ProbeRun{BaseURL: "http://127.0.0.1:1/v1", Model: "m"}); !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("a run started in a released place: %v", err)
		}
		if runs, _, err := s.ListProbes(ctx, ListOptions{}); err != nil || len(runs) != 1 {
			t.Fatalf("%d runs stored (%v), want the one started in its place", len(runs), err)
		}

		wake, stop := s.WatchCancel(id)
		defer stop()
		if err := s.RequestCancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		<-wake
		held, err := s.RenewLeases(ctx, "one", ttl)
		if err != nil || len(held) != 1 || held[0].Lease != a || held[0].Probe != id || !held[0].Cancel {
			t.Fatalf("the leases of one: %+v %v", held, err)
		}
		if err := s.RequestCancel(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("cancel of no run: %v", err)
		}
		loose, err := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.RequestCancel(ctx, loose); !errors.Is(err, ErrNotRunning) {
			t.Errorf("cancel of a run no place holds: %v", err)
		}

		// A lease of another service that lasts: it bounds the wait.
		other, err := s.AcquireSlot(ctx, "three", 4, ttl)
		if err != nil {
			t.Fatal(err)
		}
		reaped, next, err := s.ReapLeases(ctx, "two", ttl)
		if err != nil || len(reaped) != 1 || reaped[0] != loose || next <= 0 || next > ttl {
			t.Fatalf("a reap while every lease holds: %v, next %v, %v; want the run no place holds (%s)", reaped, next, err, loose)
		}
		// One's lease expires: it stopped renewing it.
		if _, err := s.RenewLeases(ctx, "one", -time.Second); err != nil {
			t.Fatal(err)
		}
		if reaped, _, err := s.ReapLeases(ctx, "one", ttl); err != nil || len(reaped) != 0 {
			t.Fatalf("one reaped its own lease: %v %v", reaped, err)
		}
		reaped, _, err = s.ReapLeases(ctx, "two", ttl)
		if err != nil || !slices.Equal(reaped, []string{id}) {
			t.Fatalf("the reap of one's expired lease: %v %v", reaped, err)
		}
		run, err := s.GetProbe(ctx, id)
		if err != nil || run.Status != StatusInterrupted || run.Counts.Records != 2 || run.FinishedAt.IsZero() || !strings.Contains(run.Error, "lease expired") {
			t.Fatalf("the run after the reap: %+v %v", run, err)
		}
		if got := statuses(t, s, id); !slices.Equal(got, []Status{StatusQueued, StatusRunning, StatusInterrupted}) {
			t.Errorf("status events %v", got)
		}
		if held, err := s.RenewLeases(ctx, "one", ttl); err != nil || len(held) != 0 {
			t.Errorf("one still holds %+v (%v)", held, err)
		}
		if err := s.RequestCancel(ctx, id); !errors.Is(err, ErrNotRunning) {
			t.Errorf("cancel of an interrupted run: %v", err)
		}
		// The freed place is taken again; the lasting one is not.
		if _, err := s.AcquireSlot(ctx, "two", 1, ttl); err != nil {
			t.Fatalf("the freed place: %v", err)
		}
		if held, err := s.RenewLeases(ctx, "three", ttl); err != nil || len(held) != 1 || held[0].Lease != other {
			t.Errorf("three's lease: %+v %v", held, err)
		}
	})
}

// TestEventsInOrder: a run's events are numbered in the order stored, the
// store adds each status change, a watcher is woken, a run that has ended
// takes no more, and its progress events go while the numbers of those
// that stay keep rising.
func TestEventsInOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, db string) {
		s := openDB(t, db)
		ctx := context.Background()
		id, err := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		wake, stop := s.WatchEvents(id)
		defer stop()
		if err := s.SetProbeStatus(ctx, id, StatusRunning, ""); err != nil {
			t.Fatal(err)
		}
		<-wake
		var evs []ProbeEvent
		for i := range 5 {
			kind := eventKindProgress
			if i == 2 {
				kind = "step"
			}
			evs = append(evs, ProbeEvent{Kind: kind, Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
		}
		if err := s.AppendEvents(ctx, id, evs[:3]); err != nil {
			t.Fatal(err)
		}
		<-wake
		if err := s.AppendEvents(ctx, id, evs[3:]); err != nil {
			t.Fatal(err)
		}
		got, err := s.Events(ctx, id, 2)
		if err != nil || len(got) != 5 || got[0].N != 3 || string(got[4].Data) != `{"i":4}` || got[2].Kind != "step" {
			t.Fatalf("events after 2: %+v %v", got, err)
		}
		if err := s.AppendEvents(ctx, id, []ProbeEvent{{Kind: EventStatus, Data: json.RawMessage(`{}`)}}); err == nil {
			t.Error("a caller wrote a status event")
		}
		if err := s.AppendEvents(ctx, id, []ProbeEvent{{Kind: "note", Data: json.RawMessage(`{"authorization":"Bearer abcdefghijklmnop"}`)}}); !errors.Is(err, ErrSecret) {
			t.Errorf("an event with a credential: %v", err)
		}
		if err := s.SetProbeStatus(ctx, id, StatusSucceeded, ""); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendEvents(ctx, id, evs[:1]); !errors.Is(err, ErrFinished) {
			t.Errorf("events after the end: %v", err)
		}
		if err := s.AppendRecords(ctx, id, []measure.Record{record(1, 0)}); !errors.Is(err, ErrFinished) {
			t.Errorf("rows after the end: %v", err)
		}
		all, err := s.Events(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, ev := range all {
			kinds = append(kinds, fmt.Sprintf("%d:%s", ev.N, ev.Kind))
		}
		if want := []string{"1:status", "2:status", "5:step", "8:status"}; !slices.Equal(kinds, want) {
			t.Fatalf("events once ended %v, want %v", kinds, want)
		}
		if _, err := s.Events(ctx, "nope", 0); !errors.Is(err, ErrNotFound) {
			t.Errorf("events of no run: %v", err)
		}
	})
}

// TestSharedDatabase: two stores on one PostgreSQL database, as two
// services: the places are counted across both, one's events and cancels
// wake the other's watchers, and both apply the migrations once however
// they race.
func TestSharedDatabase(t *testing.T) {
	db := pgtest.DSN(t)
	ctx := context.Background()
	stores := make([]*Store, 4)
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = Open(ctx, db) })
	}
	wg.Wait()
	for i, s := range stores {
		if errs[i] != nil {
			t.Fatalf("open %d: %v", i, errs[i])
		}
		t.Cleanup(func() { s.Close() })
	}
	one, two := stores[0], stores[1]
	var n int
	if err := two.db.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil || n != len(mustMigrations(t)) {
		t.Fatalf("%d migrations recorded (%v)", n, err)
	}
	if !one.Shared() {
		t.Error("a PostgreSQL store is not shared")
	}
	l, err := one.AcquireSlot(ctx, "one", 1, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := two.AcquireSlot(ctx, "two", 1, ttl); !errors.Is(err, ErrBusy) {
		t.Fatalf("the second service's place beside the first's: %v", err)
	}
	id, err := one.StartProbe(ctx, l, ProbeRun{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	events, stopEvents := two.WatchEvents(id)
	defer stopEvents()
	cancels, stopCancels := one.WatchCancel(id)
	defer stopCancels()
	if err := one.AppendEvents(ctx, id, []ProbeEvent{{Kind: "step", Data: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	<-events
	if err := two.RequestCancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	<-cancels
	if err := one.SetProbeStatus(ctx, id, StatusCancelled, ""); err != nil {
		t.Fatal(err)
	}
	<-events
	if got := statuses(t, two, id); !slices.Equal(got, []Status{StatusQueued, StatusCancelled}) {
		t.Errorf("the second service reads %v", got)
	}
	// The run's end freed its place.
	if _, err := two.AcquireSlot(ctx, "two", 1, ttl); err != nil {
		t.Errorf("the place of the ended run: %v", err)
	}
}

func mustMigrations(t *testing.T) []migration {
	t.Helper()
	ms, err := loadMigrations(migrationFS, postgresDialect.name)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestPostgresUnreachable: a database that does not answer fails Open at
// once with the cause named, and neither the error nor the log holds the
// password, whether the URL carries it as user information or as a
// parameter.
func TestPostgresUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	const secret = "s3cret-Pa55word"
	for _, dsn := range []string{
		"postgres://planner:" + secret + "@" + addr + "/planner?sslmode=disable",
		"postgresql://planner@" + addr + "/planner?sslmode=disable&password=" + secret,
	} {
		var log bytes.Buffer
		s, err := Open(context.Background(), dsn, WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
		if err == nil {
			s.Close()
			t.Fatalf("Open of %s succeeded", dsn)
		}
		msg := err.Error()
		for _, want := range []string{"open store postgres", "planner@" + addr + "/planner", "cannot reach the database", "connect"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the error lacks %q: %s", want, msg)
			}
		}
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("not ErrUnavailable: %v", err)
		}
		if strings.Contains(msg, secret) || strings.Contains(log.String(), secret) {
			t.Errorf("the password shows: %s\n%s", msg, log.String())
		}
	}
	if _, err := Open(context.Background(), "postgres://planner@"+addr+"/x", WithMaxBytes(1<<20)); err == nil || !strings.Contains(err.Error(), "store.max_bytes") {
		t.Errorf("a size cap on PostgreSQL: %v", err)
	}
}

// TestPostgresText: text that PostgreSQL's text cannot hold (a NUL,
// invalid UTF-8) is stored with U+FFFD in its place, and an id holding
// either is not found rather than an error.
func TestPostgresText(t *testing.T) {
	s := openDB(t, pgtest.DSN(t))
	ctx := context.Background()
	id, err := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Label: "a\x00b\xffc"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetProbeStatus(ctx, id, StatusFailed, "bad \x00 byte \xfe"); err != nil {
		t.Fatal(err)
	}
	run, err := s.GetProbe(ctx, id)
	if err != nil || run.Label != "a\uFFFDb\uFFFDc" || run.Error != "bad \uFFFD byte \uFFFD" {
		t.Fatalf("%q %q %v", run.Label, run.Error, err)
	}
	for _, bad := range []string{"\x00", "\xff"} {
		if _, err := s.GetPlan(ctx, bad); !errors.Is(err, ErrNotFound) {
			t.Errorf("plan %q: %v", bad, err)
		}
	}
}

func TestDSNName(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@db.example:5432/planner?sslmode=require&password=x": "postgres://u@db.example:5432/planner",
		"postgresql://db/planner":             "postgresql://db/planner",
		"postgres://u:p@ss@h1:5432,h2:5432/d": "postgres://u@h1:5432,h2:5432/d",
	} {
		if got := dsnName(in); got != want {
			t.Errorf("dsnName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := dsnSecrets("postgres://u:p%40ss@h/d?password=two&sslpassword=three"); !slices.Equal(got, []string{"p%40ss", "p@ss", "two", "three"}) {
		t.Errorf("secrets %q", got)
	}
}
