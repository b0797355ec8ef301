package storeapi

import (
	"hash/crc32"
	"testing"

	"github.com/strata-db/strata/internal/chunkenc"
)

// entry is a cache entry of the stored chunk "abcd" with pieces of 10
// bytes each.
func entry(key uint64, pieces int) *cacheEntry {
	e := &cacheEntry{key: key, sum: crc32.Checksum([]byte("abcd"), castagnoli), length: 4, enc: chunkenc.EncXOR}
	for i := range pieces {
		e.data = append(e.data, make([]byte, 10)...)
		e.pieces = append(e.pieces, piece{mint: int64(i), maxt: int64(i), end: uint32(len(e.data))})
	}
	return e
}

var abcd = chunkenc.Meta{Data: []byte("abcd"), Enc: chunkenc.EncXOR}

func get(c *Cache, key uint64, m chunkenc.Meta) (*cacheEntry, bool) {
	return c.get(key, crc32.Checksum(m.Data, castagnoli), m)
}

// A hit needs the stored chunk's length, encoding and checksum, not only
// its key: two chunks whose hashes collide are told apart.
func TestCacheConfirmsChunk(t *testing.T) {
	c := NewCache(1<<20, nil, nil)
	c.put(entry(1, 1))
	for _, m := range []chunkenc.Meta{
		{Data: []byte("abce"), Enc: chunkenc.EncXOR},
		{Data: []byte("abc"), Enc: chunkenc.EncXOR},
		{Data: []byte("abcd"), Enc: chunkenc.EncDecimal},
	} {
		if _, ok := get(c, 1, m); ok {
			t.Errorf("%q, encoding %v: a hit on another chunk's entry", m.Data, m.Enc)
		}
	}
	if e, ok := get(c, 1, abcd); !ok || len(e.pieces) != 1 {
		t.Fatalf("the same chunk: hit %v, entry %+v", ok, e)
	}
}

// The cache holds at most its limit, dropping the least recently used
// entries first; an entry over the limit alone is not kept.
func TestCacheEvicts(t *testing.T) {
	one := entry(0, 2).size()
	c := NewCache(3*one, nil, nil)
	for k := range uint64(3) {
		c.put(entry(k, 2))
	}
	if c.Size() != 3*one {
		t.Fatalf("size %d, want %d", c.Size(), 3*one)
	}
	if _, ok := get(c, 0, abcd); !ok {
		t.Fatal("entry 0 missing")
	}
	c.put(entry(3, 2)) // drops 1, used least recently
	for k, want := range []bool{true, false, true, true} {
		if _, ok := get(c, uint64(k), abcd); ok != want {
			t.Errorf("entry %d: held %v, want %v", k, ok, want)
		}
	}
	if c.Size() > 3*one {
		t.Fatalf("size %d over the limit %d", c.Size(), 3*one)
	}
	c.put(entry(4, 1000))
	if _, ok := get(c, 4, abcd); ok || c.Size() > 3*one {
		t.Fatalf("an entry over the limit was kept: size %d", c.Size())
	}
	// Putting a key again replaces its entry rather than counting it
	// twice.
	size := c.Size()
	c.put(entry(3, 2))
	if c.Size() != size {
		t.Fatalf("size %d after putting entry 3 again, want %d", c.Size(), size)
	}
}

func TestPieceSpan(t *testing.T) {
	meta := func(n int, mint, maxt int64) chunkenc.Meta {
		return chunkenc.Meta{Data: []byte{byte(n >> 8), byte(n)}, MinT: mint, MaxT: maxt}
	}
	const minute = 60_000
	for _, tc := range []struct {
		m    chunkenc.Meta
		want int64
	}{
		{meta(480, 0, 479*15_000), 10 * minute}, // two hours at 15 s: 40 samples in 10 minutes
		{meta(120, 0, 119*15_000), 10 * minute},
		{meta(240, 0, 239*30_000), 15 * minute}, // 30 in 15 minutes at 30 s
		{meta(120, 0, 119*60_000), 30 * minute},
		{meta(480, 0, 479*1_000), 5 * minute}, // 300 in 5 minutes at 1 s
		{meta(10, 0, 9*10*minute), 120 * minute},
		{meta(1, 5, 5), 0},
		{meta(3, 5, 5), 0},
		{chunkenc.Meta{Data: []byte{1}, MinT: 0, MaxT: minute}, 0},
	} {
		if got := pieceSpan(tc.m); got != tc.want {
			t.Errorf("%d samples in [%d, %d]: span %d, want %d", tc.m.NumSamples(), tc.m.MinT, tc.m.MaxT, got, tc.want)
		}
	}
}
