package rwpb

import (
	"math"
	"strings"
	"testing"

	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

func intHistogramV2() writev2.Histogram {
	return writev2.Histogram{
		Count:          &writev2.Histogram_CountInt{CountInt: 42},
		Sum:            123.5,
		Schema:         -4,
		ZeroThreshold:  1e-128,
		ZeroCount:      &writev2.Histogram_ZeroCountInt{ZeroCountInt: 3},
		NegativeSpans:  []writev2.BucketSpan{{Offset: -3, Length: 2}, {Offset: 1, Length: 1}},
		NegativeDeltas: []int64{2, -1, 5},
		PositiveSpans:  []writev2.BucketSpan{{Offset: 0, Length: 3}, {Offset: 7, Length: 1}},
		PositiveDeltas: []int64{1, 1, -2, math.MinInt64},
		ResetHint:      writev2.Histogram_RESET_HINT_YES,
		Timestamp:      -5,
		StartTimestamp: 1_699_999_999_000,
	}
}

func floatHistogramV2() writev2.Histogram {
	return writev2.Histogram{
		Count:          &writev2.Histogram_CountFloat{CountFloat: 42.5},
		Sum:            staleNaN,
		Schema:         8,
		ZeroCount:      &writev2.Histogram_ZeroCountFloat{ZeroCountFloat: 0.5},
		NegativeSpans:  []writev2.BucketSpan{{Offset: math.MinInt32, Length: math.MaxUint32}},
		NegativeCounts: []float64{1, math.Inf(1)},
		PositiveSpans:  []writev2.BucketSpan{{Offset: math.MaxInt32, Length: 1}},
		PositiveCounts: []float64{0, math.Copysign(0, -1), 7.25},
		ResetHint:      writev2.Histogram_RESET_HINT_GAUGE,
		Timestamp:      math.MaxInt64,
		StartTimestamp: -1,
	}
}

func customBucketsV2() writev2.Histogram {
	return writev2.Histogram{
		Count:          &writev2.Histogram_CountInt{CountInt: 10},
		Schema:         -53,
		PositiveSpans:  []writev2.BucketSpan{{Offset: 0, Length: 4}},
		PositiveDeltas: []int64{1, 2, 3, 4},
		CustomValues:   []float64{0.1, 0.5, 1, 10},
		Timestamp:      1,
	}
}

func TestV2RoundTrip(t *testing.T) {
	withUnknown := func(h writev2.Histogram) writev2.Histogram {
		h.XXX_unrecognized = unknownFields
		return h
	}
	for _, tc := range []struct {
		name string
		req  *writev2.Request
	}{
		{"empty", &writev2.Request{}},
		{"long symbols", &writev2.Request{ // lengths of two and three bytes
			Symbols:    []string{"", strings.Repeat("n", 127), strings.Repeat("a", 128), "x", strings.Repeat("v", 20000), ""},
			Timeseries: []writev2.TimeSeries{{LabelsRefs: []uint32{1, 2, 3, 4}, Samples: []writev2.Sample{{Value: 1}}}},
		}},
		{"empty symbols and series", &writev2.Request{Symbols: []string{"", ""}, Timeseries: []writev2.TimeSeries{{}, {}}}},
		{"samples with start timestamps", &writev2.Request{
			Symbols: []string{"", "__name__", "up", "job", "node", "héllo"},
			Timeseries: []writev2.TimeSeries{
				{LabelsRefs: []uint32{1, 2, 3, 4}, Samples: []writev2.Sample{{Value: 1, Timestamp: 1000, StartTimestamp: 500}, {Value: staleNaN, Timestamp: 2000}}},
				{LabelsRefs: []uint32{1, 5, math.MaxUint32, 0}, Samples: []writev2.Sample{{Value: math.Inf(-1), Timestamp: math.MinInt64, StartTimestamp: math.MaxInt64}}},
			},
		}},
		{"exemplars", &writev2.Request{
			Symbols: []string{"", "__name__", "req", "trace_id", "abc"},
			Timeseries: []writev2.TimeSeries{{
				LabelsRefs: []uint32{1, 2},
				Samples:    []writev2.Sample{{Value: 1, Timestamp: 1}},
				Exemplars: []writev2.Exemplar{
					{LabelsRefs: []uint32{3, 4}, Value: 0.25, Timestamp: 10},
					{Value: -1, Timestamp: 11},
					{LabelsRefs: []uint32{3, 1 << 20}, Value: staleNaN},
				},
			}},
		}},
		{"histograms", &writev2.Request{
			Symbols: []string{"", "__name__", "h"},
			Timeseries: []writev2.TimeSeries{
				{LabelsRefs: []uint32{1, 2}, Histograms: []writev2.Histogram{intHistogramV2(), floatHistogramV2(), {}}},
				{LabelsRefs: []uint32{1, 2}, Histograms: []writev2.Histogram{customBucketsV2()}},
				{Histograms: []writev2.Histogram{{ZeroCount: &writev2.Histogram_ZeroCountFloat{ZeroCountFloat: 2}}}},
			},
		}},
		{"metadata", &writev2.Request{
			Symbols: []string{"", "Help text.", "seconds"},
			Timeseries: []writev2.TimeSeries{
				{Metadata: writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_HISTOGRAM, HelpRef: 1, UnitRef: 2}},
				{Metadata: writev2.Metadata{Type: writev2.Metadata_MetricType(-1), HelpRef: math.MaxUint32}},
				{},
			},
		}},
		{"unknown fields everywhere", &writev2.Request{
			Symbols: []string{"", "a"},
			Timeseries: []writev2.TimeSeries{{
				LabelsRefs:       []uint32{1, 1},
				Samples:          []writev2.Sample{{Value: 1, Timestamp: 2, StartTimestamp: 3, XXX_unrecognized: unknownFields}},
				Exemplars:        []writev2.Exemplar{{LabelsRefs: []uint32{1, 1}, Value: 1, XXX_unrecognized: unknownFields}},
				Histograms:       []writev2.Histogram{withUnknown(floatHistogramV2())},
				Metadata:         writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE, XXX_unrecognized: pb(nil).varint(2, 5)}, // 2 is unused
				XXX_unrecognized: pb(nil).str(6, "reserved 6").bytes(7, unknownFields),
			}},
			XXX_unrecognized: pb(nil).str(1, "reserved 1").varint(2, 2).double(3, 3),
		}},
		{"realistic", realisticV2(100, 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r V2Request
			checkV2(t, &r, marshal(t, tc.req))
		})
	}
}

// TestV2HandEncoded covers encodings the generated encoder never writes:
// unpacked and split label refs, and a metadata field sent twice, which
// merges.
func TestV2HandEncoded(t *testing.T) {
	var r V2Request
	checkV2(t, &r, handEncodedV2())
	if got := r.Series[0].Metadata; got != (V2Metadata{Type: 2, HelpRef: 7, UnitRef: 3}) {
		t.Fatalf("metadata %+v, want merged {2 7 3}", got)
	}
	if got := r.Series[0].LabelRefs; len(got) != 5 || got[4] != 5 {
		t.Fatalf("label refs %v", got)
	}
}

// handEncodedV2 is the request of TestV2HandEncoded.
func handEncodedV2() pb {
	refs := func(vs ...uint32) []byte {
		var p pb
		for _, v := range vs {
			p = p.varintRaw(uint64(v))
		}
		return p
	}
	series := pb(nil).
		varint(1, 1).
		bytes(5, pb(nil).varint(1, 2).varint(3, 7)).
		bytes(1, refs(2, 3)).
		bytes(2, pb(nil).varint(3, 5).double(1, 1).varint(2, 9)).
		varint(1, 4).
		bytes(4, pb(nil).varint(1, 1).bytes(1, refs(2)).double(2, 0.5).varint(1, 3)).
		bytes(5, pb(nil).varint(4, 3)). // merges: help_ref stays 7
		bytes(1, nil).
		varint(1, 1<<32+5) // a uint32 is the varint's low 32 bits
	return pb(nil).
		str(4, "").
		bytes(5, series).
		str(4, "__name__").
		str(4, "up").
		bytes(5, nil).
		str(4, "job").
		str(4, "x")
}
