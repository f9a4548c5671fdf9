package store

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/testutil"
)

// Small caps that a test fills in a few hundred writes: a 1 MiB file
// (256 pages) that keeps room for twice a 32 KiB document.
const (
	testMaxBytes = 1 << 20
	testMaxDoc   = 32 << 10
)

// fillPlans saves plans until the store refuses one, and returns the ids
// of those it acknowledged and the refusal.
func fillPlans(t *testing.T, s *Store, name string) ([]string, error) {
	t.Helper()
	ctx := context.Background()
	p := examplePlan(t, "three-classes")
	var ids []string
	for i := range 10000 {
		p.Name = name + strings.Repeat("x", i%50)
		id, err := s.SavePlan(ctx, p)
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	t.Fatalf("%d plans saved and still no refusal", len(ids))
	return nil, nil
}

// filler takes most of the room left under the cap with one big row, that
// the test deletes to free the room again, as a file on a full disk.
func filler(t *testing.T, s *Store, bytes int) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS filler (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO filler VALUES (zeroblob(?))`, bytes); err != nil {
		t.Fatal(err)
	}
}

func free(t *testing.T, s *Store) {
	t.Helper()
	if _, err := s.db.ExecContext(context.Background(), `DELETE FROM filler`); err != nil {
		t.Fatal(err)
	}
}

// TestFullStoreRefusesAndRecovers fills a store capped by max_page_count,
// SQLite's own "database or disk is full": the refusal is ErrFull, Ready
// fails while the store has no room, reads go on, and once room is freed
// writes and readiness come back. Every acknowledged plan is there after a
// restart, and none that was refused.
func TestFullStoreRefusesAndRecovers(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "planner.db")
	s, err := Open(ctx, path, WithMaxBytes(testMaxBytes), WithMaxDocumentBytes(testMaxDoc))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(ctx); err != nil {
		t.Fatalf("an empty store: %v", err)
	}
	filler(t, s, testMaxBytes/2)
	acked, err := fillPlans(t, s, "before")
	if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "full") {
		t.Fatalf("the refusal of a save on a full store: %v", err)
	}
	if len(acked) == 0 {
		t.Fatal("no plan fitted")
	}
	if err := s.Ready(ctx); !errors.Is(err, ErrFull) {
		t.Errorf("Ready on a full store: %v", err)
	}
	if _, err := s.GetPlan(ctx, acked[0]); err != nil {
		t.Errorf("a read on a full store: %v", err)
	}
	if _, err := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Config: []byte(`{"x":"` + strings.Repeat("y", 20000) + `"}`)}); !errors.Is(err, ErrFull) {
		t.Errorf("a probe created on a full store: %v", err)
	}

	free(t, s)
	if err := s.Ready(ctx); err != nil {
		t.Fatalf("Ready once room was freed: %v", err)
	}
	more, err := fillPlans(t, s, "after")
	if !errors.Is(err, ErrFull) || len(more) == 0 {
		t.Fatalf("saves after freeing: %d, then %v", len(more), err)
	}
	acked = append(acked, more...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	again, err := Open(ctx, path, WithMaxBytes(testMaxBytes), WithMaxDocumentBytes(testMaxDoc))
	if err != nil {
		t.Fatalf("restart on a full store: %v", err)
	}
	defer again.Close()
	n := 0
	for cur := ""; ; {
		page, next, err := again.ListPlans(ctx, ListOptions{Limit: MaxLimit, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		n += len(page)
		if next == "" {
			break
		}
		cur = next
	}
	if n != len(acked) {
		t.Fatalf("%d plans after the restart, %d acknowledged", n, len(acked))
	}
	for _, id := range acked {
		if _, err := again.GetPlan(ctx, id); err != nil {
			t.Fatalf("acknowledged plan %s: %v", id, err)
		}
	}
}

// TestFullStoreStartsDegraded restarts on a full store whose previous
// process left probe runs running: marking them interrupted needs room, so
// the store opens degraded (it says so in its log and in Ready), serves
// reads, and completes its start-up once room is freed.
func TestFullStoreStartsDegraded(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "planner.db")
	s, err := Open(ctx, path, WithMaxBytes(testMaxBytes), WithMaxDocumentBytes(testMaxDoc))
	if err != nil {
		t.Fatal(err)
	}
	// Runs packed in full pages: ending them makes their rows longer,
	// which needs pages the cap no longer has.
	var running []string
	for range 300 {
		id, err := s.CreateProbe(ctx, ProbeRun{Status: StatusRunning, BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		running = append(running, id)
	}
	filler(t, s, testMaxBytes/2)
	acked, err := fillPlans(t, s, "plan")
	if !errors.Is(err, ErrFull) {
		t.Fatal(err)
	}
	// Fill the last pages too, one small row at a time.
	for {
		if _, err := s.db.ExecContext(ctx, `INSERT INTO filler VALUES (zeroblob(200))`); err != nil {
			break
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	var logs testutil.SyncBuffer
	again, err := Open(ctx, path, WithMaxBytes(testMaxBytes), WithMaxDocumentBytes(testMaxDoc),
		WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatalf("restart on a full store with runs to mark interrupted: %v", err)
	}
	defer again.Close()
	if !strings.Contains(logs.String(), "started degraded") {
		t.Errorf("the log does not say the store started degraded: %s", logs.String())
	}
	if err := again.Ready(ctx); !errors.Is(err, ErrStarting) || !errors.Is(err, ErrFull) {
		t.Fatalf("Ready on a degraded store: %v", err)
	}
	if _, err := again.GetPlan(ctx, acked[len(acked)-1]); err != nil {
		t.Errorf("a read on a degraded store: %v", err)
	}

	free(t, again)
	if err := again.Ready(ctx); err != nil {
		t.Fatalf("Ready once room was freed: %v", err)
	}
	if !strings.Contains(logs.String(), "completed its start-up") {
		t.Errorf("the log does not say the start-up completed: %s", logs.String())
	}
	for _, id := range running {
		run, err := again.GetProbe(ctx, id)
		if err != nil || run.Status != StatusInterrupted {
			t.Fatalf("run %s after the start-up completed: %s %v", id, run.Status, err)
		}
	}
	// A run this process started while degraded is its own: the
	// delayed repair leaves it alone.
	mine, err := again.CreateProbe(ctx, ProbeRun{Status: StatusRunning, BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if run, _ := again.GetProbe(ctx, mine); run.Status != StatusRunning {
		t.Errorf("this process's run after the repair: %s", run.Status)
	}
}

// TestRemovedFileIsNotAcknowledged removes the store's files (or puts
// another file in their place) while it is open: SQLite would go on
// committing to the removed file, but no write is acknowledged and Ready
// fails, naming ErrGone.
func TestRemovedFileIsNotAcknowledged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		alter func(t *testing.T, path string)
	}{
		{"database and log removed", func(t *testing.T, path string) {
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"log removed", func(t *testing.T, path string) {
			if err := os.Remove(path + "-wal"); err != nil {
				t.Fatal(err)
			}
		}},
		{"database replaced", func(t *testing.T, path string) {
			other := path + ".other"
			if err := os.WriteFile(other, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var logs bytes.Buffer
			path := filepath.Join(t.TempDir(), "planner.db")
			s, err := Open(ctx, path, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			before, err := s.SavePlan(ctx, examplePlan(t, "chat"))
			if err != nil {
				t.Fatal(err)
			}
			tc.alter(t, path)
			for range 5 {
				if id, err := s.SavePlan(ctx, examplePlan(t, "chat")); !errors.Is(err, ErrGone) {
					t.Fatalf("a save after the file was removed: %q, %v", id, err)
				}
			}
			if _, err := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://127.0.0.1:1/v1", Model: "m"}); !errors.Is(err, ErrGone) {
				t.Errorf("a probe created after the file was removed: %v", err)
			}
			if err := s.Ready(ctx); !errors.Is(err, ErrGone) {
				t.Errorf("Ready after the file was removed: %v", err)
			}
			if _, err := s.GetPlan(ctx, before); err != nil {
				t.Errorf("a read of the open file: %v", err)
			}
			if n := strings.Count(logs.String(), "level=ERROR"); n != 1 || !strings.Contains(logs.String(), "removed or replaced") {
				t.Errorf("the removal is logged %d times: %s", n, logs.String())
			}
		})
	}
}

// TestOpenRefusesDamagedFile damages a store file in the middle, where
// opening and the first reads do not look, and in its header: Open
// refuses both with ErrCorrupt and says what it found.
func TestOpenRefusesDamagedFile(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		offset func(size int64) int64
		want   string
	}{
		{"middle", func(size int64) int64 { return size / 2 / pageBytes * pageBytes }, "quick_check"},
		{"header", func(int64) int64 { return 0 }, "not a database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "planner.db")
			s, err := Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			for range 100 {
				if _, err := s.SavePlan(ctx, examplePlan(t, "three-classes")); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, 2*pageBytes), tc.offset(info.Size())); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			damaged, err := Open(ctx, path)
			if err == nil {
				damaged.Close()
				t.Fatal("a damaged file opened")
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("the refusal: %v", err)
			}
			// The lock is released: the file can be moved aside and a
			// new store opened in its place.
			if err := os.Rename(path, path+".damaged"); err != nil {
				t.Fatal(err)
			}
			fresh, err := Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			fresh.Close()
		})
	}
}

// TestDocumentCap refuses a plan, a probe configuration and a probe
// result over the cap with a *TooLargeError naming the document and both
// sizes, and stores them under it.
func TestDocumentCap(t *testing.T) {
	eachBackend(t, testDocumentCap)
}

func testDocumentCap(t *testing.T, db string) {
	ctx := context.Background()
	s := openDB(t, db, WithMaxDocumentBytes(testMaxDoc))
	big := strings.Repeat("n", testMaxDoc)
	var tooLarge *TooLargeError

	p := examplePlan(t, "chat")
	p.Name = big
	if _, err := s.SavePlan(ctx, p); !errors.As(err, &tooLarge) || tooLarge.What != "plan" || tooLarge.Limit != testMaxDoc || tooLarge.Bytes <= testMaxDoc {
		t.Errorf("a plan over the cap: %v", err)
	}
	p.Name = big[:testMaxDoc/2]
	if _, err := s.SavePlan(ctx, p); err != nil {
		t.Errorf("a plan under the cap: %v", err)
	}

	config := []byte(`{"label":"` + big + `"}`)
	if _, err := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Config: config}); !errors.As(err, &tooLarge) || tooLarge.What != "probe configuration" {
		t.Errorf("a probe configuration over the cap: %v", err)
	}
	id, err := s.CreateProbe(ctx, ProbeRun{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SaveProbeResult(ctx, id, ProbeResult{StopReason: "completed", StopDetail: big}); !errors.As(err, &tooLarge) || tooLarge.What != "probe result" {
		t.Errorf("a probe result over the cap: %v", err)
	}
	if err := s.SaveProbeResult(ctx, id, ProbeResult{StopReason: "completed", StopDetail: "done"}); err != nil {
		t.Errorf("a probe result under the cap: %v", err)
	}
	if msg := (&TooLargeError{What: "plan", Bytes: 600000, Limit: 524288}).Error(); msg != "the plan is 600000 bytes, more than the 524288 bytes a stored document may take" {
		t.Errorf("message %q", msg)
	}

	s.Close()
	d := openDB(t, db)
	if d.maxDoc != DefaultMaxDocumentBytes || DefaultMaxDocumentBytes != 512<<10 {
		t.Errorf("default cap %d", d.maxDoc)
	}
}
