// Package lru is a cache bounded by the bytes of what it holds, the
// least recently used going first when it is full.
package lru

import (
	"container/list"
	"sync"
)

// Cache maps keys to values of a size, holding at most its limit of
// bytes. It is safe for concurrent use, under one lock.
type Cache[K comparable, V any] struct {
	sizeOf func(V) int64

	mu    sync.Mutex
	limit int64
	size  int64
	order *list.List // of *entry[K, V], most recent first
	byKey map[K]*list.Element
}

type entry[K comparable, V any] struct {
	key   K
	value V
	size  int64
}

// New returns a cache of at most limit bytes, a value counting sizeOf
// it.
func New[K comparable, V any](limit int64, sizeOf func(V) int64) *Cache[K, V] {
	return &Cache[K, V]{sizeOf: sizeOf, limit: limit, order: list.New(), byKey: map[K]*list.Element{}}
}

// Get returns the value of k, which becomes the most recently used.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*entry[K, V]).value, true
}

// Add makes v the value of k, in place of any it had, unless v alone is
// over the limit, and drops the least recently used values beyond it.
func (c *Cache[K, V]) Add(k K, v V) {
	size := c.sizeOf(v)
	if size > c.limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[k]; ok {
		c.remove(el)
	}
	c.byKey[k] = c.order.PushFront(&entry[K, V]{key: k, value: v, size: size})
	c.size += size
	for c.size > c.limit {
		c.remove(c.order.Back())
	}
}

func (c *Cache[K, V]) remove(el *list.Element) {
	e := c.order.Remove(el).(*entry[K, V])
	delete(c.byKey, e.key)
	c.size -= e.size
}

// Size returns the bytes the cache holds.
func (c *Cache[K, V]) Size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}
