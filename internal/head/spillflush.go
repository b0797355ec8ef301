package head

import (
	"cmp"
	"math"
	"slices"
	"unsafe"

	"github.com/strata-db/strata/internal/chunkenc"
)

// spillWrite is a part flushSpills writes for s, fresh if flushSpills
// reserved its region.
type spillWrite struct {
	part   arenaPart
	s      *memSeries
	memory int // queuedSpill's
	fresh  bool
}

// flushSpills writes out the finished parts of the open chunks a commit
// queued (see memSeries.queueSpill) and detaches them from the chunks'
// memory: what spillOpen does for one series, for all of them at once,
// so that parts that lie side by side in the arena take one write
// (chunkArena.writeParts). A scrape appends one sample to each of a
// target's series in a commit: thousands of series, of which the open
// chunks of some hundreds fill. A write for each part (spillOpen) was a
// fifth of the CPU of scraping a million series.
//
// A series' lock is held while its part is taken and again while it is
// detached, not during the write: seriesSpillWriting tells the appends
// and cuts of other commits meanwhile to leave the region alone (see
// closeSpilled and retireSpill), and readers find the part in memory
// until it is detached. A reader of no samples, held throughout, keeps
// regions retired meanwhile from being given to another series.
//
// writes, parts and data are scratch memory, returned grown.
func (h *Head) flushSpills(m *chunkMem, writes []spillWrite, parts []arenaPart, data []byte) ([]spillWrite, []arenaPart, []byte) {
	queue := m.spillQueue
	if len(queue) == 0 {
		return writes, parts, data
	}
	reader := h.acquireReader(math.MaxInt64)
	defer h.releaseReader(reader)
	writes, parts, data = writes[:0], parts[:0], data[:0]
	for _, q := range queue {
		s := q.s
		s.mu.Lock()
		s.state &^= seriesSpillQueued
		var w spillWrite
		start := len(data)
		if w.part.region, w.part.off, w.fresh, data = s.takePart(m, data); w.part.region != nil {
			s.state |= seriesSpillWriting
			w.s, w.memory, w.part.b = s, q.memory, data[start:]
			writes = append(writes, w)
		}
		s.mu.Unlock()
	}
	clear(queue)
	m.spillQueue = queue[:0]
	// The parts were appended to data, which may have moved since.
	at := 0
	for i := range writes {
		b := &writes[i].part.b
		n := len(*b)
		*b, at = data[at:at+n:at+n], at+n
	}
	slices.SortFunc(writes, func(x, y spillWrite) int { return cmp.Compare(x.part.addr(), y.part.addr()) })
	for _, w := range writes {
		parts = append(parts, w.part)
	}
	m.spillBuf = m.arena.writeParts(parts, m.spillBuf)
	for i, w := range writes {
		p := &parts[i]
		s := w.s
		s.mu.Lock()
		s.state &^= seriesSpillWriting
		ours := s.spill == unsafe.SliceData(p.region) && s.open == chunkenc.EncXOR && s.xor.Detached() == p.off
		switch {
		case ours && p.err == nil:
			s.xor.Detach(len(p.b))
			s.shrinkOpen(&m.arena.cells, w.memory)
		case ours && w.fresh:
			// Its first part could not be written: the region holds
			// nothing of the chunk, which stays in memory whole.
			m.retired = append(m.retired, s.dropSpill(m.arena))
		}
		s.mu.Unlock()
	}
	clear(writes)
	clear(parts)
	return writes[:0], parts[:0], data[:0]
}

// takePart appends to data the open chunk's finished part that
// flushSpills is to write, and returns the region it goes to and its
// offset there, reserving the region at the chunk's first part (fresh),
// as spillOpen does. It returns a nil region if there is no part to
// write: too short, or no room for it. mu must be held.
func (s *memSeries) takePart(m *chunkMem, data []byte) (region []byte, off int, fresh bool, _ []byte) {
	if s.open != chunkenc.EncXOR {
		return nil, 0, false, data
	}
	c := &s.xor
	f := c.Finished()
	if len(f) < minSpillBytes {
		return nil, 0, false, data
	}
	if s.spill != nil {
		region, off = s.spillRegion(), c.Detached()
		if off+len(f) > len(region) {
			return nil, 0, false, data
		}
		return region, off, false, append(data, f...)
	}
	// The whole chunk, if the rest is like what came so far, and an
	// eighth more, and its trailer (see closeSpilled).
	whole := len(f) * s.samplesAtCut(m) / c.NumSamples()
	size := whole + whole/8 + 16 + trailerSize
	if size > min(maxArenaChunk, math.MaxUint16) {
		return nil, 0, false, data
	}
	region = m.arena.reserve(size)
	start := len(data)
	data = append(data, f...)
	// The region's header says the chunk is full: cut writes it again
	// only if the chunk is cut before.
	chunkenc.SetXORSampleCount(data[start:], m.samples)
	// Nothing is detached yet: readers read none of the region.
	s.spill, s.spillLen = unsafe.SliceData(region), uint16(size)
	m.arena.addOpen(1)
	return region, 0, true, data
}
