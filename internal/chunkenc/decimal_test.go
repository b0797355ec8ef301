package chunkenc

import (
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// decimalCases are series of decimal values, each of which Densify must
// take and give back bit for bit.
func decimalCases() map[string][]sample {
	rng := rand.New(rand.NewPCG(3, 4))
	jitter := func(i int) int64 { return 1700000000000 + int64(i)*15000 + rng.Int64N(11) - 5 }
	series := func(n int, ts func(int) int64, val func(int) float64) []sample {
		out := make([]sample, n)
		for i := range out {
			out[i] = sample{ts(i), bitsOf(val(i))}
		}
		return out
	}
	regularTs := func(i int) int64 { return 1700000000000 + int64(i)*15000 }
	var c float64
	return map[string][]sample{
		"two samples":       series(2, regularTs, func(i int) float64 { return float64(i) }),
		"constant":          series(120, regularTs, func(int) float64 { return 42 }),
		"integer counter":   series(120, jitter, func(int) float64 { c += float64(rng.IntN(5000)); return c }),
		"hundredths":        series(120, regularTs, func(i int) float64 { return float64(1234567+i*37+rng.IntN(9)) / 100 }),
		"gauge of tenths":   series(120, jitter, func(int) float64 { return float64(rng.IntN(2000)-1000) / 10 }),
		"counter reset":     series(120, regularTs, func(i int) float64 { return float64((i%50)*1000 + rng.IntN(100)) }),
		"mixed scales":      series(120, regularTs, func(i int) float64 { return []float64{1, 0.5, 0.25, 0.125, 3}[i%5] }),
		"large integers":    series(60, regularTs, func(i int) float64 { return float64(1<<52 + i*3) }),
		"negative":          series(60, regularTs, func(i int) float64 { return -float64(i+1) * 1.5 }),
		"irregular times":   series(100, func(i int) int64 { return int64(i*i) * 977 }, func(i int) float64 { return float64(i % 7) }),
		"timestamps wrap":   series(4, func(i int) int64 { return []int64{math.MinInt64, math.MaxInt64, 0, 1}[i] }, func(i int) float64 { return float64(i) }),
		"outlier dod":       series(120, regularTs, func(i int) float64 { return float64(i*10) + float64(i/119)*1e15 }),
		"fifteen digits":    series(30, regularTs, func(i int) float64 { return float64(i+1) / 1e15 }),
		"zero then numbers": series(30, regularTs, func(i int) float64 { return float64(i) / 4 }),
		// A scrape 3 s late among jittered ones escapes a timestamp residual.
		"late scrape": series(120, func(i int) int64 { return jitter(i) + int64(i/60)*3000 }, func(i int) float64 { return float64(i % 9) }),
		"raw values":  series(120, regularTs, func(int) float64 { return 40 + rng.Float64()*10 }),
		"random bits": series(120, jitter, func(int) float64 { return math.Float64frombits(rng.Uint64()) }),
	}
}

func TestDecimalRoundTrip(t *testing.T) {
	var d Densifier
	it := &DecimalIterator{}
	for name, want := range decimalCases() {
		xor := encode(want).Bytes()
		dec, ok := d.Densify(xor)
		if !ok {
			if name == "two samples" { // too small to win
				continue
			}
			t.Errorf("%s: not densified (%d bytes of XOR)", name, len(xor))
			continue
		}
		got, err := decode(it, dec)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: round trip differs:\n got %v\nwant %v", name, head(got), head(want))
		}
		if len(dec) >= len(xor) {
			t.Errorf("%s: %d bytes, XOR %d", name, len(dec), len(xor))
		}
	}
}

// TestDecimalRising checks that Rising says whether a chunk's values
// rise, for chunks coded every way, and is false for values stored as
// bits.
func TestDecimalRising(t *testing.T) {
	var d Densifier
	it := &DecimalIterator{}
	rising := map[string]bool{}
	for name, want := range decimalCases() {
		if dec, ok := d.Densify(encode(want).Bytes()); ok {
			checkRising(t, it, dec, true)
			rising[name] = it.Rising()
		}
	}
	for _, name := range []string{"constant", "integer counter", "hundredths", "large integers", "fifteen digits", "zero then numbers"} {
		if !rising[name] {
			t.Errorf("%s: Rising false", name)
		}
	}
	for _, name := range []string{"counter reset", "negative", "gauge of tenths", "raw values"} {
		if rising[name] {
			t.Errorf("%s: Rising true", name)
		}
	}
}

// checkRising checks that where Rising says the values of chunk b rise,
// they do, and never for values stored as bits; exact also checks the
// converse, for a chunk Encode wrote: Rising where the mantissas start
// in [0, 2^53] and rise by less than 2^46 at a time.
func checkRising(t *testing.T, it *DecimalIterator, b []byte, exact bool) {
	t.Helper()
	it.Reset(b)
	_, vs, ok := it.AppendSamples(nil, nil, math.MaxInt64, math.MaxInt)
	if !ok {
		if it.Rising() {
			t.Fatal("Rising after a malformed chunk")
		}
		return
	}
	rising := it.Rising()
	rises := !it.raw
	for i := 1; i < len(vs); i++ {
		rises = rises && vs[i] >= vs[i-1]
	}
	if rising && !rises {
		t.Fatalf("Rising; values stored as bits %v: %v", it.raw, vs)
	}
	if !exact || it.raw {
		return
	}
	it.Reset(b)
	_, ms, div, _ := it.AppendStored(nil, nil, math.MaxInt64, math.MaxInt)
	m := func(i int) int64 {
		if div != 0 {
			return int64(math.Float64bits(ms[i]))
		}
		return int64(ms[i]) // an integer
	}
	want := len(ms) == 0 || m(0) >= 0 && m(0) <= 1<<53
	for i := 1; i < len(ms); i++ {
		want = want && m(i)-m(i-1) >= 0 && m(i)-m(i-1) < 1<<46
	}
	if rising != want {
		t.Fatalf("Rising %v; mantissas %v", rising, ms)
	}
}

// TestDecimalRaw checks that a chunk with a value that is not a decimal
// of at most 15 digits under 2^53 takes the values' bits as mantissas,
// and gives every value back bit for bit.
func TestDecimalRaw(t *testing.T) {
	var d Densifier
	it := &DecimalIterator{}
	rng := rand.New(rand.NewPCG(5, 6))
	for name, odd := range map[string]float64{
		"stale marker":   math.Float64frombits(0x7ff0000000000002),
		"NaN":            math.NaN(),
		"infinity":       math.Inf(1),
		"negative zero":  math.Copysign(0, -1),
		"a third":        1.0 / 3,
		"beyond 2^53":    1 << 60,
		"16 digits":      1e-16,
		"noisy gauge":    71.23456789012345,
		"smallest float": math.SmallestNonzeroFloat64,
	} {
		samples := regular(120, 0, 15000, func(i int) float64 { return float64(i) })
		samples[60].v = bitsOf(odd)
		dec, ok := d.Densify(encode(samples).Bytes())
		if !ok {
			continue // XOR was smaller
		}
		if scale := dec[2] &^ decimalDod; scale != decimalRaw && scale != decimalRawFromMin {
			t.Errorf("%s: scale %d, want the values' bits", name, scale)
		}
		got, err := decode(it, dec)
		if err != nil || !slices.Equal(got, samples) {
			t.Fatalf("%s: round trip: %v\n got %v\nwant %v", name, err, head(got[55:]), head(samples[55:]))
		}
	}
	// Full-precision noise in a band: the bits' differences are narrower
	// than XOR's windows and their headers.
	// Coded as distances from their minimum, which take no sign.
	noisy := regular(120, 0, 15000, func(int) float64 { return 40 + rng.Float64()*10 })
	xor := encode(noisy).Bytes()
	dec, ok := d.Densify(xor)
	if !ok || len(dec) >= len(xor) {
		t.Fatalf("noisy gauge: densified %v, %d bytes against XOR's %d", ok, len(dec), len(xor))
	}
	if dec[2] != decimalRawFromMin {
		t.Errorf("noisy gauge: mode %#x, want the bits from their minimum", dec[2])
	}
	if got, err := decode(it, dec); err != nil || !slices.Equal(got, noisy) {
		t.Fatalf("noisy gauge: round trip: %v", err)
	}
	// One sample: nothing to gain.
	if _, ok := d.Densify(encode(regular(1, 0, 1, func(int) float64 { return 1 })).Bytes()); ok {
		t.Error("a chunk of one sample was densified")
	}
	if _, ok := d.Densify([]byte{0, 3, 0xff}); ok {
		t.Error("a corrupt XOR chunk was densified")
	}
}

// TestDecimalGolden pins the format: a regular counter of hundredths,
// whose timestamps take no bits.
func TestDecimalGolden(t *testing.T) {
	samples := regular(6, 1_000_000, 15000, func(i int) float64 { return []float64{1.5, 1.75, 2, 2.5, 2.75, 3}[i] })
	var d Densifier
	dec, ok := d.Densify(encode(samples).Bytes())
	if !ok {
		t.Fatal("not densified")
	}
	// count 6; scale 2 with the dod bit; widths 0 (timestamps) and 6;
	// t0 1000000 and m0 150 (varints); t1-t0 15000 (uvarint); m1-m0 25
	// (varint); then the value residuals of samples 2 to 5, the
	// differences of consecutive differences 0, 25, -25, 0 zigzagged to
	// 0, 50, 49, 0, six bits each: 000000 110010 110001 000000.
	const want = "0006" + "82" + "00" + "06" + "80897a" + "ac02" + "9875" + "32" + "032c40"
	if got := hex.EncodeToString(dec); got != want {
		t.Errorf("encoded %s, want %s", got, want)
	}
	again, err := decode(&DecimalIterator{}, dec)
	if err != nil || !slices.Equal(again, samples) {
		t.Fatalf("golden chunk decodes to %v, %v", again, err)
	}
}

// TestDecimalGoldenFromMin pins the coding of values as distances from
// their minimum: a gauge swinging between two values, whose
// differences would take a sign bit more.
func TestDecimalGoldenFromMin(t *testing.T) {
	samples := regular(11, 1_000_000, 15000, func(i int) float64 { return float64(100 + 62*(i%2)) })
	var d Densifier
	dec, ok := d.Densify(encode(samples).Bytes())
	if !ok {
		t.Fatal("not densified")
	}
	// count 11; scale 0 coded from the minimum; widths 0 and 6; t0
	// 1000000, m0 100, t1-t0 15000, m1-m0 62; the minimum of samples 2
	// to 10 less m0, 0 (varint); then their distances from it, 0, 62, 0,
	// ..., six bits each, and two bits of padding.
	const want = "000b" + "40" + "00" + "06" + "80897a" + "c801" + "9875" + "7c" + "00" + "03e03e03e03e00"
	if got := hex.EncodeToString(dec); got != want {
		t.Errorf("encoded %s, want %s", got, want)
	}
	again, err := decode(&DecimalIterator{}, dec)
	if err != nil || !slices.Equal(again, samples) {
		t.Fatalf("golden chunk decodes to %v, %v", again, err)
	}
}

func TestDecimalCorrupt(t *testing.T) {
	var d Densifier
	dec, ok := d.Densify(encode(decimalCases()["integer counter"]).Bytes())
	if !ok {
		t.Fatal("not densified")
	}
	dec = slices.Clone(dec)
	it := &DecimalIterator{}
	for name, b := range map[string][]byte{
		"empty":          {},
		"header only":    dec[:decimalHeaderSize],
		"truncated":      dec[:len(dec)-2],
		"trailing bytes": append(slices.Clone(dec), 0, 0),
		"scale 16":       append([]byte{0, 2, 16, 0, 0}, dec[decimalHeaderSize:]...),
		"scale 125":      append([]byte{0, 2, 125, 0, 0}, dec[decimalHeaderSize:]...),
		"scale 80":       append([]byte{0, 2, 80, 0, 0}, dec[decimalHeaderSize:]...),
		"dod from min":   append([]byte{0, 2, 0xc0, 0, 0}, dec[decimalHeaderSize:]...),
		"width 65":       append([]byte{0, 2, 0, 65, 0}, dec[decimalHeaderSize:]...),
	} {
		got, err := decode(it, b)
		if !errors.Is(err, ErrCorruptChunk) {
			t.Errorf("%s: %d samples, err %v, want ErrCorruptChunk", name, len(got), err)
		}
	}
}

// TestDecimalInBlockIterator reads a decimal chunk between XOR ones
// through SeriesIterator, as block queries do.
func TestDecimalInBlockIterator(t *testing.T) {
	var d Densifier
	all := regular(360, 0, 15000, func(i int) float64 { return float64(i) / 4 })
	var chunks []Meta
	for i := 0; i < 360; i += 120 {
		part := all[i : i+120]
		c := Meta{Data: encode(part).Bytes(), MinT: part[0].t, MaxT: part[119].t, Enc: EncXOR}
		if i == 120 {
			dec, ok := d.Densify(c.Data)
			if !ok {
				t.Fatal("not densified")
			}
			c.Data, c.Enc = slices.Clone(dec), EncDecimal
		}
		chunks = append(chunks, c)
	}
	var si SeriesIterator
	si.Reset(chunks, nil, 100*15000, 300*15000)
	var got []sample
	for si.Next() != 0 {
		t, v := si.At()
		got = append(got, sample{t, bitsOf(v)})
	}
	if si.Err() != nil || !slices.Equal(got, all[100:301]) {
		t.Fatalf("got %d samples (%v), want %d", len(got), si.Err(), 201)
	}
	si.Reset(chunks, nil, 0, math.MaxInt64)
	if si.Seek(200*15000+1) == 0 {
		t.Fatal("Seek found nothing")
	}
	if tt, v := si.At(); tt != 201*15000 || v != 201.0/4 {
		t.Fatalf("Seek landed on (%d, %v)", tt, v)
	}
}

// FuzzDecimalRoundTrip densifies the fuzzer's samples (see fuzzSamples,
// with small integers and raw values) and checks that whatever is
// densified is smaller and decodes to the same samples.
func FuzzDecimalRoundTrip(f *testing.F) {
	for _, s := range decimalCases() {
		f.Add(s[0].t, fuzzBytes(s))
	}
	f.Add(int64(0), []byte{0x03, 0x00, 0x07, 0x1e, 0x0b, 0x1e, 0x0f, 0x1e})
	var d Densifier
	it := &DecimalIterator{}
	f.Fuzz(func(t *testing.T, t0 int64, data []byte) {
		want := fuzzSamples(t0, data)
		xor := encode(want).Bytes()
		dec, ok := d.Densify(xor)
		if !ok {
			return
		}
		if len(dec) >= len(xor) {
			t.Fatalf("densified to %d bytes, XOR %d", len(dec), len(xor))
		}
		got, err := decode(it, dec)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("round trip: %v\n got %v\nwant %v", err, head(got), head(want))
		}
		checkAppendSamples(t, it, dec, math.MaxInt64)
		checkAppendSamples(t, it, dec, want[len(want)/2].t)
		checkAppendStored(t, it, dec, want[len(want)/2].t)
		checkRising(t, it, dec, true)
	})
}

// checkAppendStored checks that AppendStored, its values divided by the
// divisor it returns, gives what AppendSamples gives.
func checkAppendStored(t *testing.T, it *DecimalIterator, b []byte, maxt int64) {
	t.Helper()
	it.Reset(b)
	wantT, wantV, wantOK := it.AppendSamples(nil, nil, maxt, math.MaxInt)
	it.Reset(b)
	ts, vs, div, ok := it.AppendStored(nil, nil, maxt, math.MaxInt)
	if ok != wantOK || !slices.Equal(ts, wantT) || len(vs) != len(wantV) {
		t.Fatalf("AppendStored: %d samples, %v; AppendSamples %d, %v", len(ts), ok, len(wantT), wantOK)
	}
	for i, x := range vs {
		if div != 0 {
			x = float64(int64(math.Float64bits(x))) / div
		}
		if math.Float64bits(x) != math.Float64bits(wantV[i]) {
			t.Fatalf("AppendStored: value %d is %v (divisor %v); AppendSamples gives %v", i, x, div, wantV[i])
		}
	}
}

// FuzzDecimalIterator decodes arbitrary bytes: never a panic, never more
// samples than the header's count, and any error is ErrCorruptChunk.
func FuzzDecimalIterator(f *testing.F) {
	var d Densifier
	for _, s := range decimalCases() {
		if dec, ok := d.Densify(encode(s).Bytes()); ok {
			f.Add(slices.Clone(dec))
			f.Add(slices.Clone(dec[:len(dec)-1]))
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0x8f, 0x40, 0x40, 0x01, 0x01, 0x01, 0x01, 0xff, 0xff})
	it := &DecimalIterator{}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, _ := decodeArbitrary(t, it, b)
		checkAppendSamples(t, it, b, math.MaxInt64)
		checkAppendStored(t, it, b, math.MaxInt64)
		checkRising(t, it, b, false)
		if len(got) > 0 {
			checkAppendSamples(t, it, b, got[len(got)/2].t)
			checkAppendStored(t, it, b, got[len(got)/2].t)
		}
	})
}

// BenchmarkDecimalIterate is BenchmarkXORIterate over the same series
// densified: compare the two for the cost of reading blocks' chunks.
//
//	go test -run=NONE -bench='BenchmarkXORIterate|BenchmarkDecimalIterate' -benchmem -count=6 ./internal/chunkenc/
func BenchmarkDecimalIterate(b *testing.B) {
	for _, kind := range benchKinds {
		b.Run("kind="+kind, func(b *testing.B) {
			chunk := densifiedBenchChunk(b, kind)
			it := &DecimalIterator{}
			var sum float64
			b.ReportAllocs()
			for b.Loop() {
				it.Reset(chunk)
				for it.Next() {
					_, v := it.At()
					sum += v
				}
				if it.Err() != nil {
					b.Fatal(it.Err())
				}
			}
			reportPerSample(b, len(chunk))
			_ = sum
		})
	}
}

// BenchmarkDecimalAppendSamples is BenchmarkDecimalIterate through AppendSamples,
// the loop range queries decode with; block=joined is a block's chunk:
// JoinSamples samples at a regular interval, as aligned scrapes give.
//
//	go test -run=NONE -bench='BenchmarkDecimalIterate|BenchmarkDecimalAppendSamples' -benchmem -count=6 ./internal/chunkenc/
func BenchmarkDecimalAppendSamples(b *testing.B) {
	for _, kind := range benchKinds {
		b.Run("kind="+kind, func(b *testing.B) {
			benchmarkAppendSamples(b, &DecimalIterator{}, densifiedBenchChunk(b, kind))
		})
	}
	for _, kind := range benchKinds {
		b.Run("kind="+kind+"/block=joined", func(b *testing.B) {
			samples := realisticSeries(kind, JoinSamples, 1)
			for i := range samples {
				samples[i].t = samples[0].t + int64(i)*15000
			}
			var d Densifier
			chunk, ok := d.Densify(encode(samples).Bytes())
			if !ok {
				b.Fatal("not densified")
			}
			benchmarkAppendSamples(b, &DecimalIterator{}, chunk)
		})
	}
}

// densifiedBenchChunk is the benchmarks' chunk of the given kind as a
// decimal chunk.
func densifiedBenchChunk(b *testing.B, kind string) []byte {
	var d Densifier
	chunk, ok := d.Densify(encode(realisticSeries(kind, benchChunkSamples, 1)).Bytes())
	if !ok {
		b.Fatal("not densified")
	}
	return chunk
}

// BenchmarkDensify measures re-encoding a head chunk for a block.
func BenchmarkDensify(b *testing.B) {
	for _, kind := range benchKinds {
		b.Run("kind="+kind, func(b *testing.B) {
			var d Densifier
			chunk := encode(realisticSeries(kind, benchChunkSamples, 1)).Bytes()
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := d.Densify(chunk); !ok {
					b.Fatal("not densified")
				}
			}
			reportPerSample(b, len(chunk))
		})
	}
}
