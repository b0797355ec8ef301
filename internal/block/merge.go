package block

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/index"
	"github.com/strata-db/strata/internal/tombstones"
	"github.com/strata-db/strata/internal/vfs"
)

// Merge writes one block into directory parent of fsys (nil: the
// operating system's) holding every series and chunk of blocks, and
// returns its meta. The new block covers from the blocks' oldest MinTime
// to their newest MaxTime, its level is one above the highest of theirs,
// and its sources are all of theirs. Chunks are copied as they are, not
// decoded, unless blocks overlap in time (late samples written to a
// block of their own): a series' chunks that overlap are then merged
// (chunkenc.MergeOverlapping), each timestamp kept once. The samples the
// blocks' tombstones delete are left out (a series that keeps none, too),
// so that one block is merged on its own to apply them. The source
// blocks are only read: replacing them is the caller's.
func Merge(ctx context.Context, parent string, fsys vfs.FS, blocks []*Block) (Meta, error) {
	if len(blocks) == 0 {
		return Meta{}, errors.New("merge needs a block")
	}
	blocks = slices.Clone(blocks)
	slices.SortFunc(blocks, func(a, b *Block) int { return cmp.Compare(a.meta.MinTime, b.meta.MinTime) })
	opts := WriterOptions{MinTime: blocks[0].meta.MinTime, MaxTime: blocks[0].meta.MaxTime, FS: fsys}
	overlap := false
	for i, b := range blocks {
		if i > 0 && b.meta.MinTime <= opts.MaxTime {
			overlap = true
		}
		opts.MaxTime = max(opts.MaxTime, b.meta.MaxTime)
		opts.Level = max(opts.Level, b.meta.Level+1)
		opts.Sources = append(opts.Sources, b.meta.Sources...)
	}
	slices.SortFunc(opts.Sources, func(a, b ulid.ULID) int { return a.Compare(b) })
	opts.Sources = slices.Compact(opts.Sources)

	cursors := make([]*seriesCursor, 0, len(blocks))
	for _, b := range blocks {
		if err := b.acquire(); err != nil {
			return Meta{}, err
		}
		defer b.release()
		c, err := newSeriesCursor(b)
		if err != nil {
			return Meta{}, err
		}
		cursors = append(cursors, c)
	}
	w, err := NewWriter(parent, opts)
	if err != nil {
		return Meta{}, err
	}
	var (
		chunks []chunkenc.Meta
		starts []chunkenc.StartTime
	)
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				w.Abort()
				return Meta{}, err
			}
		}
		// The smallest labels among the cursors' current series; the
		// cursors are in time order, so its chunks come out oldest first.
		var next *seriesCursor
		for _, c := range cursors {
			if c.ok && (next == nil || labels.Compare(c.lset, next.lset) < 0) {
				next = c
			}
		}
		if next == nil {
			break
		}
		lset := next.lset
		chunks, starts = chunks[:0], starts[:0]
		for _, c := range cursors {
			if !c.ok || labels.Compare(c.lset, lset) != 0 {
				continue
			}
			n := len(chunks)
			if chunks, err = c.appendChunks(chunks); err != nil {
				w.Abort()
				return Meta{}, err
			}
			if overlap {
				starts = append(starts, c.starts...)
			} else if len(chunks) > n {
				starts = chunkenc.ClipStarts(starts, c.starts, chunks[n].MinT, chunks[len(chunks)-1].MaxT)
			}
			if err := c.next(); err != nil {
				w.Abort()
				return Meta{}, err
			}
		}
		if overlap {
			slices.SortStableFunc(chunks, func(a, b chunkenc.Meta) int { return cmp.Compare(a.MinT, b.MinT) })
			merged, err := chunkenc.MergeOverlapping(chunks, mergedChunkSamples)
			if err != nil {
				w.Abort()
				return Meta{}, fmt.Errorf("series %s: %w", lset, err)
			}
			chunks = merged
			// Each block's changes are for its own samples: where blocks
			// overlap, their changes are merged by time, the later
			// block's winning at the same time.
			slices.SortStableFunc(starts, func(a, b chunkenc.StartTime) int { return cmp.Compare(a.T, b.T) })
			starts = lastPerTime(starts)
		}
		if len(chunks) == 0 {
			// Every sample deleted.
			continue
		}
		if err := w.AddSeries(lset, chunks, starts); err != nil {
			w.Abort()
			return Meta{}, err
		}
	}
	return w.Finish()
}

// lastPerTime keeps, of changes sorted by time, the last at each time.
func lastPerTime(changes []chunkenc.StartTime) []chunkenc.StartTime {
	out := changes[:0]
	for i, c := range changes {
		if i+1 < len(changes) && changes[i+1].T == c.T {
			continue
		}
		out = append(out, c)
	}
	return out
}

// mergedChunkSamples is how many samples a chunk merged from overlapping
// ones holds at most: what the head cuts chunks at by default.
const mergedChunkSamples = 120

// seriesCursor walks a block's series in label order.
type seriesCursor struct {
	b       *Block
	stones  tombstones.Stones
	p       index.Postings
	ok      bool
	builder labels.ScratchBuilder
	lset    labels.Labels
	metas   []index.ChunkMeta
	starts  []chunkenc.StartTime
}

func newSeriesCursor(b *Block) (*seriesCursor, error) {
	p, err := b.index.AllPostings()
	if err != nil {
		return nil, err
	}
	c := &seriesCursor{b: b, stones: b.Tombstones(), p: p}
	return c, c.next()
}

func (c *seriesCursor) next() error {
	if c.ok = c.p.Next(); !c.ok {
		return c.p.Err()
	}
	return c.b.index.Series(c.p.At(), &c.builder, &c.lset, &c.metas, &c.starts)
}

// appendChunks appends the current series' chunks to dst, without the
// samples deleted from it.
func (c *seriesCursor) appendChunks(dst []chunkenc.Meta) ([]chunkenc.Meta, error) {
	n := len(dst)
	for _, m := range c.metas {
		enc, data, err := c.b.chunks.chunk(m.Ref)
		if err != nil {
			return dst, fmt.Errorf("block %s: %w", c.b.meta.ULID, err)
		}
		dst = append(dst, chunkenc.Meta{Data: data, MinT: m.MinT, MaxT: m.MaxT, Enc: enc})
	}
	if iv := c.stones[c.p.At()]; len(iv) > 0 {
		kept, err := iv.Apply(dst[n:])
		if err != nil {
			return dst[:n], fmt.Errorf("block %s: %w", c.b.meta.ULID, err)
		}
		dst = append(dst[:n], kept...)
	}
	return dst, nil
}
