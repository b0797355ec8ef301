package head

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/record"
	"github.com/strata-db/strata/internal/storage"
	"github.com/strata-db/strata/internal/wal"
)

// Replay tuning. A batch is what the dispatcher hands a worker at once: big
// enough that a channel operation per batch costs nothing next to
// appending its samples, small enough that all batches in flight stay in
// the CPU caches (1024 samples are 24 KiB).
const (
	replayBatchSize = 1024
	// replayQueueDepth batches may wait per worker, so that a worker
	// that is briefly slower does not stall the dispatcher.
	replayQueueDepth = 8
)

// loader rebuilds the head from checkpoint and WAL records.
//
// The goroutine reading the log (the dispatcher) decodes every record. It
// creates series itself, so that a series exists before any sample that
// refers to it is applied, and it shards samples to workers by series ref:
// one worker appends all samples of a series, in log order, and no worker
// sees another's samples. Workers keep their own ref -> series cache, and
// batches go back and forth through a free list, so steady-state replay
// allocates nothing per sample.
type loader struct {
	h   *Head
	dec record.Decoder

	series      []record.RefSeries
	chunkSeries []record.RefChunkSeries
	samples     []record.RefSample
	hists       []record.RefHistogramSample
	fhists      []record.RefFloatHistogramSample
	starts      []record.RefStartTime
	stones      []record.RefTombstone
	metadata    []record.RefMetadata
	exemplars   []record.RefExemplar
	// buf is restoreChunks' scratch; restored counts the samples of the
	// chunks it restored.
	buf      []byte
	restored uint64
	// delta is set while a delta checkpoint is read: its entries are
	// merged (mergeChunks), and those without labels name a series an
	// earlier checkpoint held. unknownEntries counts those of a series
	// none did. popped, kept and m are mergeChunks' memory.
	delta          bool
	unknownEntries int
	popped         []headChunk
	kept           []lateSample
	m              *chunkMem
	// aliases maps the ref of a series record whose labels already belong
	// to another ref onto that ref. It stays empty unless a series was
	// logged twice under different refs.
	aliases map[storage.SeriesRef]storage.SeriesRef

	workers []*replayWorker
	pending []*replayBatch // per worker, the batch being filled
	free    chan *replayBatch
	wg      sync.WaitGroup
}

// replayCacheMaxSlots bounds a worker's slice cache: 2^22 slots are
// 64 MiB, for the few seconds replay lasts. Refs beyond it (only after
// tens of millions of series were created) use the map.
const replayCacheMaxSlots = 1 << 22

type replayWorker struct {
	h    *Head
	in   chan *replayBatch
	free chan<- *replayBatch
	// Refs are handed out one after another, so those of one worker
	// (ref % workers) are dense in ref / workers: a slice indexed by that
	// finds a series without hashing. Profiles of replay showed the map
	// lookup per sample as its largest cost.
	slots   []replaySlot
	workers uint64
	cache   map[storage.SeriesRef]replaySlot
	last    replaySlot // the series of the previous sample
	// grouped holds float samples in log order until applyGrouped
	// applies them a series at a time; counts (by slot), touched (the
	// slots with samples, in the order first met) and sorted are its
	// memory.
	grouped []record.RefSample
	sorted  []record.RefSample
	counts  []uint32
	touched []uint32
	// deferred holds the samples at or before their series' floor, for
	// applyDeferred; held, runBuf, kept and keys are its memory.
	deferred replayBatch
	held     heldChecker
	runBuf   []lateSample
	kept     []lateSample
	keys     []uint64
	// Counts, read after the worker is done, and the time range of the
	// samples appended. inCheckpoint counts the samples the checkpoint
	// held already.
	appended, unknown, rejected, inCheckpoint uint64
	mint, maxt                                int64
}

// replaySlot is a series as a worker knows it: floor is its newest
// sample when the worker first met it, before any sample of the log was
// applied to it, which is the newest sample its checkpoint entry
// restored (math.MinInt64 for none). Only the worker applies samples to
// the series, so that is still true when it meets it again.
type replaySlot struct {
	s     *memSeries
	floor int64
}

// replayDeferMax is how many samples a worker defers (see applyDeferred)
// before it checks those it has: 24 MiB of float samples. The more it
// holds, the more of a series' samples share a chunk's decoding; a
// checkpoint written while samples came in at a million a second for ten
// seconds leaves ten million in the log that it holds too.
const replayDeferMax = 1 << 20

func newLoader(h *Head, workers int) *loader {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	l := &loader{
		h: h,
		// Checkpoint chunks are copied into the arena as they are
		// restored, so the decoder need not copy them first.
		dec:     record.Decoder{AliasChunks: true},
		aliases: map[storage.SeriesRef]storage.SeriesRef{},
		pending: make([]*replayBatch, workers),
		free:    make(chan *replayBatch, workers*(replayQueueDepth+2)),
	}
	for range cap(l.free) {
		l.free <- newReplayBatch()
	}
	for i := range workers {
		w := &replayWorker{
			h:       h,
			mint:    math.MaxInt64,
			maxt:    math.MinInt64,
			in:      make(chan *replayBatch, replayQueueDepth),
			free:    l.free,
			workers: uint64(workers),
			cache:   map[storage.SeriesRef]replaySlot{},
		}
		l.workers = append(l.workers, w)
		l.pending[i] = <-l.free
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			w.run()
		}()
	}
	return l
}

// apply handles one record. rec is only valid during the call.
func (l *loader) apply(rec []byte) error {
	var err error
	switch record.Kind(rec) {
	case record.Series:
		if l.series, err = l.dec.Series(rec, l.series[:0]); err != nil {
			return err
		}
		for _, rs := range l.series {
			if _, err := l.createSeries(rs.Ref, rs); err != nil {
				return err
			}
		}
	case record.Samples:
		if l.samples, err = l.dec.Samples(rec, l.samples[:0]); err != nil {
			return err
		}
		l.dispatch(l.samples)
	case record.HistogramSamples:
		if l.hists, err = l.dec.HistogramSamples(rec, l.hists[:0]); err != nil {
			return err
		}
		l.dispatchHistograms(l.hists)
	case record.FloatHistogramSamples:
		if l.fhists, err = l.dec.FloatHistogramSamples(rec, l.fhists[:0]); err != nil {
			return err
		}
		l.dispatchFloatHistograms(l.fhists)
	case record.ChunkSeries:
		if l.chunkSeries, err = l.dec.ChunkSeries(rec, l.chunkSeries[:0]); err != nil {
			return err
		}
		for _, cs := range l.chunkSeries {
			if l.delta && cs.Labels.IsEmpty() {
				// A series an earlier checkpoint holds, by ref.
				ref := cs.Ref
				if a, ok := l.aliases[ref]; ok {
					ref = a
				}
				s := l.h.series.getByRef(ref)
				if s == nil {
					l.unknownEntries++
					continue
				}
				if err := l.restoreChunks(s, cs); err != nil {
					return err
				}
				continue
			}
			s, err := l.createSeries(cs.Ref, record.RefSeries{Ref: cs.Ref, Labels: cs.Labels})
			if err != nil {
				return err
			}
			if err := l.restoreChunks(s, cs); err != nil {
				return err
			}
		}
		// Let go of labels and chunk bytes, keeping the chunk lists'
		// arrays for the decoder to reuse.
		for i := range l.chunkSeries {
			clear(l.chunkSeries[i].Chunks)
			l.chunkSeries[i] = record.RefChunkSeries{Chunks: l.chunkSeries[i].Chunks[:0]}
		}
	case record.StartTimes:
		if l.starts, err = l.dec.StartTimes(rec, l.starts[:0]); err != nil {
			return err
		}
		for _, e := range l.starts {
			if a, ok := l.aliases[e.Ref]; ok {
				e.Ref = a
			}
			// Changes are kept by time, independent of the samples the
			// workers may still be applying.
			if s := l.h.series.getByRef(e.Ref); s != nil {
				s.mu.Lock()
				s.setStart(e.T, e.ST, &l.h.series.cells)
				s.mu.Unlock()
			}
		}
	case record.Tombstones:
		if l.stones, err = l.dec.Tombstones(rec, l.stones[:0]); err != nil {
			return err
		}
		// Tombstones say which samples queries skip, whenever they were
		// appended: the order of the log's records does not matter.
		for i, e := range l.stones {
			if a, ok := l.aliases[e.Ref]; ok {
				l.stones[i].Ref = a
			}
		}
		l.h.addTombstones(l.stones)
	case record.Metadata:
		if l.metadata, err = l.dec.Metadata(rec, l.metadata[:0]); err != nil {
			return err
		}
		l.h.metadata.set(l.metadata)
	case record.Exemplars:
		if l.exemplars, err = l.dec.Exemplars(rec, l.exemplars[:0]); err != nil {
			return err
		}
		for i := range l.exemplars {
			if a, ok := l.aliases[l.exemplars[i].Ref]; ok {
				l.exemplars[i].Ref = a
			}
		}
		l.h.exemplars.add(l.exemplars, l.h.seriesLabels)
		clear(l.exemplars)
	case record.Compressed:
		inner, err := l.dec.Decompress(rec)
		if err != nil {
			return err
		}
		// inner is valid until the next Decompress: apply is done with
		// it when it returns.
		return l.apply(inner)
	default:
		return fmt.Errorf("unknown record type %d", rec[0])
	}
	return nil
}

// createSeries adds a series from a record, noting an alias if its labels
// already have another ref.
func (l *loader) createSeries(ref storage.SeriesRef, rs record.RefSeries) (*memSeries, error) {
	h := l.h
	s, err := h.getOrCreate(rs.Labels.Hash(), rs.Labels, ref)
	if err != nil {
		return nil, err
	}
	if s.ref != ref {
		l.aliases[ref] = s.ref
	}
	s.mu.Lock()
	s.state |= seriesLogged
	s.mu.Unlock()
	if uint64(ref) > h.lastRef.Load() {
		h.lastRef.Store(uint64(ref))
	}
	return s, nil
}

// restoreChunks gives a series the chunks of its checkpoint entry. All of
// them become closed chunks: the next sample starts a new one. In a delta
// (l.delta) they are merged into those the series has (mergeChunks).
func (l *loader) restoreChunks(s *memSeries, cs record.RefChunkSeries) error {
	if len(cs.Chunks) == 0 {
		return nil
	}
	if err := checkRestored(cs); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.nChunks == 0 || s.maxt == math.MinInt64:
		l.store(s, cs)
		return nil
	case l.delta:
		return l.mergeChunks(s, cs)
	}
	// The series already has samples: this checkpoint entry duplicates
	// another. Keep what is there.
	return nil
}

// checkRestored checks the chunks of a checkpoint entry.
func checkRestored(cs record.RefChunkSeries) error {
	for _, c := range cs.Chunks {
		switch c.Enc {
		case chunkenc.EncXOR, chunkenc.EncDecimal, chunkenc.EncHistogram, chunkenc.EncFloatHistogram:
		default:
			return fmt.Errorf("series %s: unknown chunk encoding %d", cs.Labels, c.Enc)
		}
		// c.Data aliases the record being replayed.
		if c.MaxT < c.MinT || c.MaxT-c.MinT > maxChunkSpan || len(c.Data) < 2 || len(c.Data) >= 1<<sizeBits {
			return fmt.Errorf("series %s: a chunk of %d bytes spans [%d, %d], beyond what a head chunk may", cs.Labels, len(c.Data), c.MinT, c.MaxT)
		}
	}
	for i := 1; i < len(cs.Chunks); i++ {
		if cs.Chunks[i].MinT <= cs.Chunks[i-1].MaxT {
			return fmt.Errorf("series %s: chunks [%d, %d] and [%d, %d] overlap", cs.Labels, cs.Chunks[i-1].MinT, cs.Chunks[i-1].MaxT, cs.Chunks[i].MinT, cs.Chunks[i].MaxT)
		}
	}
	return nil
}

// store appends the chunks of a checkpoint entry, checked, to the series'
// closed chunks, all of which end before them, and makes its newest
// sample theirs. mu must be held.
func (l *loader) store(s *memSeries, cs record.RefChunkSeries) {
	for _, c := range cs.Chunks {
		// Every encoding starts with its count of samples.
		l.restored += uint64(binary.BigEndian.Uint16(c.Data))
	}
	s.last, l.buf = storeChunks(l.h.arena, l.buf, cs.Chunks, s.last)
	s.nChunks += uint32(len(cs.Chunks))
	l.h.widenTimes(cs.Chunks[0].MinT, cs.Chunks[len(cs.Chunks)-1].MaxT)
	s.maxt = cs.Chunks[len(cs.Chunks)-1].MaxT
	s.lastV = cs.LastV
}

// mergeChunks merges the chunks of a delta checkpoint's entry, checked,
// into those the checkpoints before gave the series. The entry's chunks
// are what the head held over their times when the delta was written:
// each restored chunk they overlap gives way, and only its samples
// outside their times are kept, inserted like late samples. The entry
// holds the series' newest chunk, so those are older than its newest
// sample. Mostly the only chunk to give way is the open chunk the last
// checkpoint held, which the entry's first chunk holds whole, grown: it
// is dropped without decoding. mu must be held.
func (l *loader) mergeChunks(s *memSeries, cs record.RefChunkSeries) error {
	// The chain's newest chunks that end at or after the entry's first
	// start give way, newest first.
	from := cs.Chunks[0].MinT
	popped := l.popped[:0]
	for s.nChunks > 0 {
		c, prev := chunkAt(s.last)
		if c.maxt() < from {
			break
		}
		popped = append(popped, c)
		s.last = prev
		s.nChunks--
	}
	if s.nChunks == 0 {
		s.last = nil
	}
	l.store(s, cs)
	kept := l.kept[:0]
	var err error
	for i := len(popped) - 1; i >= 0; i-- {
		c := popped[i]
		l.restored -= uint64(binary.BigEndian.Uint16(c.bytes()))
		if !within(c.mint, c.maxt(), cs.Chunks) {
			n := len(kept)
			if kept, err = decodeSamples(kept, c.bytes(), c.encoding()); err != nil {
				return fmt.Errorf("series %s: decode a restored chunk: %w", cs.Labels, err)
			}
			kept = append(kept[:n], outside(kept[n:], cs.Chunks)...)
		}
		l.h.arena.release(c.bytes())
	}
	clear(popped)
	l.popped = popped[:0]
	if len(kept) > 0 {
		m := l.chunkMem()
		// None is at or after the series' newest sample: that is the
		// entry's, and the head held it with all that came before.
		// Were one there, the delta would be damaged; it is dropped.
		in := kept[:0]
		for _, x := range kept {
			if x.t < s.maxt {
				in = append(in, x)
			}
		}
		l.restored += uint64(len(in))
		s.insertRun(in, m, func(int, bool, error) {})
		for i, data := range m.retired {
			l.h.arena.release(data)
			m.retired[i] = nil
		}
		m.retired = m.retired[:0]
		clear(kept)
	}
	l.kept = kept[:0]
	return nil
}

// within reports whether [mint, maxt] lies within one of cs' chunks.
func within(mint, maxt int64, cs []chunkenc.Meta) bool {
	for _, c := range cs {
		if c.MinT <= mint && maxt <= c.MaxT {
			return true
		}
	}
	return false
}

// outside returns the samples of xs, sorted, that lie in none of cs'
// chunks' times, in xs' memory.
func outside(xs []lateSample, cs []chunkenc.Meta) []lateSample {
	out := xs[:0]
	j := 0
	for _, x := range xs {
		for j < len(cs) && cs[j].MaxT < x.t {
			j++
		}
		if j < len(cs) && cs[j].MinT <= x.t {
			continue
		}
		out = append(out, x)
	}
	return out
}

// chunkMem returns the loader's chunk memory for mergeChunks' inserts.
func (l *loader) chunkMem() *chunkMem {
	if l.m == nil {
		h := l.h
		l.m = &chunkMem{samples: h.opts.ChunkSamples, blockRange: h.opts.BlockRange, arena: h.arena, series: &h.series.cells, noSpill: true}
	}
	return l.m
}

// dispatch shards float samples to the workers.
func (l *loader) dispatch(samples []record.RefSample) {
	for _, s := range samples {
		i := l.shard(&s.Ref)
		b := l.pending[i]
		if len(b.hists) > 0 || len(b.fhists) > 0 {
			b = l.handOver(i)
		}
		b.floats = append(b.floats, s)
		if b.len() >= replayBatchSize {
			l.handOver(i)
		}
	}
}

// dispatchHistograms shards integer histogram samples to the workers.
func (l *loader) dispatchHistograms(samples []record.RefHistogramSample) {
	for _, s := range samples {
		i := l.shard(&s.Ref)
		b := l.pending[i]
		if len(b.fhists) > 0 {
			b = l.handOver(i)
		}
		b.addHistogram(s)
		if b.len() >= replayBatchSize {
			l.handOver(i)
		}
	}
}

// dispatchFloatHistograms shards float histogram samples to the workers.
func (l *loader) dispatchFloatHistograms(samples []record.RefFloatHistogramSample) {
	for _, s := range samples {
		i := l.shard(&s.Ref)
		b := l.pending[i]
		b.addFloatHistogram(s)
		if b.len() >= replayBatchSize {
			l.handOver(i)
		}
	}
}

// shard resolves an aliased ref and returns the worker of its series.
func (l *loader) shard(ref *storage.SeriesRef) uint64 {
	if a, ok := l.aliases[*ref]; ok {
		*ref = a
	}
	return uint64(*ref) % uint64(len(l.workers))
}

// handOver sends worker i its pending batch and returns the next, empty one.
func (l *loader) handOver(i uint64) *replayBatch {
	l.workers[i].in <- l.pending[i]
	b := <-l.free
	l.pending[i] = b
	return b
}

// finish hands out the last batches, waits for the workers and returns
// their counts.
func (l *loader) finish() (appended, unknown, rejected, inCheckpoint uint64) {
	for i, w := range l.workers {
		if l.pending[i].len() > 0 {
			w.in <- l.pending[i]
		}
		close(w.in)
	}
	l.wg.Wait()
	for _, w := range l.workers {
		appended += w.appended
		unknown += w.unknown
		rejected += w.rejected
		inCheckpoint += w.inCheckpoint
		if w.appended > 0 {
			l.h.widenTimes(w.mint, w.maxt)
		}
	}
	return appended, unknown, rejected, inCheckpoint
}

func (w *replayWorker) run() {
	// Open chunks spill once replay is done (spillReplayed).
	m := &chunkMem{samples: w.h.opts.ChunkSamples, blockRange: w.h.opts.BlockRange, arena: w.h.arena, series: &w.h.series.cells, noSpill: true}
	for b := range w.in {
		for _, rs := range b.floats {
			w.addFloat(rs, m)
		}
		if len(b.hists) > 0 || len(b.fhists) > 0 {
			// A series' floats come before its histograms of the batch.
			w.applyGrouped(m)
		}
		for _, rs := range b.hists {
			// Histograms were validated before they were logged; a log
			// damaged in a way its checksums missed must not crash replay.
			if rs.H.Validate() != nil {
				w.rejected++
				continue
			}
			w.applyHistogram(rs.Ref, rs.T, rs.H, nil, m)
		}
		for _, rs := range b.fhists {
			if rs.FH.Validate() != nil {
				w.rejected++
				continue
			}
			w.applyHistogram(rs.Ref, rs.T, nil, rs.FH, m)
		}
		if w.deferred.len() >= replayDeferMax {
			w.applyDeferred(m)
		}
		w.retire(m)
		b.reset()
		w.free <- b
	}
	w.applyGrouped(m)
	w.applyDeferred(m)
	w.retire(m)
}

// replayGroupMax is how many float samples a worker groups by series
// (see applyGrouped) before it applies them: 6 MiB. The log holds a
// sample of each of thousands of series before the next of any one, so
// the more it groups, the more samples of a series share a trip to its
// memory.
const replayGroupMax = 1 << 18

// addFloat applies a float sample: it groups it with the other samples
// of its series (applyGrouped), defers it (applyDeferred) or, for a
// series beyond the slots, applies it at once.
func (w *replayWorker) addFloat(rs record.RefSample, m *chunkMem) {
	slot := uint64(rs.Ref) / w.workers
	sl := w.lookup(rs.Ref)
	switch {
	case sl.s == nil:
		w.unknown++
	case rs.T < sl.floor:
		if w.deferred.floats == nil {
			// Room at once for as many as are applied together: grown
			// by appending, the slice was copied some thirty times on
			// its way to a million, a sixth of a restart's CPU. Its
			// pages are touched only as it fills.
			w.deferred.floats = make([]record.RefSample, 0, replayDeferMax)
		}
		w.deferred.floats = append(w.deferred.floats, rs)
	case slot >= uint64(len(w.slots)):
		sl.s.mu.Lock()
		ok, err := sl.s.applyFloat(rs.T, rs.V, m)
		sl.s.mu.Unlock()
		w.count(rs.T, ok, err)
	default:
		if w.grouped == nil {
			w.grouped = make([]record.RefSample, 0, replayGroupMax)
		}
		if len(w.grouped) == cap(w.grouped) {
			// Applied when full rather than grown: a batch could take
			// it past its capacity, and a copy of 6 MiB into new
			// memory cost more than the grouping saves.
			w.applyGrouped(m)
		}
		if slot >= uint64(len(w.counts)) {
			w.counts = slices.Grow(w.counts, len(w.slots)-len(w.counts))[:len(w.slots)]
		}
		if w.counts[slot] == 0 {
			w.touched = append(w.touched, uint32(slot))
		}
		w.counts[slot]++
		w.grouped = append(w.grouped, rs)
	}
}

// applyGrouped applies the grouped float samples a series at a time, in
// log order within each. Applied in log order, each sample met a series
// other than the previous one's: a profile of a restart put a fifth of
// its CPU on the first read of the open chunk's memory, and a tenth on
// locking the series, both waiting for memory.
func (w *replayWorker) applyGrouped(m *chunkMem) {
	if len(w.grouped) == 0 {
		return
	}
	// A counting sort, stable: counts become each series' offset in
	// sorted, then the end of its samples.
	var off uint32
	for _, slot := range w.touched {
		n := w.counts[slot]
		w.counts[slot] = off
		off += n
	}
	if w.sorted == nil {
		w.sorted = make([]record.RefSample, replayGroupMax)
	}
	w.sorted = w.sorted[:len(w.grouped)]
	for _, rs := range w.grouped {
		slot := uint64(rs.Ref) / w.workers
		w.sorted[w.counts[slot]] = rs
		w.counts[slot]++
	}
	start := uint32(0)
	for _, slot := range w.touched {
		end := w.counts[slot]
		s := w.slots[slot].s
		s.mu.Lock()
		for _, rs := range w.sorted[start:end] {
			ok, err := s.applyFloat(rs.T, rs.V, m)
			w.count(rs.T, ok, err)
		}
		s.mu.Unlock()
		w.counts[slot] = 0
		start = end
	}
	w.grouped, w.touched = w.grouped[:0], w.touched[:0]
}

// retire frees the chunks late samples replaced: no reader runs during
// replay.
func (w *replayWorker) retire(m *chunkMem) {
	for i, data := range m.retired {
		w.h.arena.release(data)
		m.retired[i] = nil
	}
	m.retired = m.retired[:0]
}

// applyHistogram applies a histogram to the series of ref, as Commit did,
// or defers it (see applyDeferred).
func (w *replayWorker) applyHistogram(ref storage.SeriesRef, t int64, h *histogram.Histogram, fh *histogram.FloatHistogram, m *chunkMem) {
	s := w.series(ref)
	switch {
	case s == nil:
	case t < w.last.floor && h != nil:
		w.deferred.addHistogram(record.RefHistogramSample{Ref: ref, T: t, H: h})
	case t < w.last.floor:
		w.deferred.addFloatHistogram(record.RefFloatHistogramSample{Ref: ref, T: t, FH: fh})
	default:
		s.mu.Lock()
		ok, err := s.applyHistogram(t, h, fh, m)
		s.mu.Unlock()
		w.count(t, ok, err)
	}
}

// Samples older than their series' floor (replaySlot) are deferred: the
// checkpoint most likely holds them, since it was written while they
// came in, after the segment they are in was started; a sample it does
// not hold was applied as a late one after the checkpoint read its
// series. Applied as they come, each would decode the chunk it falls in
// to find itself there. applyDeferred checks them a series' run at a
// time, in time order, decoding each chunk once (dropHeld), and inserts
// those the series lacks as late samples.
//
// Applying them after samples that followed them in the log gives the
// same series: those are newer than the floor, and the deferred ones
// older, so no sample of one kind decides whether one of the other is
// taken. Among deferred samples at one time, the first in the log is
// taken, as it was by Commit.

// applyDeferred checks and applies the deferred samples, floats first,
// then integer and float histograms, as a batch's.
func (w *replayWorker) applyDeferred(m *chunkMem) {
	d := &w.deferred
	apply := func(ref storage.SeriesRef, run []lateSample) { w.applyRun(ref, run, m) }
	w.eachRun(len(d.floats), func(i int) storage.SeriesRef { return d.floats[i].Ref },
		func(i int) lateSample { return lateSample{t: d.floats[i].T, v: d.floats[i].V} }, apply)
	w.eachRun(len(d.hists), func(i int) storage.SeriesRef { return d.hists[i].Ref },
		func(i int) lateSample { return lateSample{t: d.hists[i].T, h: d.hists[i].H} }, apply)
	w.eachRun(len(d.fhists), func(i int) storage.SeriesRef { return d.fhists[i].Ref },
		func(i int) lateSample { return lateSample{t: d.fhists[i].T, fh: d.fhists[i].FH} }, apply)
	clear(w.runBuf[:cap(w.runBuf)])
	d.reset()
}

// Deferred samples are grouped by series through keys of a ref and an
// index, sorted: the index keeps them in log order within a series.
// Sorting the samples themselves, stably, took 9% of a restart's CPU.
const (
	runIndexBits = 24 // more than replayDeferMax and a batch
	runMaxRef    = 1<<(64-runIndexBits) - 1
)

// eachRun calls apply with the runs of n deferred samples, the ith
// sample(i) of the series ref(i): a series' samples at a time, in log
// order. run is w.runBuf, valid until apply returns.
func (w *replayWorker) eachRun(n int, ref func(int) storage.SeriesRef, sample func(int) lateSample, apply func(ref storage.SeriesRef, run []lateSample)) {
	// Room at once, as for the deferred samples: grown by appending,
	// the keys took a twentieth of a restart's CPU in copies.
	w.keys = slices.Grow(w.keys[:0], n)
	large := false
	for i := range n {
		r := ref(i)
		if large = r > runMaxRef; large {
			break
		}
		w.keys = append(w.keys, uint64(r)<<runIndexBits|uint64(i))
	}
	if large {
		// Refs beyond 2^40 series created: indexes, sorted stably.
		w.keys = w.keys[:0]
		for i := range n {
			w.keys = append(w.keys, uint64(i))
		}
		slices.SortStableFunc(w.keys, func(a, b uint64) int { return cmp.Compare(ref(int(a)), ref(int(b))) })
	} else {
		slices.Sort(w.keys)
	}
	index := func(k uint64) int { return int(k & (1<<runIndexBits - 1)) }
	for k := 0; k < len(w.keys); {
		r, run := ref(index(w.keys[k])), w.runBuf[:0]
		for ; k < len(w.keys) && ref(index(w.keys[k])) == r; k++ {
			run = append(run, sample(index(w.keys[k])))
		}
		w.runBuf = run
		apply(r, run)
	}
}

// applyRun applies the deferred samples of one series, in log order.
func (w *replayWorker) applyRun(ref storage.SeriesRef, run []lateSample, m *chunkMem) {
	s := w.series(ref)
	slices.SortStableFunc(run, func(a, b lateSample) int { return cmp.Compare(a.t, b.t) })
	s.mu.Lock()
	defer s.mu.Unlock()
	kept, conflicts, err := s.dropHeld(run, w.kept[:0], &w.held)
	w.kept = kept
	if err != nil {
		// A chunk the checkpoint restored is damaged: inserting into
		// it would fail the same way.
		w.rejected += uint64(len(run))
		return
	}
	w.rejected += uint64(conflicts)
	w.inCheckpoint += uint64(len(run) - len(kept) - conflicts)
	s.insertRun(kept, m, func(i int, ok bool, err error) { w.count(kept[i].t, ok, err) })
	clear(kept)
}

// count counts a sample at t applied as Commit did: samples that were
// dropped when first applied (a concurrent writer got there first), and
// samples a checkpoint already holds, are rejected again.
func (w *replayWorker) count(t int64, ok bool, err error) {
	switch {
	case err != nil:
		w.rejected++
	case ok:
		w.appended++
		w.mint, w.maxt = min(w.mint, t), max(w.maxt, t)
	}
}

// series returns the series of ref, counting a sample of an unknown one,
// and makes it w.last. The series of the previous sample is checked
// first: a batch often holds runs of one series.
func (w *replayWorker) series(ref storage.SeriesRef) *memSeries {
	if w.last.s != nil && w.last.s.ref == ref {
		return w.last.s
	}
	sl := w.lookup(ref)
	if sl.s == nil {
		w.unknown++
		return nil
	}
	w.last = sl
	return sl.s
}

func (w *replayWorker) lookup(ref storage.SeriesRef) replaySlot {
	slot := uint64(ref) / w.workers
	if slot < uint64(len(w.slots)) {
		if sl := w.slots[slot]; sl.s != nil {
			return sl
		}
	} else if sl, ok := w.cache[ref]; ok {
		return sl
	}
	s := w.h.series.getByRef(ref)
	if s == nil {
		return replaySlot{}
	}
	s.mu.Lock()
	sl := replaySlot{s: s, floor: s.maxt}
	s.mu.Unlock()
	switch {
	case slot < uint64(len(w.slots)):
		w.slots[slot] = sl
	case slot < replayCacheMaxSlots:
		w.slots = slices.Grow(w.slots, int(slot)+1-len(w.slots))
		w.slots = w.slots[:cap(w.slots)]
		w.slots[slot] = sl
	default:
		w.cache[ref] = sl
	}
	return sl
}

// replay rebuilds the head from the newest checkpoint and the WAL segments
// written since.
func (h *Head) replay() error {
	start := time.Now()
	l := newLoader(h, h.opts.ReplayWorkers)
	var (
		stats [2]wal.ReplayStats
		// walStart is when the checkpoint was read and the WAL's
		// segments since began.
		walStart = start
		nDeltas  int
	)
	err := func() error {
		full, deltas, from, err := checkpointChain(h.fs(), h.opts.WALDir)
		if err != nil {
			return fmt.Errorf("find checkpoint: %w", err)
		}
		if full != "" {
			if stats[0], err = wal.Replay(full, wal.ReplayOptions{Logger: h.logger, FS: h.opts.WAL.FS}, l.apply); err != nil {
				return fmt.Errorf("read checkpoint %s: %w", full, err)
			}
			l.delta, nDeltas = true, len(deltas)
			for _, dir := range deltas {
				st, err := wal.Replay(dir, wal.ReplayOptions{Logger: h.logger, FS: h.opts.WAL.FS}, l.apply)
				if err != nil {
					return fmt.Errorf("read checkpoint %s: %w", dir, err)
				}
				stats[0].Bytes += st.Bytes
				stats[0].DroppedBytes += st.DroppedBytes
				stats[0].Repairs = append(stats[0].Repairs, st.Repairs...)
			}
			l.delta = false
			walStart = time.Now()
		}
		stats[1], err = wal.Replay(h.opts.WALDir, wal.ReplayOptions{From: from, Logger: h.logger, FS: h.opts.WAL.FS}, l.apply)
		return err
	}()
	appended, unknown, skipped, inCheckpoint := l.finish()
	if err != nil {
		return err
	}
	h.index.EnsureOrder()
	elapsed := time.Since(start)
	h.stats.replayedSamples.Add(appended)
	h.stats.replayedHeld.Add(inCheckpoint)
	h.stats.replayDurationNs.Store(int64(elapsed))
	if unknown > 0 {
		h.logger.Warn("WAL samples of unknown series dropped", "samples", unknown)
	}
	if l.unknownEntries > 0 {
		h.logger.Warn("delta checkpoint entries of unknown series dropped", "series", l.unknownEntries)
	}
	for _, st := range stats {
		if st.DroppedBytes > 0 {
			h.logger.Warn("damaged WAL or checkpoint repaired: data after the damage in the same segment was dropped",
				"places", len(st.Repairs), "dropped_bytes", st.DroppedBytes)
		}
	}
	// The WAL's rate is over the time after the checkpoint was read.
	walElapsed := elapsed - walStart.Sub(start)
	h.logger.Info("WAL replayed", "dir", h.opts.WALDir, "series", h.stats.series.Load(),
		"checkpoint_samples", l.restored, "checkpoint_duration", walStart.Sub(start),
		"samples", appended, "skipped_samples", skipped, "samples_in_checkpoint", inCheckpoint,
		"checkpoint_bytes", stats[0].Bytes, "deltas", nDeltas, "wal_bytes", stats[1].Bytes, "duration", elapsed,
		"samples_per_second", int64(float64(l.restored+appended)/max(elapsed.Seconds(), 1e-9)),
		"wal_samples_per_second", int64(float64(appended)/max(walElapsed.Seconds(), 1e-9)))
	return nil
}
