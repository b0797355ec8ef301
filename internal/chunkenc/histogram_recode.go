package chunkenc

import "fmt"

// recode re-encodes the chunk's samples into new memory with layout l and
// header: l covers the chunk's layout, or the chunk holds only stale
// markers. Histograms get 0 in the buckets l adds. It allocates.
func (c *HistogramChunk) recode(l histogramLayout, header CounterResetHeader) {
	nc := HistogramChunk{histogramEncoder: newHistogramEncoder()}
	nc.w.buf = make([]byte, 2, max(cap(c.w.buf), histogramChunkInitialCap))
	nc.layout = l
	nc.start(header)
	nc.sizeValues()
	pos, neg := recodePositions(&c.layout, &l, c.hasReal)

	it := NewHistogramIterator(c.Bytes())
	for it.Next() {
		if it.stale {
			nc.appendTimeSum(it.t, it.sum.v)
			nc.finish()
			continue
		}
		clear(nc.cur)
		nc.cur[0] = it.vals[0].v
		for i, p := range pos {
			nc.cur[1+p] = it.vals[1+i].v
		}
		for i, p := range neg {
			nc.cur[1+l.nPos+p] = it.vals[1+c.layout.nPos+i].v
		}
		nc.appendReal(it.t, it.sum.v, it.count)
	}
	if err := it.Err(); err != nil {
		panic(fmt.Sprintf("chunkenc: re-encoding a histogram chunk: %v", err))
	}
	*c = nc
}

// recode is HistogramChunk.recode for float histograms.
func (c *FloatHistogramChunk) recode(l histogramLayout, header CounterResetHeader) {
	nc := FloatHistogramChunk{histogramEncoder: newHistogramEncoder(), count: newXORState()}
	nc.w.buf = make([]byte, 2, max(cap(c.w.buf), histogramChunkInitialCap))
	nc.layout = l
	nc.start(header)
	nc.sizeValues()
	pos, neg := recodePositions(&c.layout, &l, c.hasReal)

	it := NewFloatHistogramIterator(c.Bytes())
	for it.Next() {
		if it.stale {
			nc.appendTimeSum(it.t, it.sum.v)
			nc.finish()
			continue
		}
		clear(nc.cur)
		nc.cur[0] = it.val(0)
		for i, p := range pos {
			nc.cur[1+p] = it.val(1 + i)
		}
		for i, p := range neg {
			nc.cur[1+l.nPos+p] = it.val(1 + c.layout.nPos + i)
		}
		nc.appendReal(it.t, it.sum.v, it.count.v)
	}
	if err := it.Err(); err != nil {
		panic(fmt.Sprintf("chunkenc: re-encoding a float histogram chunk: %v", err))
	}
	*c = nc
}

// recodePositions returns where each positive and negative bucket of the
// old layout is in the new one. A chunk of stale markers only has no
// buckets to move.
func recodePositions(old, l *histogramLayout, hasReal bool) (pos, neg []int) {
	if !hasReal {
		return nil, nil
	}
	return bucketPositions(old.posSpans, l.posSpans), bucketPositions(old.negSpans, l.negSpans)
}
