package db

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/block"
)

// Delete marks the samples in [mint, maxt] of the series that match ms
// as deleted, in every block and in the head (see block.Block.Delete and
// head.Head.Delete): queries skip them from when it returns, and they
// stay deleted after a crash. The samples are left out when their blocks
// are next rewritten: by a merge, or by CleanTombstones. It waits for a
// compaction that runs, which rewrites blocks.
func (db *DB) Delete(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) error {
	h, err := db.get()
	if h == nil {
		return err
	}
	db.compactMu.Lock()
	defer db.compactMu.Unlock()
	series := 0
	for _, b := range db.blocksList() {
		m := b.Meta()
		if m.MaxTime < mint || m.MinTime > maxt {
			continue
		}
		n, err := b.Delete(ctx, db.fs, filepath.Join(db.opts.Dir, m.ULID.String()), mint, maxt, ms...)
		if err != nil {
			return fmt.Errorf("delete from block %s: %w", m.ULID, err)
		}
		series += n
	}
	n, err := h.Delete(ctx, mint, maxt, ms...)
	if err != nil {
		return fmt.Errorf("delete from the head: %w", err)
	}
	db.logger.Info("series deleted", "matchers", fmt.Sprint(ms), "min_time", mint, "max_time", maxt,
		"block_series", series, "head_series", n)
	return nil
}

// CleanTombstones rewrites every block that has tombstones without the
// samples they delete, one at a time, each replacing the block it was
// written from. The head's tombstones stay until the head's samples are
// written to a block, which leaves them out.
func (db *DB) CleanTombstones(ctx context.Context) error {
	if h, err := db.get(); h == nil {
		return err
	}
	db.compactMu.Lock()
	defer db.compactMu.Unlock()
	for _, b := range db.blocksList() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(b.Tombstones()) == 0 {
			continue
		}
		start := time.Now()
		meta, err := db.merge([]*block.Block{b})
		if err != nil {
			return fmt.Errorf("rewrite block %s: %w", b.Meta().ULID, err)
		}
		if err := db.replace([]*block.Block{b}, meta); err != nil {
			return err
		}
		db.logger.Info("block rewritten without its tombstones", "ulid", meta.ULID, "source", b.Meta().ULID,
			"series", meta.Stats.Series, "duration", time.Since(start))
	}
	return nil
}
