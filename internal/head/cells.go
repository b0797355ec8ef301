package head

import (
	"encoding/binary"
	"slices"
	"sync"
	"unsafe"
)

// cellPool hands out small pieces of memory, cells, that the head frees
// itself, from spans taken from the system outside the Go heap
// (mapBlock; under the race detector from the heap, see spanMemory):
// the series themselves and their open chunks' memory (chunkArena.cells),
// and their label ids (symbolTable.cells).
//
// That memory lives as long as its series. On the Go heap it counted
// more than once: the collector lets the heap grow by GOGC's share of
// what is live before it collects, and the runtime keeps about a tenth
// more than that in pages it does not return. At a million series the
// process' anonymous memory was 1.26 times the live heap, of which the
// series were 109 MB of 242, their open chunks 52 and their label ids
// 16.5. Off the heap they count once, and the collector does not mark
// them.
//
// Cells are multiples of cellAlign bytes; those of one size share spans
// of cellSpanSize bytes, handed out in address order and then from a
// list of freed cells kept in the cells themselves. A span whose cells
// are all free again is returned to the system, unless it is the last
// of its size with room. A cell larger than maxCell has a span of its
// own.
//
// A cell is an ordinary slice, which the collector ignores: whoever
// frees it must know that nobody reads it any more. All fields are
// guarded by mu.
type cellPool struct {
	mu sync.Mutex
	// partial are the spans of each size with a free cell, by size /
	// cellAlign - 1.
	partial [maxCell / cellAlign][]*cellSpan
	// spans are all spans, by address.
	spans []*cellSpan
	// mapped is the bytes of spans taken from the system and not freed;
	// live counts the cells handed out and not freed.
	mapped int64
	live   int
}

const (
	// cellAlign is what cell sizes are multiples of: a cell holds
	// whole words, and sizes in between cost a fraction of a word.
	cellAlign = 8
	// cellSpanSize is the memory a span of cells of one size takes
	// from the system: some three thousand spans at a million series.
	cellSpanSize = 64 << 10
	// maxCell is the largest cell that shares a span: the open chunk
	// of a series whose samples take 20 bytes each, before it spills.
	maxCell = 4 << 10
)

// cellSpan is memory cut into cells of one size.
type cellSpan struct {
	mem  []byte // len is cap
	base uintptr
	size int // of its cells
	used int // cells handed out and not freed
	// next is the offset of the first cell never handed out: those from
	// next on are zero.
	next int
	// free is one more than the offset of a freed cell, 0 if there is
	// none: the first 4 bytes of each freed cell hold the same for the
	// next.
	free uint32
	// partial is whether the span is in its size's partial list.
	partial bool
	// held are the heap objects the cells point to, by cell (see hold),
	// nil until one does.
	held []any
}

// alloc returns a zeroed cell of n bytes, n > 0, with capacity n.
func (p *cellPool) alloc(n int) []byte {
	size := (n + cellAlign - 1) &^ (cellAlign - 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live++
	if size > maxCell {
		sp := p.newSpan(size, size)
		sp.used, sp.next = 1, size
		return sp.mem[:n:n]
	}
	class := &p.partial[size/cellAlign-1]
	if len(*class) == 0 {
		sp := p.newSpan(size, cellSpanSize)
		sp.partial = true
		*class = append(*class, sp)
	}
	sp := (*class)[len(*class)-1]
	var off int
	if sp.free != 0 {
		off = int(sp.free - 1)
		sp.free = binary.LittleEndian.Uint32(sp.mem[off:])
	} else {
		off = sp.next
		sp.next += size
	}
	sp.used++
	if sp.free == 0 && sp.next+size > len(sp.mem) {
		*class = (*class)[:len(*class)-1]
		sp.partial = false
	}
	cell := sp.mem[off : off+n : off+n]
	clear(cell)
	return cell
}

// newSpan takes a span of cells of size bytes, mem bytes in all, from
// the system. mu must be held.
func (p *cellPool) newSpan(size, mem int) *cellSpan {
	b := spanMemory(mem)[:mem]
	sp := &cellSpan{mem: b, base: uintptr(unsafe.Pointer(unsafe.SliceData(b))), size: size}
	p.spans = insertRegion(p.spans, sp)
	p.mapped += int64(mem)
	return sp
}

func (sp *cellSpan) bounds() (uintptr, int) { return sp.base, len(sp.mem) }

// hold keeps v, a heap object the cell at c points to, alive until the
// cell is freed: the collector does not read cells. Memory that is not a
// cell, on the Go heap or a stack, is read by the collector: hold does
// nothing for it.
func (p *cellPool) hold(c unsafe.Pointer, v any) {
	addr := uintptr(c)
	p.mu.Lock()
	defer p.mu.Unlock()
	i := regionOf(p.spans, addr)
	if i < 0 {
		return
	}
	sp := p.spans[i]
	if sp.held == nil {
		sp.held = make([]any, len(sp.mem)/sp.size)
	}
	sp.held[int(addr-sp.base)/sp.size] = v
}

// free returns the cell starting at c, which alloc returned, to the pool.
// Nobody may read it after.
func (p *cellPool) free(c *byte) {
	addr := uintptr(unsafe.Pointer(c))
	p.mu.Lock()
	defer p.mu.Unlock()
	i := regionOf(p.spans, addr)
	if i < 0 {
		panic("head: freeing memory that is not a cell")
	}
	sp := p.spans[i]
	off := int(addr - sp.base)
	if off%sp.size != 0 || off >= sp.next {
		panic("head: freeing memory that is not a cell")
	}
	if sp.held != nil {
		sp.held[off/sp.size] = nil
	}
	sp.used--
	p.live--
	if sp.size > maxCell || (sp.used == 0 && p.spare(sp)) {
		p.spans = slices.Delete(p.spans, i, i+1)
		p.mapped -= int64(len(sp.mem))
		unmapBlock(sp.mem)
		return
	}
	binary.LittleEndian.PutUint32(sp.mem[off:], sp.free)
	sp.free = uint32(off + 1)
	if !sp.partial {
		class := &p.partial[sp.size/cellAlign-1]
		*class = append(*class, sp)
		sp.partial = true
	}
}

// spare reports whether the empty span sp may be returned to the system,
// and if so takes it out of its size's partial list: it may unless it is
// the only span of its size with room. mu must be held.
func (p *cellPool) spare(sp *cellSpan) bool {
	class := &p.partial[sp.size/cellAlign-1]
	if !sp.partial {
		return len(*class) > 0
	}
	if len(*class) == 1 {
		return false
	}
	*class = slices.DeleteFunc(*class, func(s *cellSpan) bool { return s == sp })
	return true
}

// bytes returns the bytes of the spans the pool holds, and how many
// cells it has handed out and not had back.
func (p *cellPool) bytes() (mapped int64, cells int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mapped, p.live
}

// close returns every span to the system. Nobody may read a cell after.
func (p *cellPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, sp := range p.spans {
		unmapBlock(sp.mem)
	}
	p.partial, p.spans, p.mapped, p.live = [maxCell / cellAlign][]*cellSpan{}, nil, 0, 0
}
