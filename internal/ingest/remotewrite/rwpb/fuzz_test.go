package rwpb

import (
	"errors"
	"testing"

	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// The fuzz tests are differential: for any bytes, this package and the
// generated decoder must agree on whether they are a valid request and, if
// so, on every value. The one allowed disagreement is an input this
// package rejects for one of the documented reasons (see the package
// documentation) and the generated decoder accepts; it is recognised by
// the error's kind, so any other rejection of input the generated decoder
// takes still fails. Each input is decoded into a struct that already
// holds a request, so that stale state shows too.
//
//	go test ./internal/ingest/remotewrite/rwpb -run NONE -fuzz FuzzV1 -fuzztime 60s -fuzzminimizetime 5s
//	go test ./internal/ingest/remotewrite/rwpb -run NONE -fuzz FuzzV2 -fuzztime 60s -fuzzminimizetime 5s

// lenient reports whether err is a documented difference: input the
// generated decoder may accept and this package rejects.
func lenient(err error) bool {
	var de *DecodeError
	if !errors.As(err, &de) {
		return false
	}
	switch de.kind {
	case kindVarintOverflow, kindFieldRange, kindGroup, kindPacked:
		return true
	}
	return false
}

func checkAgreement(t *testing.T, in []byte, err, gerr error, got, want func() string) {
	t.Helper()
	if err != nil && !errors.Is(err, ErrInvalid) {
		t.Fatalf("error %v does not wrap ErrInvalid", err)
	}
	switch {
	case err == nil && gerr == nil:
		if g, w := got(), want(); g != w {
			t.Fatalf("input %x decoded differently:\n--- rwpb\n%s--- generated\n%s", in, g, w)
		}
	case err == nil:
		t.Fatalf("input %x accepted, generated decoder says %v", in, gerr)
	case gerr == nil && !lenient(err):
		t.Fatalf("input %x rejected (%v), generated decoder accepts it", in, err)
	}
}

func fuzzSeedsV1(f *testing.F) {
	for _, req := range []*prompb.WriteRequest{
		{},
		realisticV1(3, 3),
		{Timeseries: []prompb.TimeSeries{{
			Labels:     []prompb.Label{{Name: "__name__", Value: "h"}},
			Histograms: []prompb.Histogram{intHistogramV1(), floatHistogramV1(), customBucketsV1()},
			Exemplars:  []prompb.Exemplar{{Labels: []prompb.Label{{Name: "trace_id", Value: "t"}}, Value: 1, Timestamp: 2}},
		}}, Metadata: []prompb.MetricMetadata{{Type: prompb.MetricMetadata_COUNTER, MetricFamilyName: "c", Help: "h", Unit: "u"}}},
	} {
		b, err := req.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(unknownFields))
	f.Add([]byte(handEncodedV1()))
}

func FuzzV1(f *testing.F) {
	fuzzSeedsV1(f)
	prefill, err := realisticV1(2, 2).Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var r V1Request
		if err := r.Unmarshal(prefill); err != nil {
			t.Fatal(err)
		}
		err := r.Unmarshal(in)
		var want prompb.WriteRequest
		gerr := want.Unmarshal(in)
		checkAgreement(t, in, err, gerr,
			func() string { return dumpV1(r.Series, r.Metadata) },
			func() string { return dumpV1(v1FromProm(&want)) })
		if err == nil {
			checkCut(t, &r.a, r.Series, nil)
		}
	})
}

func FuzzV2(f *testing.F) {
	for _, req := range []*writev2.Request{
		{},
		realisticV2(3, 3),
		{Symbols: []string{"", "__name__", "h", "trace_id", "t"}, Timeseries: []writev2.TimeSeries{{
			LabelsRefs: []uint32{1, 2},
			Histograms: []writev2.Histogram{intHistogramV2(), floatHistogramV2(), customBucketsV2()},
			Exemplars:  []writev2.Exemplar{{LabelsRefs: []uint32{3, 4}, Value: 1, Timestamp: 2}},
			Metadata:   writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_HISTOGRAM, HelpRef: 1, UnitRef: 2},
		}}},
		{Symbols: []string{""}, Timeseries: []writev2.TimeSeries{{Samples: []writev2.Sample{{Value: 1, Timestamp: 2, StartTimestamp: 1}}}}},
	} {
		b, err := req.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(unknownFields))
	f.Add([]byte(handEncodedV2()))
	prefill, err := realisticV2(2, 2).Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var r V2Request
		if err := r.Unmarshal(prefill); err != nil {
			t.Fatal(err)
		}
		err := r.Unmarshal(in)
		var want writev2.Request
		gerr := want.Unmarshal(in)
		checkAgreement(t, in, err, gerr,
			func() string { return dumpV2(r.Symbols, r.Series) },
			func() string { return dumpV2(v2FromProm(&want)) })
		if err == nil {
			checkCut(t, &r.a, nil, r.Series)
		}
	})
}
