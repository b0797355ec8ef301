package chunkenc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/value"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"
)

// storedKindsChunks returns a series' chunks holding each way a value is
// stored: decimal chunks of hundredths, of integers (a counter with
// resets) and of full-precision values (the values' bits), hundredths
// with staleness markers (also bits), XOR chunks, and decimal chunks of
// rising values: a counter in hundredths, restarting low in each, and
// integers, continuing from where it ends (rounded up), but for the last
// chunk, which restarts at 0; some values are negative.
func storedKindsChunks(t *testing.T, rng *rand.Rand) []Meta {
	var d Densifier
	var chunks []Meta
	ts, counter, rising := int64(0), 0.0, 0
	for c := range 21 {
		kind := c % 7
		xc := NewXORChunk()
		switch {
		case kind == 5:
			rising = rng.IntN(100)
		case c == 20:
			rising = 0
		}
		for range 30 + rng.IntN(40) {
			ts += 10 + rng.Int64N(10)
			var v float64
			switch kind {
			case 5:
				rising += rng.IntN(300)
				v = float64(rising) / 100
			case 6:
				rising += 100 * rng.IntN(3)
				v = float64((rising + 99) / 100)
			case 0, 4:
				v = float64(rng.IntN(2000)-500) / 100
			case 1:
				counter += float64(rng.IntN(20))
				if rng.IntN(25) == 0 {
					counter = float64(rng.IntN(5))
				}
				v = counter
			case 2:
				v = rng.NormFloat64() * 1e3
			case 3:
				v = float64(rng.IntN(100)) / 100
				if rng.IntN(10) == 0 {
					v = math.Float64frombits(value.StaleNaN)
				}
			}
			xc.Append(ts, v)
		}
		m := Meta{Data: slices.Clone(xc.Bytes()), MaxT: ts, Enc: EncXOR}
		m.MinT = firstT(t, m)
		if kind != 4 {
			d.Reset()
			if err := d.Add(EncXOR, m.Data); err != nil {
				t.Fatal(err)
			}
			data, ok := d.Encode(math.MaxInt)
			if !ok {
				t.Fatal("not encoded")
			}
			m.Data, m.Enc = slices.Clone(data), EncDecimal
		}
		chunks = append(chunks, m)
	}
	return chunks
}

// checkValues checks that ts and vals hold the samples want, reading the
// values in ascending, random and descending order.
func checkValues(t *testing.T, name string, ts []int64, vals *Values, want []sample, rng *rand.Rand) {
	t.Helper()
	if len(ts) != len(want) || len(vals.vs) != len(want) {
		t.Errorf("%s: %d timestamps, %d values; want %d", name, len(ts), len(vals.vs), len(want))
		return
	}
	check := func(i int) bool {
		if ts[i] != want[i].t || math.Float64bits(vals.At(i)) != want[i].v {
			t.Errorf("%s: sample %d is (%d, %v); want (%d, %v)", name, i, ts[i], vals.At(i), want[i].t, math.Float64frombits(want[i].v))
			return false
		}
		return true
	}
	for i := range want {
		if !check(i) {
			return
		}
	}
	for range len(want) {
		if !check(rng.IntN(len(want))) {
			return
		}
	}
	for i := len(want) - 1; i >= 0; i-- {
		if !check(i) {
			return
		}
	}
}

// TestValuesDropStale checks DropStale against the same done on the
// floats: over values stored every way, loaded as they
// are stored and as floats, and appended one at a time.
func TestValuesDropStale(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	chunks := storedKindsChunks(t, rng)
	all, err := plainSamples(chunks, math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int{{0, len(all)}, {0, 1}, {len(all) / 3, len(all) / 2}, {len(all) - 2, len(all)}} {
		mint, maxt := all[r[0]].t, all[r[1]-1].t
		var want []sample
		var wantDescents []int
		stale := 0
		for _, s := range all[r[0]:r[1]] {
			if s.v == value.StaleNaN {
				stale++
				continue
			}
			if n := len(want); n > 0 && math.Float64frombits(s.v) < math.Float64frombits(want[n-1].v) {
				wantDescents = append(wantDescents, n)
			}
			want = append(want, s)
		}
		if r == [2]int{0, len(all)} && (stale == 0 || len(wantDescents) == 0) {
			t.Fatalf("%d staleness markers and %d descents: the test needs some", stale, len(wantDescents))
		}
		for _, how := range []string{"stored", "floats", "appended"} {
			name := fmt.Sprintf("%s [%d, %d)", how, r[0], r[1])
			var vals Values
			var ts []int64
			switch how {
			case "appended":
				for _, s := range all[r[0]:r[1]] {
					ts = append(ts, s.t)
					vals.Append(math.Float64frombits(s.v))
				}
			default:
				var it SeriesIterator
				it.Reset(chunks, nil, mint, maxt)
				every := int64(math.MaxInt64)
				if how == "floats" {
					every = 0
				}
				if ts, _, err = it.AppendValues(nil, &vals, every); err != nil {
					t.Fatal(err)
				}
			}
			ts, got := vals.DropStale(ts, []int{-1})
			checkValues(t, name, ts, &vals, want, rng)
			if got[0] != -1 || !slices.Equal(got[1:], wantDescents) {
				t.Errorf("%s: descents %v; want %v", name, got, wantDescents)
			}
		}
	}
}

// TestAppendValuesStored checks that decimal chunks' values with
// fraction digits are kept as stored where the reader reads few of them,
// and made floats where it reads many or asks for floats, as are
// integers and values stored as bits.
func TestAppendValuesStored(t *testing.T) {
	chunks := storedKindsChunks(t, rand.New(rand.NewPCG(13, 14)))
	var it SeriesIterator
	var vals Values
	it.Reset(chunks, nil, math.MinInt64, math.MaxInt64)
	if _, _, err := it.AppendValues(nil, &vals, math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	var runs []valueRun
	for _, r := range vals.runs {
		runs = append(runs, valueRun{div: r.div, rising: r.rising})
	}
	// Three times seven chunks: hundredths; four of floats (integers,
	// bits, bits with markers, XOR) in one run; and the rising
	// hundredths and integers.
	want := slices.Repeat([]valueRun{{div: 100}, {}, {div: 100, rising: true}, {rising: true}}, 3)
	if !slices.Equal(runs, want) {
		t.Errorf("runs %v; want %v", runs, want)
	}
	if _, ok := vals.Floats(); ok {
		t.Error("Floats ok with mantissas stored")
	}
	// Samples are 10-19 ms apart: a reader every 20 ms reads more
	// than a sample in StoredPer.
	for _, every := range []int64{0, 20} {
		vals.Reset()
		it.Reset(chunks, nil, math.MinInt64, math.MaxInt64)
		if _, _, err := it.AppendValues(nil, &vals, every); err != nil {
			t.Fatal(err)
		}
		// The rising chunks' values as floats, in one run, but for the
		// last, which starts lower.
		want := []valueRun{{}, {rising: true}, {}, {rising: true}, {}, {rising: true}, {rising: true}}
		runs = runs[:0]
		for _, r := range vals.runs {
			runs = append(runs, valueRun{div: r.div, rising: r.rising})
		}
		if !slices.Equal(runs, want) {
			t.Errorf("every %d ms: runs %v; want %v", every, runs, want)
		}
		if _, ok := vals.Floats(); !ok {
			t.Errorf("every %d ms: Floats not ok with floats stored", every)
		}
	}
}

// TestAppendStoredMalformed checks that a malformed decimal chunk read
// by AppendValues gives the samples before the error, as floats, and the
// error, as iterating does.
func TestAppendStoredMalformed(t *testing.T) {
	chunks := storedKindsChunks(t, rand.New(rand.NewPCG(15, 16)))[:2]
	chunks[1].Data = chunks[1].Data[:len(chunks[1].Data)-3]
	want, wantErr := plainSamples(chunks, math.MinInt64, math.MaxInt64)
	var it SeriesIterator
	it.Reset(chunks, nil, math.MinInt64, math.MaxInt64)
	var vals Values
	ts, ok, err := it.AppendValues(nil, &vals, math.MaxInt64)
	if !ok || err == nil || wantErr == nil || err.Error() != wantErr.Error() {
		t.Fatalf("ok %v, error %v; want %v", ok, err, wantErr)
	}
	checkValues(t, "malformed", ts, &vals, want, rand.New(rand.NewPCG(1, 1)))
	if it.Next() != promchunkenc.ValNone || it.Err() == nil {
		t.Error("the iterator does not end with the error")
	}
}
