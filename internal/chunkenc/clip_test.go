package chunkenc

import (
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"
)

func TestClip(t *testing.T) {
	xor := NewXORChunk()
	hc := NewHistogramChunk()
	for ts := int64(0); ts < 100; ts += 10 {
		xor.Append(ts, float64(ts))
		n := uint64(ts)
		if hc.Append(ts, &histogram.Histogram{Count: n, ZeroCount: n, Sum: float64(n)}) != Appended {
			t.Fatal("histogram not appended")
		}
	}
	for _, c := range []Meta{
		{Data: xor.Bytes(), MinT: 0, MaxT: 90, Enc: EncXOR},
		{Data: hc.Bytes(), MinT: 0, MaxT: 90, Enc: EncHistogram},
	} {
		got, err := Clip(c, 25, 75)
		if err != nil {
			t.Fatal(err)
		}
		var ts []int64
		var it SeriesIterator
		it.Reset(got, nil, -1000, 1000)
		for vt := it.Next(); vt != promchunkenc.ValNone; vt = it.Next() {
			ts = append(ts, it.AtT())
			if vt == promchunkenc.ValHistogram {
				_, h := it.AtHistogram(nil)
				if want := uint64(it.AtT()); h.Count != want {
					t.Errorf("%s: histogram at %d counts %d, want %d", c.Enc, it.AtT(), h.Count, want)
				}
				if it.AtT() == 30 && h.CounterResetHint != histogram.UnknownCounterReset {
					t.Errorf("%s: first histogram has hint %v, want unknown", c.Enc, h.CounterResetHint)
				}
			}
		}
		if len(ts) != 5 || ts[0] != 30 || ts[4] != 70 || got[0].MinT != 30 || got[len(got)-1].MaxT != 70 {
			t.Errorf("%s: clipped to %v in %d chunks, want 30..70", c.Enc, ts, len(got))
		}
		if none, _ := Clip(c, 91, 200); none != nil {
			t.Errorf("%s: clip outside the chunk returned %d chunks", c.Enc, len(none))
		}
	}
}

// TestMergeOverlapping merges a series' chunks from overlapping blocks:
// floats and histograms, a timestamp in two chunks, a chunk overlapping
// none.
func TestMergeOverlapping(t *testing.T) {
	floats := func(ts ...int64) Meta {
		c := NewXORChunk()
		for _, x := range ts {
			c.Append(x, float64(x))
		}
		return Meta{Data: c.Bytes(), MinT: ts[0], MaxT: ts[len(ts)-1], Enc: EncXOR}
	}
	hists := func(ts ...int64) Meta {
		c := NewHistogramChunk()
		for _, x := range ts {
			n := uint64(x)
			if c.Append(x, &histogram.Histogram{Count: n, ZeroCount: n, Sum: float64(n)}) != Appended {
				t.Fatal("histogram not appended")
			}
		}
		return Meta{Data: c.Bytes(), MinT: ts[0], MaxT: ts[len(ts)-1], Enc: EncHistogram}
	}
	alone := floats(500, 510)
	in := []Meta{
		floats(0, 10, 20, 30, 40, 50),
		floats(5, 25, 50), // 50 again: taken once
		hists(60, 70),
		floats(65),      // a float among histograms
		hists(200, 210), // touches none
		alone,
	}
	got, err := MergeOverlapping(in, 4)
	if err != nil {
		t.Fatal(err)
	}
	var (
		ts    []int64
		kinds []promchunkenc.ValueType
		it    SeriesIterator
	)
	it.Reset(got, nil, -1000, 1000)
	for vt := it.Next(); vt != promchunkenc.ValNone; vt = it.Next() {
		ts, kinds = append(ts, it.AtT()), append(kinds, vt)
		if vt == promchunkenc.ValFloat {
			if _, v := it.At(); v != float64(it.AtT()) {
				t.Errorf("float at %d is %g", it.AtT(), v)
			}
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	wantTS := []int64{0, 5, 10, 20, 25, 30, 40, 50, 60, 65, 70, 200, 210, 500, 510}
	if !slices.Equal(ts, wantTS) {
		t.Fatalf("timestamps %v, want %v", ts, wantTS)
	}
	if kinds[8] != promchunkenc.ValHistogram || kinds[9] != promchunkenc.ValFloat || kinds[10] != promchunkenc.ValHistogram {
		t.Errorf("kinds around 65: %v", kinds[8:11])
	}
	for i, c := range got {
		if i > 0 && c.MinT <= got[i-1].MaxT {
			t.Errorf("chunk %d [%d, %d] overlaps the one before", i, c.MinT, c.MaxT)
		}
		if c.Enc == EncXOR {
			if n := (storedChunk{enc: c.Enc, data: c.Data}).NumSamples(); n > 4 {
				t.Errorf("chunk %d holds %d samples, limit 4", i, n)
			}
		}
	}
	if last := got[len(got)-1]; &last.Data[0] != &alone.Data[0] {
		t.Error("a chunk overlapping none was encoded anew")
	}
}
