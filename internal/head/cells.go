package head

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// cellPool hands out small pieces of memory, cells, that the head frees
// itself, from spans taken from the system outside the Go heap
// (mapBlock; under the race detector from the heap, see spanMemory):
// the series themselves (stripeSeries.cells), their open chunks' memory
// (chunkArena.cells), and their label ids (symbolTable.cells).
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
	// numbered says whether the pool names its cells by number (see
	// allocNumbered). bases are then the spans' memory by span number,
	// read without mu, 0 never used; freeNumbers are the numbers of
	// spans returned to the system, for new spans to take.
	numbered    bool
	bases       atomic.Pointer[[]unsafe.Pointer]
	freeNumbers []uint32
	// parked is the memory of emptied spans of cellSpanSize kept for new
	// spans of any size (see park), counted in mapped.
	parked [][]byte
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

// A numbered pool's cell has a number that names it in 32 bits, where a
// pointer takes 64: its span's number, and its offset in the span in
// units of cellAlign in the low cellOffsetBits (a cell with a span of
// its own is at offset 0). The head's tables name the series by number,
// which took 20 MB off the heap at a million series (see stripeSeries).
// A pool has at most maxSpanNumber spans, 32 GiB: some 300 million
// series.
const (
	cellOffsetBits = 13 // cellSpanSize / cellAlign = 1<<cellOffsetBits
	maxSpanNumber  = 1<<(32-cellOffsetBits) - 1
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
	// number is the span's number in a numbered pool, else 0.
	number uint32
}

// alloc returns a zeroed cell of n bytes, n > 0, with capacity n.
func (p *cellPool) alloc(n int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, _, _ := p.take(n)
	return b
}

// errTooManySpans is allocNumbered's error once the pool has
// maxSpanNumber spans and none with room.
var errTooManySpans = fmt.Errorf("head: more than %d spans of %d KiB of cells", maxSpanNumber, cellSpanSize>>10)

// allocNumbered returns a zeroed cell of n bytes of a numbered pool, and
// its number (see cell).
func (p *cellPool) allocNumbered(n int) (unsafe.Pointer, uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, sp, off := p.take(n)
	if b == nil {
		return nil, 0, errTooManySpans
	}
	return unsafe.Pointer(unsafe.SliceData(b)), sp.number<<cellOffsetBits | uint32(off/cellAlign), nil
}

// cell returns the cell of a numbered pool with number num, which must
// not have been freed. It takes no lock: whoever got num from
// allocNumbered, or from another goroutine after it, may call it.
func (p *cellPool) cell(num uint32) unsafe.Pointer {
	return unsafe.Add((*p.bases.Load())[num>>cellOffsetBits], int(num&(1<<cellOffsetBits-1))*cellAlign)
}

// numberOf returns the number of the cell at c of a numbered pool.
func (p *cellPool) numberOf(c unsafe.Pointer) uint32 {
	addr := uintptr(c)
	p.mu.Lock()
	defer p.mu.Unlock()
	i := regionOf(p.spans, addr)
	if i < 0 {
		panic("head: numbering memory that is not a cell")
	}
	return p.spans[i].number<<cellOffsetBits | uint32(addr-p.spans[i].base)/cellAlign
}

// take hands out a zeroed cell of n bytes, returning it with its span and
// offset; nil if the pool is numbered and has maxSpanNumber spans, none
// with room. mu must be held.
func (p *cellPool) take(n int) (cell []byte, sp *cellSpan, off int) {
	size := (n + cellAlign - 1) &^ (cellAlign - 1)
	if size > maxCell {
		if sp = p.newSpan(size, size); sp == nil {
			return nil, nil, 0
		}
		p.live++
		sp.used, sp.next = 1, size
		return sp.mem[:n:n], sp, 0
	}
	class := &p.partial[size/cellAlign-1]
	if len(*class) == 0 {
		if sp = p.newSpan(size, cellSpanSize); sp == nil {
			return nil, nil, 0
		}
		sp.partial = true
		*class = append(*class, sp)
	}
	p.live++
	sp = (*class)[len(*class)-1]
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
	cell = sp.mem[off : off+n : off+n]
	clear(cell)
	return cell, sp, off
}

// newSpan takes a span of cells of size bytes, mem bytes in all, from
// the system, and numbers it in a numbered pool: nil if the pool has
// maxSpanNumber spans. mu must be held.
func (p *cellPool) newSpan(size, mem int) *cellSpan {
	var number uint32
	if p.numbered {
		if number = p.takeNumber(); number == 0 {
			return nil
		}
	}
	var b []byte
	if n := len(p.parked); n > 0 && mem == cellSpanSize {
		b, p.parked[n-1] = p.parked[n-1], nil
		p.parked = p.parked[:n-1]
		clear(b)
	} else {
		b = spanMemory(mem)[:mem]
		p.mapped += int64(mem)
	}
	base := unsafe.Pointer(unsafe.SliceData(b))
	sp := &cellSpan{mem: b, base: uintptr(base), size: size, number: number}
	p.spans = insertRegion(p.spans, sp)
	if number != 0 {
		p.setBase(number, base)
	}
	return sp
}

// takeNumber returns a span number no span has, 0 if there is none left.
// mu must be held.
func (p *cellPool) takeNumber() uint32 {
	if n := len(p.freeNumbers); n > 0 {
		number := p.freeNumbers[n-1]
		p.freeNumbers = p.freeNumbers[:n-1]
		return number
	}
	var n int
	if b := p.bases.Load(); b != nil {
		n = len(*b)
	}
	if n > maxSpanNumber {
		return 0
	}
	return uint32(max(n, 1))
}

// setBase records base as the memory of the span with number, nil when
// the span is returned. The list is lengthened into its capacity, or
// copied to grow it, and stored anew: cell, reading it without mu, finds
// every span that was in the list it loaded. mu must be held.
func (p *cellPool) setBase(number uint32, base unsafe.Pointer) {
	var b []unsafe.Pointer
	if old := p.bases.Load(); old != nil {
		b = *old
	}
	n := int(number) + 1
	if n <= len(b) {
		b[number] = base
		return
	}
	if n > cap(b) {
		b = append(make([]unsafe.Pointer, 0, max(2*cap(b), n, 64)), b...)
	}
	b = b[:n]
	b[number] = base
	p.bases.Store(&b)
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
		if sp.number != 0 {
			p.setBase(sp.number, nil)
			p.freeNumbers = append(p.freeNumbers, sp.number)
		}
		p.park(sp.mem)
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

// park keeps mem, the memory of a span emptied, for the next new span,
// or returns it to the system: it keeps at most a thirty-second of the
// pool's memory, and maxParked spans at least. Open chunks move from
// cells of one size to larger ones as they fill, and when a size's last
// cell moved its span was returned and the next size's span mapped
// anew: in a restart's CPU profile, the system calls and the first
// touch of new memory made a tenth of it. mu must be held.
func (p *cellPool) park(mem []byte) {
	if len(mem) != cellSpanSize || len(p.parked) >= max(maxParked, int(p.mapped/cellSpanSize/32)) {
		p.mapped -= int64(len(mem))
		unmapBlock(mem)
		return
	}
	p.parked = append(p.parked, mem)
}

// maxParked is the fewest emptied spans a pool keeps (see park): 1 MiB.
const maxParked = 16

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
	for _, mem := range p.parked {
		unmapBlock(mem)
	}
	p.parked = nil
	p.partial, p.spans, p.mapped, p.live = [maxCell / cellAlign][]*cellSpan{}, nil, 0, 0
	p.bases.Store(nil)
	p.freeNumbers = nil
}
