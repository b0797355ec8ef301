package db

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/oklog/ulid/v2"

	"github.com/strata-db/strata/internal/block"
	"github.com/strata-db/strata/internal/head"
	"github.com/strata-db/strata/internal/vfs"
)

// tmpSuffix marks a block directory being written or deleted.
const tmpSuffix = ".tmp"

// loadBlocks removes what a crash left half-written or half-deleted in
// dir and opens its blocks, oldest first.
func (db *DB) loadBlocks() ([]*block.Block, error) {
	dir, logger := db.opts.Dir, db.logger
	entries, err := db.fs.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var blocks []*block.Block
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() {
			continue
		}
		if strings.HasSuffix(name, tmpSuffix) {
			if _, err := ulid.ParseStrict(strings.TrimSuffix(name, tmpSuffix)); err != nil {
				continue
			}
			logger.Info("removing block left incomplete by a crash", "dir", name)
			if err := db.fs.RemoveAll(filepath.Join(dir, name)); err != nil {
				closeBlocks(blocks)
				return nil, err
			}
			continue
		}
		if _, err := ulid.ParseStrict(name); err != nil {
			continue
		}
		b, err := block.Open(db.blockFiles(name))
		if err != nil {
			closeBlocks(blocks)
			return nil, fmt.Errorf("open block %s: %w", name, err)
		}
		blocks = append(blocks, b)
	}
	blocks, err = db.dropMerged(blocks)
	if err != nil {
		closeBlocks(blocks)
		return nil, err
	}
	sortBlocks(blocks)
	return blocks, nil
}

// BackfillDir is the directory of the data directory whose blocks the
// store takes in, at a compaction, once the head holds no sample of their
// range: `strata tsdb create-blocks-from` writes blocks for it.
const BackfillDir = "backfill"

// takeBackfill moves the blocks of BackfillDir whose range ends before
// the head's oldest sample into the data directory and the list, where
// merges take them in with the others, those that overlap first. One
// that reaches into the head's range waits: at a restart, the head drops
// what it replays of ranges that blocks hold, and it would drop samples
// that are in no block. A block that cannot be taken (it does not open,
// or the data directory has its ULID already) is logged and left where
// it is: it must not hold up the retention and merges that follow. It
// runs under compactMu, so that no merge lists the directory meanwhile.
func (db *DB) takeBackfill(h *head.Head) {
	dir := filepath.Join(db.opts.Dir, BackfillDir)
	entries, err := db.fs.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			db.logger.Error("backfill directory not read", "dir", dir, "err", err)
		}
		return
	}
	var added []*block.Block
	for _, e := range entries {
		name := e.Name()
		if _, err := ulid.ParseStrict(name); err != nil || !e.IsDir() {
			continue
		}
		if b, err := db.takeBackfilled(h, dir, name); err != nil {
			db.logger.Error("backfilled block left out", "dir", filepath.Join(dir, name), "err", err)
		} else if b != nil {
			added = append(added, b)
		}
	}
	if len(added) == 0 {
		return
	}
	if err := vfs.SyncDir(db.fs, dir); err != nil {
		db.logger.Warn("backfill directory not synced", "dir", dir, "err", err)
	}
	db.mu.Lock()
	blocks := append(slices.Clone(db.blocks), added...)
	sortBlocks(blocks)
	db.blocks = blocks
	db.mu.Unlock()
}

// takeBackfilled moves block name of the backfill directory dir into the
// data directory and opens it there, or returns nil if it reaches into
// the head's range.
func (db *DB) takeBackfilled(h *head.Head, dir, name string) (*block.Block, error) {
	from := block.FSFiles{FS: db.fs, Dir: filepath.Join(dir, name)}
	m, err := block.ReadMeta(from)
	if err != nil {
		return nil, err
	}
	if mint := h.MinTime(); mint <= h.MaxTime() && m.MaxTime >= mint {
		db.logger.Debug("backfilled block waits for the head to move past it", "ulid", m.ULID, "max_time", m.MaxTime, "head_min_time", mint)
		return nil, nil
	}
	// Opened where it is first: a block that does not open stays out of
	// the data directory, where it would stop the next start.
	b, err := block.Open(from)
	if err != nil {
		return nil, err
	}
	if err := b.Close(); err != nil {
		return nil, err
	}
	to := filepath.Join(db.opts.Dir, name)
	if _, err := db.fs.Stat(to); err == nil {
		return nil, fmt.Errorf("the data directory has block %s already", name)
	}
	if err := db.fs.Rename(filepath.Join(dir, name), to); err != nil {
		return nil, err
	}
	if err := vfs.SyncDir(db.fs, db.opts.Dir); err != nil {
		return nil, err
	}
	if b, err = block.Open(db.blockFiles(name)); err != nil {
		return nil, err
	}
	db.logger.Info("backfilled block taken in", "ulid", m.ULID, "min_time", m.MinTime, "max_time", m.MaxTime, "series", m.Stats.Series)
	return b, nil
}

// dropMerged closes and deletes the blocks whose samples another block
// holds: a crash after a merged block was written and before its sources
// were deleted leaves both.
func (db *DB) dropMerged(blocks []*block.Block) ([]*block.Block, error) {
	var kept []*block.Block
	for _, b := range blocks {
		m := b.Meta()
		if !slices.ContainsFunc(blocks, func(o *block.Block) bool { return covers(o.Meta(), m) }) {
			kept = append(kept, b)
			continue
		}
		db.logger.Info("removing block already merged into another", "ulid", m.ULID)
		if err := b.Close(); err != nil {
			return nil, err
		}
		if err := db.deleteBlockDir(m.ULID); err != nil {
			return nil, err
		}
	}
	return kept, nil
}

// covers reports whether block o holds every source of block b, and more.
func covers(o, b block.Meta) bool {
	if len(o.Sources) <= len(b.Sources) {
		return false
	}
	for _, src := range b.Sources {
		if !slices.Contains(o.Sources, src) {
			return false
		}
	}
	return true
}

func sortBlocks(blocks []*block.Block) {
	slices.SortFunc(blocks, func(a, b *block.Block) int {
		am, bm := a.Meta(), b.Meta()
		if am.MinTime != bm.MinTime {
			return cmp.Compare(am.MinTime, bm.MinTime)
		}
		return am.ULID.Compare(bm.ULID)
	})
}

// deleteBlockDir removes a closed block's directory: renamed to its .tmp
// name first, so that a crash half-way leaves a directory loadBlocks
// removes rather than a damaged block it fails to open.
func (db *DB) deleteBlockDir(id ulid.ULID) error {
	path := filepath.Join(db.opts.Dir, id.String())
	tmp := path + tmpSuffix
	if err := db.fs.Rename(path, tmp); err != nil {
		return err
	}
	if err := vfs.SyncDir(db.fs, db.opts.Dir); err != nil {
		return err
	}
	return db.fs.RemoveAll(tmp)
}

// blockFiles returns the files of block name, mapped into memory on the
// operating system's file system.
func (db *DB) blockFiles(name string) block.Files {
	dir := filepath.Join(db.opts.Dir, name)
	if _, ok := db.fs.(vfs.OS); ok {
		return block.LocalFiles(dir)
	}
	return block.FSFiles{FS: db.fs, Dir: dir}
}
