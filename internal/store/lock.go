package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gofrs/flock"
)

// LockedError is returned by Open when another process holds the store:
// one service process writes one store file (docs/security.md, "The
// store"). A second one would mark the first's running probes interrupted
// and make its writes fail.
type LockedError struct {
	// Path is the store file.
	Path string
	// PID is the process that holds it, 0 when unknown.
	PID int
}

// Error names the file and, when known, the process that holds it.
func (e *LockedError) Error() string {
	by := "another process"
	if e.PID > 0 {
		by = fmt.Sprintf("another process (pid %d)", e.PID)
	}
	return fmt.Sprintf("%s is in use by %s: one planner serve writes one store file; stop the other one, or give this one another file (--db)", e.Path, by)
}

// lockSuffix names the lock file beside the store file.
const lockSuffix = ".lock"

// lock takes the exclusive lock of the store file at path without
// waiting: an advisory lock (flock on Unix, LockFileEx on Windows) on
// path.lock, which the operating system releases when the process ends,
// however it ends. The file also holds the process id, for the message of
// a second process. The lock is on the file the path leads to, so that a
// symbolic link to the store shares its lock.
func lock(path string) (*flock.Flock, error) {
	target := path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		target = resolved
	}
	lockPath := target + lockSuffix
	fl := flock.New(lockPath)
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", lockPath, err)
	}
	if !ok {
		return nil, &LockedError{Path: path, PID: lockHolder(lockPath)}
	}
	// Best effort: without it, a second process only cannot name this one.
	_ = os.WriteFile(lockPath, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
	return fl, nil
}

// lockHolder reads the process id written in a lock file, 0 when it
// cannot.
func lockHolder(lockPath string) int {
	b, err := os.ReadFile(lockPath)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// unlock releases the lock taken by lock.
func unlock(fl *flock.Flock) error {
	if err := fl.Unlock(); err != nil {
		return fmt.Errorf("unlock %s: %w", fl.Path(), err)
	}
	return nil
}
