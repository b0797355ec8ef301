package head

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/strata-db/strata/internal/chunkenc"
)

// chunkArenaBlock is the size of the blocks closed chunks are copied into
// when they are kept in memory. A closed XOR chunk of 240 samples takes
// 300-1800 bytes, so a 1 MiB block holds over five hundred of them:
// cutting a chunk then costs an allocation once per hundreds of chunks
// instead of every time, which profiles of the append and replay paths
// showed as their main remaining allocation.
const chunkArenaBlock = 1 << 20

// chunkFileBlock is the size of the blocks closed chunks are written to
// when they are kept in files: each is a file and a mapping of its own, so
// larger blocks keep the count of both low (a head of a million series
// holding three hours takes a few hundred), while a block still empties
// out within one block range of a head of 100k series.
const chunkFileBlock = 16 << 20

// chunkArena hands out the memory of closed chunks.
//
// With a directory (the store's chunks_head), closed chunks are written
// to files there and read through read-only shared mappings of them. The
// bytes then live in the kernel's page cache, not in the process: they
// count in its resident memory only while a reader has touched them
// recently, and the kernel may write them out and drop them under memory
// pressure. Closed chunks are most of the head's memory, so this is what
// keeps memory per series low. The files hold nothing the WAL does not:
// Open empties the directory, and replay writes the chunks anew.
//
// Without a directory (or where files cannot be mapped), blocks are
// anonymous memory from the operating system (mapBlock), not from the Go
// heap: on the heap, closed chunks were scanned by every collection and,
// with the collector's default headroom, made the process peak at about
// twice their size. Off the heap they count once. If the system refuses a
// block, the arena falls back to the Go heap, which is only slower to
// collect.
//
// Pointers into a block are ordinary slices; the collector ignores them.
// A closed chunk's bytes never change. The arena counts the live chunks of
// each block: release, called when the head drops a chunk once no reader
// can hold it (see readers), counts it down, and a block whose count
// reaches zero and that no longer takes new chunks is returned to the
// system at once (and its file deleted). Chunks are dropped oldest first,
// and a block holds chunks closed at about the same time, so blocks empty
// out whole.
//
// The open chunks' memory, which changes with each sample, is cells (see
// cellPool), freed one by one.
//
// All fields but cells and removing are guarded by mu.
type chunkArena struct {
	mu sync.Mutex
	// cells hold the newest bytes of open XOR chunks (the series have
	// a pool of their own, stripeSeries.cells).
	cells cellPool
	// dir is where file blocks are created, "" for anonymous memory. It
	// is cleared when a file cannot be created or written, so that a full
	// disk costs one failure, not one per chunk; err keeps the cause.
	dir    string
	err    error
	logger *slog.Logger
	// seq numbers the files of dir.
	seq int
	// fileBlock is the size of file blocks: chunkFileBlock, smaller in
	// tests.
	fileBlock int
	// cur is the block new chunks are copied into, the last of blocks.
	cur *arenaBlock
	// blocks are the blocks with live chunks (and cur), by address.
	blocks []*arenaBlock
	// mapped is the bytes of blocks taken from the system and not freed:
	// for file blocks, the bytes written to them, which fileBytes counts
	// alone.
	mapped, fileBytes int64
	// removing is openArena's deletion of the files of the last run.
	removing sync.WaitGroup
	// chunks counts the chunks copied or reserved and not released, large
	// ones too; open counts those of them that are the regions of open
	// chunks that spilled (see memSeries.spillOpen).
	chunks, open int64
}

type arenaBlock struct {
	mem []byte // len is how far it is filled
	// base and end bound mem's memory, all of its capacity.
	base, end uintptr
	live      int // chunks copied in and not released
	// file is the block's file, nil for anonymous memory: mem is then a
	// read-only mapping of it, written to with file.write.
	file *blockFile
	// wmu is held by every write to file, so that writeParts may read
	// bytes around its parts and write them back unchanged. writes counts
	// the writes done, each added once the write returned, so that a
	// copier can tell whether bytes it read ahead may have changed since
	// (see chunkCopier.detached).
	wmu    sync.Mutex
	writes atomic.Uint64
}

// openArena returns an arena that keeps its blocks in files in dir,
// emptied first, or in anonymous memory if dir is "".
//
// What dir held is moved aside into dir/.removing and deleted in the
// background (close waits for it): deleting a head's chunk files took
// 60 ms before replay could start at 10k series of 50 minutes, 170 ms at
// three hours, while renames take none. A crash between the two renames
// leaves dir.removing, which the next open deletes before it starts.
func openArena(dir string, logger *slog.Logger) (*chunkArena, error) {
	a := &chunkArena{logger: logger, fileBlock: chunkFileBlock}
	if dir == "" || !fileBlocksSupported {
		return a, nil
	}
	aside := dir + removingSuffix
	if err := os.RemoveAll(aside); err != nil {
		return nil, fmt.Errorf("empty head chunk directory: %w", err)
	}
	switch err := os.Rename(dir, aside); {
	case errors.Is(err, fs.ErrNotExist):
		aside = ""
	case err != nil:
		return nil, fmt.Errorf("empty head chunk directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("create head chunk directory: %w", err)
	}
	if aside != "" {
		old := filepath.Join(dir, removingSuffix)
		if err := os.Rename(aside, old); err != nil {
			return nil, fmt.Errorf("empty head chunk directory: %w", err)
		}
		a.removing.Add(1)
		go func() {
			defer a.removing.Done()
			if err := os.RemoveAll(old); err != nil {
				logger.Warn("Cannot delete the head chunk files of the last run", "dir", old, "err", err)
			}
		}()
	}
	a.dir = dir
	return a, nil
}

// removingSuffix names what openArena deletes: its files are not
// numbered, so new blocks never take its name.
const removingSuffix = ".removing"

// maxArenaChunk is the largest chunk the arena takes into a block: a
// rare, unusually large chunk would waste the rest of one.
const maxArenaChunk = chunkArenaBlock / 8

// copy returns a copy of b, not empty, in arena memory, with capacity
// equal to its length so that appending to it cannot overwrite a
// neighbour. A chunk larger than maxArenaChunk gets a block of its own.
// Every chunk is in a block: trailers point to each other (see
// trailerSize), and a chunk on the Go heap that only a trailer pointed to
// would be collected.
func (a *chunkArena) copy(b []byte) []byte {
	if len(b) > maxArenaChunk {
		return a.copyLarge(b)
	}
	for {
		out := a.reserve(len(b))
		if a.write(out, 0, b) == nil {
			return out
		}
		// The file could not be written: its block takes no more
		// chunks, and new blocks are memory, which write never fails.
		a.release(out)
	}
}

// copyLarge returns a copy of b in a block of anonymous memory of its own,
// returned to the system when the chunk is released.
func (a *chunkArena) copyLarge(b []byte) []byte {
	blk := &arenaBlock{mem: mapBlock(len(b))[:len(b)], live: 1}
	copy(blk.mem, b)
	blk.base = uintptr(unsafe.Pointer(unsafe.SliceData(blk.mem)))
	blk.end = blk.base + uintptr(cap(blk.mem))
	a.mu.Lock()
	defer a.mu.Unlock()
	a.chunks++
	a.mapped += int64(cap(blk.mem))
	a.insert(blk)
	return blk.mem[:len(b):len(b)]
}

// reserve returns n bytes of arena memory, n in [1, maxArenaChunk], for a
// chunk whose bytes write puts there, in one go (copy) or in parts (a
// spilled open chunk). Like a chunk, they are given back by release.
//
// The bytes are reserved under the lock and written outside it: no one
// else writes there, and the block cannot be freed while it is cur or
// holds them.
func (a *chunkArena) reserve(n int) []byte { return a.reserveChunks(n, 1) }

// reserveChunks is reserve for a region that holds k chunks, each given
// back by a release of its own.
func (a *chunkArena) reserveChunks(n, k int) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.chunks += int64(k)
	if a.cur == nil || cap(a.cur.mem)-len(a.cur.mem) < n {
		a.newBlock()
	}
	blk := a.cur
	start := len(blk.mem)
	blk.mem = blk.mem[:start+n]
	blk.live += k
	if blk.file != nil {
		a.mapped += int64(n)
		a.fileBytes += int64(n)
	}
	return blk.mem[start : start+n : start+n]
}

// write puts b at offset off of region, bytes reserve returned. If the
// block's file cannot be written, the block takes no more chunks and new
// blocks are memory; region stays reserved until released.
func (a *chunkArena) write(region []byte, off int, b []byte) error {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(region)))
	a.mu.Lock()
	blk := a.blockOf(p)
	a.mu.Unlock()
	if blk.file == nil {
		copy(region[off:], b)
		return nil
	}
	return a.writeFile(blk, b, int(p-blk.base)+off)
}

// writeFile writes b at offset off of the file of blk, under its wmu,
// and makes blk take no more chunks, and new blocks memory, if that
// fails.
func (a *chunkArena) writeFile(blk *arenaBlock, b []byte, off int) error {
	blk.wmu.Lock()
	err := blk.file.write(b, off)
	blk.writes.Add(1)
	blk.wmu.Unlock()
	if err != nil {
		a.fileFailed(blk, err)
	}
	return err
}

// fileFailed makes blk, whose file could not be written, take no more
// chunks, and new blocks memory.
func (a *chunkArena) fileFailed(blk *arenaBlock, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.disableFiles(err)
	if blk == a.cur {
		a.cur = nil
	}
}

// arenaPart is b, to be put at offset off of region, bytes reserve
// returned; err is what writeParts met doing so.
type arenaPart struct {
	region []byte
	off    int
	b      []byte
	err    error
}

// addr returns the address p's bytes go to.
func (p *arenaPart) addr() uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(p.region))) + uintptr(p.off)
}

// writeCallBytes is about what copying costs as much as a system call
// does: a pwrite of a few bytes into the page cache took 2.1-2.6 µs, a
// pread and a pwrite of the bytes around it 0.28 ns a byte, on the
// machine of docs/benchmarks.md. writeParts joins a run of k parts into
// one read and one write only if they save system calls (k > 2) worth
// more than the copying of the bytes from the first to the last. Parts
// more than partsGap apart are never joined, and the bytes of one
// joined write, the buffer it takes, are bounded by maxPartsSpan.
const (
	writeCallBytes = 8 << 10
	partsGap       = 4 << 10
	maxPartsSpan   = 256 << 10
)

// writeParts puts each of parts, sorted by address, where write would,
// and returns buf, its scratch memory, grown. In a file block, a run of
// parts that lie close together is joined into one write of the bytes
// from the first to the last (see writeCallBytes), those between read
// from the file first, under the block's wmu, so that they are written
// back as they were: the open chunks of a scrape's series fill at about
// the same time, and regions reserved at their first parts lie side by
// side, so that one write took the place of hundreds. A part whose
// write fails gets the error, and new blocks are memory as after write.
func (a *chunkArena) writeParts(parts []arenaPart, buf []byte) []byte {
	if len(parts) == 0 {
		return buf
	}
	blocks := make([]*arenaBlock, 0, 8)
	a.mu.Lock()
	for i := range parts {
		if i == 0 || parts[i].addr() >= blocks[len(blocks)-1].end {
			blocks = append(blocks, a.blockOf(parts[i].addr()))
		}
	}
	a.mu.Unlock()
	blk := blocks[0]
	blocks = blocks[1:]
	for i := 0; i < len(parts); {
		if parts[i].addr() >= blk.end {
			blk, blocks = blocks[0], blocks[1:]
		}
		if blk.file == nil {
			copy(parts[i].region[parts[i].off:], parts[i].b)
			i++
			continue
		}
		lo := int(parts[i].addr() - blk.base)
		hi := lo + len(parts[i].b)
		j := i + 1
		for ; j < len(parts); j++ {
			p := &parts[j]
			at := p.addr()
			if at >= blk.end {
				break
			}
			start := int(at - blk.base)
			if start-hi > partsGap || start+len(p.b)-lo > maxPartsSpan {
				break
			}
			hi = start + len(p.b)
		}
		if j-i <= 2 || hi-lo > (j-i-2)*writeCallBytes {
			for ; i < j; i++ {
				p := &parts[i]
				p.err = a.writeFile(blk, p.b, int(p.addr()-blk.base))
			}
			continue
		}
		buf = slices.Grow(buf[:0], hi-lo)[:hi-lo]
		blk.wmu.Lock()
		err := blk.file.readUpTo(buf, lo)
		if err == nil {
			for _, p := range parts[i:j] {
				copy(buf[int(p.addr()-blk.base)-lo:], p.b)
			}
			err = blk.file.write(buf, lo)
			blk.writes.Add(1)
		}
		blk.wmu.Unlock()
		if err != nil {
			a.fileFailed(blk, err)
			for k := i; k < j; k++ {
				parts[k].err = err
			}
		}
		i = j
	}
	return buf
}

// newBlock maps a new current block. The previous one, if all its chunks
// were released already, becomes empty. mu must be held.
func (a *chunkArena) newBlock() {
	var blk *arenaBlock
	if a.dir != "" {
		f, mem, err := createBlockFile(filepath.Join(a.dir, fmt.Sprintf("%08d", a.seq)), a.fileBlock)
		a.seq++
		if err != nil {
			a.disableFiles(err)
		} else {
			blk = &arenaBlock{mem: mem, file: f}
		}
	}
	if blk == nil {
		blk = &arenaBlock{mem: mapBlock(chunkArenaBlock)}
		a.mapped += int64(chunkArenaBlock)
	}
	blk.base = uintptr(unsafe.Pointer(unsafe.SliceData(blk.mem)))
	blk.end = blk.base + uintptr(cap(blk.mem))
	a.insert(blk)
	if old := a.cur; old != nil && old.live == 0 {
		a.unmap(old)
	}
	a.cur = blk
}

// insert adds blk to blocks. mu must be held.
func (a *chunkArena) insert(blk *arenaBlock) { a.blocks = insertRegion(a.blocks, blk) }

// disableFiles makes new blocks anonymous memory after err, the first
// failure to create or write a file block. mu must be held.
func (a *chunkArena) disableFiles(err error) {
	if a.dir != "" {
		a.dir = ""
		a.err = err
		a.logger.Error("Cannot keep head chunks in files; keeping them in memory from now on", "err", err)
	}
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
	blk := a.blockOf(uintptr(unsafe.Pointer(unsafe.SliceData(data))))
	blk.live--
	if blk.live > 0 || blk == a.cur {
		return 0
	}
	return a.unmap(blk)
}

// unmap returns blk to the system, deleting its file, and returns the
// bytes freed. mu must be held.
func (a *chunkArena) unmap(blk *arenaBlock) int64 {
	if i := slices.Index(a.blocks, blk); i >= 0 {
		a.blocks = slices.Delete(a.blocks, i, i+1)
	}
	n := int64(cap(blk.mem))
	if blk.file != nil {
		n = int64(len(blk.mem))
		a.fileBytes -= n
		unmapFileBlock(blk.file, blk.mem)
	} else {
		unmapBlock(blk.mem)
	}
	a.mapped -= n
	return n
}

// dropResident lets go of the pages of file blocks the process has read,
// which stay in the page cache: without it, the pages queries read would
// count as the process' memory until their blocks are freed. Readers in
// flight are unaffected; their next read faults the page in again.
func (a *chunkArena) dropResident() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, blk := range a.blocks {
		if blk.file != nil {
			dropPages(blk.mem)
		}
	}
}

// chunkCopier reads closed chunks and their trailers for a pass over the
// whole head (a compaction, a checkpoint, a truncation) from their files
// with pread instead of through the mappings. Every page a read through
// a mapping touches becomes the process' memory until dropResident, and
// the kernel maps up to 16 neighbouring pages with it ("fault-around"): a
// compaction of 100k series that read its chunks through the mappings
// made 190 MiB of them resident at once although it dropped them after
// every 16 MiB it read. Copies cost a system call per chunk and touch
// nothing: a trailer is read with as many of the bytes before it as the
// chunk read before took, which are mostly the chunk's own.
//
// A copier is used by one goroutine, which must hold a reader (see
// readers) so that no block is freed while it reads.
type chunkCopier struct {
	arena *chunkArena
	buf   []byte
	// win is what chunkAt read last from file winFile: a trailer and
	// lead bytes before it, at offset winOff. lead is the length of the
	// chunk read last, plus some slack; 0 while none was.
	win     []byte
	winFile *blockFile
	winOff  int
	lead    int
	// ahead is what detached read last from as many places in the
	// blocks, the one used longest ago replaced first; used counts
	// detached's reads.
	ahead [aheadWindows]readAhead
	used  uint64
}

// readAhead is what chunkCopier.detached read last from block blk, at
// offset off, when blk had done writes writes: an open chunk's detached
// bytes alone or, when that read lay close to the one before, aheadWindow
// bytes from there. hits is how many reads it served since; used is the
// copier's count of reads when it served the last.
type readAhead struct {
	b      []byte
	blk    *arenaBlock
	off    int
	writes uint64
	hits   int
	used   uint64
}

// maxLead bounds chunkCopier.lead: an XOR chunk of 240 samples takes at
// most 4.6 KiB, most a few hundred bytes.
const maxLead = 4 << 10

// aheadWindow is how much chunkCopier.detached reads at once. The regions
// of the open chunks that spilled lie near one another in the order of
// their series when a pass reaches them: in a checkpoint of a head that
// scraped 200 targets of 5,040 series, 96% of the regions read lay within
// 64 KiB after the start of a window, against 27% within 16 KiB, and
// reading them one system call each was 12% of the CPU scraping took.
// The regions of a pass' series are several such runs read in turn (the
// series that spilled later than their neighbours have theirs elsewhere),
// so a window is kept for each of the last aheadWindows runs.
const (
	aheadWindow  = 64 << 10
	aheadWindows = 4
)

// copyChunkBuf is the smallest buffer a chunkCopier allocates: some
// hundred chunks.
const copyChunkBuf = 64 << 10

// chunkAt returns the chunk whose trailer is at p and the address of the
// trailer before it, reading the trailer with pread if it is in a file
// block. A nil copier reads it in place.
func (c *chunkCopier) chunkAt(p *byte) (headChunk, *byte, error) {
	if c == nil {
		ch, prev := chunkAt(p)
		return ch, prev, nil
	}
	f, off := c.arena.fileOf(unsafe.Slice(p, trailerSize))
	if f == nil {
		ch, prev := chunkAt(p)
		return ch, prev, nil
	}
	lead := min(c.lead, off)
	c.win = slices.Grow(c.win[:0], lead+trailerSize)[:lead+trailerSize]
	c.winFile, c.winOff = nil, off-lead
	if err := f.read(c.win, c.winOff); err != nil {
		return headChunk{}, nil, err
	}
	c.winFile = f
	ch, prev := decodeTrailer(c.win[lead:], p)
	return ch, prev, nil
}

// chain appends to dst the n chunks of the chain that ends with the
// trailer at last, oldest first.
func (c *chunkCopier) chain(dst []headChunk, last *byte, n int) ([]headChunk, error) {
	start := len(dst)
	dst = append(dst, make([]headChunk, n)...)
	for i := len(dst) - 1; i >= start; i-- {
		var err error
		if dst[i], last, err = c.chunkAt(last); err != nil {
			return dst[:start], err
		}
	}
	return dst, nil
}

// read returns data, the bytes of a closed chunk, read into the copier's
// memory if they are in a file block, else as they are; valid until
// reset. A nil copier returns them as they are.
func (c *chunkCopier) read(data []byte) ([]byte, error) {
	if c == nil {
		return data, nil
	}
	f, off := c.arena.fileOf(data)
	if f == nil {
		return data, nil
	}
	c.lead = min(len(data)+len(data)/8+16, maxLead)
	out := c.alloc(len(data))
	if f == c.winFile && off >= c.winOff && off+len(data) <= c.winOff+len(c.win) {
		copy(out, c.win[off-c.winOff:])
		return out, nil
	}
	if err := f.read(out, off); err != nil {
		return nil, err
	}
	return out, nil
}

// open returns a copy of the open chunk of s, which has samples, in the
// copier's memory, valid until reset. s.mu must be held.
func (c *chunkCopier) open(s *memSeries) ([]byte, error) {
	if s.spill != nil {
		return c.whole(&s.xor, s.spillRegion())
	}
	data := c.alloc(len(s.memBytes()))
	copy(data, s.memBytes())
	return data, nil
}

// alloc returns n bytes of the copier's memory.
func (c *chunkCopier) alloc(n int) []byte {
	if cap(c.buf)-len(c.buf) < n {
		// A new buffer: what was handed out keeps the old one.
		c.buf = make([]byte, 0, max(2*cap(c.buf), n, copyChunkBuf))
	}
	start := len(c.buf)
	c.buf = c.buf[:start+n]
	return c.buf[start:len(c.buf):len(c.buf)]
}

// whole returns the open chunk x, which spilled into region, put together
// in the copier's memory, its detached bytes read from their file. It
// stays valid until reset.
func (c *chunkCopier) whole(x *chunkenc.XORAppender, region []byte) ([]byte, error) {
	d := x.Detached()
	dst := c.alloc(d + len(x.Bytes()))
	if err := c.detached(dst[:d], region[:d]); err != nil {
		return nil, err
	}
	// As in chunkArena.whole.
	return x.AppendWhole(dst[:0], dst[:d]), nil
}

// detached copies src, the detached bytes of an open chunk, into dst.
// Those in a file block are read ahead (see aheadWindow): the bytes read
// serve the next reads as long as the block has taken no write since,
// which may have changed them. The detached bytes of a series whose lock
// is held were written before it last detached any, so a window read
// after every write the block had done at the time holds them. A window
// that served fewer than two reads is followed by a read of the bytes
// alone, lest a pass that finds its regions apart, or a block taking
// many writes, pay for a window per chunk.
func (c *chunkCopier) detached(dst, src []byte) error {
	blk, off := c.arena.fileBlockOf(src)
	if blk == nil {
		copy(dst, src)
		return nil
	}
	writes := blk.writes.Load()
	c.used++
	w, near := &c.ahead[0], false
	for i := range c.ahead {
		a := &c.ahead[i]
		if a.blk == blk && off >= a.off && off < a.off+aheadWindow {
			w, near = a, true
			break
		}
		if a.used < w.used {
			w = a
		}
	}
	n := len(dst)
	if near {
		if off+n <= w.off+len(w.b) && writes == w.writes {
			copy(dst, w.b[off-w.off:])
			w.hits++
			w.used = c.used
			return nil
		}
		if len(w.b) < aheadWindow || w.hits >= 2 {
			n = max(n, min(aheadWindow, int(blk.end-blk.base)-off))
		}
	}
	// Bytes past the end of the file read as zeros.
	w.blk = nil
	w.b = slices.Grow(w.b[:0], n)[:n]
	if err := blk.file.readUpTo(w.b, off); err != nil {
		return err
	}
	*w = readAhead{b: w.b, blk: blk, off: off, writes: writes, used: c.used}
	copy(dst, w.b)
	return nil
}

// whole puts the open chunk x, which spilled into region, together in
// dst, which has room for it: its detached bytes read from their file
// (see chunkCopier), then those in memory. It returns dst.
func (a *chunkArena) whole(dst []byte, x *chunkenc.XORAppender, region []byte) ([]byte, error) {
	d := x.Detached()
	if f, off := a.fileOf(region[:d]); f != nil {
		if err := f.read(dst[:d], off); err != nil {
			return nil, err
		}
	} else {
		copy(dst, region[:d])
	}
	// The detached bytes are in place: appending them to dst[:0] copies
	// them onto themselves.
	return x.AppendWhole(dst[:0], dst[:d]), nil
}

// reset lets the copier reuse its memory: nothing copy returned before may
// be read after.
func (c *chunkCopier) reset() {
	c.buf = c.buf[:0]
}

// fileOf returns the file holding data, a slice copy returned, and its
// offset there; nil if data is not in a file block.
func (a *chunkArena) fileOf(data []byte) (*blockFile, int) {
	blk, off := a.fileBlockOf(data)
	if blk == nil {
		return nil, 0
	}
	return blk.file, off
}

// fileBlockOf returns the file block holding data and its offset there;
// nil if data is not in a file block.
func (a *chunkArena) fileBlockOf(data []byte) (*arenaBlock, int) {
	if len(data) == 0 {
		return nil, 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	p := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	blk := a.blockOf(p)
	if blk == nil || blk.file == nil {
		return nil, 0
	}
	return blk, int(p - blk.base)
}

// blockOf returns the block holding address p, nil if none does. mu must
// be held.
func (a *chunkArena) blockOf(p uintptr) *arenaBlock {
	i := regionOf(a.blocks, p)
	if i < 0 {
		return nil
	}
	return a.blocks[i]
}

func (b *arenaBlock) bounds() (uintptr, int) { return b.base, cap(b.mem) }

// region is memory taken from the system whose start and size are known:
// an arena block or a span of cells, kept in lists by address.
type region interface {
	bounds() (base uintptr, size int)
}

// insertRegion adds r to list, sorted by address, and returns it.
func insertRegion[T region](list []T, r T) []T {
	base, _ := r.bounds()
	i, _ := slices.BinarySearchFunc(list, base, compareBase[T])
	return slices.Insert(list, i, r)
}

// regionOf returns the index in list, sorted by address, of the region
// holding address p, -1 if none does.
func regionOf[T region](list []T, p uintptr) int {
	i, found := slices.BinarySearchFunc(list, p, compareBase[T])
	if !found {
		i--
	}
	if i < 0 {
		return -1
	}
	if base, size := list[i].bounds(); p >= base+uintptr(size) {
		return -1
	}
	return i
}

func compareBase[T region](r T, p uintptr) int {
	base, _ := r.bounds()
	return cmp.Compare(base, p)
}

// close frees every block and cell. Nobody may read a chunk of the arena
// after.
func (a *chunkArena) close() {
	a.removing.Wait()
	a.cells.close()
	a.mu.Lock()
	defer a.mu.Unlock()
	for len(a.blocks) > 0 {
		a.unmap(a.blocks[0])
	}
	a.cur = nil
}

// bytes returns the bytes of the blocks the arena holds (of memory blocks
// their size, of file blocks the bytes written to them), and of these
// those in files.
func (a *chunkArena) bytes() (all, inFiles int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mapped, a.fileBytes
}

// liveChunks returns the number of closed chunks copied and not
// released.
func (a *chunkArena) liveChunks() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.chunks - a.open
}

// addOpen adds delta to the count of reserved regions that belong to open
// chunks: 1 when an open chunk spills into one, -1 when it leaves its
// series (closed in it, or dropped).
func (a *chunkArena) addOpen(delta int64) {
	a.mu.Lock()
	a.open += delta
	a.mu.Unlock()
}
