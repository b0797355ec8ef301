package head

import "sync"

// chunkArenaBlock is the size of the blocks closed chunks are copied into.
// A closed XOR chunk of 120 samples takes 150-900 bytes, so a 1 MiB block
// holds over a thousand of them: cutting a chunk then costs an allocation
// once per thousand chunks instead of every time, which profiles of the
// append and replay paths showed as their main remaining allocation.
const chunkArenaBlock = 1 << 20

// chunkArena hands out the memory of closed chunks.
//
// Blocks come from the operating system (mapBlock), not from the Go heap:
// closed chunks are most of the head's memory, and on the heap they were
// scanned by every collection and, with the collector's default headroom,
// made the process peak at about twice their size. Off the heap they
// count once. Pointers into a block are ordinary slices; the collector
// ignores them. If the system refuses a block, the arena falls back to
// the Go heap, which is only slower to collect.
//
// A closed chunk's bytes never change and, while the head cannot drop old
// chunks, live as long as the process: blocks are never returned, not
// even by Head.Close, because a query still running at shutdown may hold
// slices of them. When chunks can be dropped, a block is freed only once
// all chunks in it are dropped and no reader can hold them; chunks are
// dropped oldest first, and a block holds chunks closed at about the same
// time.
type chunkArena struct {
	mu    sync.Mutex
	block []byte
}

// copy returns a copy of b in arena memory, with capacity equal to its
// length so that appending to it cannot overwrite a neighbour.
func (a *chunkArena) copy(b []byte) []byte {
	if len(b) > chunkArenaBlock/8 {
		// A rare, unusually large chunk: do not let it waste the rest
		// of a block.
		return append([]byte(nil), b...)
	}
	a.mu.Lock()
	if cap(a.block)-len(a.block) < len(b) {
		a.block = mapBlock(chunkArenaBlock)
	}
	start := len(a.block)
	a.block = append(a.block, b...)
	out := a.block[start:len(a.block):len(a.block)]
	a.mu.Unlock()
	return out
}
