package record

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/storage"
)

func manyLabels(n int) labels.Labels {
	b := labels.NewScratchBuilder(n)
	for i := range n {
		b.Add("label_"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('A'+i/26)), strings.Repeat("v", i))
	}
	b.Sort()
	return b.Labels()
}

func TestSeriesRoundTrip(t *testing.T) {
	cases := []struct {
		name   string
		series []RefSeries
	}{
		{"none", nil},
		{"one", []RefSeries{{Ref: 1, Labels: labels.FromStrings("__name__", "up", "job", "node")}}},
		{"empty label set", []RefSeries{{Ref: 7, Labels: labels.EmptyLabels()}}},
		{"empty label value", []RefSeries{{Ref: 2, Labels: labels.FromStrings("__name__", "m", "empty", "")}}},
		{"utf-8 names and values", []RefSeries{{Ref: 3, Labels: labels.FromStrings("__name__", "température.°C", "ключ", "значение", "名前", "値 🚀")}}},
		{"many labels", []RefSeries{{Ref: 4, Labels: manyLabels(300)}}},
		{"long value", []RefSeries{{Ref: 5, Labels: labels.FromStrings("a", strings.Repeat("z", 70000))}}},
		{"refs going backwards and extremes", []RefSeries{
			{Ref: math.MaxUint64, Labels: labels.FromStrings("a", "1")},
			{Ref: 10, Labels: labels.FromStrings("a", "2")},
			{Ref: 0, Labels: labels.FromStrings("a", "3")},
			{Ref: 9, Labels: labels.FromStrings("b", "4")},
		}},
	}
	var d Decoder
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := EncodeSeries(nil, tc.series)
			if got := Kind(rec); got != Series {
				t.Fatalf("Kind = %v, want %v", got, Series)
			}
			got, err := d.Series(rec, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.series) {
				t.Fatalf("got %d series, want %d", len(got), len(tc.series))
			}
			for i := range got {
				if got[i].Ref != tc.series[i].Ref || !labels.Equal(got[i].Labels, tc.series[i].Labels) {
					t.Errorf("series %d: got %v %v, want %v %v", i, got[i].Ref, got[i].Labels, tc.series[i].Ref, tc.series[i].Labels)
				}
			}
		})
	}
}

func TestSeriesAppendsToDst(t *testing.T) {
	var d Decoder
	prev := RefSeries{Ref: 99, Labels: labels.FromStrings("keep", "me")}
	in := []RefSeries{{Ref: 1, Labels: labels.FromStrings("a", "b")}}
	got, err := d.Series(EncodeSeries(nil, in), []RefSeries{prev})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Ref != 99 || got[1].Ref != 1 {
		t.Fatalf("got %v, want the earlier element followed by the decoded one", got)
	}
}

// The labels a Series record decodes to must own their memory: the WAL
// hands out records in a reused buffer.
func TestSeriesLabelsDoNotAliasRecord(t *testing.T) {
	var d Decoder
	in := []RefSeries{{Ref: 1, Labels: labels.FromStrings("__name__", "metric", "job", "api")}}
	rec := EncodeSeries(nil, in)
	got, err := d.Series(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rec {
		rec[i] = 'X'
	}
	// Decoding another record must not disturb the first one's labels
	// either (the decoder reuses its scratch space).
	if _, err := d.Series(EncodeSeries(nil, []RefSeries{{Ref: 2, Labels: labels.FromStrings("__name__", "other", "job", "db")}}), nil); err != nil {
		t.Fatal(err)
	}
	if !labels.Equal(got[0].Labels, in[0].Labels) {
		t.Fatalf("labels changed with the record buffer: got %v, want %v", got[0].Labels, in[0].Labels)
	}
}

func TestSamplesRoundTrip(t *testing.T) {
	cases := []struct {
		name    string
		samples []RefSample
	}{
		{"none", nil},
		{"one", []RefSample{{Ref: 1, T: 1700000000000, V: 1.5}}},
		{"same timestamp", []RefSample{{Ref: 1, T: 1000, V: 1}, {Ref: 2, T: 1000, V: 2}, {Ref: 3, T: 1000, V: 3}}},
		{"refs and timestamps going backwards", []RefSample{
			{Ref: 100, T: 5000, V: 1},
			{Ref: 3, T: 10, V: 2},
			{Ref: 50, T: -7, V: 3},
			{Ref: 0, T: 4999, V: 4},
		}},
		{"extremes", []RefSample{
			{Ref: 0, T: math.MaxInt64, V: math.MaxFloat64},
			{Ref: math.MaxUint64, T: math.MinInt64, V: -math.SmallestNonzeroFloat64},
			{Ref: 1, T: 0, V: math.Inf(-1)},
			{Ref: math.MaxUint64 - 1, T: -1, V: math.Copysign(0, -1)},
		}},
		{"NaN bit patterns", []RefSample{
			{Ref: 1, T: 1, V: math.NaN()},
			// Prometheus' stale marker.
			{Ref: 2, T: 2, V: math.Float64frombits(0x7ff0000000000002)},
			{Ref: 3, T: 3, V: math.Float64frombits(0xfff8000000000001)},
			{Ref: 4, T: 4, V: math.Float64frombits(0x7fffffffffffffff)},
		}},
	}
	var d Decoder
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := EncodeSamples(nil, tc.samples)
			if got := Kind(rec); got != Samples {
				t.Fatalf("Kind = %v, want %v", got, Samples)
			}
			got, err := d.Samples(rec, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.samples) {
				t.Fatalf("got %d samples, want %d", len(got), len(tc.samples))
			}
			for i, want := range tc.samples {
				// Compare value bits: NaN != NaN, and the exact payload
				// must survive.
				if got[i].Ref != want.Ref || got[i].T != want.T || math.Float64bits(got[i].V) != math.Float64bits(want.V) {
					t.Errorf("sample %d: got {%d %d %#x}, want {%d %d %#x}", i,
						got[i].Ref, got[i].T, math.Float64bits(got[i].V), want.Ref, want.T, math.Float64bits(want.V))
				}
			}
		})
	}
}

func TestEncodeAppendsToDst(t *testing.T) {
	prefix := []byte("prefix")
	rec := EncodeSamples(append([]byte(nil), prefix...), []RefSample{{Ref: 1, T: 2, V: 3}})
	if string(rec[:len(prefix)]) != string(prefix) {
		t.Fatalf("EncodeSamples overwrote dst: %q", rec)
	}
	rec = EncodeSeries(append([]byte(nil), prefix...), []RefSeries{{Ref: 1, Labels: labels.FromStrings("a", "b")}})
	if string(rec[:len(prefix)]) != string(prefix) {
		t.Fatalf("EncodeSeries overwrote dst: %q", rec)
	}
}

func TestSamplesCompact(t *testing.T) {
	// 1000 samples of neighbouring series at one timestamp: ref and time
	// deltas take 2 bytes and 1 byte, plus 8 bytes of value.
	s := make([]RefSample, 1000)
	for i := range s {
		s[i] = RefSample{Ref: storage.SeriesRef(5000 + i), T: 1700000000000, V: float64(i)}
	}
	rec := EncodeSamples(nil, s)
	if perSample := float64(len(rec)) / float64(len(s)); perSample > 11.5 {
		t.Errorf("%.2f bytes per sample, want at most 11.5", perSample)
	}
}

func TestKind(t *testing.T) {
	cases := []struct {
		rec  []byte
		want Type
	}{
		{nil, Unknown},
		{[]byte{}, Unknown},
		{[]byte{0}, Unknown},
		{[]byte{1}, Series},
		{[]byte{2, 0}, Samples},
		{[]byte{3}, ChunkSeries},
		{[]byte{4}, Metadata},
		{[]byte{5}, Exemplars},
		{[]byte{6}, HistogramSamples},
		{[]byte{7}, FloatHistogramSamples},
		{[]byte{8}, StartTimes},
		{[]byte{9}, Compressed},
		{[]byte{10}, Tombstones},
		{[]byte{11}, Unknown},
		{[]byte{255}, Unknown},
	}
	for _, tc := range cases {
		if got := Kind(tc.rec); got != tc.want {
			t.Errorf("Kind(%v) = %v, want %v", tc.rec, got, tc.want)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	series := EncodeSeries(nil, []RefSeries{
		{Ref: 1, Labels: labels.FromStrings("__name__", "up", "job", "node")},
		{Ref: 2, Labels: labels.FromStrings("__name__", "up", "job", "api")},
	})
	samples := EncodeSamples(nil, []RefSample{{Ref: 1, T: 10, V: 1}, {Ref: 2, T: 10, V: 2}})

	type decodeFunc func(d *Decoder, rec []byte) (int, error)
	decSeries := func(d *Decoder, rec []byte) (int, error) {
		got, err := d.Series(rec, make([]RefSeries, 1, 4))
		return len(got), err
	}
	decSamples := func(d *Decoder, rec []byte) (int, error) {
		got, err := d.Samples(rec, make([]RefSample, 1, 4))
		return len(got), err
	}
	cases := []struct {
		name    string
		rec     []byte
		decode  decodeFunc
		wantMsg string
	}{
		{"series empty", nil, decSeries, "type"},
		{"series wrong type", samples, decSeries, "record type is samples, want series"},
		{"series trailing byte", append(append([]byte(nil), series...), 0), decSeries, "1 trailing bytes"},
		{"series huge count", []byte{byte(Series), 0xff, 0xff, 0x7f, 1, 0}, decSeries, "does not fit"},
		{"series huge label count", []byte{byte(Series), 1, 1, 0xff, 0x7f, 0, 0}, decSeries, "label count"},
		{"series label length past end", []byte{byte(Series), 1, 1, 1, 5, 'a', 0}, decSeries, "exceeds"},
		{"series varint overflow", []byte{byte(Series), 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, decSeries, "overflows"},
		{"samples empty", nil, decSamples, "type"},
		{"samples wrong type", series, decSamples, "want samples"},
		{"samples trailing byte", append(append([]byte(nil), samples...), 0), decSamples, "1 trailing bytes"},
		{"samples huge count", []byte{byte(Samples), 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, decSamples, "does not fit"},
	}
	// Every proper prefix of a valid record is truncated input.
	for n := range len(series) {
		cases = append(cases, struct {
			name    string
			rec     []byte
			decode  decodeFunc
			wantMsg string
		}{"series truncated", series[:n], decSeries, ""})
	}
	for n := range len(samples) {
		cases = append(cases, struct {
			name    string
			rec     []byte
			decode  decodeFunc
			wantMsg string
		}{"samples truncated", samples[:n], decSamples, ""})
	}
	var d Decoder
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, err := tc.decode(&d, tc.rec)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decoding %x: err = %v, want ErrCorrupt", tc.rec, err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not say %q", err, tc.wantMsg)
			}
			if n != 1 {
				t.Errorf("dst has %d elements after an error, want it unchanged (1)", n)
			}
		})
	}
}

func TestSamplesDecodeDoesNotAllocate(t *testing.T) {
	in := make([]RefSample, 500)
	for i := range in {
		in[i] = RefSample{Ref: storage.SeriesRef(i * 3), T: int64(1000 + i%4), V: float64(i) / 3}
	}
	rec := EncodeSamples(nil, in)
	var d Decoder
	dst := make([]RefSample, 0, len(in))
	var err error
	allocs := testing.AllocsPerRun(100, func() {
		dst, err = d.Samples(rec, dst[:0])
	})
	if err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Errorf("Samples allocated %.1f times per call with enough capacity in dst, want 0", allocs)
	}
	if len(dst) != len(in) {
		t.Fatalf("decoded %d samples, want %d", len(dst), len(in))
	}
}
