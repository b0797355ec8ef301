package chunkenc

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"
)

// fuzzSamples turns fuzzer bytes into samples. Each sample is an op byte,
// a signed varint timestamp delta, and a value chosen by the op's low two
// bits: the previous value, 8 raw bytes, the previous value with one
// byte XOR'd in at a bit position taken from the op (to walk the XOR
// windows), or a small integer. Deltas are not forced positive: the format
// round-trips any int64 timestamps.
func fuzzSamples(t0 int64, data []byte) []sample {
	var out []sample
	ts, v := t0, uint64(0)
	for len(data) > 0 && len(out) < math.MaxUint16 {
		op := data[0]
		data = data[1:]
		d, n := binary.Varint(data)
		if n <= 0 {
			break
		}
		data = data[n:]
		switch op & 3 {
		case 0:
			// Same value.
		case 1:
			if len(data) < 8 {
				return out
			}
			v = binary.LittleEndian.Uint64(data)
			data = data[8:]
		case 2:
			if len(data) < 1 {
				return out
			}
			v ^= uint64(data[0]) << (op >> 2)
			data = data[1:]
		case 3:
			v = math.Float64bits(float64(op >> 2))
		}
		if len(out) > 0 {
			ts += d
		}
		out = append(out, sample{ts, v})
	}
	return out
}

// fuzzBytes is the inverse of fuzzSamples for seeds: it writes samples
// with raw values.
func fuzzBytes(samples []sample) []byte {
	var b []byte
	prev := int64(0)
	for i, s := range samples {
		b = append(b, 1)
		d := s.t - prev
		if i == 0 {
			d = 0
		}
		b = binary.AppendVarint(b, d)
		b = binary.LittleEndian.AppendUint64(b, s.v)
		prev = s.t
	}
	return b
}

func FuzzXORRoundTrip(f *testing.F) {
	for _, name := range []string{
		"one sample", "counter", "nan and stale", "infinities", "64 significant bits",
		"many leading zeros", "irregular intervals", "huge jumps", "non-increasing times",
	} {
		s := roundTripCases()[name]
		f.Add(s[0].t, fuzzBytes(s))
	}
	f.Add(int64(0), []byte{})
	// Each kind of op: a small integer, a byte XOR'd in at bit 0 and at
	// bit 1, the same value; with deltas 0, 15, 1, 79.
	f.Add(int64(-1), []byte{0x03, 0x00, 0x02, 0x1e, 0x0f, 0x06, 0x02, 0x2a, 0x00, 0x9e, 0x01})

	it := &XORIterator{}
	f.Fuzz(func(t *testing.T, t0 int64, data []byte) {
		want := fuzzSamples(t0, data)
		c := NewXORChunk()
		for i, s := range want {
			c.Append(s.t, math.Float64frombits(s.v))
			if c.NumSamples() != i+1 {
				t.Fatalf("NumSamples() = %d after %d appends", c.NumSamples(), i+1)
			}
		}
		checkAppendSamples(t, it, c.Bytes(), math.MaxInt64)
		if len(want) > 0 {
			checkAppendSamples(t, it, c.Bytes(), want[len(want)/2].t)
		}
		got, err := decode(it, c.Bytes())
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round trip differs:\n got %v\nwant %v", head(got), head(want))
		}
	})
}

func FuzzXORIterator(f *testing.F) {
	for _, name := range []string{
		"one sample", "two samples", "counter", "nan and stale", "64 significant bits",
		"irregular intervals", "huge jumps",
	} {
		b := encode(roundTripCases()[name]).Bytes()
		f.Add(b)
		f.Add(b[:len(b)-1])
	}
	f.Add([]byte{})
	f.Add([]byte{0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})

	it := &XORIterator{}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := decodeArbitrary(t, it, b)
		checkAppendSamples(t, it, b, math.MaxInt64)
		if len(got) > 0 {
			checkAppendSamples(t, it, b, got[len(got)/2].t)
		}
		if !ok {
			return
		}
		// Whatever decodes cleanly must survive re-encoding. The bytes
		// may differ: a valid chunk need not be the encoder's choice.
		again, err := decode(it, encode(got).Bytes())
		if err != nil || !slices.Equal(again, got) {
			t.Fatalf("re-encoding decoded samples: %v\n got %v\nwant %v", err, head(again), head(got))
		}
	})
}

// decodeArbitrary decodes bytes a fuzzer made and checks the outcome: no
// more samples than the header's count, any error ErrCorruptChunk, and
// the count's samples without one. ok says there was none.
func decodeArbitrary(t *testing.T, it floatDecoder, b []byte) (got []sample, ok bool) {
	t.Helper()
	got, err := decode(it, b)
	count := 0
	if len(b) >= 2 {
		count = int(binary.BigEndian.Uint16(b))
	}
	if len(got) > count {
		t.Fatalf("decoded %d samples, more than the header's %d", len(got), count)
	}
	if err != nil {
		if !errors.Is(err, ErrCorruptChunk) {
			t.Fatalf("Err() = %v, want ErrCorruptChunk", err)
		}
		return got, false
	}
	if len(got) != count {
		t.Fatalf("decoded %d samples without error, header says %d", len(got), count)
	}
	return got, true
}
