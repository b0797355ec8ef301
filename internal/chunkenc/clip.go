package chunkenc

import (
	"github.com/prometheus/prometheus/model/histogram"
	promstorage "github.com/prometheus/prometheus/storage"
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
	return recode(&it, 0)
}

// MergeOverlapping returns a series' chunks, sorted by MinT, with those
// that overlap in time merged: their samples are encoded anew, oldest
// first, into chunks of at most maxSamples samples (as Clip encodes), a
// sample at a timestamp another one has already been taken from being
// dropped. Chunks that overlap none are returned as they are. The result
// is sorted and disjoint, as a block and a query want a series' chunks.
func MergeOverlapping(chunks []Meta, maxSamples int) ([]Meta, error) {
	var out []Meta
	for i := 0; i < len(chunks); {
		j, maxt := i+1, chunks[i].MaxT
		for j < len(chunks) && chunks[j].MinT <= maxt {
			maxt = max(maxt, chunks[j].MaxT)
			j++
		}
		if j == i+1 {
			out = append(out, chunks[i])
			i = j
			continue
		}
		its := make([]promchunkenc.Iterator, 0, j-i)
		for _, c := range chunks[i:j] {
			it := &SeriesIterator{}
			it.Reset([]Meta{c}, nil, c.MinT, c.MaxT)
			its = append(its, it)
		}
		merged, err := recode(promstorage.ChainSampleIteratorFromIterators(nil, its), maxSamples)
		if err != nil {
			return nil, err
		}
		out = append(out, merged...)
		i = j
	}
	return out, nil
}

// recode encodes the samples of it anew into chunks: a new one for each
// change of kind, after maxSamples samples (0: no limit), and where a
// histogram cannot join the previous one.
func recode(it promchunkenc.Iterator, maxSamples int) ([]Meta, error) {
	var (
		out  []Meta
		cur  Chunk
		enc  Encoding
		h    *histogram.Histogram
		fh   *histogram.FloatHistogram
		minT int64
		maxT int64
	)
	flush := func() {
		if cur != nil && cur.NumSamples() > 0 {
			out = append(out, Meta{Data: cur.Bytes(), MinT: minT, MaxT: maxT, Enc: enc})
		}
		cur = nil
	}
	for vt := it.Next(); vt != promchunkenc.ValNone; vt = it.Next() {
		t := it.AtT()
		if cur != nil && (encodingOf(vt) != enc || maxSamples > 0 && cur.NumSamples() >= maxSamples) {
			flush()
		}
		if cur == nil {
			minT, enc = t, encodingOf(vt)
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

// encodingOf returns the chunk encoding of samples of type vt.
func encodingOf(vt promchunkenc.ValueType) Encoding {
	switch vt {
	case promchunkenc.ValHistogram:
		return EncHistogram
	case promchunkenc.ValFloatHistogram:
		return EncFloatHistogram
	}
	return EncXOR
}

// firstHint is the hint a histogram keeps as the first of a new chunk.
func firstHint(h histogram.CounterResetHint) histogram.CounterResetHint {
	if h == histogram.CounterReset || h == histogram.GaugeType {
		return h
	}
	return histogram.UnknownCounterReset
}
