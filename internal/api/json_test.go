package api

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
)

func TestAppendTimestamp(t *testing.T) {
	for _, tc := range []struct {
		ms   int64
		want string
	}{
		{0, "0"},
		{1000, "1"},
		{1500, "1.500"},
		{1050, "1.050"},
		{1005, "1.005"},
		{999, "0.999"},
		{-1500, "-1.500"},
		{-5, "-0.005"},
		{1435781451781, "1435781451.781"},
	} {
		if got := string(appendTimestamp(nil, tc.ms)); got != tc.want {
			t.Errorf("appendTimestamp(%d) = %s, want %s", tc.ms, got, tc.want)
		}
	}
}

func TestAppendFloat(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0, `"0"`},
		{1, `"1"`},
		{-2.5, `"-2.5"`},
		{1 / three, `"0.3333333333333333"`},
		{1e-6, `"0.000001"`},
		{1e-7, `"1e-07"`},
		{-1e-7, `"-1e-07"`},
		{1e20, `"100000000000000000000"`},
		{1e21, `"1e+21"`},
		{math.NaN(), `"NaN"`},
		{math.Inf(1), `"+Inf"`},
		{math.Inf(-1), `"-Inf"`},
	} {
		if got := string(appendFloat(nil, tc.f)); got != tc.want {
			t.Errorf("appendFloat(%v) = %s, want %s", tc.f, got, tc.want)
		}
	}
}

// checkDecimal checks appendDecimal against strconv for f: the same
// text when it takes f, and that it takes every decimal it should.
func checkDecimal(t *testing.T, f float64, mustTake bool) {
	t.Helper()
	got, ok := appendDecimal(nil, f)
	if ok && string(got) != strconv.FormatFloat(f, 'f', -1, 64) {
		t.Fatalf("appendDecimal(%v) = %s, want %s", f, got, strconv.FormatFloat(f, 'f', -1, 64))
	}
	if !ok && mustTake {
		t.Fatalf("appendDecimal(%v) did not take it", f)
	}
}

// TestAppendDecimal checks the fast path of appendFloat against
// strconv's shortest formatting on decimals of every scale it takes and
// some it does not, integers up to its bounds, random floats and edges.
func TestAppendDecimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		s := rng.IntN(9)
		m := rng.Int64N(1_000_000_000_000_000) >> rng.IntN(50)
		f := float64(m) / math.Pow(10, float64(s))
		if rng.IntN(2) == 0 {
			f = -f
		}
		checkDecimal(t, f, s <= 6 && m < 1e15 && math.Abs(f) >= 1e-6 && math.Abs(f) < 1e9)
		// Integers below 2^53, as counters are.
		n := float64(rng.Int64N(1<<53) >> rng.IntN(53))
		checkDecimal(t, n, n != 0)
		checkDecimal(t, math.Float64frombits(rng.Uint64()), false)
		checkDecimal(t, rng.Float64()*math.Pow(10, float64(rng.IntN(20)-8)), false)
	}
	for _, f := range []float64{1e-6, 999999999, 999999999.999999, 1e9, 1e9 + 0.5, 1<<53 - 1, 1 << 53, 1<<53 + 2, 1e15, 1e16, 0.1, 0.2, 0.3, 1 / three, 5e-7, 123456.000001, math.Nextafter(1, 2), math.Nextafter(0.1, 1), 100, 0, math.Copysign(0, -1)} {
		checkDecimal(t, f, false)
		checkDecimal(t, -f, false)
	}
}

// FuzzAppendDecimal checks appendDecimal against strconv on any float.
func FuzzAppendDecimal(f *testing.F) {
	for _, v := range []float64{0.57, 1e-6, 12345.678, 1 / three, -3, 999999999.5} {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		checkDecimal(t, math.Float64frombits(bits), false)
	})
}

func TestAppendStrings(t *testing.T) {
	for _, tc := range []struct {
		in, label, other string
	}{
		{"plain", `"plain"`, `"plain"`},
		{`q"b\`, `"q\"b\\"`, `"q\"b\\"`},
		{"<&>", `"<&>"`, `"\u003c\u0026\u003e"`},
		{"a\nb\tc\rd\x01\x7f", `"a\nb\tc\rd\u0001` + "\x7f" + `"`, `"a\nb\tc\rd\u0001` + "\x7f" + `"`},
		{"\b\f", `"\u0008\u000c"`, `"\u0008\u000c"`},
		{"x\u2028y\u2029", "\"x\u2028y\u2029\"", `"x\u2028y\u2029"`},
		{"ünï", `"ünï"`, `"ünï"`},
		{"bad\xffutf8", "\"bad\xffutf8\"", `"bad\ufffdutf8"`},
	} {
		if got := string(appendLabelString(nil, tc.in)); got != tc.label {
			t.Errorf("appendLabelString(%q) = %s, want %s", tc.in, got, tc.label)
		}
		if got := string(appendString(nil, tc.in)); got != tc.other {
			t.Errorf("appendString(%q) = %s, want %s", tc.in, got, tc.other)
		}
	}
}

// FuzzAppendString checks that both string appenders produce JSON that
// decodes to the input (invalid UTF-8 aside, which appendString replaces
// as encoding/json does and which labels never hold).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a", `"\`, "<>&", "\u2028", "\xff", "\x00\x1f", "é\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want string
		b, _ := json.Marshal(s)
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		var got string
		if err := json.Unmarshal(appendString(nil, s), &got); err != nil {
			t.Fatalf("appendString(%q) is not JSON: %v", s, err)
		}
		if got != want {
			t.Errorf("appendString(%q) decodes to %q, want %q", s, got, want)
		}
		if !utf8.ValidString(s) {
			return
		}
		got = ""
		if err := json.Unmarshal(appendLabelString(nil, s), &got); err != nil {
			t.Fatalf("appendLabelString(%q) is not JSON: %v", s, err)
		}
		if got != s {
			t.Errorf("appendLabelString(%q) decodes to %q", s, got)
		}
	})
}

// TestValuesMatchPromQLMarshalJSON cross-checks the hand-written encoders
// against the MarshalJSON methods of promql's value types: decoded, the
// two must agree (the bytes differ only in number formatting).
func TestValuesMatchPromQLMarshalJSON(t *testing.T) {
	h := &histogram.FloatHistogram{
		Schema:          1,
		ZeroThreshold:   0.01,
		ZeroCount:       2,
		Count:           20,
		Sum:             -3.25,
		PositiveSpans:   []histogram.Span{{Offset: -1, Length: 2}, {Offset: 2, Length: 1}},
		PositiveBuckets: []float64{1, 0, 7},
		NegativeSpans:   []histogram.Span{{Offset: 1, Length: 2}},
		NegativeBuckets: []float64{4, 6},
	}
	empty := &histogram.FloatHistogram{Count: 0, Sum: 0}
	ls := labels.FromStrings("__name__", "m", "a", `x"y`, "b", "ü")
	vec := promql.Vector{
		{Metric: ls, T: 1500, F: 3.5},
		{Metric: labels.EmptyLabels(), T: 1500, H: h},
		{Metric: ls, T: 2000, H: empty},
	}
	mat := promql.Matrix{
		{Metric: ls, Floats: []promql.FPoint{{T: 1000, F: 1}, {T: 2250, F: -0.5}}},
		{Metric: labels.FromStrings("x", "1"), Histograms: []promql.HPoint{{T: 3000, H: h}}},
		{Metric: labels.FromStrings("x", "2"), Floats: []promql.FPoint{{T: 0, F: 2}}, Histograms: []promql.HPoint{{T: 15000, H: h}}},
	}
	for _, tc := range []struct {
		name string
		got  []byte
		v    any
	}{
		{"vector", appendVector(nil, vec), vec},
		{"empty_vector", appendVector(nil, promql.Vector{}), []any{}},
		{"matrix", appendMatrix(nil, mat), mat},
		{"empty_matrix", appendMatrix(nil, promql.Matrix{}), []any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(tc.got, &g); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, tc.got)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("got  %s\nwant %s", tc.got, want)
			}
		})
	}
}

// otherValue is a parser.Value of no type the encoder knows.
type otherValue struct{}

func (otherValue) Type() parser.ValueType { return parser.ValueTypeNone }
func (otherValue) String() string         { return "other" }

func TestQueryDataUnknownType(t *testing.T) {
	d := &queryData{value: otherValue{}}
	if _, err := d.appendJSON(nil); err == nil || !strings.Contains(err.Error(), "unexpected result type") {
		t.Errorf("appendJSON of an unknown value: err = %v, want unexpected result type", err)
	}
}

// TestMatrixTimestamps checks a range vector whose series' steps differ
// (gaps, other starts, fractions of a second) against its series written
// one at a time: the timestamps copied from earlier series must be the
// ones each point has.
func TestMatrixTimestamps(t *testing.T) {
	grid := func(from, to, step int64, skip int64) []promql.FPoint {
		var ps []promql.FPoint
		for ts := from; ts <= to; ts += step {
			if skip == 0 || ts%skip != 0 {
				ps = append(ps, promql.FPoint{T: ts, F: float64(ts) / 7})
			}
		}
		return ps
	}
	mat := promql.Matrix{
		{Metric: labels.FromStrings("s", "0"), Floats: grid(0, 60000, 15000, 0)},
		{Metric: labels.FromStrings("s", "1"), Floats: grid(0, 90000, 15000, 0)},
		{Metric: labels.FromStrings("s", "2"), Floats: grid(15000, 60000, 15000, 0)},
		{Metric: labels.FromStrings("s", "3"), Floats: grid(0, 90000, 15000, 30000)},
		{Metric: labels.FromStrings("s", "4"), Floats: grid(-1500, 60250, 250, 0)},
		{Metric: labels.FromStrings("s", "5"), Floats: grid(0, 90000, 15000, 0)},
	}
	// Each series alone: its timestamps are all formatted.
	want := []byte{'['}
	for i, s := range mat {
		if i > 0 {
			want = append(want, ',')
		}
		one := appendMatrix(nil, promql.Matrix{s})
		want = append(want, one[1:len(one)-1]...)
	}
	want = append(want, ']')
	if got := appendMatrix(nil, mat); string(got) != string(want) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// BenchmarkAppendFloat formats sample values: gauges of two decimals
// (load averages), integer counters below 10^9, and full-precision
// rates.
func BenchmarkAppendFloat(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	sets := []struct {
		name   string
		values []float64
	}{{name: "load"}, {name: "counter"}, {name: "rate"}}
	for range 4096 {
		sets[0].values = append(sets[0].values, float64(rng.IntN(1000))/100)
		sets[1].values = append(sets[1].values, float64(rng.Int64N(1e9)))
		sets[2].values = append(sets[2].values, rng.Float64()*1e5)
	}
	for _, set := range sets {
		b.Run(set.name, func(b *testing.B) {
			buf := make([]byte, 0, 1<<20)
			for b.Loop() {
				buf = buf[:0]
				for _, v := range set.values {
					buf = appendFloat(buf, v)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(set.values)), "ns/value")
		})
	}
}

// dayAnswer returns the answer of a day-long range query: 180 series of
// 240 steps, values of full precision (rates).
func dayAnswer() promql.Matrix {
	rng := rand.New(rand.NewPCG(1, 2))
	mat := make(promql.Matrix, 180)
	for i := range mat {
		mat[i].Metric = labels.FromStrings("__name__", "node_network_transmit_bytes_total", "instance", fmt.Sprintf("host-%d:9100", i))
		for j := range 240 {
			mat[i].Floats = append(mat[i].Floats, promql.FPoint{T: 1795675905000 + int64(j)*360000, F: rng.Float64() * 1e6})
		}
	}
	return mat
}

// BenchmarkAppendMatrix writes dayAnswer's matrix.
func BenchmarkAppendMatrix(b *testing.B) {
	mat := dayAnswer()
	var buf []byte
	for b.Loop() {
		buf = appendMatrix(buf[:0], mat)
	}
	b.SetBytes(int64(len(buf)))
}
