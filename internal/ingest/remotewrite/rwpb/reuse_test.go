package rwpb

import (
	"testing"
	"unsafe"

	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// bigV1 is a request with every kind of message, many of each, so that a
// first decode grows every backing array several times.
func bigV1() *prompb.WriteRequest {
	req := realisticV1(500, 8)
	for i := range req.Timeseries {
		ts := &req.Timeseries[i]
		switch i % 3 {
		case 0:
			ts.Histograms = []prompb.Histogram{intHistogramV1(), floatHistogramV1()}
		case 1:
			ts.Histograms = []prompb.Histogram{customBucketsV1()}
			ts.Exemplars = []prompb.Exemplar{{Labels: []prompb.Label{{Name: "trace_id", Value: "t"}}, Value: float64(i)}}
		}
	}
	req.Metadata = []prompb.MetricMetadata{{Type: prompb.MetricMetadata_COUNTER, MetricFamilyName: "m", Help: "h"}}
	return req
}

func bigV2() *writev2.Request {
	req := realisticV2(500, 8)
	for i := range req.Timeseries {
		ts := &req.Timeseries[i]
		switch i % 3 {
		case 0:
			ts.Samples = nil
			ts.Histograms = []writev2.Histogram{intHistogramV2(), floatHistogramV2()}
		case 1:
			ts.Samples[0].StartTimestamp = int64(i)
			ts.Exemplars = []writev2.Exemplar{{LabelsRefs: []uint32{1, 2}, Value: float64(i)}}
		}
	}
	return req
}

func TestReuse(t *testing.T) {
	t.Run("version=1", func(t *testing.T) {
		big, small := marshal(t, bigV1()), marshal(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			{Labels: []prompb.Label{{Name: "a", Value: "b"}}, Histograms: []prompb.Histogram{customBucketsV1()}},
		}})
		var r V1Request
		for _, b := range [][]byte{big, small, big, nil, small, big} {
			checkV1(t, &r, b)
		}
	})
	t.Run("version=2", func(t *testing.T) {
		big, small := marshal(t, bigV2()), marshal(t, &writev2.Request{Symbols: []string{"", "a"}, Timeseries: []writev2.TimeSeries{
			{LabelsRefs: []uint32{1, 1}, Histograms: []writev2.Histogram{customBucketsV2()}},
		}})
		var r V2Request
		for _, b := range [][]byte{big, small, big, nil, small, big} {
			checkV2(t, &r, b)
		}
	})
}

// TestZeroAllocs checks the point of the package: once a request struct
// has grown, decoding a realistic request into it allocates nothing.
func TestZeroAllocs(t *testing.T) {
	t.Run("version=1", func(t *testing.T) {
		b := marshal(t, realisticV1(1000, 10))
		var r V1Request
		checkV1(t, &r, b)
		if n := testing.AllocsPerRun(20, func() { _ = r.Unmarshal(b) }); n != 0 {
			t.Errorf("%v allocs per Unmarshal, want 0", n)
		}
		big := marshal(t, bigV1())
		checkV1(t, &r, big)
		if n := testing.AllocsPerRun(20, func() { _ = r.Unmarshal(big) }); n != 0 {
			t.Errorf("%v allocs per Unmarshal of histograms and exemplars, want 0", n)
		}
	})
	t.Run("version=2", func(t *testing.T) {
		b := marshal(t, realisticV2(1000, 10))
		var r V2Request
		checkV2(t, &r, b)
		if n := testing.AllocsPerRun(20, func() { _ = r.Unmarshal(b) }); n != 0 {
			t.Errorf("%v allocs per Unmarshal, want 0", n)
		}
		big := marshal(t, bigV2())
		checkV2(t, &r, big)
		if n := testing.AllocsPerRun(20, func() { _ = r.Unmarshal(big) }); n != 0 {
			t.Errorf("%v allocs per Unmarshal of histograms and exemplars, want 0", n)
		}
	})
}

// TestAliasing checks the lifetime contract from the other side: strings
// point into the input, so that they are free, and Reset drops every
// reference to it.
func TestAliasing(t *testing.T) {
	within := func(s string, b []byte) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		return p >= lo && p+uintptr(len(s)) <= lo+uintptr(len(b))
	}
	b1 := marshal(t, bigV1())
	var r1 V1Request
	checkV1(t, &r1, b1)
	for _, s := range r1.Series {
		for _, l := range s.Labels {
			if !within(l.Name, b1) || !within(l.Value, b1) {
				t.Fatalf("label %v does not alias the input", l)
			}
		}
	}
	if m := r1.Metadata[0]; !within(m.Help, b1) {
		t.Fatal("metadata help does not alias the input")
	}
	b2 := marshal(t, bigV2())
	var r2 V2Request
	checkV2(t, &r2, b2)
	for _, s := range r2.Symbols[1:] {
		if !within(s, b2) {
			t.Fatalf("symbol %q does not alias the input", s)
		}
	}

	r1.Reset()
	r2.Reset()
	if len(r1.Series)+len(r1.Metadata)+len(r2.Series)+len(r2.Symbols) != 0 {
		t.Fatal("Reset left messages")
	}
	for _, l := range r1.a.labels[:cap(r1.a.labels)] {
		if l != (Label{}) {
			t.Fatal("Reset left a label")
		}
	}
	for _, s := range r2.Symbols[:cap(r2.Symbols)] {
		if s != "" {
			t.Fatal("Reset left a symbol")
		}
	}
	for _, s := range r1.Series[:cap(r1.Series)] {
		if s.Labels != nil {
			t.Fatal("Reset left a series' labels")
		}
	}
	// A reset struct decodes as well as a new one.
	checkV1(t, &r1, b1)
	checkV2(t, &r2, b2)
}
