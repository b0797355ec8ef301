package chunkenc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
)

// fuzzHistogramSeries turns fuzzer bytes into a series of histograms. Each
// histogram is an op byte and an argument byte that change the state of
// the series before it is written out: bucket counts go up, down or
// vanish, buckets appear, the zero count, sum, hint, schema, zero
// threshold or custom bounds change, or a stale marker is written. The
// histograms are valid but for NaN observations (a count above the
// buckets' total), which the chunk does not check.
func fuzzHistogramSeries(data []byte) []hsample {
	pos, neg := buckets{}, buckets{}
	var zeros, nanObs uint64
	var sum float64
	schema, threshold := int32(3), 0.001
	var bounds []float64
	hint := histogram.UnknownCounterReset
	var out []hsample
	t := int64(1700000000000)
	for len(data) >= 2 && len(out) < 2000 {
		op, arg := data[0], data[1]
		data = data[2:]
		idx := int32(arg>>4) - 8
		custom := histogram.IsCustomBucketsSchema(schema)
		if custom {
			idx += 8 // custom buckets have indices from 0
		}
		stale := false
		switch op & 7 {
		case 0:
			pos[idx] += int64(arg & 15)
		case 1:
			if !custom {
				neg[idx] += int64(arg & 15)
			}
		case 2:
			if !custom {
				zeros += uint64(arg)
			}
		case 3:
			delete(pos, idx) // a reset if it was not 0
		case 4:
			pos[idx] = int64(arg & 3) // maybe lower
		case 5:
			if len(data) >= 8 {
				sum = math.Float64frombits(binary.LittleEndian.Uint64(data))
				data = data[8:]
			} else {
				sum += float64(arg)
			}
		case 6:
			hint = []histogram.CounterResetHint{
				histogram.UnknownCounterReset, histogram.CounterReset, histogram.NotCounterReset, histogram.GaugeType, 17,
			}[arg%5]
		case 7:
			switch arg & 7 {
			case 0:
				stale = true
			case 1:
				schema = int32(arg>>3)%9 - 4
				bounds = nil
			case 2:
				threshold = float64(arg>>3) / 1000
			case 3, 4:
				// Custom buckets, with one of two sets of bounds.
				schema, zeros, threshold = histogram.CustomBucketsSchema, 0, 0
				bounds = [][]float64{testBounds, {1, 2, 3}}[arg&1]
				clear(neg)
				for i := range pos {
					if i < 0 {
						delete(pos, i)
					}
				}
			case 5:
				pos[idx+100] += 0 // a bucket of count 0
			case 6:
				nanObs += uint64(arg >> 3)
			case 7:
				pos[idx] += 1 << 40
			}
		}
		t += int64(arg)*37 + 1
		if stale {
			out = append(out, hsample{t, staleHist()})
			continue
		}
		h := hist(zeros, sum, pos, neg)
		h.Count += nanObs
		h.Schema, h.ZeroThreshold, h.CustomValues, h.CounterResetHint = schema, threshold, bounds, hint
		out = append(out, hsample{t, h})
	}
	return out
}

// fuzzHistogramBytes is the inverse of fuzzHistogramSeries for seeds: it
// writes ops that grow the positive buckets of a histogram one by one.
func fuzzHistogramBytes(b buckets) []byte {
	var out []byte
	for _, idx := range slices.Sorted(maps.Keys(b)) {
		for v := b[idx]; v > 0; v -= min(v, 15) {
			out = append(out, 0, byte(idx+8)<<4|byte(min(v, 15)))
		}
	}
	return out
}

// isDecrease is the test's own counter reset check: a count, the zero
// count or a bucket of h below prev's, a missing bucket counting 0.
func isDecrease(prev, h *histogram.Histogram) bool {
	if h.Count < prev.Count || !h.UsesCustomBuckets() && h.ZeroCount < prev.ZeroCount {
		return true
	}
	for _, side := range [][2]map[int64]uint64{
		{bucketCounts(prev.PositiveSpans, prev.PositiveBuckets, true), bucketCounts(h.PositiveSpans, h.PositiveBuckets, true)},
		{bucketCounts(prev.NegativeSpans, prev.NegativeBuckets, true), bucketCounts(h.NegativeSpans, h.NegativeBuckets, true)},
	} {
		for idx, v := range side[0] {
			if int64(side[1][idx]) < int64(v) {
				return true
			}
		}
	}
	return false
}

// joins is the test's own check of whether h may join a chunk whose first
// histogram that is not a stale marker is first.
func joins(first, h *histogram.Histogram) bool {
	if (first.CounterResetHint == histogram.GaugeType) != (h.CounterResetHint == histogram.GaugeType) || first.Schema != h.Schema {
		return false
	}
	if first.UsesCustomBuckets() {
		return sameFloats(first.CustomValues, h.CustomValues)
	}
	return math.Float64bits(first.ZeroThreshold) == math.Float64bits(h.ZeroThreshold)
}

// appendSeries appends samples to chunks as a head would: a new chunk when
// Append says so, with the hint set to a counter reset after
// CounterResetDetected. It checks each decision against the test's own.
// It returns the chunks and what each holds.
func appendSeries(t *testing.T, samples []hsample) ([][]byte, [][]hsample, []AppendResult) {
	var chunks [][]byte
	var held [][]hsample
	var results []AppendResult
	c := NewHistogramChunk()
	var cur []hsample
	var first, last *histogram.Histogram // of the open chunk, stale markers aside
	for i, s := range samples {
		r := c.Append(s.t, s.h)
		results = append(results, r)
		stale := math.Float64bits(s.h.Sum) == staleMarkerBits
		var want AppendResult
		switch {
		case stale || first == nil:
			want = Appended
		case !joins(first, s.h):
			want = NeedNewChunk
		case first.CounterResetHint != histogram.GaugeType && (s.h.CounterResetHint == histogram.CounterReset || isDecrease(last, s.h)):
			want = CounterResetDetected
		}
		if r != want {
			t.Fatalf("sample %d: Append = %v, want %v\nchunk's first %v\nlast %v\nh %v", i, r, want, first, last, s.h)
		}
		if r != Appended {
			chunks = append(chunks, c.Bytes())
			held = append(held, cur)
			c, cur, first = NewHistogramChunk(), nil, nil
			if r == CounterResetDetected {
				s.h = withHint(s.h.Copy(), histogram.CounterReset)
			}
			if r := c.Append(s.t, s.h); r != Appended {
				t.Fatalf("sample %d: Append to a new chunk = %v", i, r)
			}
		}
		cur = append(cur, s)
		if !stale {
			if first == nil {
				first = s.h
			}
			last = s.h
		}
	}
	return append(chunks, c.Bytes()), append(held, cur), results
}

func FuzzHistogramRoundTrip(f *testing.F) {
	for _, rate := range []int{20, 1000} {
		last := realisticHistograms(1, rate, 1)[0].h
		counts := buckets{}
		c := spanCursor{spans: last.PositiveSpans}
		var acc int64
		for _, d := range last.PositiveBuckets {
			idx, _ := c.advance()
			acc += d
			counts[int32(idx)%8] += acc % 100
		}
		f.Add(fuzzHistogramBytes(counts))
	}
	f.Add([]byte{})
	// Every op once, then a decrease, a stale marker, a gauge and custom
	// buckets.
	f.Add([]byte{0, 0x95, 1, 0x73, 2, 9, 3, 0x90, 4, 0x61, 5, 3, 6, 1, 7, 0x11, 7, 2, 7, 0x13, 7, 5, 7, 0x0e, 7, 7})
	f.Add([]byte{0, 0x9f, 0, 0xaf, 4, 0x90, 7, 0, 0, 0x91, 6, 3, 4, 0x90, 0, 0x91, 7, 3, 0, 0x12, 7, 4, 0, 0x13})

	it, fit := &HistogramIterator{}, &FloatHistogramIterator{}
	f.Fuzz(func(t *testing.T, data []byte) {
		samples := fuzzHistogramSeries(data)
		chunks, held, results := appendSeries(t, samples)
		fc := NewFloatHistogramChunk()
		k := 0 // index into results, the first Append of each sample
		for i, b := range chunks {
			got, err := decodeHistograms(it, b)
			if err != nil {
				t.Fatalf("chunk %d: %v", i, err)
			}
			if d := diffHistogramSamples(got, held[i]); d != "" {
				t.Fatalf("chunk %d: %s", i, d)
			}
			// The float chunk makes the same decisions on the same
			// histograms, and round-trips them too.
			fwant := toFloatSamples(held[i])
			for j, s := range fwant {
				r := fc.Append(s.t, s.h)
				if r != results[k] {
					t.Fatalf("chunk %d sample %d: float Append = %v, integer Append = %v", i, j, r, results[k])
				}
				k++
				if r != Appended {
					fc.Reset()
					if r := fc.Append(s.t, s.h); r != Appended {
						t.Fatalf("chunk %d: float Append to a new chunk = %v", i, r)
					}
				}
			}
			fgot, err := decodeFloatHistograms(fit, fc.Bytes())
			if err != nil {
				t.Fatalf("float chunk %d: %v", i, err)
			}
			if d := diffFloatHistogramSamples(fgot, fwant); d != "" {
				t.Fatalf("float chunk %d: %s", i, d)
			}
		}
	})
}

// reencode appends decoded histograms to new chunks, cutting one whenever
// Append refuses, and decodes them again: whatever decodes cleanly must
// survive re-encoding, though the bytes and the hints may differ.
func reencode(t *testing.T, got []hsample) {
	t.Helper()
	var again []hsample
	c := NewHistogramChunk()
	flush := func() {
		d, err := decodeHistograms(&HistogramIterator{}, c.Bytes())
		if err != nil {
			t.Fatalf("decoding the re-encoded chunk: %v", err)
		}
		again = append(again, d...)
	}
	for _, s := range got {
		if c.Append(s.t, s.h) != Appended {
			flush()
			c.Reset()
			if r := c.Append(s.t, s.h); r != Appended {
				t.Fatalf("re-encoding: Append to a new chunk = %v", r)
			}
		}
	}
	flush()
	if len(again) != len(got) {
		t.Fatalf("re-encoding decoded %d histograms, want %d", len(again), len(got))
	}
	for i := range got {
		if again[i].t != got[i].t {
			t.Fatalf("re-encoding: sample %d at %d, want %d", i, again[i].t, got[i].t)
		}
		if d := diffHistogram(again[i].h, got[i].h, false); d != "" {
			t.Fatalf("re-encoding: sample %d: %s", i, d)
		}
	}
}

// histogramIteratorSeeds are valid chunks and damaged ones.
func histogramIteratorSeeds(f *testing.F, float bool) {
	cases := histogramRoundTripCases()
	for _, name := range []string{
		"one histogram", "negative buckets", "layout grows", "custom buckets", "stale first", "gauge", "extreme values", "irregular intervals",
	} {
		var b []byte
		if float {
			c, _ := encodeFloatHistograms(toFloatSamples(cases[name]))
			b = c.Bytes()
		} else {
			c, _ := encodeHistograms(cases[name])
			b = c.Bytes()
		}
		f.Add(b)
		f.Add(b[:len(b)-1])
	}
	f.Add([]byte{})
	f.Add([]byte{0, 0})
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 3, 0x69, 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
}

// checkDecoded checks what an iterator made of arbitrary bytes.
func checkDecoded(t *testing.T, b []byte, decoded int, header CounterResetHeader, err error) {
	t.Helper()
	count := 0
	if len(b) >= 2 {
		count = int(binary.BigEndian.Uint16(b))
	}
	if decoded > count {
		t.Fatalf("decoded %d samples, more than the header's %d", decoded, count)
	}
	if header > GaugeType {
		t.Fatalf("Header() = %v", header)
	}
	if err != nil {
		if !errors.Is(err, ErrCorruptChunk) {
			t.Fatalf("Err() = %v, want ErrCorruptChunk", err)
		}
		var ce *CorruptChunkError
		if !errors.As(err, &ce) || ce.Offset < 0 || ce.Offset > len(b) || ce.Sample != decoded {
			t.Fatalf("Err() = %v after %d samples of a %d-byte chunk", err, decoded, len(b))
		}
		return
	}
	if decoded != count {
		t.Fatalf("decoded %d samples without error, header says %d", decoded, count)
	}
}

func FuzzHistogramIterator(f *testing.F) {
	histogramIteratorSeeds(f, false)
	it := &HistogramIterator{}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeHistograms(it, b)
		checkDecoded(t, b, len(got), it.Header(), err)
		if err == nil {
			reencode(t, got)
		}
	})
}

func FuzzFloatHistogramIterator(f *testing.F) {
	histogramIteratorSeeds(f, true)
	it := &FloatHistogramIterator{}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeFloatHistograms(it, b)
		checkDecoded(t, b, len(got), it.Header(), err)
		if err != nil {
			return
		}
		// Re-encode, cutting chunks where Append refuses.
		var again []fhsample
		c := NewFloatHistogramChunk()
		flush := func() {
			d, err := decodeFloatHistograms(&FloatHistogramIterator{}, c.Bytes())
			if err != nil {
				t.Fatalf("decoding the re-encoded chunk: %v", err)
			}
			again = append(again, d...)
		}
		for _, s := range got {
			if c.Append(s.t, s.h) != Appended {
				flush()
				c.Reset()
				if r := c.Append(s.t, s.h); r != Appended {
					t.Fatalf("re-encoding: Append to a new chunk = %v", r)
				}
			}
		}
		flush()
		if len(again) != len(got) {
			t.Fatalf("re-encoding decoded %d histograms, want %d", len(again), len(got))
		}
		for i := range got {
			if d := diffFloatHistogram(again[i].h, got[i].h, false); d != "" || again[i].t != got[i].t {
				t.Fatalf("re-encoding: sample %d: %s", i, d)
			}
		}
	})
}

// fuzzFloatSeries turns fuzzer bytes into float gauge histograms whose
// counts are raw bits from the input, NaNs and infinities included, over
// a few buckets that come and go.
func fuzzFloatSeries(data []byte) []fhsample {
	var out []fhsample
	for i := 0; len(data) >= 3 && len(out) < 2000; i++ {
		mask, n := data[0], int(data[1]%4)
		data = data[2:]
		h := &histogram.FloatHistogram{CounterResetHint: histogram.GaugeType, Schema: 1, ZeroThreshold: 1e-3}
		vals := make([]float64, 0, 4+n)
		for range 3 + n {
			var v float64
			if len(data) >= 8 {
				v = math.Float64frombits(binary.LittleEndian.Uint64(data))
				data = data[8:]
			} else if len(data) > 0 {
				v = float64(data[0])
				data = data[1:]
			}
			vals = append(vals, v)
		}
		h.Count, h.Sum, h.ZeroCount = vals[0], vals[1], vals[2]
		// Distinct indices, some negative, the lowest bit of the mask
		// choosing between neighbours; then in order.
		var idxs []int64
		for j := range vals[3:] {
			idx := int64(j*2 + int(mask>>4&1))
			if mask>>j&1 == 1 {
				idx = -idx - 1
			}
			idxs = append(idxs, idx)
		}
		slices.Sort(idxs)
		var sb spanBuilder
		for _, idx := range idxs {
			sb.add(idx)
		}
		h.PositiveSpans, h.PositiveBuckets = sb.spans, vals[3:]
		out = append(out, fhsample{int64(i) * 15000, h})
	}
	return out
}

func FuzzFloatHistogramRoundTrip(f *testing.F) {
	for _, s := range [][]fhsample{rateHistograms(3, 20, 1)} {
		var b []byte
		for _, x := range s {
			b = append(b, 0, 3)
			for _, v := range []float64{x.h.Count, x.h.Sum, x.h.ZeroCount, 1, 2, 3} {
				b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
			}
		}
		f.Add(b)
	}
	f.Add([]byte{0xff, 3, 1, 2, 3, 4, 5, 6, 0x10, 1, 0, 0, 0, 0})
	it := &FloatHistogramIterator{}
	f.Fuzz(func(t *testing.T, data []byte) {
		want := fuzzFloatSeries(data)
		c, err := encodeFloatHistograms(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeFloatHistograms(it, c.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if d := diffFloatHistogramSamples(got, want); d != "" {
			t.Fatal(fmt.Sprint(d))
		}
	})
}
