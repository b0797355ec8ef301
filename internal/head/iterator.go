package head

import (
	"github.com/prometheus/prometheus/model/histogram"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/record"
)

// Iterator returns an iterator over the series' samples in [mint, maxt],
// reusing it if it is one of ours.
func (s *series) Iterator(it promchunkenc.Iterator) promchunkenc.Iterator {
	si, ok := it.(*seriesIterator)
	if !ok {
		si = &seriesIterator{}
	}
	si.reset(s.chunks, s.starts, s.mint, s.maxt)
	return si
}

// seriesIterator walks the samples of a series' chunks, oldest first,
// keeping to [mint, maxt]. Chunks do not overlap in time. It has an
// iterator per encoding and uses the one of the chunk it is in.
type seriesIterator struct {
	chunks     []memChunk
	i          int  // index of the chunk the iterators are in, if inChunk
	inChunk    bool // the iterator of chunks[i].enc has been Reset to it
	xor        chunkenc.XORIterator
	hist       chunkenc.HistogramIterator
	fhist      chunkenc.FloatHistogramIterator
	mint, maxt int64
	starts     []startTime // the series' start time changes
	startIdx   int         // of the change in effect at t, or -1; see startAt
	t          int64
	v          float64                // the current float sample's value
	vt         promchunkenc.ValueType // the current sample's type, if positioned
	positioned bool                   // t (and v) are the current sample
	done       bool
	err        error
}

func (si *seriesIterator) reset(chunks []memChunk, starts []startTime, mint, maxt int64) {
	*si = seriesIterator{chunks: chunks, starts: starts, startIdx: -1, mint: mint, maxt: maxt, i: -1, xor: si.xor, hist: si.hist, fhist: si.fhist}
}

// Next implements chunkenc.Iterator.
func (si *seriesIterator) Next() promchunkenc.ValueType {
	for !si.done {
		if si.inChunk {
			if t, ok := si.nextInChunk(); ok {
				if t < si.mint {
					continue
				}
				if t > si.maxt {
					break
				}
				si.t, si.positioned = t, true
				return si.vt
			}
			if err := si.chunkErr(); err != nil {
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

// nextInChunk advances within the current chunk and returns the new
// sample's timestamp, setting v for a float sample.
func (si *seriesIterator) nextInChunk() (int64, bool) {
	switch si.chunks[si.i].enc {
	case record.EncHistogram:
		if !si.hist.Next() {
			return 0, false
		}
		return si.hist.AtT(), true
	case record.EncFloatHistogram:
		if !si.fhist.Next() {
			return 0, false
		}
		return si.fhist.AtT(), true
	}
	if !si.xor.Next() {
		return 0, false
	}
	t, v := si.xor.At()
	si.v = v
	return t, true
}

func (si *seriesIterator) chunkErr() error {
	switch si.chunks[si.i].enc {
	case record.EncHistogram:
		return si.hist.Err()
	case record.EncFloatHistogram:
		return si.fhist.Err()
	}
	return si.xor.Err()
}

func (si *seriesIterator) enter(i int) {
	si.i = i
	c := si.chunks[i]
	switch c.enc {
	case record.EncHistogram:
		si.hist.Reset(c.data)
		si.vt = promchunkenc.ValHistogram
	case record.EncFloatHistogram:
		si.fhist.Reset(c.data)
		si.vt = promchunkenc.ValFloatHistogram
	default:
		si.xor.Reset(c.data)
		si.vt = promchunkenc.ValFloat
	}
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
		return si.vt
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

// AtHistogram implements chunkenc.Iterator. It returns nil unless the
// current sample is an integer histogram.
func (si *seriesIterator) AtHistogram(h *histogram.Histogram) (int64, *histogram.Histogram) {
	if si.vt != promchunkenc.ValHistogram {
		return si.t, nil
	}
	return si.t, si.hist.AtHistogram(h)
}

// AtFloatHistogram implements chunkenc.Iterator: the current sample as a
// float histogram, if it is a histogram of either kind.
func (si *seriesIterator) AtFloatHistogram(fh *histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	switch si.vt {
	case promchunkenc.ValHistogram:
		return si.t, si.hist.AtFloatHistogram(fh)
	case promchunkenc.ValFloatHistogram:
		return si.t, si.fhist.AtFloatHistogram(fh)
	}
	return si.t, nil
}

// AtT implements chunkenc.Iterator.
func (si *seriesIterator) AtT() int64 { return si.t }

// AtST implements chunkenc.Iterator: the start time of the current
// sample's series at the sample, 0 if unknown.
func (si *seriesIterator) AtST() int64 {
	if len(si.starts) == 0 {
		return 0
	}
	var st int64
	st, si.startIdx = startAt(si.starts, si.t, si.startIdx)
	return st
}

// Err implements chunkenc.Iterator.
func (si *seriesIterator) Err() error { return si.err }
