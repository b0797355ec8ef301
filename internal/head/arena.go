package head

import (
	"cmp"
	"slices"
	"sync"
	"unsafe"
)

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
// A closed chunk's bytes never change. The arena counts the live chunks of
// each block: release, called when the head drops a chunk once no reader
// can hold it (see readers), counts it down, and a block whose count
// reaches zero and that no longer takes new chunks is returned to the
// system at once. Chunks are dropped oldest first, and a block holds
// chunks closed at about the same time, so blocks empty out whole.
//
// All fields are guarded by mu.
type chunkArena struct {
	mu sync.Mutex
	// cur is the block new chunks are copied into, the last of blocks.
	cur *arenaBlock
	// blocks are the blocks with live chunks (and cur), by address.
	blocks []*arenaBlock
	// mapped is the bytes of blocks taken from the system and not freed.
	mapped int64
	// chunks counts the chunks copied and not released, large ones too.
	chunks int64
}

type arenaBlock struct {
	mem  []byte // len is how far it is filled
	base uintptr
	live int // chunks copied in and not released
}

// copy returns a copy of b in arena memory, with capacity equal to its
// length so that appending to it cannot overwrite a neighbour.
func (a *chunkArena) copy(b []byte) []byte {
	a.mu.Lock()
	a.chunks++
	if len(b) > chunkArenaBlock/8 || len(b) == 0 {
		a.mu.Unlock()
		// A rare, unusually large chunk: do not let it waste the rest
		// of a block. The collector owns it; release only counts it.
		return append([]byte(nil), b...)
	}
	if a.cur == nil || cap(a.cur.mem)-len(a.cur.mem) < len(b) {
		a.newBlock()
	}
	blk := a.cur
	start := len(blk.mem)
	blk.mem = append(blk.mem, b...)
	blk.live++
	out := blk.mem[start:len(blk.mem):len(blk.mem)]
	a.mu.Unlock()
	return out
}

// newBlock maps a new current block. The previous one, if all its chunks
// were released already, becomes empty. mu must be held.
func (a *chunkArena) newBlock() {
	mem := mapBlock(chunkArenaBlock)
	blk := &arenaBlock{mem: mem, base: uintptr(unsafe.Pointer(unsafe.SliceData(mem)))}
	i, _ := slices.BinarySearchFunc(a.blocks, blk.base, func(b *arenaBlock, base uintptr) int {
		return cmp.Compare(b.base, base)
	})
	a.blocks = slices.Insert(a.blocks, i, blk)
	a.mapped += int64(cap(mem))
	if old := a.cur; old != nil && old.live == 0 {
		a.unmap(old)
	}
	a.cur = blk
}

// release counts down the live chunks of the block holding data, a slice
// copy returned, and returns to the system a block that is left empty and
// takes no new chunks, returning the bytes freed. Nobody may read data
// any more.
func (a *chunkArena) release(data []byte) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.chunks--
	if len(data) == 0 {
		return 0
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	i, found := slices.BinarySearchFunc(a.blocks, p, func(b *arenaBlock, p uintptr) int {
		return cmp.Compare(b.base, p)
	})
	if !found {
		i--
	}
	if i < 0 {
		return 0
	}
	blk := a.blocks[i]
	if p >= blk.base+uintptr(cap(blk.mem)) {
		return 0 // not arena memory: a large chunk on the Go heap
	}
	blk.live--
	if blk.live > 0 || blk == a.cur {
		return 0
	}
	return a.unmap(blk)
}

// unmap returns blk to the system and returns its size. mu must be held.
func (a *chunkArena) unmap(blk *arenaBlock) int64 {
	if i := slices.Index(a.blocks, blk); i >= 0 {
		a.blocks = slices.Delete(a.blocks, i, i+1)
	}
	unmapBlock(blk.mem)
	n := int64(cap(blk.mem))
	a.mapped -= n
	return n
}

// mappedBytes returns the bytes of the blocks the arena holds.
func (a *chunkArena) mappedBytes() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mapped
}

// liveChunks returns the number of chunks copied and not released.
func (a *chunkArena) liveChunks() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.chunks
}
