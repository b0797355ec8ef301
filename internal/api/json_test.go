package api

import (
	"encoding/json"
	"math"
	"reflect"
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
