package record

import (
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

func FuzzDecodeSeries(f *testing.F) {
	f.Add(EncodeSeries(nil, nil))
	f.Add(EncodeSeries(nil, []RefSeries{
		{Ref: 1, Labels: labels.FromStrings("__name__", "up", "job", "node", "empty", "")},
		{Ref: math.MaxUint64, Labels: labels.FromStrings("名前", "値")},
		{Ref: 0, Labels: labels.EmptyLabels()},
	}))
	f.Add([]byte{byte(Series), 1, 1, 1, 5, 'a', 0})
	f.Fuzz(func(t *testing.T, rec []byte) {
		var d Decoder
		got, err := d.Series(rec, nil)
		if err != nil {
			if len(got) != 0 {
				t.Fatalf("error %v but %d series returned", err, len(got))
			}
			return
		}
		again, err := d.Series(EncodeSeries(nil, got), nil)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if len(again) != len(got) {
			t.Fatalf("re-decoded %d series, want %d", len(again), len(got))
		}
		for i := range got {
			if again[i].Ref != got[i].Ref || !labels.Equal(again[i].Labels, got[i].Labels) {
				t.Fatalf("series %d: re-decoded %d %v, want %d %v", i, again[i].Ref, again[i].Labels, got[i].Ref, got[i].Labels)
			}
		}
	})
}

func FuzzDecodeSamples(f *testing.F) {
	f.Add(EncodeSamples(nil, nil))
	f.Add(EncodeSamples(nil, []RefSample{
		{Ref: 5, T: 1000, V: 1},
		{Ref: 1, T: -1000, V: math.Float64frombits(0x7ff0000000000002)},
		{Ref: math.MaxUint64, T: math.MinInt64, V: math.Inf(1)},
	}))
	f.Fuzz(func(t *testing.T, rec []byte) {
		var d Decoder
		got, err := d.Samples(rec, nil)
		if err != nil {
			if len(got) != 0 {
				t.Fatalf("error %v but %d samples returned", err, len(got))
			}
			return
		}
		again, err := d.Samples(EncodeSamples(nil, got), nil)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if len(again) != len(got) {
			t.Fatalf("re-decoded %d samples, want %d", len(again), len(got))
		}
		for i := range got {
			if again[i].Ref != got[i].Ref || again[i].T != got[i].T || math.Float64bits(again[i].V) != math.Float64bits(got[i].V) {
				t.Fatalf("sample %d: re-decoded %+v, want %+v", i, again[i], got[i])
			}
		}
	})
}
