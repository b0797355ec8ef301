package record

import (
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/storage"
)

// BenchmarkDecodeSamples decodes a record of 2000 samples (a remote-write
// request's worth) of neighbouring series at one timestamp into a reused
// slice, and reports the encoded size per sample.
//
// Compare two versions with:
//
//	go test -run '^$' -bench 'BenchmarkDecode' -benchmem -count=6 ./internal/record/ > old.txt
//	# change the code
//	go test -run '^$' -bench 'BenchmarkDecode' -benchmem -count=6 ./internal/record/ > new.txt
//	benchstat old.txt new.txt
func BenchmarkDecodeSamples(b *testing.B) {
	in := make([]RefSample, 2000)
	for i := range in {
		in[i] = RefSample{Ref: storage.SeriesRef(100000 + 3*i), T: 1700000000000 + int64(i%2), V: float64(i) * 1.5}
	}
	rec := EncodeSamples(nil, in)
	var d Decoder
	dst := make([]RefSample, 0, len(in))
	b.ReportAllocs()
	b.SetBytes(int64(len(rec)))
	for b.Loop() {
		var err error
		if dst, err = d.Samples(rec, dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(rec))/float64(len(in)), "B/sample")
}

// BenchmarkDecodeSeries decodes a record of 500 series with 10 labels each.
// Run it as BenchmarkDecodeSamples says.
func BenchmarkDecodeSeries(b *testing.B) {
	in := make([]RefSeries, 500)
	for i := range in {
		in[i] = RefSeries{Ref: storage.SeriesRef(i + 1), Labels: labels.FromStrings(
			"__name__", "http_requests_total", "cluster", "eu-west-1", "namespace", "checkout",
			"pod", fmt.Sprintf("checkout-7d9f8b6c4-%05d", i), "container", "app", "job", "kubernetes-pods",
			"instance", fmt.Sprintf("10.1.%d.%d:8080", i/256, i%256), "method", "GET", "code", "200", "handler", "/api/v1/cart")}
	}
	rec := EncodeSeries(nil, in)
	var d Decoder
	dst := make([]RefSeries, 0, len(in))
	b.ReportAllocs()
	b.SetBytes(int64(len(rec)))
	for b.Loop() {
		var err error
		if dst, err = d.Series(rec, dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(rec))/float64(len(in)), "B/series")
}

// BenchmarkDecodeHistogramSamples decodes a record of 500 native histogram
// samples (10 buckets in two spans each) of neighbouring series at one
// timestamp into a reused slice, whose histograms are reused too, and
// reports the encoded size per sample. Run it as BenchmarkDecodeSamples
// says.
func BenchmarkDecodeHistogramSamples(b *testing.B) {
	const n = 500
	spans := []histogram.Span{{Offset: -2, Length: 6}, {Offset: 3, Length: 4}}
	b.Run("type=int", func(b *testing.B) {
		in := make([]RefHistogramSample, n)
		for i := range in {
			in[i] = RefHistogramSample{Ref: storage.SeriesRef(100000 + 3*i), T: 1700000000000, H: &histogram.Histogram{
				Schema: 3, ZeroThreshold: 1e-128, ZeroCount: 2, Count: uint64(40 + i), Sum: float64(i) * 1.5,
				PositiveSpans: spans, PositiveBuckets: []int64{2, 3, -1, 5, 0, -2, int64(i % 7), 1, -3, 4},
			}}
		}
		rec := EncodeHistogramSamples(nil, in)
		var d Decoder
		dst, err := d.HistogramSamples(rec, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(rec)))
		for b.Loop() {
			if dst, err = d.HistogramSamples(rec, dst[:0]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(rec))/n, "B/sample")
	})
	b.Run("type=float", func(b *testing.B) {
		in := make([]RefFloatHistogramSample, n)
		for i := range in {
			in[i] = RefFloatHistogramSample{Ref: storage.SeriesRef(100000 + 3*i), T: 1700000000000, FH: &histogram.FloatHistogram{
				Schema: 3, ZeroThreshold: 1e-128, ZeroCount: 2, Count: float64(40 + i), Sum: float64(i) * 1.5,
				PositiveSpans: spans, PositiveBuckets: []float64{2, 5, 4, 9, 9, 7, float64(i % 7), 1, 3, 4},
			}}
		}
		rec := EncodeFloatHistogramSamples(nil, in)
		var d Decoder
		dst, err := d.FloatHistogramSamples(rec, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(rec)))
		for b.Loop() {
			if dst, err = d.FloatHistogramSamples(rec, dst[:0]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(rec))/n, "B/sample")
	})
}
