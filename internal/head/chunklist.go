package head

import (
	"math"
	"slices"

	"github.com/strata-db/strata/internal/chunkenc"
)

// listSlabSize is the number of chunk-list entries a listSlab allocates at
// once: 16384 entries of 48 bytes are 768 KiB, so replaying a head of a
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
	free []chunkenc.Meta // the unused rest of the current block
}

// appendChunk appends c to list, growing it out of the slab when full.
func (ls *listSlab) appendChunk(list []chunkenc.Meta, c chunkenc.Meta) []chunkenc.Meta {
	if len(list) == cap(list) {
		n := max(2*cap(list), 2)
		if n > listSlabSize/4 {
			// A series with thousands of chunks: rare enough for append.
			return append(list, c)
		}
		if len(ls.free) < n {
			ls.free = make([]chunkenc.Meta, listSlabSize)
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
	for i := range h.series.byRef {
		for _, s := range h.series.byRef[i] {
			s.mu.Lock()
			if len(s.chunks) < cap(s.chunks) {
				s.chunks = slices.Clone(s.chunks)
			}
			if s.maxt != math.MinInt64 {
				h.widenTimes(s.mint(), s.maxt)
			}
			s.mu.Unlock()
		}
	}
}
