package head

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/record"
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
// A checkpoint is written to checkpoint.N.tmp and renamed when complete, so
// a crash while writing one leaves the previous checkpoint and its
// segments in place.

const (
	checkpointPrefix = "checkpoint."
	checkpointTmp    = ".tmp"
	// checkpointRecordBytes is the size at which a ChunkSeries record is
	// cut: large enough that framing costs nothing, small enough that
	// replay's read buffer and the writer's encode buffer stay small.
	checkpointRecordBytes = 1 << 20
)

// Checkpoint writes a checkpoint of the head and deletes the WAL segments
// and older checkpoints it covers. It is safe to call while appenders
// commit; one checkpoint runs at a time.
func (h *Head) Checkpoint() error {
	h.checkpointMu.Lock()
	defer h.checkpointMu.Unlock()
	n, walBytes, err := h.cutCheckpoint()
	if err != nil {
		return err
	}
	return h.writeCheckpointAt(n, walBytes)
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

// writeCheckpointAt writes the checkpoint of segment n, which
// cutCheckpoint started, and deletes what it covers. Commits go on
// meanwhile: the series it reads last hold samples logged in segment n
// and after, which replay then finds in the checkpoint (see
// replayWorker.applyDeferred). checkpointMu must be held.
func (h *Head) writeCheckpointAt(n int, walBytes int64) error {
	dir := filepath.Join(h.opts.WALDir, checkpointPrefix+fmt.Sprintf("%08d", n))
	if _, err := h.fs().Stat(dir); err == nil {
		// Nothing was logged since that checkpoint. The head may have
		// been truncated since, but what the checkpoint holds beyond it
		// is in blocks, and the store truncates the head again below
		// its blocks when it opens.
		return nil
	}
	reader := h.acquireReader(math.MinInt64)
	size, recordBytes, err := h.writeCheckpoint(dir)
	h.releaseReader(reader)
	// The checkpoint read every chunk; they need not stay resident.
	h.arena.dropResident()
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	if err := h.wal.Truncate(n); err != nil {
		return fmt.Errorf("checkpoint: delete WAL segments below %d: %w", n, err)
	}
	if err := removeCheckpointsBefore(h.fs(), h.opts.WALDir, n); err != nil {
		return err
	}
	h.checkpointWALBytes.Store(walBytes)
	h.checkpointSize.Store(recordBytes)
	h.logger.Info("checkpoint written", "dir", dir, "bytes", size, "record_bytes", recordBytes)
	return nil
}

// writeCheckpoint writes every series to dir, through a temporary
// directory, and returns the bytes written and the bytes of its records
// before compression.
func (h *Head) writeCheckpoint(dir string) (written, recordBytes int64, err error) {
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
	// does.
	var (
		enc       record.ChunkSeriesEncoder
		buf       []byte
		copier    = chunkCopier{arena: h.arena}
		densifier chunkenc.Densifier
		joined    []chunkenc.Meta
		// Series repeat each other's label names and values: a record
		// is compressed where that makes it smaller.
		compressor record.Compressor
	)
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
		return w.Log(compressor.Compress(buf))
	}
	var (
		starts []record.RefStartTime
		chunks []chunkenc.Meta // checkpointEntry's
		lb     labels.ScratchBuilder
	)
	for s := range h.series.all() {
		starts = s.appendStartTimes(starts)
		cs, err := s.checkpointEntry(chunks, &copier)
		if err != nil {
			w.Close()
			return 0, 0, err
		}
		h.series.symbols.overwriteLabels(h.series.symbols.idsOf(s.syms), &lb, &cs.Labels)
		chunks = cs.Chunks
		densifier.Join(cs.Chunks, h.opts.BlockRange, keep) // keep never fails
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
	if ex := h.exemplars.all(); len(ex) > 0 {
		if err := log(record.EncodeExemplars(buf[:0], ex)); err != nil {
			w.Close()
			return 0, 0, err
		}
	}
	written = w.BytesWritten()
	if err := w.Close(); err != nil {
		return 0, 0, err
	}
	if err := h.fs().Rename(tmp, dir); err != nil {
		return 0, 0, err
	}
	return written, recordBytes, vfs.SyncDir(h.fs(), h.opts.WALDir)
}

// checkpointEntry returns the series as a checkpoint holds it, but for
// its labels, its chunks appended to chunks[:0] and copied into copier's
// memory.
func (s *memSeries) checkpointEntry(chunks []chunkenc.Meta, copier *chunkCopier) (record.RefChunkSeries, error) {
	cs := record.RefChunkSeries{Ref: s.ref}
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	cs.Chunks, err = s.chunksIn(chunks[:0], math.MinInt64, math.MaxInt64, copier)
	cs.LastV = s.lastV
	return cs, err
}

// lastCheckpoint returns the newest complete checkpoint in walDir and the
// segment number it covers up to, or "" and 0 if there is none. It removes
// temporary checkpoints left by a crash.
func lastCheckpoint(fsys vfs.FS, walDir string) (string, int, error) {
	entries, err := fsys.ReadDir(walDir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	dir, last := "", -1
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, checkpointPrefix) || !e.IsDir() {
			continue
		}
		if strings.HasSuffix(name, checkpointTmp) {
			if err := fsys.RemoveAll(filepath.Join(walDir, name)); err != nil {
				return "", 0, err
			}
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(name, checkpointPrefix))
		if err != nil || n < 0 {
			continue
		}
		if n > last {
			dir, last = filepath.Join(walDir, name), n
		}
	}
	if last < 0 {
		return "", 0, nil
	}
	return dir, last, nil
}

// removeCheckpointsBefore deletes the checkpoints that cover less than
// segment n.
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
		if m, err := strconv.Atoi(strings.TrimPrefix(name, checkpointPrefix)); err == nil && m < n {
			if err := fsys.RemoveAll(filepath.Join(walDir, name)); err != nil {
				return fmt.Errorf("remove old checkpoint: %w", err)
			}
		}
	}
	return nil
}

// fs returns the file system the head's WAL and checkpoints live in.
func (h *Head) fs() vfs.FS { return vfs.Or(h.opts.WAL.FS) }
