package chunkenc

import "math"

// bulkDecoder is a float chunk's iterator that can also decode many
// samples at once: *XORIterator or *DecimalIterator.
type bulkDecoder interface {
	Reset(b []byte)
	Next() bool
	At() (int64, float64)
	Err() error
	AppendSamples(ts []int64, vs []float64, maxt int64, limit int) ([]int64, []float64, bool)
}

// appendChunk appends the samples of the float chunk data that are at or
// before maxt to ts and vs, decoding with it. Where AppendSamples finds
// the chunk malformed, Next finds where: the samples before the error are
// appended and the error returned, as iterating would have.
func appendChunk(it bulkDecoder, data []byte, maxt int64, ts []int64, vs []float64) ([]int64, []float64, error) {
	it.Reset(data)
	if ts, vs, ok := it.AppendSamples(ts, vs, maxt, math.MaxInt); ok {
		return ts, vs, nil
	}
	it.Reset(data)
	for it.Next() {
		t, v := it.At()
		if t > maxt {
			break
		}
		ts, vs = append(ts, t), append(vs, v)
	}
	return ts, vs, it.Err()
}
