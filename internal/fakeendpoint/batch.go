package fakeendpoint

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// batcher models continuous batching: at most slots sequences run at once and
// the rest wait in a FIFO queue. A freed slot is handed straight to the head
// of the queue, so admission is first come, first served.
type batcher struct {
	mu      sync.Mutex
	slots   int
	running int
	queue   list.List // of *waiter; non-empty only while running == slots

	load atomic.Int64 // running, readable at every token without the lock
}

// admission is a granted slot: when it was granted and how many sequences
// were running right after, this one included.
type admission struct {
	at      time.Time
	running int
}

// waiter is a queued sequence; admit is closed when its slot is granted.
type waiter struct {
	admit chan struct{}
	adm   admission
	elem  *list.Element // nil once admitted
}

func newBatcher(slots int) *batcher {
	return &batcher{slots: slots}
}

// current reports the number of sequences currently decoding.
func (b *batcher) current() int { return int(b.load.Load()) }

// waiting reports the number of sequences queued for a slot.
func (b *batcher) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.queue.Len()
}

// acquire waits for a slot in arrival order. A sequence that finds a free
// slot counts as admitted when it arrived, so that the server's own request
// handling does not add to its TTFT. It returns ctx's error, holding no
// slot, when ctx ends first.
func (b *batcher) acquire(ctx context.Context, arrived time.Time) (admission, error) {
	b.mu.Lock()
	if b.running < b.slots {
		b.running++
		b.load.Store(int64(b.running))
		adm := admission{at: arrived, running: b.running}
		b.mu.Unlock()
		return adm, nil
	}
	w := &waiter{admit: make(chan struct{})}
	w.elem = b.queue.PushBack(w)
	b.mu.Unlock()

	select {
	case <-w.admit:
		return w.adm, nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	queued := w.elem != nil
	if queued {
		b.queue.Remove(w.elem)
	}
	b.mu.Unlock()
	if !queued {
		// The slot was granted while ctx ended: pass it on.
		b.release()
	}
	return admission{}, ctx.Err()
}

// release frees a slot, handing it to the longest-waiting sequence if any.
func (b *batcher) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if front := b.queue.Front(); front != nil {
		w := b.queue.Remove(front).(*waiter)
		w.elem = nil
		w.adm = admission{at: time.Now(), running: b.running}
		close(w.admit)
		return
	}
	b.running--
	b.load.Store(int64(b.running))
}
