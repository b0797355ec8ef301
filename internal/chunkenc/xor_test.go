package chunkenc

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// sample is a test sample; the value is kept as bits so that comparisons
// are bit-exact, NaN payloads and the sign of zero included.
type sample struct {
	t int64
	v uint64
}

func (s sample) String() string { return fmt.Sprintf("(%d, %#016x)", s.t, s.v) }

// bitsOf returns the bits of v, for writing samples.
func bitsOf(v float64) uint64 { return math.Float64bits(v) }

// encode appends samples to a new chunk.
func encode(samples []sample) *XORChunk {
	c := NewXORChunk()
	for _, s := range samples {
		c.Append(s.t, math.Float64frombits(s.v))
	}
	return c
}

// floatDecoder is XORIterator or DecimalIterator.
type floatDecoder interface {
	Reset([]byte)
	Next() bool
	At() (int64, float64)
	Err() error
}

// decode iterates b to its end.
func decode(it floatDecoder, b []byte) ([]sample, error) {
	it.Reset(b)
	var out []sample
	for it.Next() {
		t, v := it.At()
		out = append(out, sample{t, math.Float64bits(v)})
	}
	return out, it.Err()
}

// checkAppendSamples checks that AppendSamples decodes chunk b as Next
// and At do, up to maxt, and fails only where they report the chunk
// corrupt: before maxt, or after it if it decodes past maxt.
func checkAppendSamples(t *testing.T, it bulkDecoder, b []byte, maxt int64) {
	t.Helper()
	var want []sample
	past := false
	it.Reset(b)
	for it.Next() {
		ts, v := it.At()
		past = past || ts > maxt
		if !past {
			want = append(want, sample{ts, math.Float64bits(v)})
		}
	}
	err := it.Err()
	for _, limit := range []int{math.MaxInt, 7, 1} {
		checkAppendLimit(t, it, b, maxt, limit, want, past, err)
	}
}

// checkAppendLimit is checkAppendSamples with AppendSamples called for
// limit samples at a time until it returns fewer; 1 stops between the
// samples of a chunk's header.
func checkAppendLimit(t *testing.T, it bulkDecoder, b []byte, maxt int64, limit int, want []sample, past bool, err error) {
	t.Helper()
	it.Reset(b)
	ts, vs, ok := []int64{-1}, []float64{-1}, true
	for n := limit; ok && n == limit; {
		k := len(ts)
		ts, vs, ok = it.AppendSamples(ts, vs, maxt, limit)
		n = len(ts) - k
		if n > limit {
			t.Fatalf("AppendSamples(limit %d) appended %d samples", limit, n)
		}
		if !ok && n != 0 {
			t.Fatalf("AppendSamples failed but appended %d samples", n)
		}
	}
	if !ok {
		if err == nil {
			t.Fatalf("AppendSamples(maxt %d, limit %d) failed on a chunk Next decodes", maxt, limit)
		}
		return
	}
	if err != nil && !past {
		t.Fatalf("AppendSamples decoded a chunk Next reports corrupt before maxt %d: %v", maxt, err)
	}
	got := make([]sample, 0, len(ts))
	for i := range ts[1:] {
		got = append(got, sample{ts[i+1], math.Float64bits(vs[i+1])})
	}
	if !slices.Equal(got, want) {
		t.Fatalf("AppendSamples(maxt %d, limit %d):\n got %v\nwant %v", maxt, limit, head(got), head(want))
	}
}

// regular returns n samples at interval ms from t0 with values from val.
func regular(n int, t0, interval int64, val func(i int) float64) []sample {
	out := make([]sample, n)
	for i := range out {
		out[i] = sample{t0 + int64(i)*interval, bitsOf(val(i))}
	}
	return out
}

// staleNaN is the bit pattern Prometheus uses to mark a series stale.
const staleNaN = 0x7ff0000000000002

func roundTripCases() map[string][]sample {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := map[string][]sample{
		"one sample":      {{1700000000000, bitsOf(42)}},
		"two samples":     {{1700000000000, bitsOf(42)}, {1700000015000, bitsOf(43)}},
		"constant":        regular(120, 1700000000000, 15000, func(int) float64 { return 1 }),
		"counter":         regular(120, 1700000000000, 15000, func(i int) float64 { return float64(i * 37) }),
		"120 random":      regular(120, 1700000000000, 15000, func(int) float64 { return rng.NormFloat64() * 1e6 }),
		"65535 samples":   regular(math.MaxUint16, 1700000000000, 1000, func(i int) float64 { return float64(i % 1000) }),
		"zero time":       regular(5, 0, 1, func(i int) float64 { return float64(i) }),
		"negative times":  regular(120, -86400000*365*10, 15000, func(i int) float64 { return -float64(i) / 3 }),
		"crosses epoch":   regular(120, -15000*60, 15000, func(i int) float64 { return float64(i) }),
		"min int64 start": regular(10, math.MinInt64, 1, func(i int) float64 { return float64(i) }),
		"max int64 end":   regular(10, math.MaxInt64-9, 1, func(i int) float64 { return float64(i) }),
		"full int64 span": {{math.MinInt64, bitsOf(1)}, {math.MaxInt64, bitsOf(2)}},
		"full span later": {{math.MinInt64, bitsOf(1)}, {-1, bitsOf(1)}, {math.MaxInt64, bitsOf(1)}},
		"nan and stale": {
			{1000, bitsOf(1)}, {2000, staleNaN}, {3000, staleNaN}, {4000, bitsOf(2)},
			{5000, 0x7ff8000000000001}, {6000, 0xfff8000000000000}, {7000, 0x7fffffffffffffff},
			{8000, 0xffffffffffffffff}, {9000, staleNaN}, {10000, 0x7ff0000000000001},
		},
		"stale first": {{1000, staleNaN}, {2000, bitsOf(1)}, {3000, staleNaN}},
		"infinities": {
			{1, bitsOf(math.Inf(1))}, {2, bitsOf(math.Inf(-1))}, {3, bitsOf(math.Inf(1))}, {4, bitsOf(0)}, {5, bitsOf(math.Inf(-1))},
		},
		"signed zeros and tiny": {
			{1, bitsOf(0)}, {2, bitsOf(math.Copysign(0, -1))}, {3, 1}, {4, bitsOf(math.SmallestNonzeroFloat64)},
			{5, bitsOf(-math.MaxFloat64)}, {6, bitsOf(math.MaxFloat64)}, {7, 0x8000000000000001},
		},
		// XORs with all 64 bits significant (width 64 is written as 0),
		// then narrow windows at either end.
		"64 significant bits": {
			{1, 0}, {2, 0xffffffffffffffff}, {3, 0}, {4, 0x8000000000000001}, {5, 0x8000000000000000},
			{6, 1}, {7, 0}, {8, 0x8000000000000000}, {9, 0xc000000000000003}, {10, 0},
		},
		// A leading count above 31 is clamped to what 5 bits hold.
		"many leading zeros": {{1, 0}, {2, 1}, {3, 3}, {4, 0xff}, {5, 0xffff_ffff}, {6, 1 << 40}, {7, 0}},
	}

	// Irregular intervals that hit both sides of every bucket boundary.
	var irregular []sample
	t, d := int64(1700000000000), int64(15000)
	for _, dod := range []int64{
		0, 1, -1, 63, -64, 64, -65, 8191, -8192, 8192, -8193,
		524287, -524288, 524288, -524289, 1 << 40, -(1 << 40), 0, 0, 5, -5,
	} {
		d += dod
		t += d
		irregular = append(irregular, sample{t, bitsOf(float64(dod))})
	}
	cases["irregular intervals"] = irregular

	// Jumps so large that deltas and delta-of-deltas wrap around int64.
	cases["huge jumps"] = []sample{
		{math.MinInt64 + 5, bitsOf(1)}, {-3, bitsOf(2)}, {math.MaxInt64 - 7, bitsOf(3)},
		{math.MaxInt64 - 6, bitsOf(4)}, {math.MaxInt64 - 1, bitsOf(5)}, {math.MaxInt64, bitsOf(6)},
	}

	// A realistic scrape: 15s with a few ms of jitter, a gauge.
	var jitter []sample
	for i := range 1000 {
		jitter = append(jitter, sample{
			1700000000000 + int64(i)*15000 + rng.Int64N(11) - 5,
			bitsOf(math.Round(rng.Float64()*400) / 100),
		})
	}
	cases["jittered gauge"] = jitter

	// Non-increasing timestamps break Append's contract but still
	// round-trip.
	cases["non-increasing times"] = []sample{{10, bitsOf(1)}, {10, bitsOf(2)}, {5, bitsOf(3)}, {5, bitsOf(3)}, {-100, bitsOf(4)}, {7, bitsOf(5)}}
	return cases
}

func TestXORRoundTrip(t *testing.T) {
	it := &XORIterator{}
	cases := roundTripCases()
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		want := cases[name]
		t.Run(name, func(t *testing.T) {
			c := encode(want)
			if got := c.NumSamples(); got != len(want) {
				t.Fatalf("NumSamples() = %d, want %d", got, len(want))
			}
			got, err := decode(it, c.Bytes())
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("decoded samples differ:\n got %v\nwant %v", head(got), head(want))
			}
			// Next stays false at the end and Err stays nil.
			if it.Next() || it.Err() != nil {
				t.Fatalf("Next after end = true or Err = %v", it.Err())
			}
		})
	}
}

// head shortens s for a failure message.
func head(s []sample) []sample {
	if len(s) > 20 {
		return s[:20]
	}
	return s
}

// TestXORBytesCapacity checks that what a caller appends to the result
// of Bytes is its own: the chunk's next Append does not write over it.
func TestXORBytesCapacity(t *testing.T) {
	c := encode(roundTripCases()["counter"])
	mine := append(c.Bytes(), 0xff, 0xff)
	c.Append(1700000000000+120*15000, 1)
	if !bytes.Equal(mine[len(mine)-2:], []byte{0xff, 0xff}) {
		t.Fatalf("Append wrote over bytes appended to Bytes(): %x", mine[len(mine)-2:])
	}
}

func TestXOREmptyChunk(t *testing.T) {
	c := NewXORChunk()
	if c.NumSamples() != 0 {
		t.Fatalf("NumSamples() = %d, want 0", c.NumSamples())
	}
	if !bytes.Equal(c.Bytes(), []byte{0, 0}) {
		t.Fatalf("Bytes() = %x, want 0000", c.Bytes())
	}
	it := NewXORIterator(c.Bytes())
	if it.Next() {
		t.Fatal("Next() = true on an empty chunk")
	}
	if it.Err() != nil {
		t.Fatalf("Err() = %v", it.Err())
	}
}

// TestXORBytesSnapshot checks that a copy of Bytes taken after k appends
// iterates exactly those k samples, for every k, whatever is appended
// afterwards.
func TestXORBytesSnapshot(t *testing.T) {
	var samples []sample
	cases := roundTripCases()
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		if s := cases[name]; len(s) < 1000 {
			samples = append(samples, s...)
		}
	}
	// Timestamps of the concatenated cases jump about; the format does not
	// care, and that exercises every bucket.
	c := NewXORChunk()
	snapshots := [][]byte{bytes.Clone(c.Bytes())}
	for _, s := range samples {
		c.Append(s.t, math.Float64frombits(s.v))
		snapshots = append(snapshots, bytes.Clone(c.Bytes()))
	}
	it := &XORIterator{}
	for k, snap := range snapshots {
		got, err := decode(it, snap)
		if err != nil {
			t.Fatalf("snapshot after %d appends: %v", k, err)
		}
		if !slices.Equal(got, samples[:k]) {
			t.Fatalf("snapshot after %d appends decoded %d samples, want the first %d:\n got %v\nwant %v",
				k, len(got), k, head(got), head(samples[:k]))
		}
	}
}

// bitString turns a string of '0' and '1' (other characters ignored) into
// bytes, zero-padding the last one. It is deliberately independent of
// bitWriter so that TestXORFormat checks the format as docs/format/chunks.md writes it.
func bitString(s string) []byte {
	var out []byte
	n := 0
	for _, r := range s {
		if r != '0' && r != '1' {
			continue
		}
		if n%8 == 0 {
			out = append(out, 0)
		}
		if r == '1' {
			out[len(out)-1] |= 0x80 >> (n % 8)
		}
		n++
	}
	return out
}

// TestXORFormat checks the encoding bit by bit against the format
// described in docs/format/chunks.md.
func TestXORFormat(t *testing.T) {
	cases := []struct {
		name    string
		samples []sample
		bits    string
	}{{
		name: "buckets and windows",
		samples: []sample{
			{1000, bitsOf(1)},          // t0: varint(1000) = zig-zag 2000 = d0 0f; 1.0 = 3ff0000000000000
			{16000, bitsOf(1)},         // delta 15000: uvarint 98 75; same value: 0
			{31002, bitsOf(3)},         // dod 2: 10+7 bits; 1.0^3.0 = 7ff8<<48: new window, leading 1, 12 bits
			{46002, bitsOf(3)},         // dod -2; same value
			{61002, bitsOf(2)},         // dod 0; 3.0^2.0 = 1<<51: fits the window, 12 bits
			{61003, bitsOf(2)},         // delta 1, dod -14999: 1110+20 bits
			{61004, bitsOf(2)},         // dod 0; same value
			{61004 + 1<<40, bitsOf(2)}, // delta 1<<40, dod 1<<40 - 1: 1111+64 bits
		},
		bits: `
			00000000 00001000
			11010000 00001111
			00111111 11110000 00000000 00000000 00000000 00000000 00000000 00000000
			10011000 01110101
			0
			10 0000010   11 00001 001100 111111111111
			10 1111110   0
			0            10 000000000001
			1110 11111100010101101001   0
			0 0
			1111 0000000000000000000000001111111111111111111111111111111111111111 0`,
	}, {
		// An XOR of 64 significant bits costs 2+64 bits in the initial
		// window, against 13+64 for a window of its own.
		name:    "first XOR in the initial window",
		samples: []sample{{0, 0}, {1, 0xffffffffffffffff}, {2, 0x8000000000000001}},
		bits: `
			00000000 00000011
			00000000
			00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
			00000001
			10 1111111111111111111111111111111111111111111111111111111111111111
			0 10 0111111111111111111111111111111111111111111111111111111111111110`,
	}, {
		// XORs with more than 31 leading zeros are written as if they had
		// 31; a width of 64 is written as 0.
		name:    "leading zeros capped, width 64",
		samples: []sample{{0, 0}, {1, 1}, {2, 0}, {3, 0xffffffffffffffff}},
		bits: `
			00000000 00000100
			00000000
			00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
			00000001
			11 11111 100001 000000000000000000000000000000001
			0 10 000000000000000000000000000000001
			0 11 00000 000000 1111111111111111111111111111111111111111111111111111111111111111`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := bitString(tc.bits)
			c := encode(tc.samples)
			if !bytes.Equal(c.Bytes(), want) {
				t.Fatalf("encoded\n got %x\nwant %x", c.Bytes(), want)
			}
			got, err := decode(&XORIterator{}, want)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.samples) {
				t.Fatalf("decoded %v, want %v", got, tc.samples)
			}
		})
	}
}

// TestXORDocExample checks the example in docs/format/chunks.md.
func TestXORDocExample(t *testing.T) {
	const want = "0003d00f3ff0000000000000987540b099ffe0"
	c := encode([]sample{{1000, bitsOf(1)}, {16000, bitsOf(1)}, {31002, bitsOf(3)}})
	if got := fmt.Sprintf("%x", c.Bytes()); got != want {
		t.Fatalf("encoded %s, docs/format/chunks.md says %s", got, want)
	}
}

func TestXORIteratorCorrupt(t *testing.T) {
	irregular := roundTripCases()["irregular intervals"]
	valid := encode(irregular).Bytes()
	withCount := func(n int, stream []byte) []byte {
		return append([]byte{byte(n >> 8), byte(n)}, stream...)
	}
	// The start of a chunk: t0 = 0, v0 = 0, delta 1.
	const start = "00000000" + "0000000000000000000000000000000000000000000000000000000000000000" + "00000001"
	cases := []struct {
		name   string
		b      []byte
		reason string
		offset int // -1: not checked
		sample int // the index of the damaged sample, or the count if after them
	}{
		{"nil", nil, "header", 0, 0},
		{"one byte", []byte{0}, "header", 1, 0},
		{"count without data", []byte{0, 1}, "truncated", 2, 0},
		{"empty chunk with trailing byte", []byte{0, 0, 0}, "trailing", 2, 0},
		{"trailing byte", append(bytes.Clone(valid), 0), "trailing", -1, len(irregular)},
		{"count one too low", withCount(len(irregular)-1, valid[2:]), "trailing", -1, len(irregular) - 1},
		{"count one too high", withCount(len(irregular)+1, valid[2:]), "truncated", len(valid), len(irregular)},
		{"varint overflow", withCount(1, bytes.Repeat([]byte{0xff}, 10)), "overflows", 12, 0},
		{"varint tenth byte too big", withCount(1, append(bytes.Repeat([]byte{0x80}, 9), 0x02)), "overflows", 12, 0},
		{"window wider than 64 bits", withCount(2, bitString(start+"11 11111 000000"+strings.Repeat("0", 64))), "wider", 13, 1},
		{"non-zero padding", withCount(2, bitString(start+"0 1")), "padding", 13, 2},
		{"truncated dod", withCount(3, bitString(start+"0 1111 0000")), "truncated timestamp", 14, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			it := NewXORIterator(tc.b)
			n := 0
			for it.Next() {
				n++
			}
			err := it.Err()
			if !errors.Is(err, ErrCorruptChunk) {
				t.Fatalf("after %d samples Err() = %v, want ErrCorruptChunk", n, err)
			}
			var ce *CorruptChunkError
			if !errors.As(err, &ce) {
				t.Fatalf("Err() = %T, want *CorruptChunkError", err)
			}
			if !strings.Contains(ce.Reason, tc.reason) {
				t.Fatalf("Err() = %v, want a reason containing %q", err, tc.reason)
			}
			if ce.Offset < 0 || ce.Offset > len(tc.b) || tc.offset >= 0 && ce.Offset != tc.offset {
				t.Fatalf("Err() = %v, want offset %d in a chunk of %d bytes", err, tc.offset, len(tc.b))
			}
			// The samples before the damage decode; Sample says where it is.
			if ce.Sample != tc.sample || n != tc.sample {
				t.Fatalf("Err() = %v after %d samples, want it at sample %d", err, n, tc.sample)
			}
			if it.Next() {
				t.Fatal("Next() = true after an error")
			}
		})
	}
}

// TestXORIteratorTruncated cuts a valid chunk at every length: each cut
// must end in an error, after only samples that were complete.
func TestXORIteratorTruncated(t *testing.T) {
	want := roundTripCases()["irregular intervals"]
	full := encode(want).Bytes()
	it := &XORIterator{}
	for n := range len(full) {
		got, err := decode(it, full[:n])
		if !errors.Is(err, ErrCorruptChunk) {
			t.Fatalf("cut at %d of %d bytes: err = %v, want ErrCorruptChunk", n, len(full), err)
		}
		if !slices.Equal(got, want[:len(got)]) {
			t.Fatalf("cut at %d: decoded %v, want a prefix of %v", n, got, want)
		}
	}
}

// TestXORIteratorReset checks that a reused iterator forgets its previous
// chunk, its error included, and iterates without allocating.
func TestXORIteratorReset(t *testing.T) {
	cases := roundTripCases()
	a, b := encode(cases["counter"]).Bytes(), encode(cases["nan and stale"]).Bytes()
	it := NewXORIterator([]byte{0, 5, 1})
	for it.Next() {
	}
	if it.Err() == nil {
		t.Fatal("want an error from a corrupt chunk")
	}
	for _, tc := range []struct {
		b    []byte
		want []sample
	}{{a, cases["counter"]}, {b, cases["nan and stale"]}, {a, cases["counter"]}} {
		got, err := decode(it, tc.b)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Fatalf("after Reset: got %v, %v; want %v", head(got), err, head(tc.want))
		}
	}

	var sum float64
	allocs := testing.AllocsPerRun(100, func() {
		for _, chunk := range [][]byte{a, b} {
			it.Reset(chunk)
			for it.Next() {
				_, v := it.At()
				sum += v
			}
			if it.Err() != nil {
				t.Fatal(it.Err())
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("Reset and full iteration: %v allocs, want 0", allocs)
	}
}

func TestXORAppendAllocs(t *testing.T) {
	// A chunk whose byte slice already has room: Append must not allocate.
	c := NewXORChunk()
	w := c.writer()
	w.buf = slices.Grow(w.buf, 1<<20)
	c.setWriter(&w)
	rng := rand.New(rand.NewPCG(3, 4))
	ts := int64(1700000000000)
	allocs := testing.AllocsPerRun(10000, func() {
		ts += 15000 + rng.Int64N(11) - 5
		c.Append(ts, rng.Float64())
	})
	if allocs != 0 {
		t.Fatalf("Append on a pre-grown chunk: %v allocs, want 0", allocs)
	}
}

// TestXORChunkPresize checks the sizing policy: a chunk starts small, and
// once it has grown to what a series needs, Reset keeps that capacity so
// the series' later chunks do not grow again.
func TestXORChunkPresize(t *testing.T) {
	c := NewXORChunk()
	if got := int(c.cap); got != XORInitialCap {
		t.Fatalf("new chunk has capacity %d, want %d", got, XORInitialCap)
	}
	series := realisticSeries("counter", 240, 1)
	for _, s := range series[:120] {
		c.Append(s.t, math.Float64frombits(s.v))
	}
	grown, mem := int(c.cap), c.buf
	c.Reset()
	for _, s := range series[120:] {
		c.Append(s.t, math.Float64frombits(s.v))
	}
	if got := int(c.cap); got != grown || c.buf != mem {
		t.Fatalf("second chunk of the series did not reuse the first one's memory: capacity %d after %d", got, grown)
	}
}

func TestXORAppendFullChunkPanics(t *testing.T) {
	c := encode(regular(math.MaxUint16, 0, 1, func(int) float64 { return 0 }))
	defer func() {
		if recover() == nil {
			t.Fatal("Append to a full chunk did not panic")
		}
	}()
	c.Append(math.MaxUint16, 0)
}

// realisticSeries returns n samples of a series scraped every 15s with up
// to 5ms of jitter: a constant (like up or an info metric), a busy counter
// with integer increments, a gauge like a load average, a random walk
// printed with two decimals, whose values use the whole mantissa, or a
// noisy gauge of full-precision random values between 40 and 50.
func realisticSeries(kind string, n int, seed uint64) []sample {
	rng := rand.New(rand.NewPCG(seed, 0))
	out := make([]sample, n)
	var v float64
	if kind == "gauge" {
		v = 1.5
	}
	for i := range out {
		switch kind {
		case "constant":
			v = 1
		case "counter":
			v += float64(rng.IntN(50))
		case "gauge":
			v = math.Max(0, math.Round((v+rng.NormFloat64()*0.05)*100)/100)
		case "noisy":
			v = 40 + rng.Float64()*10
		default:
			panic("unknown kind " + kind)
		}
		out[i] = sample{1700000000000 + int64(i)*15000 + rng.Int64N(11) - 5, bitsOf(v)}
	}
	return out
}

// TestXORChunkReset checks that a reset chunk encodes exactly like a new
// one and reuses its memory.
func TestXORChunkReset(t *testing.T) {
	c := NewXORChunk()
	for i := range 200 {
		c.Append(int64(i*15000+i%7), float64(i)*1.5)
	}
	c.Reset()
	if c.NumSamples() != 0 {
		t.Fatalf("reset chunk has %d samples", c.NumSamples())
	}
	fresh := NewXORChunk()
	for i := range 50 {
		ts, v := int64(1000+i*10), float64(i%3)
		c.Append(ts, v)
		fresh.Append(ts, v)
	}
	if !bytes.Equal(c.Bytes(), fresh.Bytes()) {
		t.Fatalf("reset chunk encodes differently:\n%x\n%x", c.Bytes(), fresh.Bytes())
	}
	allocs := testing.AllocsPerRun(100, func() {
		c.Reset()
		for i := range 120 {
			c.Append(int64(i*15000), float64(i))
		}
	})
	if allocs != 0 {
		t.Fatalf("Reset+Append allocated %v times", allocs)
	}
}

// TestXORDetach detaches the finished bytes of chunks at random points,
// as the head does, and checks that the whole chunk put back together
// from the detached bytes and the rest is the chunk never detached, byte
// for byte, at every sample count; and that Reset starts over.
func TestXORDetach(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	cases := roundTripCases()
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		samples := cases[name]
		if len(samples) > 5000 {
			continue // put together at every sample: quadratic
		}
		t.Run(name, func(t *testing.T) {
			for range 20 {
				whole, c := NewXORChunk(), NewXORChunk()
				var held []byte // what the owner of the detached bytes keeps
				for i, s := range samples {
					whole.Append(s.t, math.Float64frombits(s.v))
					before := len(c.Bytes())
					c.Append(s.t, math.Float64frombits(s.v))
					if grew := len(c.Bytes()) - before; grew > XORSampleMaxBytes {
						t.Fatalf("sample %d took %d bytes, more than XORSampleMaxBytes", i, grew)
					}
					if rng.IntN(8) == 0 {
						f := c.Finished()
						n := rng.IntN(len(f) + 1)
						held = append(held, f[:n]...)
						c.Detach(n)
						if c.SinceDetach() != 0 {
							t.Fatalf("sample %d: %d samples since Detach", i, c.SinceDetach())
						}
						if rng.IntN(2) == 0 && len(c.Bytes())+XORSampleMaxBytes <= XORInitialCap {
							// As the head moves a grown chunk back to
							// memory of the first size.
							c.MoveTo(make([]byte, XORInitialCap))
							if size := len(c.Bytes()) + c.Room(); size != XORInitialCap {
								t.Fatalf("sample %d: %d bytes in memory of %d after MoveTo", i, len(c.Bytes()), size)
							}
						}
					}
					if c.Detached() != len(held) {
						t.Fatalf("sample %d: Detached %d, held %d", i, c.Detached(), len(held))
					}
					if got := c.AppendWhole([]byte("x"), held); !bytes.Equal(got[1:], whole.Bytes()) || got[0] != 'x' {
						t.Fatalf("sample %d: put together\n%x\nwant\n%x", i, got[1:], whole.Bytes())
					}
				}
				c.Reset()
				whole.Reset()
				c.Append(1, 2)
				whole.Append(1, 2)
				if c.Detached() != 0 || !bytes.Equal(c.Bytes(), whole.Bytes()) {
					t.Fatalf("after Reset: %x, want %x", c.Bytes(), whole.Bytes())
				}
			}
		})
	}
}

func TestXORHeaderHelpers(t *testing.T) {
	c := NewXORChunk()
	for i := range 300 {
		c.Append(int64(i), float64(i))
	}
	b := slices.Clone(c.Bytes())
	if got := AppendXORHeader(nil, 300); !bytes.Equal(got, b[:2]) {
		t.Errorf("AppendXORHeader(300) = %x, chunk header %x", got, b[:2])
	}
	SetXORSampleCount(b, 7)
	if got := AppendXORHeader(nil, 7); !bytes.Equal(got, b[:2]) {
		t.Errorf("SetXORSampleCount(7) wrote %x, want %x", b[:2], got)
	}
}

// TestXORAppenderZeroValue checks the appender as the head uses it: a
// zero value that gets its memory at the first sample, given the last
// sample by its caller, and reused after Reset, writes the bytes an
// XORChunk does.
func TestXORAppenderZeroValue(t *testing.T) {
	for _, kind := range benchKinds {
		series := realisticSeries(kind, 240, 2)
		var a XORAppender
		for _, part := range [][]sample{series[:120], series[120:]} {
			prev := sample{}
			for _, s := range part {
				a.Append(prev.t, math.Float64frombits(prev.v), s.t, math.Float64frombits(s.v))
				prev = s
			}
			got, err := decode(&XORIterator{}, a.Bytes())
			if err != nil || !slices.Equal(got, part) {
				t.Fatalf("%s: decoded %v (err %v), want %v", kind, got, err, part)
			}
			if want := encode(part).Bytes(); !bytes.Equal(a.Bytes(), want) {
				t.Fatalf("%s: appender wrote %x, XORChunk %x", kind, a.Bytes(), want)
			}
			a.Reset()
		}
	}
}

// TestXORMoveTo appends as the head does with memory it allocates
// itself: a sample that does not fit (Fits) first moves the chunk to
// memory of GrowCap bytes (MoveTo), starting from none. Append then never
// moves the chunk itself, and the bytes are an XORChunk's.
func TestXORMoveTo(t *testing.T) {
	cases := roundTripCases()
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		samples := cases[name]
		var (
			a     XORAppender
			prev  sample
			moves int
			start int // of the chunk's samples
		)
		for i, s := range samples {
			if a.NumSamples() == 240 {
				a.Reset()
				start = i
			}
			if !a.Fits(prev.t, math.Float64frombits(prev.v), s.t, math.Float64frombits(s.v)) {
				old := slices.Clone(a.Bytes())
				a.MoveTo(make([]byte, a.GrowCap()))
				if a.NumSamples() > 0 && !bytes.Equal(a.Bytes(), old) {
					t.Fatalf("%s, sample %d: moved chunk holds %x, want %x", name, i, a.Bytes(), old)
				}
				moves++
			}
			mem := unsafe.SliceData(a.Memory())
			a.Append(prev.t, math.Float64frombits(prev.v), s.t, math.Float64frombits(s.v))
			if unsafe.SliceData(a.Memory()) != mem {
				t.Fatalf("%s, sample %d: Append moved the chunk to new memory", name, i)
			}
			prev = s
		}
		if moves == 0 {
			t.Fatalf("%s: the chunk never got memory", name)
		}
		if want := encode(samples[start:]).Bytes(); !bytes.Equal(a.Bytes(), want) {
			t.Fatalf("%s: appender wrote %x, XORChunk %x", name, a.Bytes(), want)
		}
	}
}

// TestXORFits checks Fits against what Append then takes, at every sample
// of every round-trip case and from several starting capacities: a sample
// said to fit leaves the memory where it is, and Fits overstates a
// sample's bytes by at most two (a new window's 11 bits of description
// that reusing the current one saves). Chunks are cut at 240 samples, as
// the head cuts them.
func TestXORFits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	cases := roundTripCases()
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		samples := cases[name]
		for _, capacity := range []int{2, 20, 48, 64} {
			var c XORAppender
			w := bitWriter{buf: make([]byte, xorChunkHeaderSize, capacity)}
			c.setWriter(&w)
			var prev sample
			for i, s := range samples {
				if c.NumSamples() == 240 {
					c.Reset()
				}
				room, before, capBefore := c.Room(), len(c.Bytes()), c.cap
				fits := c.Fits(prev.t, math.Float64frombits(prev.v), s.t, math.Float64frombits(s.v))
				c.Append(prev.t, math.Float64frombits(prev.v), s.t, math.Float64frombits(s.v))
				took := len(c.Bytes()) - before
				switch {
				case fits && (took > room || c.cap != capBefore):
					t.Fatalf("%s, capacity %d, sample %d: fits, but took %d bytes of %d and moved to %d", name, capacity, i, took, room, c.cap)
				case !fits && took+2 < room:
					t.Fatalf("%s, capacity %d, sample %d: does not fit, but took %d bytes of %d", name, capacity, i, took, room)
				}
				prev = s
				if rng.IntN(16) == 0 {
					c.Detach(len(c.Finished()))
				}
			}
		}
	}
}
