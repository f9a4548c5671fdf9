//go:build linux || darwin || freebsd

package store

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// freeBytes is the space that the file system holding dir has for an
// unprivileged writer (statfs's available blocks).
func freeBytes(dir string) (int64, bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false, fmt.Errorf("statfs %s: %w", dir, err)
	}
	free := uint64(st.Bavail) * uint64(st.Bsize)
	return int64(min(free, 1<<62)), true, nil
}
