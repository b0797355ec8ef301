package db

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime/debug"
	"slices"
	"time"

	"github.com/strata-db/strata/internal/block"
	"github.com/strata-db/strata/internal/head"
	"github.com/strata-db/strata/internal/vfs"
)

// Compact writes the head's oldest block ranges to blocks while the head
// spans more than one and a half block ranges, truncates the head and
// checkpoints its WAL behind them, and then applies retention. The
// background loop calls it every CompactionInterval; it is safe to call
// at any time once the store is ready.
func (db *DB) Compact() error {
	h, err := db.get()
	if h == nil {
		return err
	}
	db.compactMu.Lock()
	defer db.compactMu.Unlock()
	defer db.releaseMemory(db.stats.compactions.Load())
	if err := db.compactHead(h); err != nil {
		db.stats.compactionFailures.Add(1)
		return err
	}
	db.takeBackfill(h)
	if err := db.applyRetention(h); err != nil {
		return err
	}
	if err := db.mergeBlocks(); err != nil {
		db.stats.compactionFailures.Add(1)
		return err
	}
	return nil
}

// releaseMemory returns the memory a compaction used to the system if one
// ran since the compactions counter read before. A block write or merge
// holds the index of every series it writes for a moment (some 80 MB for
// 100k series), then leaves it as garbage; without this the process kept
// that memory resident until the runtime's scavenger got to it minutes
// later, or until the next collection if ingestion had stopped. One
// forced collection per block range costs far less than that.
func (db *DB) releaseMemory(before uint64) {
	if db.stats.compactions.Load() != before {
		debug.FreeOSMemory()
	}
}

// mergeBlocks merges blocks into larger ones while block.PlanMerge finds some:
// the merged block goes into the list before its sources leave it and are
// deleted, so a query sees every sample throughout, and a crash between
// the two leaves sources that loadBlocks recognises and deletes.
func (db *DB) mergeBlocks() error {
	ranges := block.Ranges(db.opts.Head.BlockRange, db.opts.MaxBlockDuration, db.opts.RetentionTime)
	for {
		select {
		case <-db.stop:
			return nil
		default:
		}
		group := block.PlanMerge(db.Blocks(), ranges)
		if group == nil {
			return nil
		}
		if i := slices.IndexFunc(group, db.unshipped); i >= 0 {
			// Retried at the next compaction, once it is uploaded.
			db.logger.Debug("merge waits for a block to be uploaded", "ulid", group[i].ULID)
			return nil
		}
		start := time.Now()
		db.mu.RLock()
		var sources []*block.Block
		for _, m := range group {
			for _, b := range db.blocks {
				if b.Meta().ULID == m.ULID {
					sources = append(sources, b)
				}
			}
		}
		db.mu.RUnlock()
		meta, err := db.merge(sources)
		if err != nil {
			return fmt.Errorf("merge %d blocks: %w", len(sources), err)
		}
		if err := db.replace(sources, meta); err != nil {
			return err
		}
		db.stats.compactions.Add(1)
		db.stats.compactionNs.Add(int64(time.Since(start)))
		db.logger.Info("blocks merged", "ulid", meta.ULID, "sources", len(sources), "level", meta.Level,
			"min_time", meta.MinTime, "max_time", meta.MaxTime, "series", meta.Stats.Series, "duration", time.Since(start))
	}
}

// compactHead writes the head's ranges that are complete: older than the
// newest sample by at least half a block range, so that the head keeps
// what is still being written and what comes late. Late samples taken
// for ranges already in blocks (before the head's floor) are written
// to blocks of their own, which mergeBlocks then merges with the blocks
// they overlap. As each merge rewrites a block, that waits for a range
// to be written anyway, or for a block range of time or lateBatch late
// samples since it was last done.
func (db *DB) compactHead(h *head.Head) error {
	r := db.opts.Head.BlockRange
	if r <= 0 {
		return nil
	}
	lateDue := db.opts.Now().Sub(db.lateWritten) >= time.Duration(r)*time.Millisecond ||
		h.Stats().SamplesLate-db.lateMark >= lateBatch
	compacted, late := false, false
	for {
		lo, ok := nextRange(h, r, compacted || lateDue)
		if !ok {
			break
		}
		late = late || lo < h.Floor()
		if err := db.compactRange(h, lo, lo+r-1); err != nil {
			return err
		}
		compacted = true
	}
	if late {
		db.lateWritten, db.lateMark = db.opts.Now(), h.Stats().SamplesLate
	}
	if compacted {
		// The WAL segments the block now holds go with the checkpoint.
		if err := h.Checkpoint(); err != nil {
			return fmt.Errorf("checkpoint after compaction: %w", err)
		}
	}
	return nil
}

// lateBatch is how many late samples make compactHead write those before
// the floor without waiting for the next range: some 2 MB of chunks, a
// bound on what a backfill of old data piles up in the head.
const lateBatch = 1_000_000

// nextRange returns the start of the head's next range of length r to
// write to a block, if there is one: the oldest since the floor if the
// head spans one and a half ranges since it, else, if late is set, the
// oldest of the late samples before the floor.
func nextRange(h *head.Head, r int64, late bool) (int64, bool) {
	mint, maxt, floor := h.MinTime(), h.MaxTime(), h.Floor()
	switch from := max(mint, floor); {
	case mint > maxt:
		return 0, false
	case maxt-from > r/2*3:
		return block.RangeStart(from, r), true
	case late && mint < floor:
		return block.RangeStart(mint, r), true
	}
	return 0, false
}

// compactRange writes the head's samples in [lo, hi] to a block and
// truncates them from the head.
func (db *DB) compactRange(h *head.Head, lo, hi int64) error {
	start := time.Now()
	// From here on no sample joins the range (late ones wait for the
	// thaw); the head goes on serving it until the block is in the list.
	h.Freeze(lo, hi)
	defer h.Thaw()
	w, err := block.NewWriter(db.opts.Dir, block.WriterOptions{MinTime: lo, MaxTime: hi, FS: db.fs})
	if err != nil {
		return err
	}
	err = h.ForEachSeries(lo, hi, w.AddSeries)
	if err != nil {
		w.Abort()
		return fmt.Errorf("write block [%d, %d]: %w", lo, hi, err)
	}
	meta, err := w.Finish()
	if err != nil {
		return err
	}
	if meta.Stats.Series > 0 {
		b, err := block.Open(db.blockFiles(meta.ULID.String()))
		if err != nil {
			return fmt.Errorf("open new block %s: %w", meta.ULID, err)
		}
		db.mu.Lock()
		blocks := append(slices.Clone(db.blocks), b)
		sortBlocks(blocks)
		db.blocks = blocks
		db.mu.Unlock()
		db.stats.compactions.Add(1)
		if db.opts.BlockWritten != nil {
			db.opts.BlockWritten()
		}
		db.logger.Info("block written from the head", "ulid", meta.ULID, "min_time", lo, "max_time", hi,
			"series", meta.Stats.Series, "samples", meta.Stats.Samples, "bytes", b.Meta().Stats.Bytes,
			"duration", time.Since(start))
	}
	// Only [lo, hi]: late samples may have gone to older ranges since
	// the caller chose this one.
	st := h.TruncateRange(lo, hi)
	db.stats.compactionNs.Add(int64(time.Since(start)))
	db.logger.Debug("head truncated", "before", hi+1, "chunks", st.Chunks, "series_removed", st.SeriesRemoved, "bytes_freed", st.ArenaBytesFree)
	return nil
}

// unshipped reports whether a block's samples are only here, as far as
// Options.Shipped tells.
func (db *DB) unshipped(m block.Meta) bool {
	return db.opts.Shipped != nil && !db.opts.Shipped(m)
}

// applyRetention deletes the blocks beyond RetentionTime and, oldest
// first, those over RetentionSize.
func (db *DB) applyRetention(h *head.Head) error {
	db.mu.RLock()
	blocks := db.blocks
	db.mu.RUnlock()
	if len(blocks) == 0 {
		return nil
	}
	drop := map[*block.Block]string{}
	if rt := db.opts.RetentionTime.Milliseconds(); rt > 0 {
		newest := newestTime(h, blocks)
		for _, b := range blocks {
			if b.Meta().MaxTime < newest-rt {
				drop[b] = "time"
			}
		}
	}
	if limit := db.opts.RetentionSize; limit > 0 {
		total, err := dirSize(db.fs, filepath.Join(db.opts.Dir, "wal"))
		if err != nil {
			return fmt.Errorf("size of WAL: %w", err)
		}
		total += h.Stats().ChunkFileBytes
		for _, b := range blocks {
			total += b.Meta().Stats.Bytes
		}
		for _, b := range blocks {
			if total <= limit {
				break
			}
			if _, ok := drop[b]; !ok {
				drop[b] = "size"
			}
			total -= b.Meta().Stats.Bytes
		}
	}
	if len(drop) == 0 {
		return nil
	}
	db.mu.Lock()
	db.blocks = slices.DeleteFunc(slices.Clone(db.blocks), func(b *block.Block) bool { _, ok := drop[b]; return ok })
	db.mu.Unlock()
	var errs []error
	for _, b := range blocks {
		reason, ok := drop[b]
		if !ok {
			continue
		}
		m := b.Meta()
		// Close waits for the queries still reading the block.
		errs = append(errs, b.Close())
		if err := db.deleteBlockDir(m.ULID); err != nil {
			errs = append(errs, fmt.Errorf("delete block %s: %w", m.ULID, err))
			continue
		}
		db.stats.retentionDeletions.Add(1)
		db.logger.Info("block deleted by retention", "ulid", m.ULID, "reason", reason,
			"min_time", m.MinTime, "max_time", m.MaxTime, "bytes", m.Stats.Bytes)
		if db.unshipped(m) {
			db.logger.Warn("block deleted by retention before it was uploaded; its samples are not in object storage", "ulid", m.ULID)
		}
	}
	return errors.Join(errs...)
}

// dirSize returns the bytes of the files below dir.
func dirSize(fsys vfs.FS, dir string) (int64, error) {
	entries, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var n int64
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if e.IsDir() {
			sub, err := dirSize(fsys, path)
			if err != nil {
				return 0, err
			}
			n += sub
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // a WAL segment deleted meanwhile
		}
		if err != nil {
			return 0, err
		}
		n += info.Size()
	}
	return n, nil
}

// merge writes one block from sources, reading them anew with pread rather
// than through the mappings queries use: a merge reads every chunk once,
// and through a mapping all of them would count in resident memory until
// the sources are closed.
func (db *DB) merge(sources []*block.Block) (block.Meta, error) {
	streams := make([]*block.Block, 0, len(sources))
	defer func() {
		for _, b := range streams {
			b.Close()
		}
	}()
	for _, src := range sources {
		b, err := block.Open(block.FSFiles{FS: db.fs, Dir: filepath.Join(db.opts.Dir, src.Meta().ULID.String())})
		if err != nil {
			return block.Meta{}, err
		}
		streams = append(streams, b)
	}
	return block.Merge(context.Background(), db.opts.Dir, db.fs, streams)
}

// replace puts the block merged of sources, meta's, into the list in
// their place, then closes and deletes them. A merge without series
// (every one deleted) wrote no block; its sources just go.
func (db *DB) replace(sources []*block.Block, meta block.Meta) error {
	var b *block.Block
	if meta.Stats.Series > 0 {
		var err error
		if b, err = block.Open(db.blockFiles(meta.ULID.String())); err != nil {
			return fmt.Errorf("open merged block %s: %w", meta.ULID, err)
		}
	}
	db.mu.Lock()
	blocks := slices.DeleteFunc(slices.Clone(db.blocks), func(b *block.Block) bool { return slices.Contains(sources, b) })
	if b != nil {
		blocks = append(blocks, b)
	}
	sortBlocks(blocks)
	db.blocks = blocks
	db.mu.Unlock()
	for _, src := range sources {
		id := src.Meta().ULID
		if err := src.Close(); err != nil {
			db.logger.Warn("closing merged block", "ulid", id, "err", err)
		}
		if err := db.deleteBlockDir(id); err != nil {
			return fmt.Errorf("delete merged block %s: %w", id, err)
		}
	}
	return nil
}
