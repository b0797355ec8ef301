package head

import (
	"context"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/record"
	"github.com/strata-db/strata/internal/tombstones"
)

// Tombstones returns the samples deleted from the head's series, by
// series ref; queriers and blocks written from the head leave them out.
// It must not be changed.
func (h *Head) Tombstones() tombstones.Stones {
	return *h.stones.Load()
}

// Delete marks the samples in [mint, maxt] of the series that match ms as
// deleted and returns how many series it marked. As in Prometheus, only
// the samples there are now are: each series' interval is clamped to its
// oldest and newest sample in the range, so that one appended after the
// delete, past those, is kept. The marks are logged in the WAL and
// synced before queriers skip the samples, whatever the WAL's sync mode,
// so that a delete acknowledged survives a crash.
func (h *Head) Delete(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) (int, error) {
	h.deleteMu.Lock()
	defer h.deleteMu.Unlock()
	q := &querier{head: h, mint: mint, maxt: maxt}
	series, err := q.matching(ctx, ms)
	if err != nil {
		return 0, err
	}
	reader := h.acquireReader(mint)
	defer h.releaseReader(reader)
	var (
		cur     = h.Tombstones()
		entries []record.RefTombstone
		chunks  []chunkenc.Meta
	)
	for _, s := range series {
		if chunks, _, err = s.snapshot(chunks[:0], mint, maxt, nil); err != nil {
			return 0, err
		}
		if len(chunks) == 0 {
			continue
		}
		lo, hi := max(mint, chunks[0].MinT), min(maxt, chunks[len(chunks)-1].MaxT)
		if lo <= hi && !cur[s.ref].Covers(lo, hi) {
			entries = append(entries, record.RefTombstone{Ref: s.ref, Mint: lo, Maxt: hi})
		}
	}
	if len(entries) == 0 {
		return 0, nil
	}
	// As a commit's samples (see commitMu): a checkpoint that starts
	// a segment after these records holds them.
	h.commitMu.RLock()
	defer h.commitMu.RUnlock()
	// Records of at most deleteRecord entries, each a few bytes.
	for rest := entries; len(rest) > 0; {
		n := min(len(rest), deleteRecord)
		if err := h.wal.Log(record.EncodeTombstones(nil, rest[:n])); err != nil {
			return 0, fmt.Errorf("log tombstones: %w", err)
		}
		rest = rest[n:]
	}
	if err := h.wal.Sync(); err != nil {
		return 0, fmt.Errorf("log tombstones: %w", err)
	}
	h.addTombstones(entries)
	return len(entries), nil
}

// deleteRecord is how many tombstones a WAL record holds at most.
const deleteRecord = 64 << 10

// addTombstones marks entries as deleted.
func (h *Head) addTombstones(entries []record.RefTombstone) {
	add := make(tombstones.Stones, len(entries))
	for _, e := range entries {
		add[e.Ref] = add[e.Ref].Add(tombstones.Interval{Mint: e.Mint, Maxt: e.Maxt})
	}
	stones := h.Tombstones().With(add)
	h.stones.Store(&stones)
}

// tombstoneEntries returns the tombstones of the series the head holds,
// for a checkpoint.
func (h *Head) tombstoneEntries() []record.RefTombstone {
	var out []record.RefTombstone
	for ref, iv := range h.Tombstones() {
		if h.series.getByRef(ref) == nil {
			continue
		}
		for _, d := range iv {
			out = append(out, record.RefTombstone{Ref: ref, Mint: d.Mint, Maxt: d.Maxt})
		}
	}
	return out
}

// truncateTombstones drops the tombstones of series the head no longer
// holds, and the intervals in [lo, hi], which TruncateRange dropped: the
// block written of them left out the samples they deleted.
func (h *Head) truncateTombstones(lo, hi int64) {
	h.deleteMu.Lock()
	defer h.deleteMu.Unlock()
	cur := h.Tombstones()
	if len(cur) == 0 {
		return
	}
	out := make(tombstones.Stones, len(cur))
	for ref, iv := range cur {
		if h.series.getByRef(ref) == nil {
			continue
		}
		var kept tombstones.Intervals
		for _, d := range iv {
			if d.Mint < lo || d.Maxt > hi {
				kept = append(kept, d)
			}
		}
		if len(kept) > 0 {
			out[ref] = kept
		}
	}
	h.stones.Store(&out)
}

// visible reports whether series s has samples its tombstones leave, by
// the bounds of its chunks: for label queries, which read no samples.
func visible(s *memSeries, deleted tombstones.Intervals) bool {
	if len(deleted) == 0 {
		return true
	}
	chunks, _, _ := s.snapshot(nil, math.MinInt64, math.MaxInt64, nil) // reads in place: no error
	return len(chunks) > 0 && !deleted.Covers(chunks[0].MinT, chunks[len(chunks)-1].MaxT)
}
