package testutil

import (
	"bufio"
	"context"
	"net/http"
	"testing"
	"time"
)

// UntilEvents calls done at once, then after every event of the
// server-sent event stream at url, until it returns true or the stream
// ends (within a minute); it reports whether done held. It lets a test
// wait on a job's progress without polling on a timer.
func UntilEvents(t testing.TB, url string, done func() bool) bool {
	t.Helper()
	if done() {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		if sc.Text() != "" {
			continue // within an event
		}
		if done() {
			return true
		}
	}
	return done()
}
