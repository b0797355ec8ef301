package chunkenc

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"
)

// TestAppendFloats checks that AppendFloats gives what Next and At give,
// over XOR and decimal chunks and ranges that cut chunks, and refuses a
// series with histograms.
func TestAppendFloats(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var d Densifier
	var chunks []Meta
	ts := int64(0)
	for c := range 6 {
		xc := NewXORChunk()
		mint := ts
		for range 50 {
			ts += 10 + rng.Int64N(10)
			xc.Append(ts, float64(rng.IntN(1000))/4)
		}
		m := Meta{Data: slices.Clone(xc.Bytes()), MinT: mint + 10, MaxT: ts, Enc: EncXOR}
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
	var it SeriesIterator
	for _, r := range [][2]int64{{math.MinInt64, math.MaxInt64}, {0, ts / 2}, {ts / 3, ts}, {ts / 4, ts / 4}, {ts + 1, ts + 2}} {
		it.Reset(chunks, nil, r[0], r[1])
		var wantT []int64
		var wantV []float64
		for it.Next() == promchunkenc.ValFloat {
			t, v := it.At()
			wantT, wantV = append(wantT, t), append(wantV, v)
		}
		it.Reset(chunks, nil, r[0], r[1])
		gotT, gotV, ok, err := it.AppendFloats(nil, nil)
		if !ok || err != nil || !slices.Equal(gotT, wantT) || !slices.Equal(gotV, wantV) {
			t.Errorf("[%d, %d]: %d samples, %v %v; want %d", r[0], r[1], len(gotT), ok, err, len(wantT))
		}
		if it.Next() != promchunkenc.ValNone {
			t.Errorf("[%d, %d]: samples left after AppendFloats", r[0], r[1])
		}
	}
	hc := NewHistogramChunk()
	hc.Append(ts+10, &histogram.Histogram{Count: 1, ZeroCount: 1, Sum: 1})
	withHist := append(slices.Clone(chunks), Meta{Data: hc.Bytes(), MinT: ts + 10, MaxT: ts + 10, Enc: EncHistogram})
	it.Reset(withHist, nil, math.MinInt64, math.MaxInt64)
	if gotT, _, ok, _ := it.AppendFloats(nil, nil); ok || len(gotT) != 0 {
		t.Errorf("a series with histograms: ok %v, %d samples", ok, len(gotT))
	}
	if it.Next() != promchunkenc.ValFloat {
		t.Error("AppendFloats moved the iterator of a series it refused")
	}
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
