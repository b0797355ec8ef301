package head

import "sync"

// chunkArenaBlock is the size of the blocks closed chunks are copied into.
// A closed XOR chunk of 120 samples takes 150-900 bytes, so a 1 MiB block
// holds over a thousand of them: cutting a chunk then costs an allocation
// once per thousand chunks instead of every time, which profiles of the
// append and replay paths showed as their main remaining allocation.
const chunkArenaBlock = 1 << 20

// chunkArena hands out the memory of closed chunks. A closed chunk's bytes
// never change and, while the head cannot drop old chunks, live as long as
// the head, so they need no memory of their own. When chunks can be
// dropped, a block is freed only once all chunks in it are dropped; chunks
// are dropped oldest first, and a block holds chunks closed at about the
// same time.
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
		a.block = make([]byte, 0, chunkArenaBlock)
	}
	start := len(a.block)
	a.block = append(a.block, b...)
	out := a.block[start:len(a.block):len(a.block)]
	a.mu.Unlock()
	return out
}
