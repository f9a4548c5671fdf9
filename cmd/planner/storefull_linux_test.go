//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/plannerdev/planner/internal/store"
)

// smallFS mounts a tmpfs of the given size (mount's size= syntax) for the
// test, or skips it when the test may not mount one.
func smallFS(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Skipf("cannot mount a %s tmpfs on %s (%v): this test needs root (CAP_SYS_ADMIN), as CI has; "+
			"run it so with: sudo go test ./cmd/planner -run TestServeOnFullDisk. TestServeOnFullStore tests the "+
			"same behaviour on SQLite's own full store without privileges", size, dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// freeBytes is the room left on the file system of dir.
func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// fillDisk grows the file at path until the file system has at most leave
// bytes left, or, with leave 0, until it refuses another byte.
func fillDisk(t *testing.T, path string, leave int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for n := int64(len(chunk)); n > 0; {
		free := freeBytes(t, filepath.Dir(path))
		if leave > 0 && free <= leave {
			return
		}
		if leave > 0 {
			n = min(n, free-leave)
		}
		if _, err := f.Write(chunk[:n]); errors.Is(err, syscall.ENOSPC) {
			n /= 2 // the last blocks, then the last bytes
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

// TestServeOnFullDisk runs the service on an 8 MiB tmpfs and fills it
// while a probe runs: no save answers 500, readiness fails while the
// store has too little room, the service stops and starts again on the
// full disk, and once the disk has room again readiness comes back, the
// probe is ended, saves are taken, and every acknowledged plan is there
// after another restart. Last, a service stopped cleanly starts on a disk
// so full that SQLite cannot even map its -shm file: it starts degraded and
// recovers once there is room.
func TestServeOnFullDisk(t *testing.T) {
	cleanServeEnv(t)
	dir := smallFS(t, "8m")
	db := filepath.Join(dir, "planner.db")
	filler := filepath.Join(dir, "filler")
	r := startServe(t, "serve", "--listen", "127.0.0.1:0", "--db", db)
	if status, body := readiness(t, r.url); status != http.StatusOK {
		t.Fatalf("readyz with room: %d %s", status, body)
	}
	status, b := jsonCall(t, http.MethodPost, r.url+"/v1/probes", longProbe(slowSimURL(t)))
	var probe probeView
	if status != http.StatusAccepted || json.Unmarshal(b, &probe) != nil {
		t.Fatalf("start the probe: %d %s", status, b)
	}
	waitProbe(t, r.url, probe.ID, func(p probeView) bool { return p.Counts.Records > 0 })

	fillDisk(t, filler, 3<<20/2)
	acked := fillStore(t, r.url)
	if status, body := readiness(t, r.url); status != http.StatusServiceUnavailable || !strings.Contains(body, "free space") {
		t.Errorf("readyz on a full disk: %d %s", status, body)
	}
	allThere(t, r.url, acked)
	fillDisk(t, filler, 0)
	r.stop()
	if code := r.wait(t); code != exitOK {
		t.Fatalf("stop on a full disk: exit %d: %s", code, r.errOut)
	}

	r = startServe(t, "serve", "--listen", "127.0.0.1:0", "--db", db)
	if status, body := readiness(t, r.url); status != http.StatusServiceUnavailable || !strings.Contains(body, "free space") {
		t.Errorf("readyz after a restart on the full disk: %d %s", status, body)
	}
	allThere(t, r.url, acked)
	if status, _ := save(t, r.url, "on the full disk"); status != http.StatusInsufficientStorage {
		t.Errorf("a save on the full disk after the restart: %d", status)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if status, body := readiness(t, r.url); status != http.StatusOK {
		t.Fatalf("readyz once the disk has room: %d %s", status, body)
	}
	if p := getProbe(t, r.url, probe.ID); !store.Status(p.Status).Ended() {
		t.Errorf("the probe of the first run is %s once the disk has room", p.Status)
	}
	status, id := save(t, r.url, "with room")
	if status != http.StatusOK {
		t.Fatalf("a save with room: %d", status)
	}
	acked = append(acked, id)
	r.stop()
	if code := r.wait(t); code != exitOK {
		t.Fatalf("exit %d: %s", code, r.errOut)
	}
	if _, err := os.Stat(db + "-wal"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a clean stop left the -wal file: %v", err)
	}

	fillDisk(t, filler, 0)
	r = startServe(t, "serve", "--listen", "127.0.0.1:0", "--db", db)
	if status, body := readiness(t, r.url); status != http.StatusServiceUnavailable || !strings.Contains(body, "started degraded") {
		t.Errorf("readyz after a clean stop and a start on a full disk: %d %s", status, body)
	}
	if !strings.Contains(r.errOut.String(), "started degraded") {
		t.Errorf("the log does not say the store started degraded: %s", r.errOut)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if status, body := readiness(t, r.url); status != http.StatusOK {
		t.Fatalf("readyz once the disk has room: %d %s", status, body)
	}
	allThere(t, r.url, acked)
	r.stop()
	if code := r.wait(t); code != exitOK {
		t.Fatalf("exit %d: %s", code, r.errOut)
	}
}
