package rwpb

import (
	"math"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/prompb"
)

// staleNaN is Prometheus' stale marker, a NaN with a payload that must
// survive decoding.
var staleNaN = math.Float64frombits(0x7ff0000000000002)

func intHistogramV1() prompb.Histogram {
	return prompb.Histogram{
		Count:          &prompb.Histogram_CountInt{CountInt: 42},
		Sum:            123.5,
		Schema:         -2,
		ZeroThreshold:  1e-128,
		ZeroCount:      &prompb.Histogram_ZeroCountInt{ZeroCountInt: 3},
		NegativeSpans:  []prompb.BucketSpan{{Offset: -3, Length: 2}, {Offset: 1, Length: 1}},
		NegativeDeltas: []int64{2, -1, 5},
		PositiveSpans:  []prompb.BucketSpan{{Offset: 0, Length: 3}, {Offset: 7, Length: 1}},
		PositiveDeltas: []int64{1, 1, -2, math.MinInt64},
		ResetHint:      prompb.Histogram_YES,
		Timestamp:      -5,
	}
}

func floatHistogramV1() prompb.Histogram {
	return prompb.Histogram{
		Count:          &prompb.Histogram_CountFloat{CountFloat: 42.5},
		Sum:            math.Inf(-1),
		Schema:         3,
		ZeroThreshold:  0.001,
		ZeroCount:      &prompb.Histogram_ZeroCountFloat{ZeroCountFloat: 0.5},
		NegativeSpans:  []prompb.BucketSpan{{Offset: math.MinInt32, Length: math.MaxUint32}},
		NegativeCounts: []float64{1, staleNaN},
		PositiveSpans:  []prompb.BucketSpan{{Offset: math.MaxInt32, Length: 1}},
		PositiveCounts: []float64{0, math.Copysign(0, -1), 7.25},
		ResetHint:      prompb.Histogram_GAUGE,
		Timestamp:      math.MaxInt64,
	}
}

func customBucketsV1() prompb.Histogram {
	return prompb.Histogram{
		Count:          &prompb.Histogram_CountFloat{CountFloat: 0},
		Schema:         -53,
		PositiveSpans:  []prompb.BucketSpan{{Offset: 0, Length: 4}},
		PositiveCounts: []float64{1, 2, 3, 4},
		CustomValues:   []float64{0.1, 0.5, 1, 10},
		Timestamp:      1,
	}
}

func TestV1RoundTrip(t *testing.T) {
	lbls := func(kv ...string) []prompb.Label {
		var ls []prompb.Label
		for i := 0; i < len(kv); i += 2 {
			ls = append(ls, prompb.Label{Name: kv[i], Value: kv[i+1]})
		}
		return ls
	}
	withUnknown := func(h prompb.Histogram) prompb.Histogram {
		h.XXX_unrecognized = unknownFields
		return h
	}
	for _, tc := range []struct {
		name string
		req  *prompb.WriteRequest
	}{
		{"empty", &prompb.WriteRequest{}},
		{"empty series", &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{}, {}}}},
		{"samples", &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			{Labels: lbls("__name__", "up", "job", "node"), Samples: []prompb.Sample{{Value: 1, Timestamp: 1000}, {Value: 0, Timestamp: 2000}}},
			{Labels: lbls("__name__", "x", "", "", "empty", ""), Samples: []prompb.Sample{{Value: staleNaN, Timestamp: -1}, {Value: math.Inf(1), Timestamp: math.MinInt64}}},
		}}},
		{"utf8 and binary label values", &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			{Labels: lbls("__name__", "héllo.wörld", "bytes", "\x00\xff\xfe"), Samples: []prompb.Sample{{Value: 1}}},
		}}},
		{"long names and values", &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{ // lengths of two and three bytes
			{Labels: lbls("__name__", strings.Repeat("n", 127), strings.Repeat("a", 128), strings.Repeat("v", 300), "b", strings.Repeat("w", 20000)), Samples: []prompb.Sample{{Value: 1}}},
		}}},
		{"exemplars", &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			{
				Labels:  lbls("__name__", "req"),
				Samples: []prompb.Sample{{Value: 1, Timestamp: 1}},
				Exemplars: []prompb.Exemplar{
					{Labels: lbls("trace_id", "abc", "span_id", "def"), Value: 0.25, Timestamp: 10},
					{Value: -1, Timestamp: 11},
					{Labels: lbls("trace_id", "x"), Value: staleNaN},
				},
			},
			{Labels: lbls("__name__", "other"), Exemplars: []prompb.Exemplar{{Labels: lbls("a", "b")}}},
		}}},
		{"histograms", &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			{Labels: lbls("__name__", "h"), Histograms: []prompb.Histogram{intHistogramV1(), floatHistogramV1(), {}}},
			{Labels: lbls("__name__", "c"), Histograms: []prompb.Histogram{customBucketsV1()}},
			{Labels: lbls("__name__", "mixed"), Samples: []prompb.Sample{{Value: 1}}, Histograms: []prompb.Histogram{intHistogramV1()}},
		}}},
		{"histogram without count, float zero count", &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			{Histograms: []prompb.Histogram{{ZeroCount: &prompb.Histogram_ZeroCountFloat{ZeroCountFloat: 2}}}},
			{Histograms: []prompb.Histogram{{Count: &prompb.Histogram_CountInt{CountInt: 1}, ZeroCount: &prompb.Histogram_ZeroCountFloat{ZeroCountFloat: 2}}}},
		}}},
		{"metadata", &prompb.WriteRequest{
			Timeseries: []prompb.TimeSeries{{Labels: lbls("__name__", "a"), Samples: []prompb.Sample{{Value: 1}}}},
			Metadata: []prompb.MetricMetadata{
				{Type: prompb.MetricMetadata_COUNTER, MetricFamilyName: "a", Help: "Help text.", Unit: "seconds"},
				{Type: prompb.MetricMetadata_STATESET, MetricFamilyName: "b"},
				{Type: prompb.MetricMetadata_MetricType(-7)},
				{},
			},
		}},
		{"unknown fields everywhere", &prompb.WriteRequest{
			Timeseries: []prompb.TimeSeries{{
				Labels:           []prompb.Label{{Name: "a", Value: "b", XXX_unrecognized: unknownFields}},
				Samples:          []prompb.Sample{{Value: 1, Timestamp: 2, XXX_unrecognized: pb(nil).varint(3, 99)}}, // 2.0's start_timestamp
				Exemplars:        []prompb.Exemplar{{Labels: lbls("t", "1"), Value: 1, XXX_unrecognized: unknownFields}},
				Histograms:       []prompb.Histogram{withUnknown(intHistogramV1()), {XXX_unrecognized: pb(nil).varint(17, 1234)}}, // 2.0's start_timestamp
				XXX_unrecognized: unknownFields,
			}},
			Metadata:         []prompb.MetricMetadata{{Type: prompb.MetricMetadata_GAUGE, Help: "h", XXX_unrecognized: pb(nil).str(3, "field 3 is unused")}},
			XXX_unrecognized: pb(nil).str(2, "reserved 2").fixed32(4, 1),
		}},
		{"realistic", realisticV1(100, 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r V1Request
			checkV1(t, &r, marshal(t, tc.req))
		})
	}
}

// TestV1HandEncoded covers encodings the generated encoder never writes:
// unpacked and split repeated scalars, fields out of order and repeated
// singular fields.
func TestV1HandEncoded(t *testing.T) {
	var r V1Request
	checkV1(t, &r, handEncodedV1())
	if got := len(r.Series[0].Histograms[0].PositiveDeltas); got != 3 {
		t.Fatalf("got %d positive deltas, want 3", got)
	}
}

// handEncodedV1 is the request of TestV1HandEncoded.
func handEncodedV1() pb {
	packedDeltas := func(vs ...int64) []byte {
		var p []byte
		for _, v := range vs {
			p = pb(p).varintRaw(zz(v))
		}
		return p
	}
	packedDoubles := func(fs ...float64) []byte {
		var p pb
		for _, f := range fs {
			p = p.fixed64Raw(math.Float64bits(f))
		}
		return p
	}
	span := func(off int32, n uint32) []byte {
		return pb(nil).varint(1, zz(int64(off))).varint(2, uint64(n))
	}
	// Packed and unpacked pieces of the same repeated fields, interleaved
	// with other fields.
	hist := pb(nil).
		varint(15, 77).
		bytes(12, packedDeltas(1, -2)).
		bytes(11, span(-1, 2)).
		varint(12, zz(3)).
		bytes(8, span(4, 1)).
		varint(9, zz(-9)).
		bytes(11, span(2, 1)).
		bytes(9, packedDeltas(7, math.MaxInt64)).
		varint(1, 5).
		double(2, 5.5). // the count oneof: the last one wins
		varint(6, 2).
		double(7, 0.25). // the zero count oneof: the last one wins
		double(13, 1.5).
		bytes(13, packedDoubles(2.5, 3.5)).
		double(10, -1).
		bytes(16, packedDoubles(0.5)).
		double(16, 1.5).
		bytes(16, nil).
		varint(4, zz(-53)).
		varint(4, zz(8)). // a repeated singular field: the last one wins
		varint(14, 2)
	series := pb(nil).
		bytes(2, pb(nil).varint(2, 1).double(1, 3)). // sample fields reversed
		bytes(1, pb(nil).str(2, "v1").str(1, "n1")).
		bytes(4, hist).
		bytes(1, pb(nil).str(1, "n2").str(1, "n2-again").str(2, "v2")).
		bytes(3, pb(nil).varint(3, 9).bytes(1, pb(nil).str(1, "trace_id").str(2, "t")).double(2, 0.5)).
		bytes(4, pb(nil).double(2, 1).varint(1, 3).double(7, 1).varint(6, 4)). // float, then int
		bytes(2, pb(nil))
	return pb(nil).
		bytes(3, pb(nil).str(5, "bytes").varint(1, 1).str(2, "m")).
		bytes(1, series).
		bytes(1, nil).
		bytes(1, series)
}

func (p pb) varintRaw(v uint64) pb {
	for v >= 0x80 {
		p = append(p, byte(v)|0x80)
		v >>= 7
	}
	return append(p, byte(v))
}

func (p pb) fixed64Raw(v uint64) pb {
	for range 8 {
		p = append(p, byte(v))
		v >>= 8
	}
	return p
}
