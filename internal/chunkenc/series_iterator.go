package chunkenc

import (
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"
)

// SeriesIterator walks the samples of a series' chunks, oldest first,
// keeping to [mint, maxt]. Chunks do not overlap in time. It has an
// iterator per encoding and uses the one of the chunk it is in.
type SeriesIterator struct {
	chunks     []Meta
	i          int  // index of the chunk the iterators are in, if inChunk
	inChunk    bool // the iterator of chunks[i].enc has been Reset to it
	xor        XORIterator
	dec        DecimalIterator
	hist       HistogramIterator
	fhist      FloatHistogramIterator
	mint, maxt int64
	starts     []StartTime // the series' start time changes
	startIdx   int         // of the change in effect at t, or -1; see startAt
	t          int64
	v          float64                // the current float sample's value
	vt         promchunkenc.ValueType // the current sample's type, if positioned
	positioned bool                   // t (and v) are the current sample
	done       bool
	err        error
	// joins and fresh keep a histogram's counter-reset hint as a merge
	// of the sources would (see Series.Joins): joined counts the joins at
	// or before chunk i, returned those before the previous sample, and
	// fresh says the current sample does not follow that one in the
	// same source.
	joins            []int
	joined, returned int
	fresh            bool
	// A float chunk is decoded a batch of samples at a time into bts and
	// bvs (AppendSamples: a fifth less time a sample, through Next, than
	// the chunk's own iterator; BenchmarkSeriesIterator): batched says
	// the chunk is read so, bi is the next of the batch's samples to
	// return, taken counts those returned from the chunk. The batch's
	// arrays are the iterator's own (made at its first float chunk), so
	// that the engine's iterators, one per series where it keeps them
	// all, stay small.
	batched bool
	bi      int
	taken   int
	bts     []int64
	bvs     []float64
	batch   *sampleBatch
}

// sampleBatch is a SeriesIterator's buffer of decoded float samples. 64
// samples (1 KiB) take a loop's setup cost to under a tenth of a sample's.
type sampleBatch struct {
	ts [64]int64
	vs [64]float64
}

// Reset makes the iterator walk chunks (oldest first, not overlapping in
// time) from mint to maxt inclusive, with the series' start time changes
// starts (oldest first; nil if it has none), keeping its decoders' memory.
// It retains both slices until the next Reset.
func (si *SeriesIterator) Reset(chunks []Meta, starts []StartTime, mint, maxt int64) {
	*si = SeriesIterator{chunks: chunks, starts: starts, startIdx: -1, mint: mint, maxt: maxt, i: -1, xor: si.xor, dec: si.dec, hist: si.hist, fhist: si.fhist, batch: si.batch}
}

// Next implements Prometheus' chunkenc.Iterator.
func (si *SeriesIterator) Next() promchunkenc.ValueType {
	// Most calls take the next sample of a batch, within the range. The
	// batch's first sample came the long way, which set fresh for it:
	// the rest follow it in the same source.
	if si.batched && !si.done && si.bi < len(si.bts) {
		if t := si.bts[si.bi]; t >= si.mint && t <= si.maxt {
			si.t, si.v, si.positioned, si.fresh = t, si.bvs[si.bi], true, false
			si.bi++
			si.taken++
			return si.vt
		}
	}
	for !si.done {
		if si.inChunk {
			if t, ok := si.nextInChunk(); ok {
				if t < si.mint {
					continue
				}
				if t > si.maxt {
					break
				}
				if si.joins != nil {
					si.fresh = !si.positioned || si.joined != si.returned
					si.returned = si.joined
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
func (si *SeriesIterator) nextInChunk() (int64, bool) {
	if si.batched {
		if si.bi == len(si.bts) && !si.nextBatch() {
			return 0, false
		}
		if si.batched {
			t := si.bts[si.bi]
			si.v = si.bvs[si.bi]
			si.bi++
			si.taken++
			return t, true
		}
	}
	switch si.chunks[si.i].Enc {
	case EncHistogram:
		if !si.hist.Next() {
			return 0, false
		}
		return si.hist.AtT(), true
	case EncFloatHistogram:
		if !si.fhist.Next() {
			return 0, false
		}
		return si.fhist.AtT(), true
	case EncDecimal:
		if !si.dec.Next() {
			return 0, false
		}
		t, v := si.dec.At()
		si.v = v
		return t, true
	}
	if !si.xor.Next() {
		return 0, false
	}
	t, v := si.xor.At()
	si.v = v
	return t, true
}

// nextBatch decodes the next batch of the current float chunk. It returns
// false at the chunk's end. On malformed input it leaves batched off and
// the decoder past the samples already returned, for Next to find the
// error.
func (si *SeriesIterator) nextBatch() bool {
	if si.batch == nil {
		si.batch = &sampleBatch{}
	}
	dec := si.floatDecoder(si.chunks[si.i].Enc)
	ts, vs, ok := dec.AppendSamples(si.batch.ts[:0], si.batch.vs[:0], math.MaxInt64, len(si.batch.ts))
	si.bts, si.bvs, si.bi = ts, vs, 0
	if ok {
		return len(ts) > 0
	}
	si.batched = false
	dec.Reset(si.chunks[si.i].Data)
	for range si.taken {
		dec.Next()
	}
	return true
}

// floatDecoder returns the iterator's decoder of float chunks of
// encoding enc, EncDecimal or EncXOR.
func (si *SeriesIterator) floatDecoder(enc Encoding) bulkDecoder {
	if enc == EncDecimal {
		return &si.dec
	}
	return &si.xor
}

func (si *SeriesIterator) chunkErr() error {
	if si.batched {
		return nil
	}
	switch si.chunks[si.i].Enc {
	case EncHistogram:
		return si.hist.Err()
	case EncFloatHistogram:
		return si.fhist.Err()
	case EncDecimal:
		return si.dec.Err()
	}
	return si.xor.Err()
}

func (si *SeriesIterator) enter(i int) {
	si.i = i
	for si.joined < len(si.joins) && si.joins[si.joined] <= i {
		si.joined++
	}
	c := si.chunks[i]
	switch c.Enc {
	case EncHistogram:
		si.hist.Reset(c.Data)
		si.vt = promchunkenc.ValHistogram
	case EncFloatHistogram:
		si.fhist.Reset(c.Data)
		si.vt = promchunkenc.ValFloatHistogram
	case EncDecimal:
		si.dec.Reset(c.Data)
		si.vt = promchunkenc.ValFloat
	default:
		si.xor.Reset(c.Data)
		si.vt = promchunkenc.ValFloat
	}
	si.batched = si.vt == promchunkenc.ValFloat
	si.bts, si.bvs, si.bi, si.taken = nil, nil, 0, 0
	si.inChunk = true
}

// AppendValues appends the timestamps and values of all the series'
// samples in [mint, maxt] to ts and vals, whose values follow ts'
// timestamps one for one, decoding a chunk at a time rather than a
// sample at a time, for a reader that wants them all (a rate over every
// step of a query). A reader that reads a few of the values every
// `every` ms (a rate's first and last of each step's window) gives that
// interval: a decimal chunk with more than StoredPer samples in that
// time keeps its values as stored (see Values), made floats as they are
// read, not all as they are loaded; 0 makes them all floats. It must be
// called on a freshly Reset iterator, which it leaves at the end. If a
// chunk holds histograms it appends nothing and returns ok false,
// leaving the iterator as it was.
func (si *SeriesIterator) AppendValues(ts []int64, vals *Values, every int64) (_ []int64, ok bool, err error) {
	for _, c := range si.chunks {
		if c.Enc != EncXOR && c.Enc != EncDecimal {
			return ts, false, nil
		}
	}
	for i, c := range si.chunks {
		if c.MaxT < si.mint || c.MinT > si.maxt {
			continue
		}
		// A chunk that ends by maxt is read whole, unchecked.
		n, maxt := len(ts), si.maxt
		if c.MaxT <= maxt {
			maxt = math.MaxInt64
		}
		var run valueRun
		if c.Enc == EncDecimal {
			stored := every > 0 && int64(c.NumSamples()) > StoredPer*(1+(c.MaxT-c.MinT)/every)
			ts, vals.vs, run, err = appendDecimal(&si.dec, c.Data, maxt, stored, ts, vals.vs)
		} else {
			ts, vals.vs, err = appendChunk(&si.xor, c.Data, maxt, ts, vals.vs)
		}
		if c.MinT < si.mint {
			// The chunk at the range's start: drop what is before it, a
			// chunk's samples being in order.
			j, _ := slices.BinarySearch(ts[n:], si.mint)
			k := copy(ts[n:], ts[n+j:])
			copy(vals.vs[n:], vals.vs[n+j:])
			ts, vals.vs = ts[:n+k], vals.vs[:n+k]
		}
		if len(ts) > n {
			run.start = n
			vals.mark(run)
		}
		if err != nil {
			si.i, si.inChunk, si.err, si.done = i, true, err, true
			return ts, true, err
		}
	}
	si.done = true
	return ts, true, nil
}

// StoredPer is how many samples a decimal chunk must have in the
// interval a reader reads values at for AppendValues to keep its values
// as stored: with fewer, the division each value read takes costs more
// than dividing all as they load (BenchmarkSeriesEval in
// internal/rollup).
const StoredPer = 4

// appendDecimal appends the samples of the decimal chunk data that are at
// or before maxt to ts and vs, as DecimalIterator.AppendStored does if
// stored, else as AppendSamples does, and returns how their values are
// stored (the run's start is left for the caller). A malformed chunk's
// samples before the error are appended as floats, and the error
// returned, as appendChunk does.
func appendDecimal(it *DecimalIterator, data []byte, maxt int64, stored bool, ts []int64, vs []float64) (_ []int64, _ []float64, run valueRun, err error) {
	it.Reset(data)
	var ok bool
	if stored {
		ts, vs, run.div, ok = it.AppendStored(ts, vs, maxt, math.MaxInt)
	} else {
		ts, vs, ok = it.AppendSamples(ts, vs, maxt, math.MaxInt)
	}
	if ok {
		run.rising = it.Rising()
		return ts, vs, run, nil
	}
	ts, vs, err = appendChunk(it, data, maxt, ts, vs)
	return ts, vs, valueRun{}, err
}

// seekT is int64 under another name. go vet's stdmethods check expects any
// method named Seek whose first parameter is an int64 to be io.Seeker's;
// Prometheus' Iterator.Seek is not, and the alias keeps vet quiet without
// turning the check off for the whole tree.
type seekT = int64

// Seek implements Prometheus' chunkenc.Iterator.
func (si *SeriesIterator) Seek(t seekT) promchunkenc.ValueType {
	if si.done {
		return promchunkenc.ValNone
	}
	if si.positioned && si.t >= t {
		return si.vt
	}
	// Skip the chunks that end before t without decoding them.
	if !si.inChunk || si.chunks[si.i].MaxT < t {
		j := si.i + 1
		for j < len(si.chunks) && si.chunks[j].MaxT < t {
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
			// A merge does not know whether the sample it seeks to
			// follows the previous one.
			si.fresh = si.joins != nil
			return vt
		}
	}
}

// At implements Prometheus' chunkenc.Iterator.
func (si *SeriesIterator) At() (int64, float64) { return si.t, si.v }

// AtHistogram implements Prometheus' chunkenc.Iterator. It returns nil unless the
// current sample is an integer histogram.
func (si *SeriesIterator) AtHistogram(h *histogram.Histogram) (int64, *histogram.Histogram) {
	if si.vt != promchunkenc.ValHistogram {
		return si.t, nil
	}
	h = si.hist.AtHistogram(h)
	if si.fresh && h.CounterResetHint != histogram.GaugeType {
		h.CounterResetHint = histogram.UnknownCounterReset
	}
	return si.t, h
}

// AtFloatHistogram implements Prometheus' chunkenc.Iterator: the current sample as a
// float histogram, if it is a histogram of either kind.
func (si *SeriesIterator) AtFloatHistogram(fh *histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	switch si.vt {
	case promchunkenc.ValHistogram:
		fh = si.hist.AtFloatHistogram(fh)
	case promchunkenc.ValFloatHistogram:
		fh = si.fhist.AtFloatHistogram(fh)
	default:
		return si.t, nil
	}
	if si.fresh && fh.CounterResetHint != histogram.GaugeType {
		fh.CounterResetHint = histogram.UnknownCounterReset
	}
	return si.t, fh
}

// AtT implements Prometheus' chunkenc.Iterator.
func (si *SeriesIterator) AtT() int64 { return si.t }

// AtST implements Prometheus' chunkenc.Iterator: the start time of the current
// sample's series at the sample, 0 if unknown.
func (si *SeriesIterator) AtST() int64 {
	if len(si.starts) == 0 {
		return 0
	}
	var st int64
	st, si.startIdx = StartAt(si.starts, si.t, si.startIdx)
	return st
}

// Err implements Prometheus' chunkenc.Iterator.
func (si *SeriesIterator) Err() error { return si.err }

// Series is a series' labels with its chunks and start time changes,
// read from mint to maxt: what the head and the blocks hand the PromQL
// engine. It implements Prometheus' storage.Series.
//
// A series read from several sources (blocks and the head) that do not
// overlap in time may be handed out as one Series over their chunks
// joined, oldest first. Joins then lists the indices in Chunks where the
// chunks of another source begin, and the iterator gives histograms the
// counter-reset hints Prometheus' merge of the sources gives: unknown
// (unless a gauge) for the first sample read, for a sample Seek moves
// to, and for the first sample read from another source, since none of
// these is known to follow the previous one without a reset.
type Series struct {
	Lset       labels.Labels
	Chunks     []Meta
	Starts     []StartTime
	Joins      []int
	MinT, MaxT int64
}

// Labels implements storage.Series.
func (s *Series) Labels() labels.Labels { return s.Lset }

// Iterator implements storage.Series, reusing it if it is a
// *SeriesIterator.
func (s *Series) Iterator(it promchunkenc.Iterator) promchunkenc.Iterator {
	si, ok := it.(*SeriesIterator)
	if !ok {
		si = &SeriesIterator{}
	}
	si.Reset(s.Chunks, s.Starts, s.MinT, s.MaxT)
	si.joins = s.Joins
	return si
}
