package head

import (
	"iter"
	"math"
	"slices"
	"sync"
	"unsafe"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/storage"
)

// memSeries is one series in the head.
//
// ref and syms are immutable after creation. Everything else is guarded by
// mu.
//
// A million series take 104 MB: they are the largest part of the head's
// memory, so small fields are packed into the words of larger ones (see
// state and openSpan). The head's series are cells (see cellPool and
// stripeSeries.getOrSet), which the collector does not read: the only heap
// object a series points to, extra, is held for it (cellPool.hold).
type memSeries struct {
	ref storage.SeriesRef
	// syms is the series' labels as ids in the head's symbol table (see
	// symbolTable.intern).
	syms symIDs
	// nChunks is how many closed chunks the series has (see last). It
	// fills the word with syms.
	nChunks uint32

	mu sync.Mutex
	// state is where the series is in its removal by Truncate and
	// whether its record is in the WAL; see seriesState. It, open,
	// spillLen and openSpan fill a word.
	state seriesState
	// open is the encoding of the open chunk, 0 until the first sample:
	// EncXOR for floats, whose chunk is xor, or that of a histogram chunk
	// for native histograms, in extra. A sample of another kind than the
	// open chunk's closes it. Appends modify its bytes in place: readers
	// copy them under mu.
	open chunkenc.Encoding
	// spillLen is the length of the region spill points to.
	spillLen uint16
	// openSpan is how long before maxt the open chunk starts (see
	// headMint): at most maxChunkSpan, so that it takes 32 bits where a
	// timestamp takes 64.
	openSpan uint32
	// last is the trailer of the newest of the nChunks closed chunks, nil
	// if there are none: the end of their chain in the arena (see
	// trailerSize). A closed chunk's bytes never change, so a querier may
	// keep them without a lock.
	last *byte
	// spill is the arena region holding the bytes an open XOR chunk
	// detached (see spillOpen), nil if it has detached none.
	spill *byte
	// maxt and lastV are the newest sample, kept here so that the out-of-order
	// and duplicate checks do not decode the chunk. maxt is math.MinInt64
	// while the series has no sample. lastV is meaningless when the newest
	// sample is a histogram: the rare check that needs that one decodes it.
	maxt  int64
	lastV float64
	// xor is the open XOR chunk, empty unless open is EncXOR. Its last
	// sample is (maxt, lastV), which it does not keep itself: in the
	// series, an open chunk of floats takes no object of its own (heap
	// profiles at 100k series had 64 bytes a series for one, and 16 for
	// an interface pointing to it).
	xor chunkenc.XORAppender
	// extra is what few series have, nil until one of them is needed.
	extra *seriesExtra
}

// seriesExtra holds what few series have: a history of start times, or
// native histograms.
type seriesExtra struct {
	starts startTimes
	// hist is the open chunk if it holds histograms: a
	// *chunkenc.HistogramChunk or *chunkenc.FloatHistogramChunk.
	hist openChunk
}

// openChunk is an open histogram chunk.
type openChunk interface {
	chunkenc.Chunk
	Reset()
}

// chunkMem is where closing a chunk puts it: into arena, with its
// trailer (see trailerSize). samples is the count at which a chunk is
// closed; blockRange, if not 0, the time range (ms) at whose multiples
// one is closed too, so that no chunk spans two blocks.
type chunkMem struct {
	samples    int
	blockRange int64
	arena      *chunkArena
	// series is the pool of the series' own memory (see addExtra).
	series *cellPool
	// rangeLo and rangeHi are the block range rangeEnd found last: the
	// series of a batch mostly share one, and a lookup within it saves
	// two divisions per sample.
	rangeLo, rangeHi int64
	// noSpill keeps open chunks from spilling (see spillOpen); spillBuf
	// is spillOpen's and cut's buffer.
	noSpill  bool
	spillBuf []byte
	// deferSpills has spillQueue get the series whose open chunks are to
	// spill instead of spilling them at once: a commit writes their parts
	// out together once all its samples are in (see flushSpills).
	deferSpills bool
	spillQueue  []queuedSpill
	// dense, if not nil, closes float chunks as decimal ones where that
	// is smaller (see densify).
	dense *chunkenc.Densifier
	// late is insert's buffer for the samples of the chunk a late sample
	// goes into, merged for them merged with the late ones; retired gets
	// the bytes of closed chunks insert replaced, for the caller to
	// retire (see retireChunks).
	late    []lateSample
	merged  []lateSample
	retired [][]byte
	// lateRun is applyRuns' buffer for a run's late samples.
	lateRun []lateSample
	// inserted counts the late samples insert added.
	inserted uint64
	// marks, if not nil, learns which series changed since the last
	// checkpoint (see memSeries.touch); replay, whose first checkpoint is
	// a full one, has none.
	marks *deltaMarks
}

// growCap returns the capacity the open XOR chunk x moves to before a
// sample that does not fit. Where open chunks do not spill (replay),
// their memory grows at once to what a full chunk takes at the bytes a
// sample so far, an eighth more, at most fourfold a move (so that a
// series with few samples left to replay does not take a whole chunk's
// memory), and by half at least below maxCell. Each move is into memory
// never touched before, and a page's first touch is what a move costs:
// grown by half at a time, chunks moved eleven times on their way to
// 4 KiB, a tenth of a restart's CPU. The memory is theirs only until
// replay is done (see spillReplayed).
func (m *chunkMem) growCap(x *chunkenc.XORAppender) int {
	n := x.GrowCap()
	if m.noSpill {
		have := len(x.Memory())
		n = max(n, min(have*3/2, maxCell))
		if k := x.SinceDetach(); k > 0 {
			full := len(x.Bytes()) * max(m.samples-x.NumSamples()+k, k) / k
			n = max(n, min(full+full/8, 4*have))
		}
	}
	return n
}

// crossesRange reports whether a sample at t falls in a later block range
// than the open chunk's first sample at mint, so that it must start a new
// chunk.
func (m *chunkMem) crossesRange(mint, t int64) bool {
	if m.blockRange <= 0 {
		return false
	}
	if mint < m.rangeLo || mint >= m.rangeHi {
		m.rangeLo = rangeStart(mint, m.blockRange)
		m.rangeHi = m.rangeLo + m.blockRange
	}
	return t >= m.rangeHi
}

// rangeStart returns the start of the block range of length r holding t:
// the largest multiple of r not after t.
func rangeStart(t, r int64) int64 {
	m := t % r
	if m < 0 {
		m += r
	}
	return t - m
}

// seriesState is where a series is in its removal by Truncate (the
// values below seriesLogged, see removal) and the flags seriesLogged,
// seriesCheckpointed and seriesDirty.
type seriesState uint8

const (
	// seriesLive: in the head. The zero value.
	seriesLive seriesState = iota
	// seriesDoomed: Truncate left the series without samples and will
	// remove it once the appenders that may have taken it before are
	// done. An appender that takes it now makes it live again.
	seriesDoomed
	// seriesGone: removed from the maps and the index. An appender that
	// still found it looks its labels up again, creating a new series.
	seriesGone
	// seriesLogged is set once the series record is in the WAL.
	seriesLogged seriesState = 4
	// seriesCheckpointed is set once a checkpoint holds the series with
	// its labels, so that a delta checkpoint names it by ref alone.
	seriesCheckpointed seriesState = 8
	// seriesDirty is set by the first sample added after a checkpoint
	// read the series: a delta checkpoint writes only dirty series (see
	// deltaMarks).
	seriesDirty seriesState = 16
	// seriesSpillQueued is set while an appender's commit holds the
	// series to write its open chunk's finished part out (see
	// flushSpills), seriesSpillWriting while that write is under way.
	seriesSpillQueued  seriesState = 32
	seriesSpillWriting seriesState = 64

	removalMask = seriesLogged - 1
)

// removal returns where the series is in its removal by Truncate. mu must
// be held.
func (s *memSeries) removal() seriesState { return s.state & removalMask }

// setRemoval moves the series to r in its removal by Truncate. mu must be
// held.
func (s *memSeries) setRemoval(r seriesState) { s.state = s.state&^removalMask | r }

// logged reports whether the series record is in the WAL. mu must be held.
func (s *memSeries) logged() bool { return s.state&seriesLogged != 0 }

// headMint returns the open chunk's first timestamp, meaningless while it
// has no sample. mu must be held.
func (s *memSeries) headMint() int64 { return s.maxt - int64(s.openSpan) }

// setNewest makes t, a sample just added to the open chunk, the series'
// newest: the chunk's first if first. mu must be held.
func (s *memSeries) setNewest(t int64, first bool) {
	if first {
		s.openSpan = 0
	} else {
		s.openSpan += uint32(t - s.maxt)
	}
	s.maxt = t
}

// init sets up a new zero series.
func (s *memSeries) init(ref storage.SeriesRef, syms symIDs) {
	s.ref, s.syms, s.maxt = ref, syms, math.MinInt64
}

// appendable reports whether a float sample at t with value v may follow
// the series' newest sample; dup is true for an exact duplicate, which is
// accepted and dropped. mu must be held.
func (s *memSeries) appendable(t int64, v float64) (dup bool, err error) {
	if t == s.maxt {
		if enc := s.lastEncoding(); enc == chunkenc.EncHistogram || enc == chunkenc.EncFloatHistogram {
			// A histogram has the timestamp.
			return false, storage.ErrDuplicateSampleForTimestamp
		}
	}
	return checkOrder(s.maxt, s.lastV, t, v)
}

// checkOrder decides whether (t, v) may follow a newest sample (maxt, lastV).
func checkOrder(maxt int64, lastV float64, t int64, v float64) (dup bool, err error) {
	switch {
	case t > maxt:
		return false, nil
	case t < maxt:
		return false, storage.ErrOutOfOrderSample
	case math.Float64bits(v) == math.Float64bits(lastV):
		// Compare bits so that a repeated NaN (staleness marker) counts as
		// a duplicate, as in Prometheus.
		return true, nil
	default:
		return false, storage.ErrDuplicateSampleForTimestamp
	}
}

// applyFloat adds a float sample and reports whether it did: appended
// after the series' newest sample, or inserted before it (see insert).
// err says why not (another value at the same timestamp); an exact
// duplicate is neither added nor an error. Commit and replay both decide
// through it (and applyHistogram, and applyInOrder for a commit's runs),
// so that a replay restores exactly what the commit applied. mu must be
// held.
func (s *memSeries) applyFloat(t int64, v float64, m *chunkMem) (bool, error) {
	return s.applySample(lateSample{t: t, v: v}, m)
}

// applyHistogram is applyFloat for an integer (h) or float (fh)
// histogram.
func (s *memSeries) applyHistogram(t int64, h *histogram.Histogram, fh *histogram.FloatHistogram, m *chunkMem) (bool, error) {
	return s.applySample(lateSample{t: t, h: h, fh: fh}, m)
}

// applySample is applyFloat for a sample of any kind.
func (s *memSeries) applySample(x lateSample, m *chunkMem) (bool, error) {
	ok, late, err := s.applyInOrder(x, m)
	if late {
		return s.insert(x, m)
	}
	return ok, err
}

// applyInOrder appends x if it is newer than the series' newest sample,
// as applySample does; one older it leaves to the caller, reporting late,
// for insert or insertRun. mu must be held.
func (s *memSeries) applyInOrder(x lateSample, m *chunkMem) (ok, late bool, err error) {
	var dup bool
	prev := s.maxt
	if x.h == nil && x.fh == nil {
		dup, err = s.appendable(x.t, x.v)
	} else {
		dup, err = s.appendableHistogram(x.t, x.h, x.fh)
	}
	switch {
	case err == storage.ErrOutOfOrderSample:
		return false, true, nil
	case err != nil || dup:
		return false, false, err
	case x.h != nil:
		s.appendHistogram(x.t, x.h, m)
	case x.fh != nil:
		s.appendFloatHistogram(x.t, x.fh, m)
	default:
		s.append(x.t, x.v, m)
	}
	if s.state&seriesDirty == 0 {
		s.touch(m, prev)
	}
	return true, false, nil
}

// touch marks the series dirty for the next delta checkpoint: its chunks
// ending after t changed since the last checkpoint read it. mu must be
// held.
func (s *memSeries) touch(m *chunkMem, t int64) {
	if m.marks == nil {
		return
	}
	s.state |= seriesDirty
	if s.state&seriesCheckpointed != 0 {
		m.marks.lower(s.ref, t)
	}
}

// hasOpenSamples reports whether the series has an open chunk holding
// samples: nil until the first sample and after a restore from a
// checkpoint, which closes every chunk. mu must be held.
func (s *memSeries) hasOpenSamples() bool {
	switch s.open {
	case 0:
		return false
	case chunkenc.EncXOR:
		return s.xor.NumSamples() > 0
	}
	return s.extra.hist.NumSamples() > 0
}

// setOpen makes the open chunk an empty one of encoding enc, hist if that
// is a histogram encoding, and lets go of the other kind's memory, an XOR
// chunk's to chunks. series is the pool of the series' own memory (see
// addExtra), used only for a hist; with none it may be nil. mu must be
// held.
func (s *memSeries) setOpen(enc chunkenc.Encoding, hist openChunk, chunks, series *cellPool) {
	s.open = enc
	if enc != chunkenc.EncXOR {
		s.freeOpen(chunks)
	}
	if hist != nil && s.extra == nil {
		s.addExtra(series)
	}
	if s.extra != nil {
		s.extra.hist = hist
	}
}

// moveOpen moves the open XOR chunk to a cell of n bytes, with its bytes,
// and frees the cell it had, if any. Its memory is cells only: Append
// never allocates, as moveOpen gives it room before each sample that
// does not fit. mu must be held.
func (s *memSeries) moveOpen(cells *cellPool, n int) {
	old := s.xor.Memory()
	s.xor.MoveTo(cells.alloc(n))
	if old != nil {
		cells.free(unsafe.SliceData(old))
	}
}

// freeOpen frees the open XOR chunk's memory, leaving it empty and
// without memory. Readers only ever copy an open chunk's bytes under mu,
// so none holds them. mu must be held.
func (s *memSeries) freeOpen(cells *cellPool) {
	if mem := s.xor.Memory(); mem != nil {
		cells.free(unsafe.SliceData(mem))
	}
	s.xor = chunkenc.XORAppender{}
}

// addExtra gives the series its seriesExtra, which cells, the pool of the
// series' own memory, holds for it (see cellPool.hold). mu must be held.
func (s *memSeries) addExtra(cells *cellPool) {
	s.extra = &seriesExtra{}
	cells.hold(unsafe.Pointer(s), s.extra)
}

// openHist returns the open chunk if it holds histograms, else nil. mu
// must be held.
func (s *memSeries) openHist() openChunk {
	if s.open == 0 || s.open == chunkenc.EncXOR {
		return nil
	}
	return s.extra.hist
}

// lastEncoding returns the encoding of the chunk holding the newest sample,
// 0 if there is none. mu must be held.
func (s *memSeries) lastEncoding() chunkenc.Encoding {
	if s.hasOpenSamples() {
		return s.open
	}
	if s.nChunks > 0 {
		return s.newest().encoding()
	}
	return 0
}

// append adds a float sample that appendable accepted. mu must be held.
func (s *memSeries) append(t int64, v float64, m *chunkMem) {
	first := false
	switch {
	case s.open != chunkenc.EncXOR:
		s.closeOpen(m)
		s.setOpen(chunkenc.EncXOR, nil, &m.arena.cells, m.series)
		first = true
	case s.xor.NumSamples() >= m.samples || m.crossesRange(s.headMint(), t) || t-s.headMint() > maxChunkSpan:
		s.cut(m)
		first = true
	}
	x := &s.xor
	if !x.Fits(s.maxt, s.lastV, t, v) {
		if x.SinceDetach() >= minPartSamples && m.samples >= minSpillSamples && !m.noSpill {
			if m.deferSpills {
				s.queueSpill(m)
			} else {
				s.spillOpen(m)
			}
		}
		if !x.Fits(s.maxt, s.lastV, t, v) {
			s.moveOpen(&m.arena.cells, m.growCap(x))
		}
	}
	x.Append(s.maxt, s.lastV, t, v)
	s.setNewest(t, first)
	s.lastV = v
	// A commit writes its parts once its samples are in: queued now, if
	// the next sample is unlikely to fit, the chunk is written out
	// before it comes, and need not grow for it first (see flushSpills).
	if m.deferSpills && x.SinceDetach() >= minPartSamples && m.samples >= minSpillSamples && !m.noSpill &&
		x.Room() < len(x.Bytes())*3/(2*x.SinceDetach())+1 {
		s.queueSpill(m)
	}
}

// An open chunk writes out a part (see spillOpen) before a sample its
// memory cannot hold (chunkenc.XORAppender.Fits), if the part has
// minPartSamples at least. The memory of most series then stays at its
// first allocation, 48 bytes: a part of 40-47 bytes holds 10-25 samples
// of an exporter's counters and gauges. Series whose values take more
// than about 7 bytes a sample grow it once or twice, so that a part is
// not a write (a few microseconds) for every few samples. A part used to
// be written as soon as the memory had less room than the largest sample
// takes (20 bytes): with 64 bytes, parts of 13.4 samples on average over
// strata-bench's values (chunkenc's BenchmarkXORParts); checked before
// each sample, 13.4 with 48 bytes, and 17.7 with 64. Parts of a fixed
// share of the chunk would keep the memory at what the largest share
// needed: 118 bytes a series in a heap profile at a million series with
// sixths.
const minPartSamples = 6

// minSpillBytes is the shortest part spillOpen writes. Appends write
// longer ones; after replay (spillReplayed) a shorter one stays in
// memory, where it fits in the first allocation with the next samples.
const minSpillBytes = 32

// minSpillSamples is the smallest chunk size at which open chunks spill:
// below it a part is too short to be worth a write.
const minSpillSamples = 16

// spillOpen moves the bytes the open XOR chunk has finished into the
// arena, where a region is reserved for the whole chunk at its first
// part (an estimate from that part, with room to spare). Its memory
// then holds only what follows, and cut writes the rest after it in the
// region, which becomes the closed chunk. A part the region has no room
// for stays in memory.
//
// All series cut their chunks together (at the sample count and at block
// ranges), so their open chunks are full at the same moment, and the
// head's peak memory was theirs at full size: half of the heap at a
// million series. With the arena in files, the parts written are in the
// page cache instead. Each costs a write: a commit queues its series'
// parts and writes them together (flushSpills), and spillOpen writes one
// where there is no commit (spillReplayed). mu must be held.
func (s *memSeries) spillOpen(m *chunkMem) {
	region, off, fresh, part := s.takePart(m, m.spillBuf[:0])
	m.spillBuf = part
	switch {
	case region == nil:
	case m.arena.write(region, off, part) == nil:
		s.xor.Detach(len(part))
	case fresh:
		m.arena.release(s.dropSpill(m.arena))
	}
}

// samplesAtCut returns how many samples the open XOR chunk will hold when
// it is cut if the series goes on at the interval of its samples so far:
// the chunk size, or fewer if the chunk's block range ends first (at a
// 60s interval, every chunk of 240 samples is cut at two hours).
func (s *memSeries) samplesAtCut(m *chunkMem) int {
	n := s.xor.NumSamples()
	if m.blockRange <= 0 || n < 2 {
		return m.samples
	}
	end := rangeStart(s.headMint(), m.blockRange) + m.blockRange
	interval := int64(s.openSpan) / int64(n-1)
	if interval <= 0 || s.maxt >= end {
		return m.samples
	}
	return int(min(int64(m.samples), int64(n)+(end-1-s.maxt)/interval))
}

// queueSpill has the commit whose chunkMem m is write the open chunk's
// finished part out once all its samples are in (see flushSpills), unless
// a commit has it to do already. Until then the chunk grows. mu must be
// held.
func (s *memSeries) queueSpill(m *chunkMem) {
	if s.state&(seriesSpillQueued|seriesSpillWriting) != 0 {
		return
	}
	s.state |= seriesSpillQueued
	m.spillQueue = append(m.spillQueue, queuedSpill{s: s, memory: len(s.xor.Memory())})
}

// queuedSpill is a series queueSpill queued, with the size of its open
// chunk's memory then, which the chunk goes back to once the part is
// written out (see flushSpills).
type queuedSpill struct {
	s      *memSeries
	memory int
}

// retireSpill lets go of the open chunk's region, whose bytes the chunk
// no longer needs. Readers only ever copy an open chunk's bytes under mu
// (openBytes, checkpointEntry), so none holds them, and it is returned
// to the arena at once, unless a part is being written into it (see
// flushSpills): it is then retired, and freed once that write is done.
// mu must be held.
func (s *memSeries) retireSpill(m *chunkMem) {
	writing := s.state&seriesSpillWriting != 0
	region := s.dropSpill(m.arena)
	if writing {
		m.retired = append(m.retired, region)
	} else {
		m.arena.release(region)
	}
}

// shrinkOpen moves the open XOR chunk to memory of n bytes if it has
// more and what it holds fits in n with room for a sample: back to its
// first allocation once replay is done, or to what it had before a
// commit's samples once their part is written out. mu must be held.
func (s *memSeries) shrinkOpen(cells *cellPool, n int) {
	if x := &s.xor; len(x.Memory()) > n && len(x.Bytes())+chunkenc.XORSampleMaxBytes <= n {
		s.moveOpen(cells, n)
	}
}

// spillRegion returns the region spill points to, nil if none.
func (s *memSeries) spillRegion() []byte {
	if s.spill == nil {
		return nil
	}
	return unsafe.Slice(s.spill, s.spillLen)
}

// dropSpill lets go of the open chunk's region in arena, if it has one,
// for the caller to make a closed chunk of or retire (see retireChunks),
// and returns it.
func (s *memSeries) dropSpill(arena *chunkArena) []byte {
	region := s.spillRegion()
	if region != nil {
		arena.addOpen(-1)
		s.spill, s.spillLen = nil, 0
	}
	return region
}

// openBytes returns the open chunk's bytes, whole: if it spilled, a copy
// put together from its region and its memory; else they are the chunk's
// memory, which the next append changes. mu must be held.
func (s *memSeries) openBytes() []byte {
	if s.spill != nil {
		c := &s.xor
		return c.AppendWhole(make([]byte, 0, c.Detached()+len(c.Bytes())), s.spillRegion())
	}
	return s.memBytes()
}

// memBytes returns the bytes of the open chunk that are in memory: all of
// them unless it spilled. mu must be held.
func (s *memSeries) memBytes() []byte {
	if s.open == chunkenc.EncXOR {
		return s.xor.Bytes()
	}
	return s.extra.hist.Bytes()
}

// openCopy returns a copy of the open chunk's bytes, whole. mu must be
// held.
func (s *memSeries) openCopy() []byte {
	if s.spill != nil {
		return s.openBytes()
	}
	return slices.Clone(s.memBytes())
}

// closeOpen closes the open chunk, if it has samples, before a sample of
// another kind starts a new one. mu must be held.
func (s *memSeries) closeOpen(m *chunkMem) {
	if s.hasOpenSamples() {
		s.cut(m)
	}
}

// cut closes the open chunk, copying its bytes into the arena, and empties
// the open chunk for the next samples, reusing its memory. Readers only
// ever see copies of the open chunk's bytes, so none is affected.
func (s *memSeries) cut(m *chunkMem) {
	var (
		data    []byte
		trailer *byte
		enc     = s.open
	)
	if enc == chunkenc.EncXOR && m.dense != nil {
		if data = s.densify(m); data != nil {
			enc = chunkenc.EncDecimal
		}
	}
	switch {
	case data == nil && s.spill != nil:
		trailer = s.closeSpilled(m)
	case data == nil:
		data = s.memBytes()
		fallthrough
	default:
		trailer, m.spillBuf = storeChunk(m.arena, m.spillBuf, data, s.headMint(), s.maxt, enc, s.last)
	}
	s.addChunk(trailer)
	if s.open == chunkenc.EncXOR {
		s.xor.Reset()
	} else {
		s.extra.hist.Reset()
	}
}

// densify returns the open XOR chunk as a decimal chunk if that is
// smaller, and else nil; the bytes are the densifier's until its next
// use. Queries decode a decimal chunk in about half the time of an XOR
// one (BenchmarkDecimalAppendSamples against BenchmarkXORAppendSamples in
// chunkenc), and decoding was the largest part of queries over the
// head's last hours. A chunk that spilled has
// its detached bytes read back from their file, and its region is
// returned to the arena (see retireSpill). mu must be held.
func (s *memSeries) densify(m *chunkMem) []byte {
	xor := s.xor.Bytes()
	if s.spill != nil {
		buf := slices.Grow(m.spillBuf[:0], s.xor.Detached()+len(xor))
		var err error
		if xor, err = m.arena.whole(buf[:cap(buf)], &s.xor, s.spillRegion()); err != nil {
			return nil
		}
		m.spillBuf = xor
	}
	dense, ok := m.dense.Densify(xor)
	if !ok {
		return nil
	}
	if s.spill != nil {
		s.retireSpill(m)
	}
	return dense
}

// closeSpilled writes the rest of the spilled open chunk and its trailer
// after its detached bytes in the region, which becomes the closed
// chunk's, and returns the trailer's address. If they do not fit, or
// cannot be written, or a part is being written into the region, the
// chunk is put together and copied as a whole, and the region is retired.
// mu must be held.
func (s *memSeries) closeSpilled(m *chunkMem) *byte {
	c := &s.xor
	writing := s.state&seriesSpillWriting != 0
	region := s.dropSpill(m.arena)
	d, rest := c.Detached(), c.Bytes()
	n := d + len(rest)
	// While a part is being written into the region (see flushSpills),
	// the region is not the closed chunk's: that write could put its
	// part's header over the one written here.
	if n+trailerSize <= len(region) && !writing {
		closed := newHeadChunk(region[:n], s.headMint(), s.maxt, chunkenc.EncXOR)
		m.spillBuf = closed.appendTrailer(append(m.spillBuf[:0], rest...), s.last)
		if m.arena.write(region, d, m.spillBuf) == nil {
			if c.NumSamples() == m.samples {
				return &region[n]
			}
			m.spillBuf = chunkenc.AppendXORHeader(m.spillBuf[:0], c.NumSamples())
			if m.arena.write(region, 0, m.spillBuf) == nil {
				return &region[n]
			}
		}
	}
	m.retired = append(m.retired, region)
	m.spillBuf = c.AppendWhole(m.spillBuf[:0], region)
	var trailer *byte
	trailer, m.spillBuf = storeChunk(m.arena, m.spillBuf, m.spillBuf, s.headMint(), s.maxt, chunkenc.EncXOR, s.last)
	return trailer
}

// snapshot appends to dst the chunks that overlap [mint, maxt], oldest
// first, the open one as a copy, and returns dst, unchanged if none
// overlap, and the series' start time changes. With a copier, trailers
// are read and closed chunks copied with it, and the open chunk is copied
// into its memory (see chunkCopier); without, they are read in place and
// the open chunk is copied on the heap.
func (s *memSeries) snapshot(dst []chunkenc.Meta, mint, maxt int64, rd *chunkCopier) ([]chunkenc.Meta, []chunkenc.StartTime, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dst, err := s.chunksIn(dst, mint, maxt, rd)
	if err != nil {
		return dst, nil, err
	}
	return dst, s.startsSnapshot(), nil
}

// chunksIn is snapshot's, without the start times. mu must be held.
func (s *memSeries) chunksIn(dst []chunkenc.Meta, mint, maxt int64, rd *chunkCopier) ([]chunkenc.Meta, error) {
	// The closed chunks that overlap, newest first: chunks are sorted and
	// disjoint, so the walk ends at the first that ends before mint or
	// starts at or before it (a trailer read less per series where mint
	// falls in a chunk, as a delta checkpoint's mostly does). Most
	// series have a few. All end before the open chunk starts: a query
	// of the open chunk's time alone reads no trailer, so that the pages
	// of the arena's files stay out of the process' memory.
	var (
		arr  [4]chunkenc.Meta
		hit  = arr[:0]
		p    = s.last
		c    headChunk
		err  error
		open = s.hasOpenSamples() && s.maxt >= mint && s.headMint() <= maxt
		walk = s.nChunks
	)
	if s.hasOpenSamples() && s.headMint() <= mint {
		walk = 0
	}
	for range walk {
		if c, p, err = rd.chunkAt(p); err != nil {
			return dst, err
		}
		if c.maxt() < mint {
			break
		}
		if c.mint <= maxt {
			// Read now: the copier read the chunk with its trailer.
			m := c.meta()
			if m.Data, err = rd.read(m.Data); err != nil {
				return dst, err
			}
			hit = append(hit, m)
		}
		if c.mint <= mint {
			// The chunks before end before this one starts.
			break
		}
	}
	n := len(hit)
	if open {
		n++
	}
	// Room for the chunks at once, rather than growing dst by doubling
	// (a querier's dst is nil for each series).
	dst = slices.Grow(dst, n)
	for i := len(hit) - 1; i >= 0; i-- {
		dst = append(dst, hit[i])
	}
	if open {
		var data []byte
		if rd == nil {
			data = s.openCopy()
		} else if data, err = rd.open(s); err != nil {
			return dst, err
		}
		dst = append(dst, chunkenc.Meta{Data: data, MinT: s.headMint(), MaxT: s.maxt, Enc: s.open})
	}
	return dst, nil
}

// stripeSeries holds all series of the head, findable by ref (refs, read
// without a lock) and by label hash. The hash table is striped so that
// appenders creating different series rarely share a lock: a series is in
// stripe hash&mask, guarded by its lock. symbols holds the series' label
// strings.
//
// The series live in cells, a numbered pool, and the tables name them by
// number (see cellPool.allocNumbered): 4 bytes where a pointer takes 8,
// in the hash table's slots with 4 bytes of the hash where it took 8.
type stripeSeries struct {
	mask    uint64
	stripes []seriesStripe
	refs    *refTable
	symbols *symbolTable
	cells   cellPool
}

func newStripeSeries(stripes int) *stripeSeries {
	s := &stripeSeries{
		mask:    uint64(stripes - 1),
		stripes: make([]seriesStripe, stripes),
		refs:    newRefTable(),
		symbols: newSymbolTable(),
	}
	s.cells.numbered = true
	return s
}

// seriesAt returns the series numbered num in cells.
func seriesAt(cells *cellPool, num uint32) *memSeries { return (*memSeries)(cells.cell(num)) }

func (s *stripeSeries) getByRef(ref storage.SeriesRef) *memSeries {
	if num := s.refs.get(ref); num != 0 {
		return seriesAt(&s.cells, num)
	}
	return nil
}

func (s *stripeSeries) getByHash(hash uint64, lset labels.Labels) *memSeries {
	st := &s.stripes[hash&s.mask]
	st.RLock()
	ms := st.get(hash, lset, s.symbols, &s.cells)
	st.RUnlock()
	return ms
}

// getOrSet returns the series with lset's labels, adding a new zero one,
// made ready by init, if there is none. created tells which happened. It
// fails if cells has no room for another series, or init fails.
//
// Cells of one size are handed out in address order: the series a
// fleet's requests create one after another lie one after another, as
// the receivers then append to them, which the processor's prefetcher
// follows. Truncate frees removed series (see retireSeries).
func (s *stripeSeries) getOrSet(hash uint64, lset labels.Labels, init func(*memSeries) error) (ms *memSeries, created bool, err error) {
	st := &s.stripes[hash&s.mask]
	st.Lock()
	if ms = st.get(hash, lset, s.symbols, &s.cells); ms != nil {
		st.Unlock()
		return ms, false, nil
	}
	p, num, err := s.cells.allocNumbered(int(unsafe.Sizeof(memSeries{})))
	if err != nil {
		st.Unlock()
		return nil, false, err
	}
	ms = (*memSeries)(p)
	if err := init(ms); err != nil {
		s.cells.free((*byte)(p))
		st.Unlock()
		return nil, false, err
	}
	st.set(hash, num)
	st.Unlock()
	s.refs.add(ms.ref, num)
	return ms, true, nil
}

// all yields every series, in the order of their refs. Series created or
// removed meanwhile may or may not be yielded.
func (s *stripeSeries) all() iter.Seq[*memSeries] {
	return func(yield func(*memSeries) bool) {
		for num := range s.refs.all() {
			if !yield(seriesAt(&s.cells, num)) {
				return
			}
		}
	}
}
