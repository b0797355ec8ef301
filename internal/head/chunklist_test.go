package head

import (
	"bytes"
	"math"
	"testing"

	"github.com/strata-db/strata/internal/chunkenc"
)

// TestHeadChunk checks that a list entry gives back what it was made of,
// at the limits of its packed fields.
func TestHeadChunk(t *testing.T) {
	data := []byte{1, 2, 3, 4, 5}
	for _, tc := range []struct {
		mint, maxt int64
		enc        chunkenc.Encoding
		data       []byte
	}{
		{0, 0, chunkenc.EncXOR, data},
		{-1000, 5000, chunkenc.EncHistogram, data[:1]},
		{math.MinInt64 + 1, math.MinInt64 + 1 + maxChunkSpan, chunkenc.EncFloatHistogram, data},
		{1 << 40, 1<<40 + maxChunkSpan, chunkenc.EncXOR, nil},
	} {
		c := newHeadChunk(tc.data, tc.mint, tc.maxt, tc.enc)
		m := c.meta()
		if m.MinT != tc.mint || m.MaxT != tc.maxt || m.Enc != tc.enc || !bytes.Equal(m.Data, tc.data) {
			t.Errorf("entry of [%d, %d] %v %v reads back as [%d, %d] %v %v", tc.mint, tc.maxt, tc.enc, tc.data, m.MinT, m.MaxT, m.Enc, m.Data)
		}
		if len(tc.data) > 0 && &m.Data[0] != &tc.data[0] {
			t.Error("the entry's bytes are a copy, not the chunk's")
		}
	}
}

// TestTrailer checks that a chunk stored in the arena reads back from its
// trailer, in place and with pread, at the limits of the trailer's
// fields, and links to the one before.
func TestTrailer(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		arena, err := openArena(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		rd := &chunkCopier{arena: arena}
		var (
			prev *byte
			buf  []byte
		)
		for i, tc := range []struct {
			mint, maxt int64
			enc        chunkenc.Encoding
			data       []byte
		}{
			{0, 0, chunkenc.EncXOR, []byte{1}},
			{-1000, 5000, chunkenc.EncHistogram, bytes.Repeat([]byte{2}, 300)},
			{math.MinInt64 + 1, math.MinInt64 + 1 + maxChunkSpan, chunkenc.EncFloatHistogram, []byte{3, 4}},
			{1 << 40, 1<<40 + maxChunkSpan, chunkenc.EncDecimal, bytes.Repeat([]byte{5}, maxArenaChunk+1)},
		} {
			var p *byte
			p, buf = storeChunk(arena, buf, tc.data, tc.mint, tc.maxt, tc.enc, prev)
			c, back := chunkAt(p)
			c2, back2, err := rd.chunkAt(p)
			if err != nil {
				t.Fatal(err)
			}
			if c2 != c || back2 != back {
				t.Errorf("chunk %d: read with pread as %+v after %p, in place as %+v after %p", i, c2, back2, c, back)
			}
			m := c.meta()
			if m.MinT != tc.mint || m.MaxT != tc.maxt || m.Enc != tc.enc || !bytes.Equal(m.Data, tc.data) || back != prev {
				t.Errorf("chunk %d of [%d, %d] %v reads back as [%d, %d] %v after %p, want after %p", i, tc.mint, tc.maxt, tc.enc, m.MinT, m.MaxT, m.Enc, back, prev)
			}
			if c.trailer() != p {
				t.Errorf("chunk %d: trailer at %p, stored at %p", i, c.trailer(), p)
			}
			prev = p
		}
		arena.close()
	}
}

// TestChunkSpanCut checks that a chunk is cut before it spans more than a
// list entry can hold, for floats and histograms, with no block range to
// cut it first.
func TestChunkSpanCut(t *testing.T) {
	s := newMemSeries(1)
	m := &chunkMem{samples: 120, arena: &chunkArena{}, series: new(cellPool)}
	ts := []int64{0, maxChunkSpan, maxChunkSpan + 1, 3 * maxChunkSpan}
	for i, t0 := range ts {
		if _, err := s.applyFloat(t0, float64(i), m); err != nil {
			t.Fatal(err)
		}
	}
	h := testHistogram(1)
	for _, t0 := range []int64{4 * maxChunkSpan, 5*maxChunkSpan + 1} {
		if _, err := s.applyHistogram(t0, h, nil, m); err != nil {
			t.Fatal(err)
		}
	}
	want := [][2]int64{{0, maxChunkSpan}, {maxChunkSpan + 1, maxChunkSpan + 1}, {3 * maxChunkSpan, 3 * maxChunkSpan}, {4 * maxChunkSpan, 4 * maxChunkSpan}}
	chunks := s.closedChunks(nil)
	if len(chunks) != len(want) {
		t.Fatalf("%d closed chunks, want %d", len(chunks), len(want))
	}
	for i, c := range chunks {
		if c.mint != want[i][0] || c.maxt() != want[i][1] {
			t.Errorf("chunk %d spans [%d, %d], want %v", i, c.mint, c.maxt(), want[i])
		}
	}
	if s.headMint() != 5*maxChunkSpan+1 {
		t.Errorf("open chunk starts at %d, want %d", s.headMint(), int64(5*maxChunkSpan+1))
	}
}
