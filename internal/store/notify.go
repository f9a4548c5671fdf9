package store

import (
	"sync"
)

// hub wakes the goroutines that wait for a change of the store: a probe
// run's new events, a cancel asked of a run. The store notifies it after
// each commit that makes such a change; on PostgreSQL the commits of the
// other services on the database reach it too, through LISTEN/NOTIFY
// (postgres.go). A wake-up says only that something may have changed: the
// woken reread the store.
type hub struct {
	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
}

func newHub() *hub { return &hub{waiters: map[string]map[chan struct{}]struct{}{}} }

// Keys of the changes a hub carries.
func eventsKey(probeID string) string { return "e:" + probeID }
func cancelKey(probeID string) string { return "c:" + probeID }

// watch returns a channel that receives once after each change of key
// (changes while the last is unread count as one), and the function that
// stops the watch.
func (h *hub) watch(key string) (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	h.mu.Lock()
	if h.waiters[key] == nil {
		h.waiters[key] = map[chan struct{}]struct{}{}
	}
	h.waiters[key][c] = struct{}{}
	h.mu.Unlock()
	return c, func() {
		h.mu.Lock()
		delete(h.waiters[key], c)
		if len(h.waiters[key]) == 0 {
			delete(h.waiters, key)
		}
		h.mu.Unlock()
	}
}

// notify wakes the watchers of key.
func (h *hub) notify(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.waiters[key] {
		wake(c)
	}
}

// notifyAll wakes every watcher: after notifications may have been missed.
func (h *hub) notifyAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, cs := range h.waiters {
		for c := range cs {
			wake(c)
		}
	}
}

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// WatchEvents returns a channel that receives after new events of the
// probe run are stored, by this service or, on PostgreSQL, any other on
// the database, and the function that ends the watch. Start watching
// before reading the events, so that none stored in between is missed.
func (s *Store) WatchEvents(probeID string) (<-chan struct{}, func()) {
	return s.hub.watch(eventsKey(probeID))
}

// WatchCancel returns a channel that receives after a client asked, here
// or on another service on the database, for the probe run to be
// cancelled (RequestCancel), and the function that ends the watch.
func (s *Store) WatchCancel(probeID string) (<-chan struct{}, func()) {
	return s.hub.watch(cancelKey(probeID))
}
