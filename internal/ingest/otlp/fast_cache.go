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
// hands out another (after the series was dropped from the head).
type stream struct {
	lset labels.Labels
	ref  atomic.Uint64
	seen atomic.Int64 // unix seconds
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

// fastCache holds what the fast path has learnt, shared by the requests.
// Streams are many and new ones come in bursts: they are in sharded
// maps. Metrics, resources and the scopes and metrics found to decode
// (see checkOnce) are few and read once per metric of a request, by
// every request at once: they are in sync.Maps, read without a lock.
type fastCache struct {
	shards    [cacheShards]cacheShard
	families  sync.Map     // uint64 -> *family
	resources sync.Map     // uint64 -> *resourceInfo
	decodes   sync.Map     // uint64 -> *atomic.Int64, when last seen
	swept     atomic.Int64 // unix seconds of the last sweep
}

type cacheShard struct {
	mu      sync.RWMutex
	streams map[streamKey]*stream
	_       [32]byte // keep neighbouring locks on separate cache lines
}

func newFastCache() *fastCache {
	c := &fastCache{}
	for i := range c.shards {
		c.shards[i].streams = map[streamKey]*stream{}
	}
	c.swept.Store(time.Now().Unix())
	return c
}

func (c *fastCache) stream(k streamKey) *stream {
	sh := &c.shards[k.attrs%cacheShards]
	sh.mu.RLock()
	s := sh.streams[k]
	sh.mu.RUnlock()
	return s
}

// addStream adds s under k unless another request did first, and
// returns the one kept.
func (c *fastCache) addStream(k streamKey, s *stream) *stream {
	sh := &c.shards[k.attrs%cacheShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if old, ok := sh.streams[k]; ok {
		return old
	}
	sh.streams[k] = s
	return s
}

func (c *fastCache) family(k uint64) *family {
	if f, ok := c.families.Load(k); ok {
		return f.(*family)
	}
	return nil
}

func (c *fastCache) resource(k uint64) *resourceInfo {
	if r, ok := c.resources.Load(k); ok {
		return r.(*resourceInfo)
	}
	return nil
}

func (c *fastCache) addFamily(k uint64, f *family)         { c.families.Store(k, f) }
func (c *fastCache) addResource(k uint64, r *resourceInfo) { c.resources.Store(k, r) }

// checked reports whether key was found to decode, noting it seen now.
func (c *fastCache) checked(key uint64, now int64) bool {
	v, ok := c.decodes.Load(key)
	if ok {
		if seen := v.(*atomic.Int64); seen.Load() != now {
			seen.Store(now)
		}
	}
	return ok
}

func (c *fastCache) check(key uint64, now int64) {
	seen := &atomic.Int64{}
	seen.Store(now)
	c.decodes.Store(key, seen)
}

// sweep forgets, at most once a minute, what was not seen for streamTTL.
func (c *fastCache) sweep(now int64) {
	last := c.swept.Load()
	if now-last < 60 || !c.swept.CompareAndSwap(last, now) {
		return
	}
	old := now - int64(streamTTL/time.Second)
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for k, s := range sh.streams {
			if s.seen.Load() < old {
				delete(sh.streams, k)
			}
		}
		sh.mu.Unlock()
	}
	c.families.Range(func(k, v any) bool {
		if v.(*family).seen.Load() < old {
			c.families.Delete(k)
		}
		return true
	})
	c.resources.Range(func(k, v any) bool {
		if v.(*resourceInfo).seen.Load() < old {
			c.resources.Delete(k)
		}
		return true
	})
	c.decodes.Range(func(k, v any) bool {
		if v.(*atomic.Int64).Load() < old {
			c.decodes.Delete(k)
		}
		return true
	})
}
