//go:build !(linux || darwin || freebsd)

package store

// freeBytes cannot tell the free space of a file system here: only the
// cap of store.max_bytes bounds the room.
func freeBytes(string) (int64, bool, error) { return 0, false, nil }
