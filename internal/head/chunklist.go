package head

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/strata-db/strata/internal/chunkenc"
)

// A series' closed chunks are a chain in the arena: each chunk's bytes are
// followed there by a trailer of trailerSize bytes that describes them
// and points to the trailer of the chunk before, and the series keeps the
// newest trailer's address and the number of chunks (memSeries.last and
// nChunks). The series holds no list of its chunks: at a million series
// the lists, 24 bytes a chunk on the Go heap, took 24 MB after a block
// was cut and 73 MB before the next, with the collector's headroom over
// that, for a head that holds one to three chunks a series.
//
// The trailer is written with the chunk, in the same write, and never
// changes. Truncation drops the oldest chunks by counting fewer: the
// oldest trailer kept then points to a chunk that is gone, which no walk
// reaches. Where a chunk in the middle of the chain goes or is replaced
// (a late sample, a truncation that keeps samples older than its range),
// the chunks after it are copied anew with trailers that link the new
// chain (relink).
//
// Walks read the trailers in place (chunkAt) where a reader reads the
// chunks themselves anyway: queries, late samples. Passes over the whole
// head (compactions, checkpoints, truncations) read them with pread
// instead (chunkCopier), which touches no page of the mappings: reading a
// million series' trailers in place would make most of the files the
// process' memory.
//
// A trailer holds, little-endian: the address of the previous chunk's
// trailer (0 for none) in 8 bytes, the chunk's first timestamp in 8, its
// span (maxt-mint) in 4 and its size and encoding (headChunk.sizeEnc) in
// 4. The files hold nothing the WAL does not (see chunkArena), so the
// addresses need only be valid in this process.
const trailerSize = 24

// headChunk is a closed chunk as its trailer describes it.
//
// data points at the chunk's first byte. span is maxt-mint; append cuts
// a chunk before it spans more than maxChunkSpan. sizeEnc is the chunk's
// length in its low sizeBits bits and its encoding in the three above.
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

// newHeadChunk returns the description of chunk data of encoding enc whose
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

func (c headChunk) size() int                   { return int(c.sizeEnc & (1<<sizeBits - 1)) }
func (c headChunk) bytes() []byte               { return unsafe.Slice(c.data, c.size()) }
func (c headChunk) maxt() int64                 { return c.mint + int64(c.span) }
func (c headChunk) trailer() *byte              { return (*byte)(unsafe.Add(unsafe.Pointer(c.data), c.size())) }
func (c headChunk) encoding() chunkenc.Encoding { return chunkenc.Encoding(c.sizeEnc >> sizeBits) }

// meta returns the chunk as readers, blocks and checkpoints take it.
func (c headChunk) meta() chunkenc.Meta {
	return chunkenc.Meta{Data: c.bytes(), MinT: c.mint, MaxT: c.maxt(), Enc: c.encoding()}
}

// appendTrailer appends the chunk's trailer, after prev's, to dst.
func (c headChunk) appendTrailer(dst []byte, prev *byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(uintptr(unsafe.Pointer(prev))))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(c.mint))
	dst = binary.LittleEndian.AppendUint32(dst, c.span)
	return binary.LittleEndian.AppendUint32(dst, c.sizeEnc)
}

// decodeTrailer returns the chunk whose trailer, at address at, holds b,
// and the address of the trailer before it.
func decodeTrailer(b []byte, at *byte) (c headChunk, prev *byte) {
	b = b[:trailerSize]
	c = headChunk{
		mint:    int64(binary.LittleEndian.Uint64(b[8:])),
		span:    binary.LittleEndian.Uint32(b[16:]),
		sizeEnc: binary.LittleEndian.Uint32(b[20:]),
	}
	c.data = (*byte)(unsafe.Add(unsafe.Pointer(at), -c.size()))
	return c, addrPointer(uintptr(binary.LittleEndian.Uint64(b)))
}

// addrPointer returns address a as a pointer. It is an address in the
// arena, which the collector does not manage (or a block of it that the
// arena keeps alive), read back from a trailer.
func addrPointer(a uintptr) *byte { return *(**byte)(unsafe.Pointer(&a)) }

// chunkAt returns the chunk whose trailer is at p, read in place, and the
// address of the trailer before it.
func chunkAt(p *byte) (headChunk, *byte) { return decodeTrailer(unsafe.Slice(p, trailerSize), p) }

// closedChunks appends the series' closed chunks, oldest first, to dst,
// reading their trailers in place. mu must be held.
func (s *memSeries) closedChunks(dst []headChunk) []headChunk {
	start := len(dst)
	dst = append(dst, make([]headChunk, s.nChunks)...)
	p := s.last
	for i := len(dst) - 1; i >= start; i-- {
		dst[i], p = chunkAt(p)
	}
	return dst
}

// newest returns the series' newest closed chunk; it must have one. mu
// must be held.
func (s *memSeries) newest() headChunk {
	c, _ := chunkAt(s.last)
	return c
}

// addChunk makes the chunk whose trailer is at p, which links to s.last,
// the series' newest closed chunk. mu must be held.
func (s *memSeries) addChunk(p *byte) {
	s.last = p
	s.nChunks++
}

// storeChunk copies data, the bytes of a chunk spanning [mint, maxt] of
// encoding enc, into the arena after the chunk whose trailer is at prev,
// and returns the address of its trailer. buf is scratch memory, which
// data may be; it returns it grown.
func storeChunk(a *chunkArena, buf, data []byte, mint, maxt int64, enc chunkenc.Encoding, prev *byte) (*byte, []byte) {
	n := len(data)
	buf = append(buf[:0], data...)
	buf = newHeadChunk(data, mint, maxt, enc).appendTrailer(buf, prev)
	region := a.copy(buf)
	return &region[n], buf
}

// storeChunks copies cs, chunks oldest first, into the arena after the
// chunk whose trailer is at prev, each followed by its trailer, and
// returns the address of the last trailer. They go into one region, in
// one write where a file block holds them: restoring a checkpoint wrote
// each chunk on its own, a system call each, which was a sixth of a
// restart's CPU. buf is scratch memory; it returns it grown.
func storeChunks(a *chunkArena, buf []byte, cs []chunkenc.Meta, prev *byte) (*byte, []byte) {
	n := 0
	for _, c := range cs {
		n += len(c.Data) + trailerSize
	}
	if n > maxArenaChunk {
		for _, c := range cs {
			prev, buf = storeChunk(a, buf, c.Data, c.MinT, c.MaxT, c.Enc, prev)
		}
		return prev, buf
	}
	for {
		region, last := a.reserveChunks(n, len(cs)), prev
		buf = buf[:0]
		for _, c := range cs {
			start := len(buf)
			buf = append(buf, c.Data...)
			buf = newHeadChunk(region[start:len(buf)], c.MinT, c.MaxT, c.Enc).appendTrailer(buf, last)
			last = &region[len(buf)-trailerSize]
		}
		if a.write(region, 0, buf) == nil {
			return last, buf
		}
		// As in copy: the next region is memory, which write never
		// fails. Each chunk of the region is given back.
		for range cs {
			a.release(region)
		}
	}
}

// relink copies chunks, the chunks of a chain that follow one that
// changed or went, anew after the chunk whose trailer is at prev, and
// returns the address of the last trailer. It reads their bytes with rd,
// or in place where rd is nil or fails. It appends the bytes of the
// copies it replaced to old, for the caller to retire, and returns it,
// and buf, scratch memory, grown.
func relink(a *chunkArena, rd *chunkCopier, chunks []headChunk, prev *byte, buf []byte, old [][]byte) (*byte, []byte, [][]byte) {
	for _, c := range chunks {
		data := c.bytes()
		if copied, err := rd.read(data); err == nil {
			data = copied
		}
		prev, buf = storeChunk(a, buf, data, c.mint, c.maxt(), c.encoding(), prev)
		old = append(old, c.bytes())
	}
	return prev, buf, old
}

// spillReplayed spills the open chunks replay filled (see spillOpen),
// which replay does not do as it goes: a write per part made it a third
// slower. It runs in the background once the head takes writes, a write
// per series (a second or so at a million), which appenders may have
// spilled meanwhile, and moves the chunks' memory, grown during replay,
// back to its first allocation.
func (h *Head) spillReplayed() {
	m := &chunkMem{samples: h.opts.ChunkSamples, blockRange: h.opts.BlockRange, arena: h.arena, series: &h.series.cells}
	if m.samples < minSpillSamples {
		return
	}
	// A reader of no samples: Truncate may free a series it walks only
	// once it is done (see retireSeries).
	reader := h.acquireReader(math.MaxInt64)
	defer h.releaseReader(reader)
	for s := range h.series.all() {
		s.mu.Lock()
		if s.open == chunkenc.EncXOR {
			if s.spill == nil {
				s.spillOpen(m)
			}
			s.shrinkOpen(&h.arena.cells, chunkenc.XORInitialCap)
		}
		s.mu.Unlock()
	}
}
