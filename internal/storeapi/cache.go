package storeapi

import (
	"hash/crc32"
	"math"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/storage"
	"github.com/thanos-io/thanos/pkg/store/storepb"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/lru"
)

// Cache keeps stored chunks encoded into Prometheus' chunks, up to a
// number of bytes, the least recently used going first, for a store
// whose chunks do not change once written: the blocks of a bucket. A
// Series request then sends, for each stored chunk its range touches,
// the encoded chunks of its samples that overlap the range, whole, as
// Thanos' store gateway sends the chunks it stores; only a chunk's first
// request pays for decoding and encoding it, all of it.
//
// A stored chunk is looked up by its bytes: a 64-bit hash of them finds
// the entry, and their length, encoding and CRC-32C confirm it, so that a
// chunk is answered from another's entry only if both its hashes collide
// with it at the same length (of the order of n²/2⁹⁷ for n chunks of a
// length: 10⁻¹⁷ for a million). So the cache needs to know nothing of
// blocks or series, and a chunk repeated in two blocks (a block and its
// merge's source) is kept once.
type Cache struct {
	hits, misses prometheus.Counter
	entries      *lru.Cache[uint64, *cacheEntry]
}

// cacheEntry is a stored chunk, told by its key, sum, length and
// encoding, with its samples as Prometheus' chunks, oldest first, their
// bytes one after another in data. An entry does not change once made.
type cacheEntry struct {
	key    uint64
	sum    uint32
	length int
	enc    chunkenc.Encoding
	data   []byte
	pieces []piece
}

// piece is one of an entry's encoded chunks: its samples' time range,
// its encoding in the protocol's numbers, and the end of its bytes in
// the entry's data (they begin where the previous piece's end).
type piece struct {
	mint, maxt int64
	end        uint32
	typ        storepb.Chunk_Encoding
}

// entryOverhead is what an entry costs beyond its data and pieces: the
// entry, its list element and map slot.
const entryOverhead = 160

func (e *cacheEntry) size() int64 {
	return int64(entryOverhead + len(e.data) + len(e.pieces)*int(unsafe.Sizeof(piece{})))
}

func (e *cacheEntry) is(m chunkenc.Meta, sum uint32) bool {
	return e.enc == m.Enc && e.length == len(m.Data) && e.sum == sum
}

// NewCache returns a cache of at most limit bytes, counting its lookups
// in hits and misses (either may be nil).
func NewCache(limit int64, hits, misses prometheus.Counter) *Cache {
	return &Cache{hits: hits, misses: misses, entries: lru.New[uint64](limit, (*cacheEntry).size)}
}

// Size returns the bytes the cache holds.
func (c *Cache) Size() int64 { return c.entries.Size() }

func (c *Cache) get(key uint64, sum uint32, m chunkenc.Meta) (*cacheEntry, bool) {
	if e, ok := c.entries.Get(key); ok && e.is(m, sum) {
		count(c.hits)
		return e, true
	}
	count(c.misses)
	return nil, false
}

// put adds e in place of any entry of its key, unless e alone is over
// the cache's limit.
func (c *Cache) put(e *cacheEntry) { c.entries.Add(e.key, e) }

func count(c prometheus.Counter) {
	if c != nil {
		c.Inc()
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendCached appends the chunks of s that overlap [s.MinT, s.MaxT] to
// dst, each stored chunk's from the set's cache, encoded whole on a
// miss. ok is false, and dst unchanged, if the set has no cache or s is
// not a series of stored chunks (a *chunkenc.Series, of one block or of
// blocks that follow one another): its chunks are then encoded from its
// samples (encodedSeries.Iterator). Each stored chunk is encoded alone,
// its histograms' counter-reset hints as it stores them, as Thanos' store
// gateway sends a block's chunks as they are.
//
// The chunks appended point to their Raws appended to raws, which grows
// into a new array when full rather than moving the Raws already sent
// for: the caller empties it once the series it holds are sent.
func (s encodedSeries) appendCached(dst []storepb.AggrChunk, raws []storepb.Chunk) (_ []storepb.AggrChunk, _ []storepb.Chunk, ok bool, err error) {
	cs, ok := unwrap(s.Series).(*chunkenc.Series)
	if s.set.cache == nil || !ok {
		return dst, raws, false, nil
	}
	set := s.set
	set.entries = set.entries[:0]
	n := 0
	for _, m := range cs.Chunks {
		if m.MaxT < cs.MinT || m.MinT > cs.MaxT {
			continue
		}
		key, sum := xxhash.Sum64(m.Data), crc32.Checksum(m.Data, castagnoli)
		e, hit := set.cache.get(key, sum, m)
		if !hit {
			if e, err = set.encodeStored(key, sum, m); err != nil {
				return dst, raws, true, err
			}
			set.cache.put(e)
		}
		set.entries = append(set.entries, e)
		n += len(e.pieces)
	}
	if cap(raws)-len(raws) < n {
		raws = make([]storepb.Chunk, 0, max(2*cap(raws), n, 64))
	}
	for _, e := range set.entries {
		start := uint32(0)
		for _, p := range e.pieces {
			if p.maxt >= cs.MinT && p.mint <= cs.MaxT {
				raws = append(raws, storepb.Chunk{Type: p.typ, Data: e.data[start:p.end:p.end]})
				dst = append(dst, storepb.AggrChunk{MinTime: p.mint, MaxTime: p.maxt, Raw: &raws[len(raws)-1]})
			}
			start = p.end
		}
	}
	return dst, raws, true, nil
}

// encodeStored encodes all the samples of the stored chunk m into
// Prometheus' chunks, as encode cuts them, copied into one cache entry.
func (c *chunkSet) encodeStored(key uint64, sum uint32, m chunkenc.Meta) (*cacheEntry, error) {
	c.one = chunkenc.Series{Chunks: append(c.one.Chunks[:0], m), MinT: math.MinInt64, MaxT: math.MaxInt64}
	chks, err := c.encode(&c.one, pieceSpan(m))
	if err != nil {
		return nil, err
	}
	n := 0
	for _, chk := range chks {
		n += len(chk.Chunk.Bytes())
	}
	e := &cacheEntry{key: key, sum: sum, length: len(m.Data), enc: m.Enc, data: make([]byte, 0, n), pieces: make([]piece, len(chks))}
	for i, chk := range chks {
		e.data = append(e.data, chk.Chunk.Bytes()...)
		// Prometheus' encodings are one more than the protocol's.
		e.pieces[i] = piece{mint: chk.MinTime, maxt: chk.MaxTime, end: uint32(len(e.data)), typ: storepb.Chunk_Encoding(chk.Chunk.Encoding() - 1)}
	}
	return e, nil
}

// unwrap returns the series s wraps, as far as its wrappers say (an
// Unwrap method, as the bucket store's series with their external
// labels have).
func unwrap(s storage.Series) storage.Series {
	for {
		u, ok := s.(interface{ Unwrap() storage.Series })
		if !ok {
			return s
		}
		s = u.Unwrap()
	}
}

// pieceSamples is the fewest samples a piece of a stored chunk is cut
// to hold, on average, by the spans of pieceSpans. A stored chunk of a
// compacted block holds up to two hours, 480 samples at 15 s, where a
// query's window is mostly a rate's five minutes: sent whole, each such
// window would cost the Querier the decoding of 480 samples for 20. Cut
// at spans of 30 samples, a window decodes one or two pieces, and the
// bytes on the wire match those of Thanos' store gateway, which sends
// Prometheus' own chunks of 120: measured over the benchmark's bucket,
// pieces of up to 120 samples not aligned to time sent 1.8 times the
// bytes of a 5 minute rate and took the Querier longer to merge, pieces
// of 30 as many bytes as Thanos and a quarter less time.
const pieceSamples = 30

// pieceSpans are the spans a stored chunk's pieces may be cut at,
// aligned to the epoch, so that the pieces of one series' chunks and of
// series scraped together line up.
var pieceSpans = [...]int64{5 * 60_000, 10 * 60_000, 15 * 60_000, 30 * 60_000, 60 * 60_000, 120 * 60_000}

// pieceSpan returns the shortest of pieceSpans in which the stored chunk
// m holds pieceSamples samples at its average interval, or 0 for a chunk
// of fewer than two samples or one instant: it is sent as one piece.
func pieceSpan(m chunkenc.Meta) int64 {
	n := int64(m.NumSamples())
	if n < 2 || m.MaxT <= m.MinT {
		return 0
	}
	for _, s := range pieceSpans {
		if s*(n-1) >= pieceSamples*(m.MaxT-m.MinT) {
			return s
		}
	}
	return pieceSpans[len(pieceSpans)-1]
}

// floorDiv is t/r rounded down, so that a span holding times before the
// epoch is numbered as the others are.
func floorDiv(t, r int64) int64 {
	q := t / r
	if t%r < 0 {
		q--
	}
	return q
}
