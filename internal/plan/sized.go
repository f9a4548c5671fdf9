package plan

import (
	"container/list"
	"sync"
)

// sizedCache is a least-recently-used cache bounded by the estimated bytes
// of what it holds rather than by a number of entries: the engine's large
// values (draws, samples, tails, plans) grow with the scenario's Monte
// Carlo draws and classes, so that a count alone lets a few large
// scenarios take hundreds of megabytes. A value larger than the whole
// bound is not kept. It is safe for concurrent use.
type sizedCache[K comparable, V any] struct {
	mu       sync.Mutex
	maxBytes int
	bytes    int
	size     func(V) int
	order    *list.List // of *sizedEntry, most recently used first
	items    map[K]*list.Element
}

type sizedEntry[K comparable, V any] struct {
	key   K
	value V
	bytes int
}

func newSizedCache[K comparable, V any](maxBytes int, size func(V) int) *sizedCache[K, V] {
	return &sizedCache[K, V]{maxBytes: maxBytes, size: size, order: list.New(), items: map[K]*list.Element{}}
}

// Get returns the value of k and marks it used.
func (c *sizedCache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*sizedEntry[K, V]).value, true
	}
	var zero V
	return zero, false
}

// Contains reports whether k is cached, without marking it used.
func (c *sizedCache[K, V]) Contains(k K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.items[k]
	return ok
}

// Add keeps v as the value of k, evicting the least recently used values
// until the cache is within its bound; it reports whether it evicted any.
func (c *sizedCache[K, V]) Add(k K, v V) (evicted bool) {
	n := c.size(v)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.remove(el)
	}
	if n > c.maxBytes {
		return false
	}
	c.items[k] = c.order.PushFront(&sizedEntry[K, V]{key: k, value: v, bytes: n})
	c.bytes += n
	for c.bytes > c.maxBytes {
		c.remove(c.order.Back())
		evicted = true
	}
	return evicted
}

// Purge empties the cache.
func (c *sizedCache[K, V]) Purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	clear(c.items)
	c.bytes = 0
}

// Bytes is the estimated size of what the cache holds.
func (c *sizedCache[K, V]) Bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

func (c *sizedCache[K, V]) remove(el *list.Element) {
	e := el.Value.(*sizedEntry[K, V])
	c.order.Remove(el)
	delete(c.items, e.key)
	c.bytes -= e.bytes
}
