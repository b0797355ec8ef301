package tombstones

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/storage"
)

func TestAdd(t *testing.T) {
	for _, tc := range []struct {
		iv   Intervals
		add  Interval
		want Intervals
	}{
		{nil, Interval{1, 5}, Intervals{{1, 5}}},
		{Intervals{{1, 5}}, Interval{7, 9}, Intervals{{1, 5}, {7, 9}}},
		{Intervals{{7, 9}}, Interval{1, 5}, Intervals{{1, 5}, {7, 9}}},
		{Intervals{{1, 5}}, Interval{6, 9}, Intervals{{1, 9}}},
		{Intervals{{6, 9}}, Interval{1, 5}, Intervals{{1, 9}}},
		{Intervals{{1, 2}, {4, 5}, {8, 9}}, Interval{3, 6}, Intervals{{1, 6}, {8, 9}}},
		{Intervals{{1, 2}, {4, 5}, {8, 9}}, Interval{0, 10}, Intervals{{0, 10}}},
		{Intervals{{3, 4}}, Interval{5, 4}, Intervals{{3, 4}}},
		{Intervals{{math.MinInt64, 0}}, Interval{2, math.MaxInt64}, Intervals{{math.MinInt64, 0}, {2, math.MaxInt64}}},
		{Intervals{{math.MinInt64, 0}}, Interval{1, math.MaxInt64}, Intervals{{math.MinInt64, math.MaxInt64}}},
	} {
		orig := append(Intervals(nil), tc.iv...)
		if got := tc.iv.Add(tc.add); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v.Add(%v) = %v, want %v", tc.iv, tc.add, got, tc.want)
		}
		if !reflect.DeepEqual(orig, tc.iv) {
			t.Errorf("Add changed its receiver to %v", tc.iv)
		}
	}
}

func TestKeptCoversOverlaps(t *testing.T) {
	iv := Intervals{{10, 19}, {30, 39}}
	for _, tc := range []struct {
		mint, maxt int64
		kept       Intervals
	}{
		{0, 50, Intervals{{0, 9}, {20, 29}, {40, 50}}},
		{12, 18, nil},
		{15, 35, Intervals{{20, 29}}},
		{20, 29, Intervals{{20, 29}}},
		{0, 5, Intervals{{0, 5}}},
		{35, 45, Intervals{{40, 45}}},
	} {
		if got := iv.Kept(nil, tc.mint, tc.maxt); !reflect.DeepEqual(got, tc.kept) {
			t.Errorf("Kept(%d, %d) = %v, want %v", tc.mint, tc.maxt, got, tc.kept)
		}
		if got, want := iv.Covers(tc.mint, tc.maxt), len(tc.kept) == 0; got != want {
			t.Errorf("Covers(%d, %d) = %v, want %v", tc.mint, tc.maxt, got, want)
		}
		overlaps := !reflect.DeepEqual(tc.kept, Intervals{{tc.mint, tc.maxt}})
		if got := iv.Overlaps(tc.mint, tc.maxt); got != overlaps {
			t.Errorf("Overlaps(%d, %d) = %v, want %v", tc.mint, tc.maxt, got, overlaps)
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := Stones{}
	for range 1000 {
		ref := rng.Uint64N(1 << 40)
		var iv Intervals
		for range 1 + rng.IntN(4) {
			mint := rng.Int64N(1<<45) - 1<<44
			iv = iv.Add(Interval{mint, mint + rng.Int64N(1<<30)})
		}
		s[storage.SeriesRef(ref)] = iv
	}
	s[storage.SeriesRef(math.MaxUint64)] = Intervals{{math.MinInt64, math.MaxInt64}}
	s[7] = nil // dropped
	b := Encode(s)
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	delete(s, 7)
	if !reflect.DeepEqual(got, s) {
		t.Fatal("decoded tombstones differ from those encoded")
	}
	for i := range b {
		bad := append([]byte(nil), b...)
		bad[i] ^= 0x10
		if _, err := Decode(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d flipped: %v, want ErrCorrupt", i, err)
		}
	}
	if _, err := Decode(b[:len(b)-1]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated: %v, want ErrCorrupt", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(Stones{1: {{1, 2}, {5, 9}}, 9: {{-4, 4}}}))
	f.Add(Encode(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		for _, iv := range s {
			for i, d := range iv {
				if d.Mint > d.Maxt || i > 0 && !apart(iv[i-1].Maxt, d.Mint) {
					t.Fatalf("decoded intervals %v are not sorted and apart", iv)
				}
			}
		}
		if again, err := Decode(Encode(s)); err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("re-encoded tombstones decode as %v, %v", again, err)
		}
	})
}

func TestApply(t *testing.T) {
	xor := func(from, to int64) chunkenc.Meta {
		c := chunkenc.NewXORChunk()
		for ts := from; ts <= to; ts++ {
			c.Append(ts, float64(ts))
		}
		return chunkenc.Meta{Data: c.Bytes(), MinT: from, MaxT: to, Enc: chunkenc.EncXOR}
	}
	chunks := []chunkenc.Meta{xor(0, 99), xor(100, 199), xor(200, 299)}
	iv := Intervals{{10, 19}, {50, 120}, {200, 299}}
	got, err := iv.ApplyIn(chunks, 0, 150)
	if err != nil {
		t.Fatal(err)
	}
	var (
		it   chunkenc.SeriesIterator
		want []int64
		ts   []int64
	)
	for x := int64(0); x <= 150; x++ {
		if !iv.Overlaps(x, x) {
			want = append(want, x)
		}
	}
	it.Reset(got, nil, 0, 150)
	for it.Next() != promchunkenc.ValNone {
		x, v := it.At()
		if v != float64(x) {
			t.Fatalf("sample at %d has value %v", x, v)
		}
		ts = append(ts, x)
	}
	if !reflect.DeepEqual(ts, want) {
		t.Fatalf("samples at %v, want %v", ts, want)
	}
	for _, c := range got {
		if c.MaxT < 0 || c.MinT > 150 {
			t.Errorf("chunk [%d, %d] outside the range kept", c.MinT, c.MaxT)
		}
	}
	if same, _ := Intervals(nil).Apply(chunks); &same[0] != &chunks[0] {
		t.Error("no tombstones: chunks not returned as they are")
	}
}
