package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
)

// openTemp opens a store in a fresh directory and closes it after the test.
func openTemp(t testing.TB) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "planner.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// fataler is the part of testing.TB that examplePlan needs, so that the
// durability child process can use it too.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// examplePlan plans a shipped example scenario.
func examplePlan(t fataler, name string) StoredPlan {
	t.Helper()
	b, ok := planner.Example(name)
	if !ok {
		t.Fatalf("no example %q", name)
	}
	sc, err := scenario.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.New(plan.Options{}).Plan(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	return StoredPlan{Name: name, Labels: map[string]string{"team": "search", "env": "prod"}, Scenario: sc, Plan: *p}
}

// record builds a request row; every fifth fails with a 429 and every
// seventh with a timeout.
func record(step, idx int) measure.Record {
	r := measure.Record{
		Step: step, Index: idx, StartS: float64(idx) * 0.25, AckMs: 90, TTFTMs: 100 + float64(idx),
		E2EMs: 1200 + float64(step), OutputTokens: 64, InputTokens: 256, Status: 200, Attempts: 1, OK: true,
		Warmup: idx == 0,
	}
	switch {
	case idx%5 == 4:
		r.OK, r.Status, r.ErrorClass, r.RetryAfterMs, r.OutputTokens = false, 429, measure.ErrRateLimited, 1500, 0
	case idx%7 == 6:
		r.OK, r.Status, r.ErrorClass, r.OutputTokens, r.OutputEstimated = false, 0, measure.ErrTimeout, 3, true
	}
	return r
}

func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOpenSetsPragmas(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	for _, tc := range []struct{ pragma, want string }{
		{"journal_mode", "wal"},
		{"synchronous", "1"}, // NORMAL
		{"foreign_keys", "1"},
		{"busy_timeout", "5000"},
	} {
		// Ask on several pooled connections: the settings are per connection.
		conns := make([]string, 3)
		var wg sync.WaitGroup
		for i := range conns {
			wg.Go(func() {
				tx, err := s.db.BeginTx(ctx, nil)
				if err != nil {
					t.Error(err)
					return
				}
				defer tx.Rollback()
				if err := tx.QueryRowContext(ctx, "PRAGMA "+tc.pragma).Scan(&conns[i]); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for _, got := range conns {
			if !strings.EqualFold(got, tc.want) {
				t.Errorf("%s = %q, want %q", tc.pragma, got, tc.want)
			}
		}
	}
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesNonFilePaths(t *testing.T) {
	for _, path := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro", filepath.Join(t.TempDir(), "missing", "dir", "p.db")} {
		if s, err := Open(context.Background(), path); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", path)
		}
	}
}

// TestOpenRefusesADirectory: a directory given as the store's file is
// refused as one, naming a file in it, and no lock file is left beside it.
func TestOpenRefusesADirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), dir)
	if err == nil {
		s.Close()
		t.Fatal("a directory opened as the store")
	}
	if want := "open store " + dir + ": it is a directory, not a SQLite file: name the file, such as " + filepath.Join(dir, "planner.db"); err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if _, err := os.Stat(dir + ".lock"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a lock file beside the directory: %v", err)
	}
}

func TestMigrationsAreIdempotent(t *testing.T) {
	eachBackend(t, func(t *testing.T, db string) {
		ctx := context.Background()
		s0 := openDB(t, db)
		want, err := loadMigrations(migrationFS, s0.db.d.name)
		if err != nil || len(want) == 0 {
			t.Fatalf("embedded migrations: %v (%d)", err, len(want))
		}
		s0.Close()
		for range 3 {
			s, err := Open(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			var versions []int
			rows, err := s.db.QueryContext(ctx, "SELECT version FROM schema_migrations ORDER BY version")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var v int
				if err := rows.Scan(&v); err != nil {
					t.Fatal(err)
				}
				versions = append(versions, v)
			}
			rows.Close()
			if len(versions) != len(want) || versions[len(versions)-1] != len(want) {
				t.Fatalf("schema_migrations holds %v, want 1..%d", versions, len(want))
			}
			if _, err := s.SavePlan(ctx, examplePlan(t, "chat")); err != nil {
				t.Fatal(err)
			}
			s.Close()
		}
		s := openDB(t, db)
		plans, _, err := s.ListPlans(ctx, ListOptions{})
		if err != nil || len(plans) != 3 {
			t.Fatalf("reopening lost data: %d plans, %v", len(plans), err)
		}
	})
}

// TestMigrationsMatch: each backend has every migration, under the same
// number and name.
func TestMigrationsMatch(t *testing.T) {
	lite, err := loadMigrations(migrationFS, sqliteDialect.name)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := loadMigrations(migrationFS, postgresDialect.name)
	if err != nil {
		t.Fatal(err)
	}
	names := func(ms []migration) []string {
		var out []string
		for _, m := range ms {
			out = append(out, fmt.Sprintf("%04d_%s", m.version, m.name))
		}
		return out
	}
	if !slices.Equal(names(lite), names(pg)) || len(lite) == 0 {
		t.Fatalf("the backends' migrations differ:\n sqlite   %v\n postgres %v", names(lite), names(pg))
	}
}

func TestMigrateAppliesEachVersionAtomically(t *testing.T) {
	eachBackend(t, func(t *testing.T, target string) {
		ctx := context.Background()
		s := openDB(t, target)
		// A database of the same backend beside the store's, without its
		// schema: the store's own tables are dropped.
		fresh := s.db
		for _, table := range []string{"plans", "probe_events", "probe_records", "job_slots", "probes", "readiness", "schema_migrations"} {
			if _, err := fresh.ExecContext(ctx, "DROP TABLE "+table); err != nil {
				t.Fatal(err)
			}
		}
		dir := "migrations/" + fresh.d.name + "/"
		fsys := fstest.MapFS{
			dir + "0001_init.sql":   {Data: []byte("CREATE TABLE a (x INTEGER);")},
			dir + "0002_broken.sql": {Data: []byte("CREATE TABLE half (x INTEGER); INSERT INTO no_such_table VALUES (1);")},
		}
		err := migrate(ctx, fresh, fsys)
		if err == nil || !strings.Contains(err.Error(), "0002_broken") {
			t.Fatalf("broken migration: %v", err)
		}
		var n int
		if err := fresh.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil || n != 1 {
			t.Fatalf("after a failed migration %d versions recorded (%v), want 1", n, err)
		}
		if _, err := fresh.ExecContext(ctx, "SELECT count(*) FROM half"); err == nil {
			t.Fatal("the failed migration left its first statement applied")
		}
		fsys[dir+"0002_broken.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE half (x INTEGER);")}
		for range 2 {
			if err := migrate(ctx, fresh, fsys); err != nil {
				t.Fatal(err)
			}
		}
		if err := fresh.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil || n != 2 {
			t.Fatalf("%d versions recorded, want 2 (%v)", n, err)
		}
		delete(fsys, dir+"0002_broken.sql")
		if err := migrate(ctx, fresh, fsys); err == nil || !strings.Contains(err.Error(), "newer than this binary") {
			t.Fatalf("a database newer than the binary: %v", err)
		}
	})
}

func TestLoadMigrationsChecksNames(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		want  string
	}{
		{"gap", []string{"0001_a.sql", "0003_c.sql"}, "expected version 0002"},
		{"repeat", []string{"0001_a.sql", "0001_b.sql"}, "expected version 0002"},
		{"bad name", []string{"1_a.sql"}, "NNNN_name.sql"},
		{"starts at 2", []string{"0002_a.sql"}, "expected version 0001"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for _, f := range tc.files {
				fsys["migrations/sqlite/"+f] = &fstest.MapFile{Data: []byte("SELECT 1;")}
			}
			if _, err := loadMigrations(fsys, "sqlite"); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestPlanRoundTrip(t *testing.T) {
	eachBackend(t, func(t *testing.T, db string) {
		s := openDB(t, db)
		ctx := context.Background()
		in := examplePlan(t, "three-classes")
		before := time.Now().UTC()
		id, err := s.SavePlan(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if len(id) != 26 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz234567") != "" {
			t.Errorf("id %q is not 26 lower-case base32 characters", id)
		}
		got, err := s.GetPlan(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != id || got.Name != in.Name || !equalMaps(got.Labels, in.Labels) || got.ProbeID != "" {
			t.Errorf("got %+v", got)
		}
		if got.CreatedAt.Location() != time.UTC || got.CreatedAt.Before(before.Add(-time.Second)) || got.CreatedAt.After(time.Now().Add(time.Second)) {
			t.Errorf("created at %v", got.CreatedAt)
		}
		if jsonOf(t, got.Scenario) != jsonOf(t, in.Scenario) || jsonOf(t, got.Plan) != jsonOf(t, in.Plan) {
			t.Error("the scenario or the plan changed in the store")
		}
		other, err := s.SavePlan(ctx, in)
		if err != nil || other == id {
			t.Fatalf("second save: id %q (%v)", other, err)
		}
	})
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestPlanBackedByProbe(t *testing.T) {
	eachBackend(t, func(t *testing.T, db string) {
		s := openDB(t, db)
		ctx := context.Background()
		p := examplePlan(t, "measured-curve")
		p.ProbeID = "nosuchprobe"
		if _, err := s.SavePlan(ctx, p); !errors.Is(err, ErrNotFound) {
			t.Fatalf("plan backed by a missing probe: %v", err)
		}
		probeID, err := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://127.0.0.1:8000/v1", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		p.ProbeID = probeID
		id, err := s.SavePlan(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GetPlan(ctx, id)
		if err != nil || got.ProbeID != probeID {
			t.Fatalf("probe id %q, want %q (%v)", got.ProbeID, probeID, err)
		}
		p.CreatedAt = got.CreatedAt.Add(time.Minute)
		newer, err := s.SavePlan(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		unlinked := examplePlan(t, "chat")
		if _, err := s.SavePlan(ctx, unlinked); err != nil {
			t.Fatal(err)
		}
		backed, err := s.PlansForProbe(ctx, probeID)
		if err != nil || len(backed) != 2 || backed[0].ID != newer || backed[1].ID != id {
			t.Fatalf("plans of the probe: %d (%v), want [%s %s]", len(backed), err, newer, id)
		}
		other, _ := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://127.0.0.1:8000/v1", Model: "m"})
		if none, err := s.PlansForProbe(ctx, other); err != nil || len(none) != 0 {
			t.Fatalf("plans of a probe that backs none: %v %v", none, err)
		}
	})
}

func TestNotFound(t *testing.T) {
	eachBackend(t, func(t *testing.T, db string) {
		s := openDB(t, db)
		ctx := context.Background()
		var buf bytes.Buffer
		tests := map[string]func() error{
			"GetPlan":         func() error { _, err := s.GetPlan(ctx, "nope"); return err },
			"GetProbe":        func() error { _, err := s.GetProbe(ctx, "nope"); return err },
			"SetProbeStatus":  func() error { return s.SetProbeStatus(ctx, "nope", StatusFailed, "") },
			"AppendRecords":   func() error { return s.AppendRecords(ctx, "nope", []measure.Record{record(1, 0)}) },
			"SaveProbeResult": func() error { return s.SaveProbeResult(ctx, "nope", ProbeResult{}) },
			"Records":         func() error { _, err := s.Records(ctx, "nope"); return err },
			"PlansForProbe":   func() error { _, err := s.PlansForProbe(ctx, "nope"); return err },
			"WriteRecordsCSV": func() error { return s.WriteRecordsCSV(ctx, &buf, "nope") },
		}
		for name, call := range tests {
			t.Run(name, func(t *testing.T) {
				if err := call(); !errors.Is(err, ErrNotFound) {
					t.Fatalf("got %v, want ErrNotFound", err)
				}
			})
		}
		if buf.Len() != 0 {
			t.Errorf("WriteRecordsCSV wrote %q for a missing run", buf.String())
		}
	})
}

func TestListPlansPagesNewestFirst(t *testing.T) {
	eachBackend(t, func(t *testing.T, db string) {
		s := openDB(t, db)
		ctx := context.Background()
		base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		p := examplePlan(t, "chat")
		// Minutes after base; 3 appears twice to exercise ties, which list
		// the later insert first.
		minutes := []int{5, 1, 3, 9, 3, 7, 0}
		ids := map[string]int{}
		var tied []string
		for i, m := range minutes {
			p.CreatedAt = base.Add(time.Duration(m) * time.Minute)
			p.Name = fmt.Sprintf("plan-%d", i)
			id, err := s.SavePlan(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			ids[id] = m
			if m == 3 {
				tied = append(tied, id)
			}
		}
		var got []StoredPlan
		cursor := ""
		pages := 0
		for {
			page, next, err := s.ListPlans(ctx, ListOptions{Limit: 3, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if len(page) > 3 {
				t.Fatalf("page of %d", len(page))
			}
			got = append(got, page...)
			if next == "" {
				break
			}
			cursor = next
		}
		if pages != 3 || len(got) != len(minutes) {
			t.Fatalf("%d pages, %d plans; want 3 pages of 7 plans", pages, len(got))
		}
		for i := 1; i < len(got); i++ {
			if got[i].CreatedAt.After(got[i-1].CreatedAt) {
				t.Errorf("plan %d (%v) is newer than plan %d (%v)", i, got[i].CreatedAt, i-1, got[i-1].CreatedAt)
			}
		}
		seen := map[string]bool{}
		var tiedOrder []string
		for _, g := range got {
			if seen[g.ID] {
				t.Errorf("plan %s listed twice", g.ID)
			}
			seen[g.ID] = true
			if ids[g.ID] == 3 {
				tiedOrder = append(tiedOrder, g.ID)
			}
		}
		if !slices.Equal(tiedOrder, []string{tied[1], tied[0]}) {
			t.Errorf("tied plans listed %v, want the later insert first %v", tiedOrder, []string{tied[1], tied[0]})
		}
		all, next, err := s.ListPlans(ctx, ListOptions{})
		if err != nil || len(all) != 7 || next != "" {
			t.Fatalf("default page: %d plans, next %q, %v", len(all), next, err)
		}
		for _, bad := range []string{"%%%", "AAAA", "not-a-cursor"} {
			if _, _, err := s.ListPlans(ctx, ListOptions{Cursor: bad}); !errors.Is(err, ErrBadCursor) {
				t.Errorf("cursor %q: %v", bad, err)
			}
		}
	})
}

func TestListOptionsLimit(t *testing.T) {
	for _, tc := range []struct{ in, want int }{{0, DefaultLimit}, {-4, DefaultLimit}, {7, 7}, {MaxLimit + 1, MaxLimit}} {
		if got := (ListOptions{Limit: tc.in}).limit(); got != tc.want {
			t.Errorf("limit %d → %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestProbeLifecycle(t *testing.T) {
	eachBackend(t, func(t *testing.T, db string) {
		s := openDB(t, db)
		ctx := context.Background()
		config := json.RawMessage(`{"base_url":"http://127.0.0.1:8000/v1","model":"m","api_key_set":true,"steps":[1,2,4],"deadline":"12s"}`)
		id, err := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://127.0.0.1:8000/v1", Model: "m", Config: config, Label: "nightly check"})
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.GetProbe(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if p.Status != StatusQueued || !p.StartedAt.IsZero() || !p.FinishedAt.IsZero() || p.Result != nil || p.Counts != (Counts{}) || p.Label != "nightly check" {
			t.Fatalf("new run: %+v", p)
		}
		if !bytes.Equal(p.Config, config) {
			t.Errorf("config %s, want %s", p.Config, config)
		}
		if err := s.SetProbeStatus(ctx, id, StatusRunning, ""); err != nil {
			t.Fatal(err)
		}
		var want Counts
		for step, n := range map[int]int{1: 12, 2: 25} {
			var batch []measure.Record
			for i := range n {
				r := record(step, i)
				batch = append(batch, r)
				want.add(r)
			}
			if err := s.AppendRecords(ctx, id, batch); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.AppendRecords(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
		p, _ = s.GetProbe(ctx, id)
		if p.Status != StatusRunning || p.StartedAt.IsZero() || p.Counts != want {
			t.Fatalf("running: status %s, started %v, counts %+v want %+v", p.Status, p.StartedAt, p.Counts, want)
		}
		if want.OK == 0 || want.RateLimited == 0 || want.Failed == 0 || want.Records != 37 {
			t.Fatalf("the fixture does not cover every count: %+v", want)
		}
		knee := 2
		res := ProbeResult{
			Analysis:   measure.Result{Steps: []measure.Step{{Concurrency: 1, Requests: 11, OK: 8}, {Concurrency: 2, Requests: 24, OK: 17}}, Knee: &knee, Notes: []string{"n"}},
			RateLimits: json.RawMessage(`{"requests":{"limit":60}}`),
			StopReason: "done", StopDetail: "every step ran",
		}
		if err := s.SaveProbeResult(ctx, id, res); err != nil {
			t.Fatal(err)
		}
		if err := s.SetProbeStatus(ctx, id, StatusSucceeded, ""); err != nil {
			t.Fatal(err)
		}
		p, _ = s.GetProbe(ctx, id)
		if p.Status != StatusSucceeded || p.FinishedAt.IsZero() || p.FinishedAt.Before(p.StartedAt) || p.Result == nil {
			t.Fatalf("succeeded: %+v", p)
		}
		if jsonOf(t, p.Result.Analysis) != jsonOf(t, res.Analysis) || string(p.Result.RateLimits) != string(res.RateLimits) ||
			p.Result.StopReason != "done" || p.Result.StopDetail != "every step ran" {
			t.Errorf("result %+v, want %+v", p.Result, res)
		}
		if err := s.SetProbeStatus(ctx, id, StatusCancelled, ""); !errors.Is(err, ErrFinished) {
			t.Errorf("cancelling a finished run: %v", err)
		}
	})
}

func TestProbeStatusTransitions(t *testing.T) {
	eachBackend(t, func(t *testing.T, db string) {
		s := openDB(t, db)
		ctx := context.Background()
		tests := []struct {
			start   Status
			to      Status
			wantErr error
			bad     bool
		}{
			{StatusQueued, StatusRunning, nil, false},
			{StatusQueued, StatusCancelled, nil, false},
			{StatusQueued, StatusFailed, nil, false},
			{StatusRunning, StatusSucceeded, nil, false},
			{StatusRunning, StatusInterrupted, nil, false},
			{StatusRunning, StatusRunning, nil, false},
			{StatusRunning, StatusQueued, nil, true},
			{StatusRunning, "paused", nil, true},
		}
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s to %s", tc.start, tc.to), func(t *testing.T) {
				id, err := s.CreateProbe(ctx, ProbeRun{Status: tc.start, BaseURL: "http://localhost:1/v1", Model: "m"})
				if err != nil {
					t.Fatal(err)
				}
				err = s.SetProbeStatus(ctx, id, tc.to, "why")
				if tc.bad {
					if err == nil {
						t.Fatal("accepted")
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				p, _ := s.GetProbe(ctx, id)
				if p.Status != tc.to || p.Error != "why" || p.StartedAt.IsZero() != (tc.start == StatusQueued && tc.to != StatusRunning) ||
					p.FinishedAt.IsZero() == tc.to.Ended() {
					t.Fatalf("after the move: %+v", p)
				}
			})
		}
		for _, end := range []Status{StatusSucceeded, StatusFailed, StatusCancelled, StatusInterrupted} {
			id, _ := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://localhost:1/v1", Model: "m"})
			if err := s.SetProbeStatus(ctx, id, end, ""); err != nil {
				t.Fatal(err)
			}
			for _, to := range []Status{StatusRunning, StatusSucceeded, StatusCancelled} {
				if err := s.SetProbeStatus(ctx, id, to, ""); !errors.Is(err, ErrFinished) {
					t.Errorf("%s → %s: %v, want ErrFinished", end, to, err)
				}
			}
		}
		if _, err := s.CreateProbe(ctx, ProbeRun{Status: StatusSucceeded, BaseURL: "http://localhost:1/v1"}); err == nil {
			t.Error("a run created as succeeded")
		}
	})
}

func TestRecordsOrderAndCSV(t *testing.T) {
	eachBackend(t, func(t *testing.T, db string) {
		s := openDB(t, db)
		ctx := context.Background()
		id, err := s.CreateProbe(ctx, ProbeRun{Status: StatusRunning, BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		// Rows arrive in completion order, interleaved across steps.
		batches := [][]measure.Record{
			{record(2, 3), record(1, 1), record(2, 0)},
			{record(1, 0), record(2, 1), record(1, 2)},
			{record(2, 2), record(1, 1)}, // (1, 1) again: an append retried after it went through
		}
		var all []measure.Record
		for _, b := range batches {
			if err := s.AppendRecords(ctx, id, b); err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		// The request stored twice is read once, as first stored.
		want := slices.Clone(all[:len(all)-1])
		slices.SortStableFunc(want, func(a, b measure.Record) int {
			if a.Step != b.Step {
				return a.Step - b.Step
			}
			return a.Index - b.Index
		})
		got, err := s.Records(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("records\n got %+v\nwant %+v", got, want)
		}
		var csvOut, wantCSV bytes.Buffer
		if err := s.WriteRecordsCSV(ctx, &csvOut, id); err != nil {
			t.Fatal(err)
		}
		if err := measure.WriteCSV(&wantCSV, want); err != nil {
			t.Fatal(err)
		}
		if csvOut.String() != wantCSV.String() {
			t.Fatalf("csv\n%s\nwant\n%s", csvOut.String(), wantCSV.String())
		}
		back, err := measure.ReadCSV(&csvOut)
		if err != nil || len(back) != len(want) {
			t.Fatalf("the csv does not read back: %d rows, %v", len(back), err)
		}

		empty, _ := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
		var head bytes.Buffer
		if err := s.WriteRecordsCSV(ctx, &head, empty); err != nil {
			t.Fatal(err)
		}
		if head.String() != strings.Join(measure.CSVHeader, ",")+"\n" {
			t.Errorf("csv of a run with no rows: %q", head.String())
		}
		if rs, err := s.Records(ctx, empty); err != nil || len(rs) != 0 {
			t.Errorf("records of a run with no rows: %v %v", rs, err)
		}
	})
}

func TestListProbesPaging(t *testing.T) {
	eachBackend(t, func(t *testing.T, db string) {
		s := openDB(t, db)
		ctx := context.Background()
		base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		var ids []string
		for i := range 5 {
			id, err := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://127.0.0.1:1/v1", Model: fmt.Sprint("m", i), CreatedAt: base.Add(time.Duration(i) * time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		page1, next, err := s.ListProbes(ctx, ListOptions{Limit: 2})
		if err != nil || len(page1) != 2 || next == "" {
			t.Fatalf("page 1: %d runs, next %q, %v", len(page1), next, err)
		}
		page2, next2, err := s.ListProbes(ctx, ListOptions{Limit: 10, Cursor: next})
		if err != nil || len(page2) != 3 || next2 != "" {
			t.Fatalf("page 2: %d runs, next %q, %v", len(page2), next2, err)
		}
		var got []string
		for _, p := range append(page1, page2...) {
			got = append(got, p.ID)
		}
		slices.Reverse(ids)
		if !slices.Equal(got, ids) {
			t.Fatalf("order %v, want newest first %v", got, ids)
		}
	})
}

func TestSecretsAreRefused(t *testing.T) {
	const key = "sk-live0123456789abcdefXYZ"
	tests := []struct {
		name    string
		baseURL string
		config  string
		refuse  bool
	}{
		{"clean probe config", "http://127.0.0.1:8000/v1", `{"model":"m","api_key_set":true,"steps":[1,2]}`, false},
		{"empty key fields", "http://127.0.0.1:8000/v1", `{"api_key":"","authorization":null,"credential":"prod-key"}`, false},
		{"redacted query", "https://x.openai.azure.com/openai?api-version=2024-06-01&api-key=[redacted]", `{}`, false},
		{"query redacted otherwise", "https://x.openai.azure.com/openai?api-version=2024-06-01&api-key=redacted", `{}`, true},
		{"api_key", "http://127.0.0.1:8000/v1", `{"api_key":"` + key + `"}`, true},
		{"nested authorization", "http://127.0.0.1:8000/v1", `{"target":{"headers":{"Authorization":"Basic Zm9vOmJhcg=="}}}`, true},
		{"header in a list", "http://127.0.0.1:8000/v1", `{"headers":[{"X-Api-Key":"abc"}]}`, true},
		{"spelled api-key", "http://127.0.0.1:8000/v1", `{"API-Key":"abc"}`, true},
		{"bearer in text", "http://127.0.0.1:8000/v1", `{"note":"Bearer abcdefghijklmnop"}`, true},
		{"sk- key in text", "http://127.0.0.1:8000/v1", `{"steps":[1],"x":["` + key + `"]}`, true},
		{"url in config with password", "http://127.0.0.1:8000/v1", `{"base_url":"http://u:p@127.0.0.1/v1"}`, true},
		{"base url with user info", "http://u:p@127.0.0.1:8000/v1", `{}`, true},
		{"base url with api-key", "https://x.openai.azure.com/openai?api-key=abc", `{}`, true},
		{"base url with token", "http://127.0.0.1:8000/v1?token=abc", `{}`, true},
	}
	eachBackend(t, func(t *testing.T, db string) {
		s := openDB(t, db)
		ctx := context.Background()
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := s.CreateProbe(ctx, ProbeRun{BaseURL: tc.baseURL, Model: "m", Config: json.RawMessage(tc.config)})
				if tc.refuse != errors.Is(err, ErrSecret) {
					t.Fatalf("refused=%v, got %v", tc.refuse, err)
				}
				if !tc.refuse && err != nil {
					t.Fatal(err)
				}
			})
		}
		if _, err := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://h/v1", Config: json.RawMessage(`{"a":1} {"api_key":"x"}`)}); err == nil {
			t.Error("a config with two documents was accepted")
		}
		p := examplePlan(t, "chat")
		p.Labels = map[string]string{"password": "hunter2hunter2"}
		if _, err := s.SavePlan(ctx, p); !errors.Is(err, ErrSecret) {
			t.Errorf("a secret label: %v", err)
		}
		p = examplePlan(t, "chat")
		p.Name = "prod " + key
		if _, err := s.SavePlan(ctx, p); !errors.Is(err, ErrSecret) {
			t.Errorf("a secret name: %v", err)
		}
		if _, err := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://127.0.0.1:8000/v1", Model: "m", Label: "key " + key}); !errors.Is(err, ErrSecret) {
			t.Errorf("a secret probe label: %v", err)
		}
		id, err := s.CreateProbe(ctx, ProbeRun{Status: StatusRunning, BaseURL: "http://127.0.0.1:8000/v1", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SaveProbeResult(ctx, id, ProbeResult{RateLimits: json.RawMessage(`{"authorization":"x"}`)}); !errors.Is(err, ErrSecret) {
			t.Errorf("rate limits with a credential: %v", err)
		}
		if err := s.SaveProbeResult(ctx, id, ProbeResult{StopReason: "error", StopDetail: "sent Authorization: Bearer " + key}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetProbeStatus(ctx, id, StatusFailed, "401 Unauthorized: Incorrect API key provided: "+key+" (Bearer "+key+")"); err != nil {
			t.Fatal(err)
		}
		got, _ := s.GetProbe(ctx, id)
		if strings.Contains(got.Error, key) || !strings.Contains(got.Error, "401 Unauthorized") || strings.Contains(got.Result.StopDetail, key) {
			t.Errorf("error %q, stop detail %q", got.Error, got.Result.StopDetail)
		}
		for _, secret := range []string{key, "Zm9vOmJhcg==", "hunter2hunter2", "u:p@"} {
			if where := storedAnywhere(t, s, db, secret); where != "" {
				t.Errorf("%s contains %q", where, secret)
			}
		}
	})
}

// storedAnywhere names where the store keeps text: the SQLite file and
// its log, read as bytes; or, on PostgreSQL, the rows of every table of
// the schema as text. It returns "" when none holds it.
func storedAnywhere(t *testing.T, s *Store, db, text string) string {
	t.Helper()
	ctx := context.Background()
	if IsPostgres(db) {
		rows, err := s.db.QueryContext(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`)
		if err != nil {
			t.Fatal(err)
		}
		var tables []string
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				t.Fatal(err)
			}
			tables = append(tables, name)
		}
		rows.Close()
		if len(tables) < 5 {
			t.Fatalf("only the tables %v", tables)
		}
		for _, table := range tables {
			var all sql.NullString
			if err := s.db.QueryRowContext(ctx, `SELECT string_agg(t::text, '') FROM `+table+` t`).Scan(&all); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(all.String, text) {
				return "table " + table
			}
		}
		return ""
	}
	s.Close()
	for _, f := range []string{db, db + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(text)) {
			return filepath.Base(f)
		}
	}
	return ""
}

func TestOpenMarksUnfinishedRunsInterrupted(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[Status]string{}
	for _, st := range []Status{StatusQueued, StatusRunning, StatusSucceeded, StatusCancelled} {
		id, err := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if st != StatusQueued {
			if err := s.SetProbeStatus(ctx, id, st, ""); err != nil {
				t.Fatal(err)
			}
		}
		ids[st] = id
	}
	if _, err := s.AcquireSlot(ctx, "earlier", 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for was, id := range ids {
		p, err := s.GetProbe(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus := was
		if !was.Ended() {
			wantStatus = StatusInterrupted
		}
		if p.Status != wantStatus || p.FinishedAt.IsZero() {
			t.Errorf("run that was %s: now %s, finished %v", was, p.Status, p.FinishedAt)
		}
		if wantStatus == StatusInterrupted && !strings.Contains(p.Error, "stopped before the run finished") {
			t.Errorf("interrupted run's error: %q", p.Error)
		}
		if got := statuses(t, s, id); got[len(got)-1] != wantStatus {
			t.Errorf("run that was %s: status events %v", was, got)
		}
	}
	// The earlier process's places are free again.
	if _, err := s.AcquireSlot(ctx, "now", 1, time.Hour); err != nil {
		t.Errorf("the place an earlier process held: %v", err)
	}
}

// TestConcurrentWritersAndReaders runs probe writers and readers at once,
// as the service does: nobody may fail with a locked database.
func TestConcurrentWritersAndReaders(t *testing.T) {
	eachBackend(t, func(t *testing.T, db string) {
		s := openDB(t, db)
		ctx := context.Background()
		const writers, batches, rows = 4, 20, 25
		ids := make([]string, writers)
		for i := range ids {
			id, err := s.CreateProbe(ctx, ProbeRun{Status: StatusRunning, BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = id
		}
		var wg sync.WaitGroup
		for _, id := range ids {
			wg.Go(func() {
				for b := range batches {
					batch := make([]measure.Record, rows)
					for i := range batch {
						batch[i] = record(1, b*rows+i)
					}
					if err := s.AppendRecords(ctx, id, batch); err != nil {
						t.Error(err)
						return
					}
				}
			})
			wg.Go(func() {
				for range batches {
					if _, err := s.Records(ctx, id); err != nil {
						t.Error(err)
						return
					}
					if _, err := s.GetProbe(ctx, id); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Go(func() {
			for range batches {
				if _, err := s.SavePlan(ctx, examplePlan(t, "chat")); err != nil {
					t.Error(err)
					return
				}
			}
		})
		wg.Wait()
		for _, id := range ids {
			p, _ := s.GetProbe(ctx, id)
			if p.Counts.Records != batches*rows {
				t.Errorf("probe %s has %d rows, want %d", id, p.Counts.Records, batches*rows)
			}
		}
	})
}

func BenchmarkAppendRecords100(b *testing.B) {
	s, _ := openTemp(b)
	ctx := context.Background()
	id, err := s.CreateProbe(ctx, ProbeRun{Status: StatusRunning, BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]measure.Record, 100)
	for i := range batch {
		batch[i] = record(8, i)
	}
	for b.Loop() {
		if err := s.AppendRecords(ctx, id, batch); err != nil {
			b.Fatal(err)
		}
	}
}

// TestOpenLocksTheFile: a store file has one owner at a time. A second
// Open, by the same path or through a symbolic link, fails at once with a
// LockedError that names the file and this process; Close hands the file
// over.
func TestOpenLocksTheFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "p.db")
	link := filepath.Join(dir, "link.db")
	first, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, link} {
		second, err := Open(ctx, p)
		var le *LockedError
		if !errors.As(err, &le) || le.Path != p || le.PID != os.Getpid() {
			if second != nil {
				second.Close()
			}
			t.Fatalf("a second Open of %s: %v", p, err)
		}
		if msg := err.Error(); !strings.Contains(msg, p) || !strings.Contains(msg, fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(msg, "--db") {
			t.Errorf("the message: %s", msg)
		}
	}
	if err := first.Ready(ctx); err != nil {
		t.Fatalf("the first store after a refused second: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(ctx, link)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLockedErrorWithoutPID(t *testing.T) {
	err := &LockedError{Path: "/var/lib/planner/planner.db"}
	if got := err.Error(); !strings.HasPrefix(got, "/var/lib/planner/planner.db is in use by another process:") {
		t.Errorf("%s", got)
	}
}

// TestCursorsBelongToTheirList: a cursor of the plans' list is refused by
// the probes' list and the other way round, rather than read as a
// position in it (a page of probes older than some plan), and so is a
// cursor of the right length that neither list issued.
func TestCursorsBelongToTheirList(t *testing.T) {
	eachBackend(t, func(t *testing.T, db string) {
		s := openDB(t, db)
		ctx := context.Background()
		base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		p := examplePlan(t, "chat")
		for i := range 2 {
			p.CreatedAt = base.Add(time.Duration(i) * time.Hour)
			if _, err := s.SavePlan(ctx, p); err != nil {
				t.Fatal(err)
			}
			if _, err := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://127.0.0.1:1/v1", Model: "m", CreatedAt: base.Add(time.Duration(i) * time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
		_, plansNext, err := s.ListPlans(ctx, ListOptions{Limit: 1})
		if err != nil || plansNext == "" {
			t.Fatalf("plans: next %q, %v", plansNext, err)
		}
		_, probesNext, err := s.ListProbes(ctx, ListOptions{Limit: 1})
		if err != nil || probesNext == "" {
			t.Fatalf("probes: next %q, %v", probesNext, err)
		}
		if _, _, err := s.ListProbes(ctx, ListOptions{Cursor: plansNext}); !errors.Is(err, ErrBadCursor) {
			t.Errorf("the plans' cursor in the probes' list: %v", err)
		}
		if _, _, err := s.ListPlans(ctx, ListOptions{Cursor: probesNext}); !errors.Is(err, ErrBadCursor) {
			t.Errorf("the probes' cursor in the plans' list: %v", err)
		}
		for _, bad := range []string{"AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAAA"} {
			if _, _, err := s.ListPlans(ctx, ListOptions{Cursor: bad}); !errors.Is(err, ErrBadCursor) {
				t.Errorf("cursor %q: %v", bad, err)
			}
		}
		if page, _, err := s.ListPlans(ctx, ListOptions{Cursor: plansNext}); err != nil || len(page) != 1 {
			t.Errorf("the plans' own cursor: %d plans, %v", len(page), err)
		}
	})
}
