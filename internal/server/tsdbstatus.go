package server

import (
	"github.com/strata-db/strata/internal/api"
	"github.com/strata-db/strata/internal/db"
	"github.com/strata-db/strata/internal/storage"
)

// tsdbStatus answers /api/v1/status/tsdb from the store's head, as
// Prometheus answers it from its head.
type tsdbStatus struct{ store *db.DB }

func (s tsdbStatus) TSDBStatus(limit int) (api.TSDBStatus, error) {
	h := s.store.Head()
	if h == nil {
		return api.TSDBStatus{}, storage.ErrNotReady
	}
	hs := h.Stats()
	st := api.TSDBStatus{HeadStats: api.HeadStats{
		NumSeries:     uint64(hs.Series),
		NumLabelPairs: h.LabelPairs(),
		ChunkCount:    hs.Chunks,
		MinTime:       hs.MinTime,
		MaxTime:       hs.MaxTime,
	}}
	st.SeriesCountByMetricName, st.LabelValueCountByLabelName, st.MemoryInBytesByLabelName, st.SeriesCountByLabelValuePair =
		api.CardinalityLists(h.SeriesLabels(), limit)
	return st, nil
}

// Blocks answers /api/v1/status/blocks from the store's list.
func (s tsdbStatus) Blocks() []api.BlockInfo {
	metas := s.store.Blocks()
	out := make([]api.BlockInfo, 0, len(metas))
	for _, m := range metas {
		out = append(out, api.BlockInfo{ULID: m.ULID.String(), MinTime: m.MinTime, MaxTime: m.MaxTime,
			Series: m.Stats.Series, Samples: m.Stats.Samples, Chunks: m.Stats.Chunks, Bytes: m.Stats.Bytes, Level: m.Level})
	}
	return out
}
