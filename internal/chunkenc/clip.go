package chunkenc

import (
	"github.com/prometheus/prometheus/model/histogram"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Clip returns the samples of chunk c that fall in [mint, maxt], encoded
// anew into chunks of c's encoding (more than one only if a histogram
// cannot join the previous one). It returns nil if none falls in the
// range. The first histogram of each new chunk says UnknownCounterReset
// unless it was a counter reset or a gauge: whether it follows its
// predecessor without a reset is no longer recorded by the chunk.
func Clip(c Meta, mint, maxt int64) ([]Meta, error) {
	var it SeriesIterator
	it.Reset([]Meta{c}, nil, mint, maxt)
	var (
		out  []Meta
		cur  Chunk
		h    *histogram.Histogram
		fh   *histogram.FloatHistogram
		minT int64
		maxT int64
	)
	flush := func() {
		if cur != nil && cur.NumSamples() > 0 {
			out = append(out, Meta{Data: cur.Bytes(), MinT: minT, MaxT: maxT, Enc: c.Enc})
		}
		cur = nil
	}
	for vt := it.Next(); vt != promchunkenc.ValNone; vt = it.Next() {
		t := it.AtT()
		if cur == nil {
			minT = t
		}
		switch vt {
		case promchunkenc.ValFloat:
			if cur == nil {
				cur = NewXORChunk()
			}
			_, v := it.At()
			cur.(*XORChunk).Append(t, v)
		case promchunkenc.ValHistogram:
			_, h = it.AtHistogram(h)
			for {
				if cur == nil {
					cur = NewHistogramChunk()
					h.CounterResetHint = firstHint(h.CounterResetHint)
				}
				res := cur.(*HistogramChunk).Append(t, h)
				if res == Appended {
					break
				}
				flush()
				minT = t
				if res == CounterResetDetected {
					h.CounterResetHint = histogram.CounterReset
				}
			}
		case promchunkenc.ValFloatHistogram:
			_, fh = it.AtFloatHistogram(fh)
			for {
				if cur == nil {
					cur = NewFloatHistogramChunk()
					fh.CounterResetHint = firstHint(fh.CounterResetHint)
				}
				res := cur.(*FloatHistogramChunk).Append(t, fh)
				if res == Appended {
					break
				}
				flush()
				minT = t
				if res == CounterResetDetected {
					fh.CounterResetHint = histogram.CounterReset
				}
			}
		}
		maxT = t
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	flush()
	return out, nil
}

// firstHint is the hint a histogram keeps as the first of a new chunk.
func firstHint(h histogram.CounterResetHint) histogram.CounterResetHint {
	if h == histogram.CounterReset || h == histogram.GaugeType {
		return h
	}
	return histogram.UnknownCounterReset
}
