package bucket

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/thanos-io/objstore"

	"github.com/strata-db/strata/internal/block"
	"github.com/strata-db/strata/internal/head"
	"github.com/strata-db/strata/internal/vfs"
)

// CompactorOptions configures a Compactor.
type CompactorOptions struct {
	Bucket objstore.Bucket
	// Dir holds, in Dir/merge, the blocks a merge reads and the one it
	// writes, deleted before and after each merge.
	Dir string
	// Retention is how long the bucket keeps a block after its newest
	// sample; 0 keeps every block.
	Retention time.Duration
	// DeleteDelay is how long a block marked for deletion stays in the
	// bucket before it is deleted, and how old the objects of a partial
	// upload must be before they are: long enough for every store to
	// sync and stop reading the block, and for any upload under way to
	// finish.
	DeleteDelay time.Duration
	// BlockRange is the time range of the blocks the nodes upload; merges
	// make blocks of 3, 9, 27, ... times it, up to MaxBlockDuration, or if
	// that is 0 to the smaller of 31 days and a tenth of Retention.
	BlockRange       int64
	MaxBlockDuration time.Duration
	Logger           *slog.Logger
	// Registerer takes the Compactor's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Now returns the time; nil means time.Now.
	Now func() time.Time
}

// DefaultCompactorOptions returns the options `strata compact` runs with.
func DefaultCompactorOptions() CompactorOptions {
	// Thanos' compactor's default delay: a store that syncs every minute
	// has long stopped reading a marked block by then.
	return CompactorOptions{DeleteDelay: 48 * time.Hour, BlockRange: head.DefaultBlockRange}
}

// Compactor keeps a bucket's blocks: it merges the blocks of each label
// set into larger ones, marks for deletion what a merge replaced and what
// is older than the retention, and deletes what has been marked for
// DeleteDelay, and partial uploads as old. One Compactor runs per bucket,
// as one Thanos compactor does.
type Compactor struct {
	opts    CompactorOptions
	logger  *slog.Logger
	now     func() time.Time
	metrics compactorMetrics
	// metas caches the meta.json of the blocks listed at the last pass.
	metas map[ulid.ULID]Meta
}

// NewCompactor returns a Compactor.
func NewCompactor(opts CompactorOptions) *Compactor {
	c := &Compactor{opts: opts, logger: opts.Logger, now: opts.Now, metrics: newCompactorMetrics(opts.Registerer), metas: map[ulid.ULID]Meta{}}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// Compact makes one pass over the bucket: deletions first, then marks,
// then merges, each merge uploaded before its sources are marked, so a
// reader finds every sample in the bucket throughout, and a crash at any
// point leaves what the next pass finishes.
func (c *Compactor) Compact(ctx context.Context) error {
	c.metrics.runs.Inc()
	if err := c.compact(ctx); err != nil {
		c.metrics.failures.Inc()
		return err
	}
	return nil
}

func (c *Compactor) compact(ctx context.Context) error {
	l, err := listBucket(ctx, c.opts.Bucket)
	if err != nil {
		return err
	}
	now := c.now()
	var live []Meta
	for id, objects := range l.objects {
		switch {
		case l.marked[id]:
			if err := c.deleteIfDue(ctx, id, objects, now); err != nil {
				return err
			}
		case !l.blocks[id]:
			if err := c.deletePartial(ctx, id, objects, now); err != nil {
				return err
			}
		default:
			m, ok := c.metas[id]
			if !ok {
				if m, _, err = readMeta(ctx, c.opts.Bucket, id); err != nil {
					c.logger.Warn("block left alone: its meta.json does not read", "ulid", id, "err", err)
					continue
				}
			}
			if m.Thanos.Source != source {
				// A block of Prometheus' format, uploaded by a Thanos
				// sidecar or written by a Thanos component: Thanos'
				// compactor keeps those.
				continue
			}
			live = append(live, m)
		}
	}
	c.metas = map[ulid.ULID]Meta{}
	for _, m := range live {
		c.metas[m.ULID] = m
	}
	// A block is covered by, and merged with, only blocks of its labels.
	groups := map[string][]Meta{}
	for _, m := range live {
		key := labels.FromMap(m.Thanos.Labels).String()
		groups[key] = append(groups[key], m)
	}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		group, err := c.markCovered(ctx, groups[key], now)
		if err != nil {
			return err
		}
		if group, err = c.markExpired(ctx, group, now); err != nil {
			return err
		}
		if err := c.mergeGroup(ctx, group, l, now); err != nil {
			return err
		}
	}
	return nil
}

// deleteIfDue deletes a marked block once its mark is DeleteDelay old:
// meta.json first, so what is left of a deletion cut short is no block,
// and the mark last, so the next pass finishes it.
func (c *Compactor) deleteIfDue(ctx context.Context, id ulid.ULID, objects []string, now time.Time) error {
	mark, err := readDeletionMark(ctx, c.opts.Bucket, id)
	if c.opts.Bucket.IsObjNotFoundErr(err) {
		return nil // deleted since the listing
	}
	if err != nil {
		return fmt.Errorf("block %s: %w", id, err)
	}
	if now.Sub(time.Unix(mark.DeletionTime, 0)) < c.opts.DeleteDelay {
		return nil
	}
	slices.SortFunc(objects, func(a, b string) int { return cmp.Compare(deleteOrder(a), deleteOrder(b)) })
	if err := c.deleteObjects(ctx, objects); err != nil {
		return fmt.Errorf("delete block %s: %w", id, err)
	}
	delete(c.metas, id)
	c.metrics.deleted.Inc()
	c.logger.Info("block deleted", "ulid", id, "marked", time.Unix(mark.DeletionTime, 0).UTC(), "details", mark.Details)
	return nil
}

// deleteOrder ranks a block's objects in the order they are deleted.
func deleteOrder(name string) int {
	switch {
	case strings.HasSuffix(name, "/"+metaFilename):
		return 0
	case strings.HasSuffix(name, "/"+deletionMarkFilename):
		return 2
	}
	return 1
}

// deletePartial deletes a directory without meta.json, the rest of an
// upload a crash cut short, once none of its objects has changed for
// DeleteDelay: an upload still under way keeps writing them.
func (c *Compactor) deletePartial(ctx context.Context, id ulid.ULID, objects []string, now time.Time) error {
	for _, name := range objects {
		attrs, err := c.opts.Bucket.Attributes(ctx, name)
		if c.opts.Bucket.IsObjNotFoundErr(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("partial block %s: %w", id, err)
		}
		if now.Sub(attrs.LastModified) < c.opts.DeleteDelay {
			return nil
		}
	}
	if err := c.deleteObjects(ctx, objects); err != nil {
		return fmt.Errorf("delete partial block %s: %w", id, err)
	}
	c.logger.Info("partial upload deleted", "ulid", id, "objects", len(objects))
	return nil
}

func (c *Compactor) deleteObjects(ctx context.Context, objects []string) error {
	for _, name := range objects {
		if err := c.opts.Bucket.Delete(ctx, name); err != nil && !c.opts.Bucket.IsObjNotFoundErr(err) {
			return err
		}
	}
	return nil
}

// markCovered marks the blocks of one label set whose samples another of
// them holds (see covers): the sources of a merge whose marking a crash
// or a failure cut short, or a block a node uploaded again after losing
// its record.
func (c *Compactor) markCovered(ctx context.Context, live []Meta, now time.Time) ([]Meta, error) {
	var keep []Meta
	for _, m := range live {
		i := slices.IndexFunc(live, func(o Meta) bool { return covers(o, m) })
		if i < 0 {
			keep = append(keep, m)
			continue
		}
		if err := c.mark(ctx, m.ULID, now, "merged into "+live[i].ULID.String()); err != nil {
			return nil, err
		}
	}
	return keep, nil
}

// markExpired marks the blocks whose newest sample is older than the
// retention.
func (c *Compactor) markExpired(ctx context.Context, live []Meta, now time.Time) ([]Meta, error) {
	if c.opts.Retention <= 0 {
		return live, nil
	}
	floor := now.Add(-c.opts.Retention).UnixMilli()
	var keep []Meta
	for _, m := range live {
		if m.MaxTime >= floor {
			keep = append(keep, m)
			continue
		}
		if err := c.mark(ctx, m.ULID, now, "beyond the retention of "+c.opts.Retention.String()); err != nil {
			return nil, err
		}
	}
	return keep, nil
}

func (c *Compactor) mark(ctx context.Context, id ulid.ULID, now time.Time, details string) error {
	if err := markForDeletion(ctx, c.opts.Bucket, id, now, details); err != nil {
		return fmt.Errorf("mark block %s for deletion: %w", id, err)
	}
	c.metrics.marked.Inc()
	c.logger.Info("block marked for deletion", "ulid", id, "details", details)
	return nil
}

// mergeGroup merges the blocks of one label set as a node merges its own
// (block.PlanMerge), until the plan finds nothing to merge.
func (c *Compactor) mergeGroup(ctx context.Context, group []Meta, l listing, now time.Time) error {
	ranges := block.Ranges(c.opts.BlockRange, c.opts.MaxBlockDuration, c.opts.Retention)
	byID := map[ulid.ULID]Meta{}
	for _, m := range group {
		byID[m.ULID] = m
	}
	for {
		metas := make([]block.Meta, 0, len(byID))
		for _, m := range byID {
			metas = append(metas, m.Meta)
		}
		slices.SortFunc(metas, func(a, b block.Meta) int {
			return cmp.Or(cmp.Compare(a.MinTime, b.MinTime), a.ULID.Compare(b.ULID))
		})
		plan := block.PlanMerge(metas, ranges)
		if plan == nil {
			return nil
		}
		sources := make([]Meta, len(plan))
		for i, m := range plan {
			sources[i] = byID[m.ULID]
		}
		merged, err := c.merge(ctx, sources, l)
		if err != nil {
			return err
		}
		for _, m := range sources {
			if err := c.mark(ctx, m.ULID, now, "merged into "+merged.ULID.String()); err != nil {
				return err
			}
			delete(byID, m.ULID)
			delete(c.metas, m.ULID)
		}
		byID[merged.ULID] = merged
		c.metas[merged.ULID] = merged
		if l.objects[merged.ULID], err = c.objects(ctx, merged.ULID); err != nil {
			return err
		}
	}
}

// objects lists the objects of a block.
func (c *Compactor) objects(ctx context.Context, id ulid.ULID) ([]string, error) {
	var names []string
	err := c.opts.Bucket.Iter(ctx, id.String()+"/", func(name string) error {
		names = append(names, name)
		return nil
	}, objstore.WithRecursiveIter())
	if err != nil {
		return nil, fmt.Errorf("list block %s: %w", id, err)
	}
	return names, nil
}

// merge downloads sources into Dir, merges them into one block and
// uploads it with the sources' labels, and returns its meta.
func (c *Compactor) merge(ctx context.Context, sources []Meta, l listing) (Meta, error) {
	start := time.Now()
	work := filepath.Join(c.opts.Dir, "merge")
	if err := os.RemoveAll(work); err != nil {
		return Meta{}, err
	}
	defer os.RemoveAll(work)
	var blocks []*block.Block
	defer func() {
		for _, b := range blocks {
			b.Close()
		}
	}()
	var downloaded int64
	for _, m := range sources {
		dir := filepath.Join(work, "sources", m.ULID.String())
		n, err := c.download(ctx, m.ULID, l.objects[m.ULID], dir)
		if err != nil {
			return Meta{}, fmt.Errorf("download block %s: %w", m.ULID, err)
		}
		downloaded += n
		b, err := block.Open(block.FSFiles{Dir: dir})
		if err != nil {
			return Meta{}, fmt.Errorf("open block %s: %w", m.ULID, err)
		}
		blocks = append(blocks, b)
	}
	bm, err := block.Merge(ctx, work, nil, blocks)
	if err != nil {
		return Meta{}, fmt.Errorf("merge %d blocks: %w", len(blocks), err)
	}
	external := sources[0].Thanos.Labels
	sent, err := uploadBlock(ctx, c.opts.Bucket, vfs.OS{}, filepath.Join(work, bm.ULID.String()), bm, external, c.logger)
	if err != nil {
		return Meta{}, fmt.Errorf("upload merged block %s: %w", bm.ULID, err)
	}
	c.metrics.merges.Inc()
	c.logger.Info("blocks merged", "ulid", bm.ULID, "sources", len(sources), "level", bm.Level, "min_time", bm.MinTime, "max_time", bm.MaxTime,
		"labels", labels.FromMap(external).String(), "downloaded_bytes", downloaded, "uploaded_bytes", sent, "duration", time.Since(start))
	m := Meta{Meta: bm}
	m.Thanos.Labels = external
	m.Thanos.Source = source
	return m, nil
}

// download copies a block's objects into dir, and returns their bytes.
func (c *Compactor) download(ctx context.Context, id ulid.ULID, objects []string, dir string) (int64, error) {
	var n int64
	for _, name := range objects {
		rel := strings.TrimPrefix(name, id.String()+"/")
		if rel == deletionMarkFilename {
			continue
		}
		local := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(local), 0o777); err != nil {
			return n, err
		}
		m, err := c.copyObject(ctx, name, local)
		n += m
		if err != nil {
			return n, err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, metaFilename)); errors.Is(err, os.ErrNotExist) {
		return n, fmt.Errorf("no %s", metaFilename)
	}
	return n, nil
}

func (c *Compactor) copyObject(ctx context.Context, name, local string) (int64, error) {
	r, err := c.opts.Bucket.Get(ctx, name)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	f, err := os.Create(local)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// Run compacts every interval until ctx is done; a pass that fails is
// logged and the next one tries again.
func (c *Compactor) Run(ctx context.Context, interval time.Duration) {
	for {
		if err := c.Compact(ctx); err != nil && ctx.Err() == nil {
			c.logger.Warn("bucket compaction failed; retried at the next pass", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}
