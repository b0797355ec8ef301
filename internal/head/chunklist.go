package head

import (
	"math"
	"slices"
	"unsafe"

	"github.com/strata-db/strata/internal/chunkenc"
)

// headChunk is a closed chunk in a series' list: 24 bytes where a
// chunkenc.Meta takes 48. A head holds a few per series (a chunk of 240
// samples every hour at a 15 s interval, for up to three hours), and at
// 48 bytes the lists were an eighth of the head's memory.
//
// The chunk's bytes are in the arena (or, for a large one, on the heap):
// data points at the first of them. span is maxt-mint; append cuts a chunk
// before it spans more than maxChunkSpan. sizeEnc is the chunk's length in
// its low sizeBits bits and its encoding in the three above.
type headChunk struct {
	data    *byte
	mint    int64
	span    uint32
	sizeEnc uint32
}

// sizeBits is the width of a headChunk's size: 512 MiB, far above any
// chunk. A chunk is cut at 240 samples (an XOR chunk of 240 samples takes
// at most 4.6 KiB, of 65535 samples 1.2 MiB) or past histChunkMaxBytes,
// so the largest holds one histogram sample, whose encoding is about as
// long as it was in a request, and requests are decoded up to 128 MiB.
const sizeBits = 29

// maxChunkSpan is the longest time (ms) a head chunk may span: 49 days,
// beyond any block range, so that it only cuts the chunks of a head that
// does not cut them at block ranges.
const maxChunkSpan = math.MaxUint32

// newHeadChunk returns the entry for chunk data of encoding enc whose
// samples span [mint, maxt]; maxt-mint is at most maxChunkSpan and data
// shorter than 1<<sizeBits bytes.
func newHeadChunk(data []byte, mint, maxt int64, enc chunkenc.Encoding) headChunk {
	return headChunk{
		data:    unsafe.SliceData(data),
		mint:    mint,
		span:    uint32(maxt - mint),
		sizeEnc: uint32(len(data)) | uint32(enc)<<sizeBits,
	}
}

func (c headChunk) bytes() []byte { return unsafe.Slice(c.data, c.sizeEnc&(1<<sizeBits-1)) }
func (c headChunk) maxt() int64   { return c.mint + int64(c.span) }

func (c headChunk) encoding() chunkenc.Encoding { return chunkenc.Encoding(c.sizeEnc >> sizeBits) }

// meta returns the chunk as readers, blocks and checkpoints take it.
func (c headChunk) meta() chunkenc.Meta {
	return chunkenc.Meta{Data: c.bytes(), MinT: c.mint, MaxT: c.maxt(), Enc: c.encoding()}
}

// appendChunk appends c to a series' list of closed chunks, growing a
// full one by a quarter, or by one entry while it is short. A series
// keeps a few chunks between truncations: at a 15 s interval and
// two-hour blocks, one after a truncation and three before the next.
// Growing by two entries took room for three in the hour the list holds
// two, an allocation of 80 bytes where 48 hold them, and room for five
// (128 bytes) for the fourth: at a million series, lists took 81 MB of
// the heap after a truncation. An allocation per chunk cut costs little
// beside the cut's write of the chunk. (With chunks of 120 samples,
// append's doubling grew lists to room for twelve: 288 bytes, 168 used.)
func appendChunk(list []headChunk, c headChunk) []headChunk {
	if len(list) == cap(list) {
		grown := make([]headChunk, len(list), len(list)+max(1, len(list)/4))
		copy(grown, list)
		list = grown
	}
	return append(list, c)
}

// listSlabSize is the number of chunk-list entries a listSlab allocates at
// once: 16384 entries of 24 bytes are 384 KiB, so replaying a head of a
// million chunks allocates for its chunk lists some 60 times instead of
// several times per series.
const listSlabSize = 16384

// listSlab hands out the arrays of series' closed-chunk lists while the
// head is replayed. Growing a list with append allocates a new array each
// time it doubles, the one allocation replay still made per chunk cut
// after chunks moved to the arena. A listSlab carves the new array out of
// a large block instead; the old one is left unused in its block.
//
// That leaves up to as much unused space as the lists hold, and the lists
// would keep their blocks alive, so when replay is done compactChunkLists
// moves every list to an array of its own exact size (an allocation per
// series, not per sample) and the blocks become garbage.
//
// A listSlab is used by one goroutine: each replay worker has its own.
type listSlab struct {
	free []headChunk // the unused rest of the current block
}

// appendChunk appends c to list, growing it out of the slab when full.
func (ls *listSlab) appendChunk(list []headChunk, c headChunk) []headChunk {
	if len(list) == cap(list) {
		n := max(2*cap(list), 2)
		if n > listSlabSize/4 {
			// A series with thousands of chunks: rare enough for append.
			return append(list, c)
		}
		if len(ls.free) < n {
			ls.free = make([]headChunk, listSlabSize)
		}
		grown := ls.free[:len(list):n]
		ls.free = ls.free[n:]
		copy(grown, list)
		list = grown
	}
	return append(list, c)
}

// compactChunkLists gives every chunk list that grew in a listSlab an
// array of its own, exactly as long as the list, letting go of replay's
// slab blocks. Lists restored from a checkpoint and never grown already
// have one (their capacity is their length). It runs after replay, before
// the head takes writes.
//
// It also sets the head's time bounds from what replay restored.
func (h *Head) compactChunkLists() {
	for s := range h.series.all() {
		s.mu.Lock()
		if s.nChunks < s.chunksCap {
			s.setChunkList(slices.Clone(s.chunkList()))
		}
		if s.maxt != math.MinInt64 {
			h.widenTimes(s.mint(), s.maxt)
		}
		s.mu.Unlock()
	}
}

// spillReplayed spills the open chunks replay filled (see spillOpen),
// which replay does not do as it goes: a write per part made it a third
// slower. It runs in the background once the head takes writes, a write
// per series (a second or so at a million), which appenders may have
// spilled meanwhile, and moves the chunks' memory, grown during replay,
// back to its first allocation.
func (h *Head) spillReplayed() {
	m := &chunkMem{samples: h.opts.ChunkSamples, blockRange: h.opts.BlockRange, arena: h.arena}
	if m.samples < minSpillSamples {
		return
	}
	for s := range h.series.all() {
		s.mu.Lock()
		if s.open == chunkenc.EncXOR {
			if s.spill == nil {
				s.spillOpen(m)
			}
			s.xor.Shrink()
		}
		s.mu.Unlock()
	}
}
