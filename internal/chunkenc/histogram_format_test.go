package chunkenc

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
)

// docExampleHistograms are the histograms of the example in docs/format/chunks.md.
func docExampleHistograms() []hsample {
	spans := []histogram.Span{{Offset: 0, Length: 2}}
	return []hsample{
		{1000, &histogram.Histogram{Count: 3, Sum: 1.5, PositiveSpans: spans, PositiveBuckets: []int64{1, 1}}},
		{16000, &histogram.Histogram{Count: 4, Sum: 2.5, PositiveSpans: spans, PositiveBuckets: []int64{2, 0}}},
	}
}

// TestHistogramDocExample checks the example in docs/format/chunks.md.
func TestHistogramDocExample(t *testing.T) {
	const want = "000200000000000000000000010002" + "00d00fc45fff4e2701d4c6137ffe90"
	c, err := encodeHistograms(docExampleHistograms())
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%x", c.Bytes()); got != want {
		t.Fatalf("encoded %s, docs/format/chunks.md says %s", got, want)
	}
}

// annotatedBits is bitString for bits annotated with comments: anything
// from a '#' to the end of its line is left out.
func annotatedBits(s string) []byte {
	var b strings.Builder
	for line := range strings.Lines(s) {
		line, _, _ = strings.Cut(line, "#")
		b.WriteString(line)
	}
	return bitString(b.String())
}

// TestHistogramFormat checks encodings bit by bit against the format
// described in docs/format/chunks.md.
func TestHistogramFormat(t *testing.T) {
	t.Run("histogram", func(t *testing.T) {
		want := annotatedBits(`
			00000000 00000010    # count
			00000000             # header: unknown
			00000000             # schema
			00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
			00000001 00000000 00000010  # a positive span
			00000000             # no negative span
			11010000 00001111    # t0
			11 00010 001011 11111111111  # sum
			0   10 01   110 0010   0     # zero count, buckets, count
			1110 00000011101010011000    # dod
			11 00001 001101 1111111111111
			0   10 01   0   0`)
		c, err := encodeHistograms(docExampleHistograms())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(c.Bytes(), want) {
			t.Fatalf("encoded\n got %x\nwant %x", c.Bytes(), want)
		}
		got, err := decodeHistograms(&HistogramIterator{}, want)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffHistogramSamples(got, docExampleHistograms()); d != "" {
			t.Fatal(d)
		}
	})

	// Custom buckets, a gauge header, the count predicted exactly, and a
	// stale marker, whose sum fits the initial 64-bit window.
	t.Run("float histogram", func(t *testing.T) {
		samples := []fhsample{
			{0, &histogram.FloatHistogram{
				CounterResetHint: histogram.GaugeType, Schema: histogram.CustomBucketsSchema,
				Count: 3, CustomValues: []float64{1, 2},
				PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []float64{1, 2},
			}},
			{10, staleFloatHist()},
		}
		want := annotatedBits(`
			00000000 00000010    # count
			00000011             # header: gauge
			01101001             # schema -53, zig-zag
			00000001 00000000 00000010  # a positive span
			00000010             # two bounds
			00111111 11110000 00000000 00000000 00000000 00000000 00000000 00000000
			01000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
			00000000             # t0
			0                    # sum
			11 00010 001010 1111111111   # bucket: new window
			11 00001 000001 1            # bucket: new window
			0                    # count as predicted
			10 0001010           # dod
			10 0111111111110000000000000000000000000000000000000000000000000010  # stale marker in the initial window`)
		c, err := encodeFloatHistograms(samples)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(c.Bytes(), want) {
			t.Fatalf("encoded\n got %x\nwant %x", c.Bytes(), want)
		}
		got, err := decodeFloatHistograms(&FloatHistogramIterator{}, want)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffFloatHistogramSamples(got, samples); d != "" {
			t.Fatal(d)
		}
	})
}

// TestVarbit checks each width of the varbit code at its edges, bit by
// bit, and that values round-trip.
func TestVarbit(t *testing.T) {
	cases := []struct {
		v    int64
		bits string
	}{
		{0, "0"},
		{1, "10 01"}, {-2, "10 10"},
		{2, "110 0010"}, {-8, "110 1000"}, {7, "110 0111"},
		{8, "1110 001000"}, {-32, "1110 100000"},
		{32, "11110 000100000"}, {-256, "11110 100000000"},
		{256, "111110 0000100000000"}, {-4096, "111110 1000000000000"},
		{4096, "1111110 00000001000000000000"}, {-524288, "1111110 10000000000000000000"},
		{524288, "11111110 000000000000000010000000000000000000"},
		{-1 << 35, "11111110 100000000000000000000000000000000000"},
		{1 << 35, "11111111 0000000000000000000000000000100000000000000000000000000000000000"},
		{math.MinInt64, "11111111 1000000000000000000000000000000000000000000000000000000000000000"},
		{math.MaxInt64, "11111111 0111111111111111111111111111111111111111111111111111111111111111"},
	}
	var w bitWriter
	var all strings.Builder
	for _, tc := range cases {
		var one bitWriter
		writeVarbit(&one, tc.v)
		writeVarbit(&w, tc.v)
		all.WriteString(tc.bits)
		if want := bitString(tc.bits); !bytes.Equal(one.buf, want) {
			t.Errorf("varbit(%d) = %08b, want %s", tc.v, one.buf, tc.bits)
		}
	}
	if !bytes.Equal(w.buf, bitString(all.String())) {
		t.Fatalf("concatenated codes differ")
	}
	var r bitReader
	r.reset(w.buf)
	for _, tc := range cases {
		if v, ok := readVarbit(&r); !ok || v != tc.v {
			t.Fatalf("read %d, %v; want %d", v, ok, tc.v)
		}
	}
	nbits := strings.Count(all.String(), "0") + strings.Count(all.String(), "1")
	if rem, pad := r.remaining(), -nbits&7; rem != pad {
		t.Fatalf("%d bits left, want the %d of padding", rem, pad)
	}
}

// validHistogramChunk is a chunk with negative buckets, a stale marker
// and every kind of value width, to cut and damage.
func validHistogramChunk(t *testing.T) ([]hsample, []byte) {
	t.Helper()
	samples := append(histogramRoundTripCases()["layout grows"], hsample{1700000100000, staleHist()})
	samples = append(samples, hsample{1700000200000, hist(9, 1e9, buckets{-7: 1e6, 0: 4, 1: 1, 3: 1, 4: 3, 5: 1, 6: 7}, buckets{1: 1, 2: 1 << 40})})
	c, err := encodeHistograms(samples)
	if err != nil {
		t.Fatal(err)
	}
	return samples, c.Bytes()
}

func TestHistogramIteratorCorrupt(t *testing.T) {
	samples, valid := validHistogramChunk(t)
	n := len(samples)
	withCount := func(count int, rest ...byte) []byte { return append([]byte{byte(count >> 8), byte(count)}, rest...) }
	// An exponential layout with one positive bucket at 0 and t0 = 0.
	layout := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0}
	start := func(stream ...byte) []byte {
		return append(append(withCount(1, 0), layout...), append([]byte{0}, stream...)...)
	}
	cases := []struct {
		name   string
		b      []byte
		reason string
		offset int // -1: not checked
		sample int
	}{
		{"nil", nil, "shorter", 0, 0},
		{"one byte", []byte{0}, "shorter", 1, 0},
		{"empty chunk with trailing byte", []byte{0, 0, 0}, "trailing", 2, 0},
		{"count without header", withCount(1), "truncated header", 2, 0},
		{"unknown header", withCount(1, 4, 0), "unknown counter reset header", 2, 0},
		{"schema overflows", withCount(1, append([]byte{0}, bytes.Repeat([]byte{0xff}, 11)...)...), "overflows", 3, 0},
		{"schema beyond int32", withCount(1, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01), "int32", -1, 0},
		{"truncated zero threshold", withCount(1, 0, 0, 0, 0, 0), "truncated layout", 4, 0},
		{"too many spans", withCount(1, append([]byte{0, 0}, append(make([]byte, 8), 0x7f, 0, 1)...)...), "more spans", -1, 0},
		{"empty span", withCount(1, append([]byte{0, 0}, append(make([]byte, 8), 1, 0, 0, 0, 0, 0)...)...), "span length", -1, 0},
		{"spans without gap", withCount(1, append([]byte{0, 0}, append(make([]byte, 8), 2, 0, 1, 0, 1, 0, 0, 0, 0)...)...), "gap", -1, 0},
		{"span offset beyond int32", withCount(1, append([]byte{0, 0}, append(make([]byte, 8), 1, 0x80, 0x80, 0x80, 0x80, 0x10, 1, 0, 0)...)...), "int32", -1, 0},
		{"span too long", withCount(1, append([]byte{0, 0}, append(make([]byte, 8), 1, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0)...)...), "span length", -1, 0},
		{"too many buckets", withCount(1, append([]byte{0, 0}, append(make([]byte, 8), 1, 0, 0x80, 0x10, 0, 0, 0)...)...), "more buckets", -1, 0},
		{"too many bounds", withCount(1, 0, 105, 0, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0, 0), "more custom bounds", -1, 0},
		{"truncated bounds", withCount(1, 0, 105, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0), "more custom bounds", -1, 0},
		{"truncated t0", withCount(1, append([]byte{0}, layout...)...), "truncated timestamp", -1, 0},
		{"t0 overflows", withCount(1, append(append([]byte{0}, layout...), bytes.Repeat([]byte{0xff}, 11)...)...), "overflows", 16, 0},
		{"no bits for the buckets", start(), "more buckets", 17, 0},
		{"truncated sum", start(0b10_000000), "sum: truncated", 18, 0},
		{"truncated bucket", start(annotatedBits("0 0 11111111 # sum, zero count, bucket 64 bits...")...), "truncated zero count or bucket", 19, 0},
		{"truncated count", start(annotatedBits("0 0 0 11111111 # sum, zero count, bucket, count 64 bits...")...), "truncated count", 19, 0},
		{"non-zero padding", start(annotatedBits("0 0 0 0 0001 # sum, zero count, bucket, count, padding")...), "padding", 18, 1},
		{"trailing byte", append(bytes.Clone(valid), 0), "trailing", -1, n},
		{"count one too low", append([]byte{0, byte(n - 1)}, valid[2:]...), "trailing", -1, n - 1},
		{"count one too high", append([]byte{0, byte(n + 1)}, valid[2:]...), "truncated", len(valid), n},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			it := NewHistogramIterator(tc.b)
			got := 0
			for it.Next() {
				got++
			}
			checkCorrupt(t, it.Err(), EncHistogram, tc.b, got, tc.reason, tc.offset, tc.sample)
			if it.Next() {
				t.Fatal("Next() = true after an error")
			}
		})
	}
}

// checkCorrupt checks that err is the CorruptChunkError a test expects,
// after decoded samples.
func checkCorrupt(t *testing.T, err error, enc Encoding, b []byte, decoded int, reason string, offset, sample int) {
	t.Helper()
	if !errors.Is(err, ErrCorruptChunk) {
		t.Fatalf("after %d samples Err() = %v, want ErrCorruptChunk", decoded, err)
	}
	var ce *CorruptChunkError
	if !errors.As(err, &ce) {
		t.Fatalf("Err() = %T, want *CorruptChunkError", err)
	}
	if ce.Encoding != enc || !strings.Contains(err.Error(), enc.String()) {
		t.Fatalf("Err() = %v, want encoding %v", err, enc)
	}
	if !strings.Contains(ce.Reason, reason) {
		t.Fatalf("Err() = %v, want a reason containing %q", err, reason)
	}
	if ce.Offset < 0 || ce.Offset > len(b) || offset >= 0 && ce.Offset != offset {
		t.Fatalf("Err() = %v, want offset %d in a chunk of %d bytes", err, offset, len(b))
	}
	if ce.Sample != sample || decoded != sample {
		t.Fatalf("Err() = %v after %d samples, want it at sample %d", err, decoded, sample)
	}
}

func TestFloatHistogramIteratorCorrupt(t *testing.T) {
	// One bucket, t0 = 0, sum 0, then a bucket value in a new window of
	// leading 31 and width 63.
	b := []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0}
	b = append(b, bitString("0 0 11 11111 111111"+strings.Repeat("0", 63))...)
	it := NewFloatHistogramIterator(b)
	if it.Next() {
		t.Fatal("Next() = true")
	}
	checkCorrupt(t, it.Err(), EncFloatHistogram, b, 0, "zero count or bucket: value window wider", -1, 0)

	b = []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0b0_0_0_10000}
	it.Reset(b)
	if it.Next() {
		t.Fatal("Next() = true")
	}
	checkCorrupt(t, it.Err(), EncFloatHistogram, b, 0, "count: truncated", -1, 0)
}

// TestHistogramIteratorTruncated cuts valid chunks at every length: each
// cut must end in an error, after only samples that were complete.
func TestHistogramIteratorTruncated(t *testing.T) {
	want, full := validHistogramChunk(t)
	it := &HistogramIterator{}
	for n := range len(full) {
		got, err := decodeHistograms(it, full[:n])
		if !errors.Is(err, ErrCorruptChunk) {
			t.Fatalf("cut at %d of %d bytes: err = %v, want ErrCorruptChunk", n, len(full), err)
		}
		if d := diffHistogramSamples(got, want[:len(got)]); d != "" {
			t.Fatalf("cut at %d: %s", n, d)
		}
	}
	fwant := toFloatSamples(want)
	fc, err := encodeFloatHistograms(fwant)
	if err != nil {
		t.Fatal(err)
	}
	ffull := fc.Bytes()
	fit := &FloatHistogramIterator{}
	for n := range len(ffull) {
		got, err := decodeFloatHistograms(fit, ffull[:n])
		if !errors.Is(err, ErrCorruptChunk) {
			t.Fatalf("float cut at %d of %d bytes: err = %v, want ErrCorruptChunk", n, len(ffull), err)
		}
		if d := diffFloatHistogramSamples(got, fwant[:len(got)]); d != "" {
			t.Fatalf("float cut at %d: %s", n, d)
		}
	}
}
