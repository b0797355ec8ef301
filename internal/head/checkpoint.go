package head

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/record"
	"github.com/strata-db/strata/internal/storage"
	"github.com/strata-db/strata/internal/vfs"
	"github.com/strata-db/strata/internal/wal"
)

// A checkpoint is the head's series and chunks written out at one point in
// the WAL: the directory checkpoint.N inside the WAL directory, itself
// written in the WAL's format (CRC-checked records, here ChunkSeries
// records), holds everything that WAL segments numbered below N held. Once
// it is complete those segments are deleted, so replay reads the compact
// chunks of the checkpoint plus only the segments since, and restart time
// is bounded by what the head holds, not by uptime.
//
// A full checkpoint holds every series. Between two full ones, delta
// checkpoints (checkpoint.N.delta) hold only what changed since the one
// before: the series created since, with their labels, and of the other
// series those that took samples since, by ref, with their chunks that
// end after the time deltaMarks gives (the open chunk at least). Replay
// reads the newest full checkpoint, the deltas after it in order (see
// loader.restoreChunks), and the WAL segments after the last. A delta costs
// what came in since the last checkpoint, not what the head holds, so
// one is written each time the WAL has grown by CheckpointMinBytes (or
// by twice the last delta's size, if larger): the WAL replay has to go
// through stays short, where a full checkpoint could only be written
// once the WAL had grown by the head's size. A full one is written once
// the deltas add up to the last full one, and after a truncation, whose
// dropped chunks the checkpoints before still hold.
//
// A checkpoint is written to its name plus .tmp and renamed when
// complete, so a crash while writing one leaves the previous checkpoints
// and their segments in place.

const (
	checkpointPrefix = "checkpoint."
	deltaSuffix      = ".delta"
	checkpointTmp    = ".tmp"
	// checkpointRecordBytes is the size at which a ChunkSeries record is
	// cut: large enough that framing costs nothing, small enough that
	// replay's read buffer and the writer's encode buffer stay small.
	checkpointRecordBytes = 1 << 20
	// checkpointRecordSlack is room beyond checkpointRecordBytes for the
	// series that crosses it: most take a few KiB.
	checkpointRecordSlack = 64 << 10
	// deltaGroups is how many groups of series deltaMarks keeps a time
	// for: 128 KiB.
	deltaGroups = 1 << 14
)

// deltaMarks knows, for each group of series (by ref), a time after which
// the chunks of its series may have changed since a checkpoint last read
// them: the newest sample a series had when it took its first sample
// after that read, or just before a late sample it took. A delta
// checkpoint writes a dirty series' chunks that end after its group's
// time. Keeping the time per group rather than per series saves a word
// in each series; a group's series mostly take samples at the same
// times, and where one lags the others, the delta holds more of their
// chunks than changed, which replay merges all the same.
type deltaMarks struct {
	next []atomic.Int64
}

// newDeltaMarks returns marks of n groups, deltaGroups but in tests.
func newDeltaMarks(n int) *deltaMarks {
	m := &deltaMarks{next: make([]atomic.Int64, n)}
	for i := range m.next {
		m.next[i].Store(math.MaxInt64)
	}
	return m
}

// group returns the time of series ref's group.
func (m *deltaMarks) group(ref storage.SeriesRef) *atomic.Int64 {
	return &m.next[uint64(ref)%uint64(len(m.next))]
}

// lower notes that series ref's chunks ending after t changed.
func (m *deltaMarks) lower(ref storage.SeriesRef, t int64) {
	g := m.group(ref)
	for {
		cur := g.Load()
		if cur <= t || g.CompareAndSwap(cur, t) {
			return
		}
	}
}

// take starts a checkpoint's pass: it returns the groups' times and
// starts them anew, for the series the pass reads after.
func (m *deltaMarks) take() []int64 {
	prev := make([]int64, len(m.next))
	for i := range m.next {
		prev[i] = m.next[i].Swap(math.MaxInt64)
	}
	return prev
}

// since returns the time after which the chunks of series ref, which the
// pass that took prev reads now, may have changed since the last
// checkpoint read it. The series' first sample after that read may have
// come after take, so the groups' new times count too.
func (m *deltaMarks) since(prev []int64, ref storage.SeriesRef) int64 {
	return min(prev[uint64(ref)%uint64(len(prev))], m.group(ref).Load())
}

// Checkpoint writes a checkpoint of the head, a full one or a delta, and
// deletes the WAL segments it covers (and, for a full one, the
// checkpoints before). It is safe to call while appenders commit; one
// checkpoint runs at a time.
func (h *Head) Checkpoint() error { return h.checkpoint(false) }

// checkpoint is Checkpoint; closing says the head is closing, so that no
// delta follows this checkpoint.
func (h *Head) checkpoint(closing bool) error {
	h.checkpointMu.Lock()
	defer h.checkpointMu.Unlock()
	n, walBytes, err := h.cutCheckpoint()
	if err != nil {
		return err
	}
	full := h.fullNext.Swap(false) || h.deltaBytes.Load() >= h.checkpointSize.Load()
	if err := h.writeCheckpointAt(n, walBytes, checkpointKind{full: full, closing: closing}); err != nil {
		// The pass may have marked series as written that are not: only
		// a full checkpoint is sure to hold everything again.
		h.fullNext.Store(true)
		return err
	}
	return nil
}

// cutCheckpoint starts the WAL segment n a checkpoint is taken at and
// returns n and the WAL's BytesWritten before it. checkpointMu must be
// held.
func (h *Head) cutCheckpoint() (n int, walBytes int64, err error) {
	// With commitMu held no commit is between logging and applying its
	// samples, so everything in segments below n is in memory.
	h.commitMu.Lock()
	defer h.commitMu.Unlock()
	walBytes = h.wal.BytesWritten()
	if n, err = h.wal.NextSegment(); err != nil {
		return 0, 0, fmt.Errorf("checkpoint: start WAL segment: %w", err)
	}
	return n, walBytes, nil
}

// checkpointName returns the directory of the full checkpoint or the
// delta of segment n.
func (h *Head) checkpointName(n int, full bool) string {
	name := checkpointPrefix + fmt.Sprintf("%08d", n)
	if !full {
		name += deltaSuffix
	}
	return filepath.Join(h.opts.WALDir, name)
}

// writeCheckpointAt writes the checkpoint of segment n, which
// cutCheckpoint started, and deletes what it covers. Commits go on
// meanwhile: the series it reads last hold samples logged in segment n
// and after, which replay then finds in the checkpoint (see
// replayWorker.applyDeferred). checkpointMu must be held.
func (h *Head) writeCheckpointAt(n int, walBytes int64, kind checkpointKind) error {
	full := kind.full
	dir := h.checkpointName(n, full)
	for _, d := range []string{h.checkpointName(n, true), dir} {
		if _, err := h.fs().Stat(d); err == nil {
			// Nothing was logged since that checkpoint. The head may
			// have been truncated since, but what the checkpoint holds
			// beyond it is in blocks, and the store truncates the head
			// again below its blocks when it opens.
			if full {
				h.fullNext.Store(true)
			}
			return nil
		}
	}
	reader := h.acquireReader(math.MinInt64)
	size, recordBytes, err := h.writeCheckpoint(dir, kind)
	h.releaseReader(reader)
	if full {
		// The checkpoint read every chunk; they need not stay resident.
		h.arena.dropResident()
	}
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	if err := h.wal.Truncate(n); err != nil {
		return fmt.Errorf("checkpoint: delete WAL segments below %d: %w", n, err)
	}
	h.checkpointWALBytes.Store(walBytes)
	if full {
		if err := removeCheckpointsBefore(h.fs(), h.opts.WALDir, n); err != nil {
			return err
		}
		h.checkpointSize.Store(recordBytes)
		h.deltaBytes.Store(0)
		h.lastDeltaBytes.Store(0)
	} else {
		h.deltaBytes.Add(recordBytes)
		h.lastDeltaBytes.Store(recordBytes)
	}
	h.logger.Info("checkpoint written", "dir", dir, "full", full, "bytes", size, "record_bytes", recordBytes)
	return nil
}

// checkpointKind is what checkpoint is written: a full one or a delta,
// and whether the head is closing.
type checkpointKind struct{ full, closing bool }

// writeCheckpoint writes the series a full checkpoint or a delta holds to
// dir, through a temporary directory, and returns the bytes written and
// the bytes of its records before compression.
func (h *Head) writeCheckpoint(dir string, kind checkpointKind) (written, recordBytes int64, err error) {
	full := kind.full
	tmp := dir + checkpointTmp
	if err := h.fs().RemoveAll(tmp); err != nil {
		return 0, 0, err
	}
	w, err := wal.Open(tmp, wal.Options{SegmentSize: math.MaxInt32, Logger: h.logger, FS: h.opts.WAL.FS})
	if err != nil {
		return 0, 0, err
	}
	// Each series is added to the record as soon as it is read: its
	// labels and its chunks' copies are reused for the next one, so that
	// a checkpoint allocates next to nothing per series (building each
	// series' labels anew was most of what a head of a million series
	// allocated while it took writes, and so set how often the collector
	// ran).
	//
	// Chunks are copied for the record: see chunkCopier. They are
	// closed chunks once restored, so float chunks are joined into
	// decimal chunks where that is smaller, as blocks store them; those
	// encoded anew are copied out of the densifier into the copier's
	// memory too. A join never crosses a block range, as no head chunk
	// does, and takes in the open chunk only when the head is closing:
	// otherwise the next delta holds that again, grown, and replay then
	// drops the one restored here whole rather than take it out of a
	// joined chunk.
	var (
		enc       record.ChunkSeriesEncoder
		buf       = make([]byte, 0, checkpointRecordBytes+checkpointRecordSlack)
		copier    = chunkCopier{arena: h.arena}
		densifier chunkenc.Densifier
		joined    []chunkenc.Meta
		pass      = checkpointPass{full: full, marks: h.marks, prev: h.marks.take()}
	)
	// Records are cut just past checkpointRecordBytes: room for that at
	// once, rather than growing to it by doubling in each checkpoint.
	enc.Grow(checkpointRecordBytes + checkpointRecordSlack)
	keep := func(c chunkenc.Meta, encoded bool) error {
		if encoded {
			data := copier.alloc(len(c.Data))
			copy(data, c.Data)
			c.Data = data
		}
		joined = append(joined, c)
		return nil
	}
	// log logs an uncompressed record, counting its bytes.
	log := func(rec []byte) error {
		recordBytes += int64(len(rec))
		return w.Log(rec)
	}
	flush := func() error {
		if enc.Len() == 0 {
			return nil
		}
		buf = enc.Record(buf[:0])
		recordBytes += int64(len(buf))
		return w.Log(h.compressor.Compress(buf))
	}
	var (
		starts []record.RefStartTime
		chunks []chunkenc.Meta // checkpointEntry's
		lb     labels.ScratchBuilder
	)
	for s := range h.series.all() {
		cs, e, err := s.checkpointEntry(chunks, &copier, &pass)
		if err != nil {
			w.Close()
			return 0, 0, err
		}
		chunks = cs.Chunks
		if e == skipEntry {
			continue
		}
		starts = s.appendStartTimes(starts)
		if e == labelledEntry {
			h.series.symbols.overwriteLabels(h.series.symbols.idsOf(s.syms), &lb, &cs.Labels)
		}
		closed := cs.Chunks
		if pass.open && !kind.closing {
			closed = closed[:len(closed)-1]
		}
		densifier.Join(closed, h.opts.BlockRange, keep) // keep never fails
		if len(closed) < len(cs.Chunks) {
			densifier.Join(cs.Chunks[len(closed):], h.opts.BlockRange, keep)
		}
		cs.Chunks = joined
		enc.Add(&cs)
		copier.reset()
		joined = joined[:0]
		if enc.Len() >= checkpointRecordBytes {
			if err := flush(); err != nil {
				w.Close()
				return 0, 0, err
			}
		}
	}
	if err := flush(); err != nil {
		w.Close()
		return 0, 0, err
	}
	// Start times follow the series they refer to, a record per
	// checkpointRecordBytes or so (an entry takes up to 30 bytes).
	for len(starts) > 0 {
		n := min(len(starts), checkpointRecordBytes/30)
		if err := log(record.EncodeStartTimes(buf[:0], starts[:n])); err != nil {
			w.Close()
			return 0, 0, err
		}
		starts = starts[n:]
	}
	if md := h.metadata.all(); len(md) > 0 {
		if err := log(record.EncodeMetadata(buf[:0], md)); err != nil {
			w.Close()
			return 0, 0, err
		}
	}
	// Every checkpoint holds every tombstone, a record per
	// deleteRecord of them: they are few, and those logged in the
	// segments it replaces would be gone.
	for stones := h.tombstoneEntries(); len(stones) > 0; {
		n := min(len(stones), deleteRecord)
		if err := log(record.EncodeTombstones(buf[:0], stones[:n])); err != nil {
			w.Close()
			return 0, 0, err
		}
		stones = stones[n:]
	}
	// A delta holds the exemplars stored since the last checkpoint.
	mark := h.exemplarMark
	if full {
		mark = 0
	}
	ex, added := h.exemplars.since(mark)
	if len(ex) > 0 {
		if err := log(record.EncodeExemplars(buf[:0], ex)); err != nil {
			w.Close()
			return 0, 0, err
		}
	}
	written = w.BytesWritten()
	if err := w.Close(); err != nil {
		return 0, 0, err
	}
	// The checkpoint holds samples of commits that were logged after
	// segment n began, some of them in part if they were being applied
	// as it read. Their records are in the WAL (a commit logs before it
	// applies); synced before the checkpoint is, they come back whole
	// from a power loss that keeps it, under --wal.sync=never too. Under
	// always there is nothing left to sync.
	if err := h.wal.Sync(); err != nil {
		return 0, 0, err
	}
	if err := h.fs().Rename(tmp, dir); err != nil {
		return 0, 0, err
	}
	if err := vfs.SyncDir(h.fs(), h.opts.WALDir); err != nil {
		return 0, 0, err
	}
	h.exemplarMark = added
	return written, recordBytes, nil
}

// checkpointPass is what a checkpoint's pass over the series knows:
// whether it is a full one, and for a delta the marks and the times they
// held when it started (deltaMarks.take). open is set by each
// checkpointEntry: whether the entry's last chunk is the open chunk.
type checkpointPass struct {
	full  bool
	marks *deltaMarks
	prev  []int64
	open  bool
}

// entryKind is how a checkpoint holds a series.
type entryKind uint8

const (
	skipEntry     entryKind = iota // not at all: a delta, and nothing changed
	labelledEntry                  // with its labels and all its chunks
	refEntry                       // by ref, with the chunks that changed
)

// checkpointEntry returns the series as the pass holds it, but for its
// labels, its chunks appended to chunks[:0] and copied into copier's
// memory.
func (s *memSeries) checkpointEntry(chunks []chunkenc.Meta, copier *chunkCopier, p *checkpointPass) (record.RefChunkSeries, entryKind, error) {
	cs := record.RefChunkSeries{Ref: s.ref}
	s.mu.Lock()
	defer s.mu.Unlock()
	kind, mint := labelledEntry, int64(math.MinInt64)
	if !p.full && s.state&seriesCheckpointed != 0 {
		if s.state&seriesDirty == 0 {
			return record.RefChunkSeries{Chunks: chunks[:0]}, skipEntry, nil
		}
		kind = refEntry
		if since := p.marks.since(p.prev, s.ref); since != math.MaxInt64 {
			mint = since + 1
		}
	}
	s.state = s.state&^seriesDirty | seriesCheckpointed
	var err error
	cs.Chunks, err = s.chunksIn(chunks[:0], mint, math.MaxInt64, copier)
	cs.LastV = s.lastV
	p.open = s.hasOpenSamples() && s.maxt >= mint
	if kind == refEntry && len(cs.Chunks) == 0 {
		kind = skipEntry
	}
	return cs, kind, err
}

// checkpointChain returns what replay reads before the WAL: the newest
// complete full checkpoint in walDir and the deltas written after it,
// oldest first, and the WAL segment that follows the last of them, or ""
// and 0 if there is no checkpoint. It removes temporary checkpoints left
// by a crash.
func checkpointChain(fsys vfs.FS, walDir string) (full string, deltas []string, from int, err error) {
	entries, err := fsys.ReadDir(walDir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, 0, nil
	}
	if err != nil {
		return "", nil, 0, err
	}
	type delta struct {
		n   int
		dir string
	}
	var ds []delta
	last := -1
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, checkpointPrefix) || !e.IsDir() {
			continue
		}
		if strings.HasSuffix(name, checkpointTmp) {
			if err := fsys.RemoveAll(filepath.Join(walDir, name)); err != nil {
				return "", nil, 0, err
			}
			continue
		}
		n, isDelta, ok := parseCheckpoint(name)
		switch {
		case !ok:
		case isDelta:
			ds = append(ds, delta{n, filepath.Join(walDir, name)})
		case n > last:
			full, last = filepath.Join(walDir, name), n
		}
	}
	if last < 0 {
		return "", nil, 0, nil
	}
	from = last
	slices.SortFunc(ds, func(a, b delta) int { return cmp.Compare(a.n, b.n) })
	for _, d := range ds {
		// Deltas before the full checkpoint are left by a crash before
		// it deleted them; the full one holds what they do.
		if d.n > last {
			deltas, from = append(deltas, d.dir), d.n
		}
	}
	return full, deltas, from, nil
}

// parseCheckpoint returns the segment number of a checkpoint's directory
// name and whether it is a delta; ok is false for another name.
func parseCheckpoint(name string) (n int, delta, ok bool) {
	num, delta := strings.CutSuffix(strings.TrimPrefix(name, checkpointPrefix), deltaSuffix)
	n, err := strconv.Atoi(num)
	return n, delta, err == nil && n >= 0
}

// removeCheckpointsBefore deletes the checkpoints and deltas that cover
// less than segment n.
func removeCheckpointsBefore(fsys vfs.FS, walDir string, n int) error {
	entries, err := fsys.ReadDir(walDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, checkpointPrefix) || strings.HasSuffix(name, checkpointTmp) {
			continue
		}
		if m, _, ok := parseCheckpoint(name); ok && m < n {
			if err := fsys.RemoveAll(filepath.Join(walDir, name)); err != nil {
				return fmt.Errorf("remove old checkpoint: %w", err)
			}
		}
	}
	return nil
}

// fs returns the file system the head's WAL and checkpoints live in.
func (h *Head) fs() vfs.FS { return vfs.Or(h.opts.WAL.FS) }
