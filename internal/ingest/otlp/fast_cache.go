package otlp

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/strata-db/strata/internal/slab"
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
	key  streamKey
	lset labels.Labels
	ref  atomic.Uint64
	seen atomic.Int64 // unix seconds
	sum  atomic.Pointer[sumState]
	// next is the stream whose point came after this one's the last
	// time (see predictions), gone whether the cache has forgotten it.
	next atomic.Pointer[stream]
	gone atomic.Bool
}

// family is a metric's translation: its Prometheus name and metadata.
type family struct {
	key  uint64
	opts promstorage.AOptions
	seen atomic.Int64
	// meta is shared by the families of its name and metadata.
	meta *metaSet
	// next is the metric that came after this one in its scope the
	// last time, first the stream of its first point (see predictions),
	// gone whether the cache has forgotten it.
	next  atomic.Pointer[family]
	first atomic.Pointer[stream]
	gone  atomic.Bool
}

// resourceInfo is a resource's target_info labels, empty if the
// converter makes none of it.
type resourceInfo struct {
	lset labels.Labels
	hash uint64
	seen atomic.Int64
}

// metaSet is a name and metadata that families share (a family is kept
// per resource, and a request of many resources has many families of
// one name): req is the request (fastState.id) that last set it, so that
// a request sets it once. Setting it again in a request would change
// nothing: the store's appender keeps each name and metadata of a batch
// once (see appender.setMetadata).
type metaSet struct {
	req  atomic.Uint64
	seen atomic.Int64
}

// known is a scope or a metric found to decode (see checkOnce), when it
// was last seen, and for a scope the first of its metrics on the fast
// path the last time.
type known struct {
	seen  atomic.Int64
	first atomic.Pointer[family]
}

// Predictions. Senders send the same metrics and streams in the same
// order request after request (a scrape, a Collector's batch, most SDKs;
// the Go SDK's points come in a map's order), so the metric after a
// metric, and the stream after a stream, is most often the one that
// came after it the last time. The fast path looks there first, and
// checks the key: a hit costs no hash lookup and no lock, a miss the
// lookup it would have cost and a store to note what came instead. A
// forgotten entry is never predicted (gone), and forgets its
// successors, so that a chain of forgotten entries is not kept alive.

// nextFamily returns the family predicted to come after prev (nil: the
// scope's first), if its key is key.
func nextFamily(kn *known, prev *family, key uint64) *family {
	var fam *family
	if prev == nil {
		fam = kn.first.Load()
	} else {
		fam = prev.next.Load()
	}
	if fam == nil || fam.key != key || fam.gone.Load() {
		return nil
	}
	return fam
}

// followFamily notes that fam came after prev (nil: first in the scope).
func followFamily(kn *known, prev, fam *family) {
	if prev == nil {
		if kn.first.Load() != fam {
			kn.first.Store(fam)
		}
	} else if prev.next.Load() != fam {
		prev.next.Store(fam)
	}
}

// nextStream returns the stream predicted to come after prev (nil: the
// family's first), if its key is key.
func nextStream(fam *family, prev *stream, key streamKey) *stream {
	var s *stream
	switch {
	case prev != nil:
		s = prev.next.Load()
	case fam != nil:
		s = fam.first.Load()
	}
	if s == nil || s.key != key || s.gone.Load() {
		return nil
	}
	return s
}

// followStream notes that s came after prev (nil: first in fam).
func followStream(fam *family, prev, s *stream) {
	if prev == nil {
		if fam.first.Load() != s {
			fam.first.Store(s)
		}
	} else if prev.next.Load() != s {
		prev.next.Store(s)
	}
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
	decodes   shardedMap[uint64, *known]
	metas     shardedMap[familySet, *metaSet]
	// slab allocates streams: see package slab.
	slab     slab.Slab[stream]
	swept    atomic.Int64  // unix seconds of the last sweep
	requests atomic.Uint64 // requests walked, for fastState.id
}

func newFastCache() *fastCache {
	c := &fastCache{}
	c.streams.init(func(k streamKey) uint64 { return k.attrs })
	c.families.init(func(k uint64) uint64 { return k })
	c.resources.init(func(k uint64) uint64 { return k })
	c.decodes.init(func(k uint64) uint64 { return k })
	c.metas.init(func(k familySet) uint64 { return xxhash.Sum64String(k.name) })
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

// newStream returns a new stream, next in memory to the one made before
// it (see package slab): a request names its new streams in the order the
// next ones will name them.
func (c *fastCache) newStream(key streamKey, lset labels.Labels) *stream {
	s := c.slab.New()
	s.key, s.lset = key, lset
	return s
}

func (c *fastCache) family(k uint64) *family {
	f, _ := c.families.get(k)
	return f
}

func (c *fastCache) resource(k uint64) *resourceInfo {
	r, _ := c.resources.get(k)
	return r
}

// metaSet returns the metadata entry of opts, shared by the families
// of its name and metadata.
func (c *fastCache) metaSet(opts promstorage.AOptions, now int64) *metaSet {
	m := &metaSet{}
	m.seen.Store(now)
	return c.metas.add(familySet{opts.MetricFamilyName, opts.Metadata}, m)
}

// addFamily and addResource add an entry unless another request did
// first, and return the one kept.
func (c *fastCache) addFamily(k uint64, f *family) *family { return c.families.add(k, f) }
func (c *fastCache) addResource(k uint64, r *resourceInfo) { c.resources.add(k, r) }

// checked returns what is known of key if it was found to decode,
// noting it seen now.
func (c *fastCache) checked(key uint64, now int64) *known {
	kn, _ := c.decodes.get(key)
	if kn != nil && kn.seen.Load() != now {
		kn.seen.Store(now)
	}
	return kn
}

// check notes that key was found to decode, and returns what is known
// of it.
func (c *fastCache) check(key uint64, now int64) *known {
	kn := &known{}
	kn.seen.Store(now)
	return c.decodes.add(key, kn)
}

// sweep forgets, at most once a minute, what was not seen for streamTTL.
func (c *fastCache) sweep(now int64) {
	last := c.swept.Load()
	if now-last < 60 || !c.swept.CompareAndSwap(last, now) {
		return
	}
	old := now - int64(streamTTL/time.Second)
	c.streams.deleteIf(func(s *stream) bool {
		if s.seen.Load() >= old {
			return false
		}
		s.gone.Store(true)
		s.next.Store(nil)
		return true
	})
	c.families.deleteIf(func(f *family) bool {
		if f.seen.Load() >= old {
			return false
		}
		f.gone.Store(true)
		f.next.Store(nil)
		f.first.Store(nil)
		return true
	})
	c.resources.deleteIf(func(r *resourceInfo) bool { return r.seen.Load() < old })
	c.metas.deleteIf(func(m *metaSet) bool { return m.seen.Load() < old })
	c.decodes.deleteIf(func(kn *known) bool {
		if kn.seen.Load() >= old {
			return false
		}
		kn.first.Store(nil)
		return true
	})
}
