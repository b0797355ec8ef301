package chunkenc

import (
	"errors"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
)

func TestFromData(t *testing.T) {
	xor := NewXORChunk()
	for i := range 5 {
		xor.Append(int64(i), float64(i))
	}
	hc := NewHistogramChunk()
	hc.Append(1, &histogram.Histogram{Count: 1, ZeroCount: 1})
	fhc := NewFloatHistogramChunk()
	fhc.Append(1, &histogram.FloatHistogram{Count: 1, ZeroCount: 1})
	fhc.Append(2, &histogram.FloatHistogram{Count: 2, ZeroCount: 2})

	for _, c := range []Chunk{xor, hc, fhc} {
		got, err := FromData(c.Encoding(), c.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", c.Encoding(), err)
		}
		if got.Encoding() != c.Encoding() || got.NumSamples() != c.NumSamples() || &got.Bytes()[0] != &c.Bytes()[0] {
			t.Errorf("%s: got %s with %d samples, want %d samples over the same bytes", c.Encoding(), got.Encoding(), got.NumSamples(), c.NumSamples())
		}
	}
	for _, tc := range []struct {
		enc  Encoding
		data []byte
	}{{EncNone, []byte{0, 0}}, {EncDecimal + 1, []byte{0, 0}}, {EncXOR, []byte{0}}} {
		if _, err := FromData(tc.enc, tc.data); !errors.Is(err, ErrCorruptChunk) {
			t.Errorf("FromData(%s, %x) = %v, want ErrCorruptChunk", tc.enc, tc.data, err)
		}
	}
}
