package otlp

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
)

// streamKey identifies a stream: the hash of its metric (with the scope
// and resource around it) and of its point's attributes.
type streamKey struct{ metric, attrs uint64 }

// stream is a series the fast path appends to: its labels, as the
// converter made them, and its ref in the store, updated when the store
// hands out another (after the series was dropped from the head). A
// stream of deltas keeps its cumulative state, updated when the state
// was forgotten and another took its place.
type stream struct {
	lset labels.Labels
	ref  atomic.Uint64
	seen atomic.Int64 // unix seconds
	sum  atomic.Pointer[sumState]
}

// family is a metric's translation: its Prometheus name and metadata.
type family struct {
	opts promstorage.AOptions
	seen atomic.Int64
}

// resourceInfo is a resource's target_info labels, empty if the
// converter makes none of it.
type resourceInfo struct {
	lset labels.Labels
	hash uint64
	seen atomic.Int64
}

const cacheShards = 64

// fastCache holds what the fast path has learnt, shared by the requests:
// streams, metrics (families), resources, and the scopes found to
// decode (see checkOnce). Each is a sharded map: a lock per shard, so
// that concurrent requests seldom touch the same lock's cache line.
type fastCache struct {
	streams   shardedMap[streamKey, *stream]
	families  shardedMap[uint64, *family]
	resources shardedMap[uint64, *resourceInfo]
	decodes   shardedMap[uint64, *atomic.Int64] // when last seen
	swept     atomic.Int64                      // unix seconds of the last sweep
}

func newFastCache() *fastCache {
	c := &fastCache{}
	c.streams.init(func(k streamKey) uint64 { return k.attrs })
	c.families.init(func(k uint64) uint64 { return k })
	c.resources.init(func(k uint64) uint64 { return k })
	c.decodes.init(func(k uint64) uint64 { return k })
	c.swept.Store(time.Now().Unix())
	return c
}

// shardedMap is a map split in cacheShards, each with its lock.
type shardedMap[K comparable, V any] struct {
	shard  func(K) uint64
	shards [cacheShards]struct {
		mu sync.RWMutex
		m  map[K]V
		_  [32]byte // keep neighbouring locks on separate cache lines
	}
}

func (sm *shardedMap[K, V]) init(shard func(K) uint64) {
	sm.shard = shard
	for i := range sm.shards {
		sm.shards[i].m = map[K]V{}
	}
}

func (sm *shardedMap[K, V]) get(k K) (V, bool) {
	sh := &sm.shards[sm.shard(k)%cacheShards]
	sh.mu.RLock()
	v, ok := sh.m[k]
	sh.mu.RUnlock()
	return v, ok
}

// add adds v under k unless there is a value already, and returns the
// one kept.
func (sm *shardedMap[K, V]) add(k K, v V) V {
	sh := &sm.shards[sm.shard(k)%cacheShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if old, ok := sh.m[k]; ok {
		return old
	}
	sh.m[k] = v
	return v
}

// deleteIf removes the entries for which old reports true.
func (sm *shardedMap[K, V]) deleteIf(old func(V) bool) {
	for i := range sm.shards {
		sh := &sm.shards[i]
		sh.mu.Lock()
		for k, v := range sh.m {
			if old(v) {
				delete(sh.m, k)
			}
		}
		sh.mu.Unlock()
	}
}

func (c *fastCache) stream(k streamKey) *stream {
	s, _ := c.streams.get(k)
	return s
}

// addStream adds s under k unless another request did first, and
// returns the one kept.
func (c *fastCache) addStream(k streamKey, s *stream) *stream { return c.streams.add(k, s) }

func (c *fastCache) family(k uint64) *family {
	f, _ := c.families.get(k)
	return f
}

func (c *fastCache) resource(k uint64) *resourceInfo {
	r, _ := c.resources.get(k)
	return r
}

func (c *fastCache) addFamily(k uint64, f *family)         { c.families.add(k, f) }
func (c *fastCache) addResource(k uint64, r *resourceInfo) { c.resources.add(k, r) }

// checked reports whether key was found to decode, noting it seen now.
func (c *fastCache) checked(key uint64, now int64) bool {
	seen, ok := c.decodes.get(key)
	if ok && seen.Load() != now {
		seen.Store(now)
	}
	return ok
}

func (c *fastCache) check(key uint64, now int64) {
	seen := &atomic.Int64{}
	seen.Store(now)
	c.decodes.add(key, seen)
}

// sweep forgets, at most once a minute, what was not seen for streamTTL.
func (c *fastCache) sweep(now int64) {
	last := c.swept.Load()
	if now-last < 60 || !c.swept.CompareAndSwap(last, now) {
		return
	}
	old := now - int64(streamTTL/time.Second)
	c.streams.deleteIf(func(s *stream) bool { return s.seen.Load() < old })
	c.families.deleteIf(func(f *family) bool { return f.seen.Load() < old })
	c.resources.deleteIf(func(r *resourceInfo) bool { return r.seen.Load() < old })
	c.decodes.deleteIf(func(seen *atomic.Int64) bool { return seen.Load() < old })
}
