package storeapi

import (
	"testing"

	"github.com/thanos-io/thanos/pkg/store/storepb"

	"github.com/strata-db/strata/internal/chunkenc"
)

func entry(key uint64, stored string, encoded int) *cacheEntry {
	e := &cacheEntry{key: key, enc: chunkenc.EncXOR, stored: []byte(stored)}
	for range encoded {
		e.encoded = append(e.encoded, storepb.AggrChunk{Raw: &storepb.Chunk{Data: make([]byte, 10)}})
	}
	return e
}

// A hit needs the stored chunk's bytes and encoding, not only its key:
// two chunks whose hashes collide are told apart.
func TestCacheConfirmsBytes(t *testing.T) {
	c := NewCache(1<<20, nil, nil)
	c.put(entry(1, "abcd", 1))
	for _, m := range []chunkenc.Meta{
		{Data: []byte("abce"), Enc: chunkenc.EncXOR},
		{Data: []byte("abc"), Enc: chunkenc.EncXOR},
		{Data: []byte("abcd"), Enc: chunkenc.EncDecimal},
	} {
		if _, ok := c.get(1, m); ok {
			t.Errorf("%q, encoding %v: a hit on another chunk's entry", m.Data, m.Enc)
		}
	}
	if got, ok := c.get(1, chunkenc.Meta{Data: []byte("abcd"), Enc: chunkenc.EncXOR}); !ok || len(got) != 1 {
		t.Fatalf("the same chunk: %d chunks, hit %v", len(got), ok)
	}
}

// The cache holds at most its limit, dropping the least recently used
// entries first; an entry over the limit alone is not kept.
func TestCacheEvicts(t *testing.T) {
	one := entry(0, "abcd", 2).size()
	c := NewCache(3*one, nil, nil)
	for k := range uint64(3) {
		c.put(entry(k, "abcd", 2))
	}
	if c.Size() != 3*one {
		t.Fatalf("size %d, want %d", c.Size(), 3*one)
	}
	meta := chunkenc.Meta{Data: []byte("abcd"), Enc: chunkenc.EncXOR}
	if _, ok := c.get(0, meta); !ok {
		t.Fatal("entry 0 missing")
	}
	c.put(entry(3, "abcd", 2)) // drops 1, used least recently
	for k, want := range []bool{true, false, true, true} {
		if _, ok := c.get(uint64(k), meta); ok != want {
			t.Errorf("entry %d: held %v, want %v", k, ok, want)
		}
	}
	if c.Size() > 3*one {
		t.Fatalf("size %d over the limit %d", c.Size(), 3*one)
	}
	c.put(entry(4, "abcd", 1000))
	if _, ok := c.get(4, meta); ok || c.Size() > 3*one {
		t.Fatalf("an entry over the limit was kept: size %d", c.Size())
	}
	// Putting a key again replaces its entry rather than counting it
	// twice.
	size := c.Size()
	c.put(entry(3, "abcd", 2))
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
