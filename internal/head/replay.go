package head

import (
	"fmt"

	"github.com/strata-db/strata/internal/record"
	"github.com/strata-db/strata/internal/storage"
	"github.com/strata-db/strata/internal/wal"
)

// replay rebuilds the head from the WAL. Series records come before the
// samples that refer to them; a sample whose series is unknown (its record
// was lost to corruption) is dropped and counted.
func (h *Head) replay() error {
	var (
		dec     record.Decoder
		series  []record.RefSeries
		samples []record.RefSample
		// aliases maps the ref of a series record whose labels already
		// belong to another ref onto that ref. It stays empty unless a
		// series was logged twice under different refs.
		aliases           = map[storage.SeriesRef]storage.SeriesRef{}
		unknown, replayed uint64
		// last caches the series of the previous sample: samples of one
		// series come in runs.
		last *memSeries
	)
	err := wal.Replay(h.opts.WALDir, h.logger, func(rec []byte) error {
		h.stats.replayedRecords.Add(1)
		switch record.Kind(rec) {
		case record.Series:
			var err error
			if series, err = dec.Series(rec, series[:0]); err != nil {
				return err
			}
			for _, rs := range series {
				s, _ := h.getOrCreate(rs.Labels.Hash(), rs.Labels, rs.Ref)
				if s.ref != rs.Ref {
					aliases[rs.Ref] = s.ref
				}
				s.logged.Store(true)
				if uint64(rs.Ref) > h.lastRef.Load() {
					h.lastRef.Store(uint64(rs.Ref))
				}
			}
		case record.Samples:
			var err error
			if samples, err = dec.Samples(rec, samples[:0]); err != nil {
				return err
			}
			for _, rs := range samples {
				ref := rs.Ref
				if a, ok := aliases[ref]; ok {
					ref = a
				}
				s := last
				if s == nil || s.ref != ref {
					if s = h.series.getByRef(ref); s == nil {
						unknown++
						continue
					}
					last = s
				}
				s.mu.Lock()
				if dup, err := s.appendable(rs.T, rs.V); err == nil && !dup {
					s.append(rs.T, rs.V, h.opts.ChunkSamples)
					replayed++
				}
				s.mu.Unlock()
			}
		default:
			return fmt.Errorf("unknown WAL record type %d", record.Kind(rec))
		}
		return nil
	})
	h.stats.replayedSamples.Add(replayed)
	if unknown > 0 {
		h.logger.Warn("WAL samples for unknown series dropped", "samples", unknown)
	}
	return err
}
