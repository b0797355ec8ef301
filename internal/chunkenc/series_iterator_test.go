package chunkenc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"
)

// TestAppendValues checks that AppendValues gives what Next and At give,
// with values as floats, as the chunks store them, and some of each
// (every 100 ms: a chunk of these is read at most 14 times), over XOR and
// decimal chunks and ranges that cut chunks, and refuses a series with
// histograms.
func TestAppendValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	mixed, _ := mixedChunks(t, rng, 50)
	kinds := storedKindsChunks(t, rng)
	for name, chunks := range map[string][]Meta{"mixed": mixed, "kinds": kinds} {
		ts := chunks[len(chunks)-1].MaxT
		var it SeriesIterator
		for _, r := range [][2]int64{{math.MinInt64, math.MaxInt64}, {0, ts / 2}, {ts / 3, ts}, {ts / 4, ts / 4}, {ts + 1, ts + 2}} {
			it.Reset(chunks, nil, r[0], r[1])
			var want []sample
			for it.Next() == promchunkenc.ValFloat {
				t, v := it.At()
				want = append(want, sample{t, math.Float64bits(v)})
			}
			for _, every := range []int64{0, 100, math.MaxInt64} {
				it.Reset(chunks, nil, r[0], r[1])
				var vals Values
				gotT, ok, err := it.AppendValues(nil, &vals, every)
				if !ok || err != nil || len(gotT) != len(vals.vs) {
					t.Fatalf("%s [%d, %d] every %d: ok %v, error %v, %d timestamps, %d values", name, r[0], r[1], every, ok, err, len(gotT), len(vals.vs))
				}
				checkValues(t, fmt.Sprintf("%s [%d, %d] every %d", name, r[0], r[1], every), gotT, &vals, want, rng)
				if vs, ok := vals.Floats(); every == 0 && (!ok || len(vs) != len(want)) {
					t.Errorf("%s [%d, %d]: loaded as floats, Floats gives %d values, %v", name, r[0], r[1], len(vs), ok)
				}
				if it.Next() != promchunkenc.ValNone {
					t.Errorf("%s [%d, %d]: samples left after AppendValues", name, r[0], r[1])
				}
			}
		}
	}
	ts := mixed[len(mixed)-1].MaxT
	hc := NewHistogramChunk()
	hc.Append(ts+10, &histogram.Histogram{Count: 1, ZeroCount: 1, Sum: 1})
	withHist := append(slices.Clone(mixed), Meta{Data: hc.Bytes(), MinT: ts + 10, MaxT: ts + 10, Enc: EncHistogram})
	var it SeriesIterator
	it.Reset(withHist, nil, math.MinInt64, math.MaxInt64)
	var vals Values
	if gotT, ok, _ := it.AppendValues(nil, &vals, math.MaxInt64); ok || len(gotT) != 0 || len(vals.vs) != 0 {
		t.Errorf("a series with histograms: ok %v, %d samples", ok, len(gotT))
	}
	if it.Next() != promchunkenc.ValFloat {
		t.Error("AppendValues moved the iterator of a series it refused")
	}
}

// mixedChunks returns six chunks of a series of the given samples each,
// XOR and decimal in turn, at random intervals of 10-19 ms, and its last
// timestamp.
func mixedChunks(t *testing.T, rng *rand.Rand, samples int) ([]Meta, int64) {
	var d Densifier
	var chunks []Meta
	ts := int64(0)
	for c := range 6 {
		xc := NewXORChunk()
		for range samples {
			ts += 10 + rng.Int64N(10)
			xc.Append(ts, float64(rng.IntN(1000))/4)
		}
		m := Meta{Data: slices.Clone(xc.Bytes()), MaxT: ts, Enc: EncXOR}
		m.MinT = firstT(t, m)
		if c%2 == 1 {
			data, ok := d.Densify(m.Data)
			if !ok {
				t.Fatal("not densified")
			}
			m.Data, m.Enc = slices.Clone(data), EncDecimal
		}
		chunks = append(chunks, m)
	}
	return chunks, ts
}

// firstT returns the timestamp of a chunk's first sample.
func firstT(t *testing.T, m Meta) int64 {
	var it XORIterator
	it.Reset(m.Data)
	if !it.Next() {
		t.Fatal("empty chunk")
	}
	ts, _ := it.At()
	return ts
}

// TestSeriesIteratorBatches checks that Next and Seek, which decode float
// chunks a batch at a time, give what the chunks' own iterators give, in
// ranges and from seek points that cut batches and chunks, and stop at a
// malformed chunk with its iterator's error after the same samples.
func TestSeriesIteratorBatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	chunks, ts := mixedChunks(t, rng, 150)
	check := func(name string, chunks []Meta, mint, maxt, seek int64) {
		t.Helper()
		want, wantErr := plainSamples(chunks, max(mint, seek), maxt)
		var it SeriesIterator
		it.Reset(chunks, nil, mint, maxt)
		var got []sample
		vt := it.Next()
		if seek > math.MinInt64 {
			vt = it.Seek(seek)
		}
		for ; vt == promchunkenc.ValFloat; vt = it.Next() {
			t, v := it.At()
			got = append(got, sample{t, math.Float64bits(v)})
		}
		if !slices.Equal(got, want) || (it.Err() == nil) != (wantErr == nil) || (wantErr != nil && it.Err().Error() != wantErr.Error()) {
			t.Errorf("%s [%d, %d] from %d: %d samples, error %v; want %d, %v", name, mint, maxt, seek, len(got), it.Err(), len(want), wantErr)
		}
	}
	// Seeking past the end ends the iteration, with samples left in the
	// batch.
	var it SeriesIterator
	it.Reset(chunks, nil, math.MinInt64, math.MaxInt64)
	if it.Next() != promchunkenc.ValFloat || it.Seek(ts+1) != promchunkenc.ValNone || it.Next() != promchunkenc.ValNone {
		t.Error("Next returned a sample after Seek past the end")
	}
	for _, r := range [][2]int64{{math.MinInt64, math.MaxInt64}, {0, ts / 2}, {ts / 3, ts}, {ts / 4, ts / 4}, {ts + 1, ts + 2}} {
		check("whole", chunks, r[0], r[1], math.MinInt64)
		for range 5 {
			check("whole", chunks, r[0], r[1], rng.Int64N(ts+10))
		}
	}
	for i := range chunks {
		for _, cut := range []int{1, 9, len(chunks[i].Data) / 2, len(chunks[i].Data) - 1} {
			broken := slices.Clone(chunks)
			broken[i].Data = broken[i].Data[:len(broken[i].Data)-cut]
			check(fmt.Sprintf("chunk %d cut by %d", i, cut), broken, math.MinInt64, math.MaxInt64, math.MinInt64)
		}
	}
}

// plainSamples returns the samples of chunks in [mint, maxt] as their own
// iterators decode them, up to the first error.
func plainSamples(chunks []Meta, mint, maxt int64) ([]sample, error) {
	var out []sample
	for _, c := range chunks {
		var it floatDecoder = &XORIterator{}
		if c.Enc == EncDecimal {
			it = &DecimalIterator{}
		}
		it.Reset(c.Data)
		for it.Next() {
			t, v := it.At()
			if t > maxt {
				return out, nil
			}
			if t >= mint {
				out = append(out, sample{t, math.Float64bits(v)})
			}
		}
		if it.Err() != nil {
			return out, it.Err()
		}
	}
	return out, nil
}

// BenchmarkSeriesIterator measures Next and At over a series' chunks, as
// Prometheus' engine reads a series for a range selector: 8 chunks of 480
// samples of a gauge, as a block holds them (decimal) and as the head
// does (XOR, 120 samples a chunk).
//
//	go test -run NONE -bench BenchmarkSeriesIterator -count 6 ./internal/chunkenc
func BenchmarkSeriesIterator(b *testing.B) {
	series := realisticSeries("gauge", 8*480, 1)
	for _, enc := range []string{"decimal", "xor"} {
		b.Run("enc="+enc, func(b *testing.B) {
			var chunks []Meta
			var d Densifier
			size := 120
			if enc == "decimal" {
				size = 480
			}
			for s := range slices.Chunk(series, size) {
				c := encode(s)
				m := Meta{Data: c.Bytes(), MinT: s[0].t, MaxT: s[len(s)-1].t, Enc: EncXOR}
				if enc == "decimal" {
					d.Reset()
					if err := d.Add(EncXOR, m.Data); err != nil {
						b.Fatal(err)
					}
					data, ok := d.Encode(len(m.Data))
					if !ok {
						b.Fatal("not densified")
					}
					m.Data, m.Enc = slices.Clone(data), EncDecimal
				}
				chunks = append(chunks, m)
			}
			var it SeriesIterator
			var sum float64
			b.ReportAllocs()
			for b.Loop() {
				it.Reset(chunks, nil, math.MinInt64, math.MaxInt64)
				for it.Next() == promchunkenc.ValFloat {
					_, v := it.At()
					sum += v
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(series)), "ns/sample")
			_ = sum
		})
	}
}
