package head

import (
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/chunkenc"
)

// Iterator returns an iterator over the series' samples in [mint, maxt],
// reusing it if it is one of ours.
func (s *series) Iterator(it promchunkenc.Iterator) promchunkenc.Iterator {
	si, ok := it.(*chunkenc.SeriesIterator)
	if !ok {
		si = &chunkenc.SeriesIterator{}
	}
	si.Reset(s.chunks, s.starts, s.mint, s.maxt)
	return si
}
