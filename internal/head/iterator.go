package head

import (
	"github.com/prometheus/prometheus/model/histogram"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/chunkenc"
)

// Iterator returns an iterator over the series' samples in [mint, maxt],
// reusing it if it is one of ours.
func (s *series) Iterator(it promchunkenc.Iterator) promchunkenc.Iterator {
	si, ok := it.(*seriesIterator)
	if !ok {
		si = &seriesIterator{}
	}
	si.reset(s.chunks, s.mint, s.maxt)
	return si
}

// seriesIterator walks float samples across a series' chunks, oldest
// first, keeping to [mint, maxt]. Chunks do not overlap in time.
type seriesIterator struct {
	chunks     []memChunk
	i          int  // index of the chunk it, if inChunk, iterates
	inChunk    bool // it has been Reset to chunks[i]
	it         chunkenc.XORIterator
	mint, maxt int64
	t          int64
	v          float64
	positioned bool // t and v hold the current sample
	done       bool
	err        error
}

func (si *seriesIterator) reset(chunks []memChunk, mint, maxt int64) {
	*si = seriesIterator{chunks: chunks, mint: mint, maxt: maxt, i: -1, it: si.it}
}

// Next implements chunkenc.Iterator.
func (si *seriesIterator) Next() promchunkenc.ValueType {
	for !si.done {
		if si.inChunk {
			if si.it.Next() {
				t, v := si.it.At()
				if t < si.mint {
					continue
				}
				if t > si.maxt {
					break
				}
				si.t, si.v, si.positioned = t, v, true
				return promchunkenc.ValFloat
			}
			if err := si.it.Err(); err != nil {
				si.err = err
				break
			}
		}
		if si.i+1 >= len(si.chunks) {
			break
		}
		si.enter(si.i + 1)
	}
	si.done = true
	return promchunkenc.ValNone
}

func (si *seriesIterator) enter(i int) {
	si.i = i
	si.it.Reset(si.chunks[i].data)
	si.inChunk = true
}

// seekT is int64 under another name. go vet's stdmethods check expects any
// method named Seek whose first parameter is an int64 to be io.Seeker's;
// chunkenc.Iterator's Seek is not, and the alias keeps vet quiet without
// turning the check off for the whole tree.
type seekT = int64

// Seek implements chunkenc.Iterator.
func (si *seriesIterator) Seek(t seekT) promchunkenc.ValueType {
	if si.done {
		return promchunkenc.ValNone
	}
	if si.positioned && si.t >= t {
		return promchunkenc.ValFloat
	}
	// Skip the chunks that end before t without decoding them.
	if !si.inChunk || si.chunks[si.i].maxt < t {
		j := si.i + 1
		for j < len(si.chunks) && si.chunks[j].maxt < t {
			j++
		}
		if j >= len(si.chunks) {
			si.done = true
			return promchunkenc.ValNone
		}
		si.enter(j)
	}
	for {
		vt := si.Next()
		if vt == promchunkenc.ValNone || si.t >= t {
			return vt
		}
	}
}

// At implements chunkenc.Iterator.
func (si *seriesIterator) At() (int64, float64) { return si.t, si.v }

// AtHistogram implements chunkenc.Iterator; the head holds floats only.
func (si *seriesIterator) AtHistogram(*histogram.Histogram) (int64, *histogram.Histogram) {
	return si.t, nil
}

// AtFloatHistogram implements chunkenc.Iterator; the head holds floats only.
func (si *seriesIterator) AtFloatHistogram(*histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	return si.t, nil
}

// AtT implements chunkenc.Iterator.
func (si *seriesIterator) AtT() int64 { return si.t }

// AtST implements chunkenc.Iterator; start timestamps are not stored yet.
func (si *seriesIterator) AtST() int64 { return 0 }

// Err implements chunkenc.Iterator.
func (si *seriesIterator) Err() error { return si.err }
