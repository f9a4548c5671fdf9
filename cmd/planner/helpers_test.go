package main

import (
	"regexp"
	"sync"

	"github.com/plannerdev/planner/internal/testutil"
)

// addrWriter is a server's standard output: it keeps what the server
// prints and hands over the first loopback URL in it, so that a test
// waits for the server to listen without polling.
type addrWriter struct {
	testutil.SyncBuffer
	found chan string
	once  sync.Once
}

var loopbackURL = regexp.MustCompile(`http://(127\.0\.0\.1:[0-9]+)`)

func (w *addrWriter) Write(p []byte) (int, error) {
	n, err := w.SyncBuffer.Write(p)
	if m := loopbackURL.FindStringSubmatch(w.String()); m != nil {
		w.once.Do(func() { w.found <- m[1] })
	}
	return n, err
}
