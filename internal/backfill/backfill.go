// Package backfill writes blocks straight from bulk data, without the
// head, as `promtool tsdb create-blocks-from` does: history older than
// the head takes goes in this way. The input is read once to find its
// time ranges, then once per block range, whose samples are held in
// memory, sorted and written as a block. A strata whose data directory
// the blocks are moved into takes them in at its next compaction, and
// merges those that overlap others.
package backfill

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/block"
	"github.com/strata-db/strata/internal/chunkenc"
)

// Source reads the input whole and passes each series to add with
// samples of it, in slices add may not keep. It is called once per pass.
type Source func(add func(lset labels.Labels, ts []int64, vs []float64) error) error

// Options say how blocks are cut.
type Options struct {
	// BlockDuration is each block's range in milliseconds, aligned to
	// multiples of it, as the head's blocks are.
	BlockDuration int64
	// SamplesPerChunk bounds a chunk; the block writer joins chunks
	// where the decimal encoding makes them smaller.
	SamplesPerChunk int
}

// DefaultOptions cut blocks of 2 h, the head's default range.
func DefaultOptions() Options {
	return Options{BlockDuration: (2 * time.Hour).Milliseconds(), SamplesPerChunk: 120}
}

// Write writes the samples src reads into blocks in dir, one for each
// range of opts.BlockDuration that holds some, and returns their metas:
// those written before an error too.
// Samples of a series at the same timestamp must have the same value;
// one of them is kept.
func Write(ctx context.Context, src Source, dir string, opts Options, logger *slog.Logger) ([]block.Meta, error) {
	if opts.BlockDuration <= 0 {
		return nil, fmt.Errorf("block duration %dms is not positive", opts.BlockDuration)
	}
	ranges := map[int64]int{}
	err := src(func(lset labels.Labels, ts []int64, _ []float64) error {
		if !lset.Has(labels.MetricName) {
			return fmt.Errorf("series %s has no metric name", lset)
		}
		for _, t := range ts {
			ranges[block.RangeStart(t, opts.BlockDuration)]++
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	var metas []block.Meta
	for _, r := range slices.Sorted(maps.Keys(ranges)) {
		start := time.Now()
		m, err := writeRange(ctx, src, dir, r, opts)
		if err != nil {
			return metas, err
		}
		metas = append(metas, m)
		logger.Info("block written", "ulid", m.ULID, "min_time", m.MinTime, "max_time", m.MaxTime,
			"series", m.Stats.Series, "samples", m.Stats.Samples, "duration", time.Since(start))
	}
	return metas, nil
}

// series is one series' samples within a range.
type series struct {
	lset labels.Labels
	ts   []int64
	vs   []float64
}

// writeRange writes the block of [mint, mint+opts.BlockDuration).
func writeRange(ctx context.Context, src Source, dir string, mint int64, opts Options) (block.Meta, error) {
	maxt := mint + opts.BlockDuration - 1
	if mint > math.MaxInt64-opts.BlockDuration {
		maxt = math.MaxInt64
	}
	byKey := map[string]*series{}
	var buf []byte
	err := src(func(lset labels.Labels, ts []int64, vs []float64) error {
		var s *series
		for i, t := range ts {
			if t < mint || t > maxt {
				continue
			}
			if s == nil {
				buf = lset.Bytes(buf)
				if s = byKey[string(buf)]; s == nil {
					s = &series{lset: lset.Copy()}
					byKey[string(buf)] = s
				}
			}
			s.ts, s.vs = append(s.ts, t), append(s.vs, vs[i])
		}
		return ctx.Err()
	})
	if err != nil {
		return block.Meta{}, err
	}
	all := make([]*series, 0, len(byKey))
	for _, s := range byKey {
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b *series) int { return labels.Compare(a.lset, b.lset) })
	w, err := block.NewWriter(dir, block.WriterOptions{MinTime: mint, MaxTime: maxt})
	if err != nil {
		return block.Meta{}, err
	}
	for _, s := range all {
		chunks, err := encode(s, opts.SamplesPerChunk)
		if err == nil {
			err = w.AddSeries(s.lset, chunks, nil)
		}
		if err != nil {
			w.Abort()
			return block.Meta{}, err
		}
	}
	return w.Finish()
}

// encode sorts a series' samples by time and encodes them into XOR
// chunks of at most n samples. Of samples at one timestamp the first is
// kept if all have its value, and the series refused if not, as the
// head refuses a duplicate sample of another value.
func encode(s *series, n int) ([]chunkenc.Meta, error) {
	idx := make([]int, len(s.ts))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(s.ts[a], s.ts[b]) })
	var (
		out  []chunkenc.Meta
		cur  *chunkenc.XORChunk
		minT int64
		last = -1
	)
	flush := func(maxT int64) {
		out = append(out, chunkenc.Meta{Data: cur.Bytes(), MinT: minT, MaxT: maxT, Enc: chunkenc.EncXOR})
		cur = nil
	}
	for _, i := range idx {
		t, v := s.ts[i], s.vs[i]
		if last >= 0 && s.ts[last] == t {
			if math.Float64bits(s.vs[last]) != math.Float64bits(v) {
				return nil, fmt.Errorf("series %s: samples %g and %g at the same timestamp %d", s.lset, s.vs[last], v, t)
			}
			continue
		}
		if cur != nil && cur.NumSamples() >= n {
			flush(s.ts[last])
		}
		if cur == nil {
			cur, minT = chunkenc.NewXORChunk(), t
		}
		cur.Append(t, v)
		last = i
	}
	if cur != nil {
		flush(s.ts[last])
	}
	return out, nil
}
