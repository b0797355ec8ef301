package chunkenc

import (
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
