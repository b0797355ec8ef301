package rwpb

import (
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// BenchmarkUnmarshal decodes a request of 1000 series of 10 labels and
// one sample each, the shape of a Prometheus remote-write batch, with the
// generated gogo decoder (into a new struct, as a receiver does per
// request) and with this package (into a reused struct, as strata's
// handler does). It reports ns/sample (benchstat shows it as sec/sample)
// and MB/s of decoded protobuf. To compare the decoders:
//
//	go test -run=NONE -bench=BenchmarkUnmarshal -benchmem -count=6 ./internal/ingest/remotewrite/rwpb/ | tee bench.txt
//	benchstat -col /decoder bench.txt
//
// A change to this package, measured the same way before and after:
//
//	go test -run=NONE -bench='BenchmarkUnmarshal/.*/decoder=rwpb' -benchmem -count=6 ./internal/ingest/remotewrite/rwpb/ | tee old.txt
//	(apply the change)
//	go test -run=NONE -bench='BenchmarkUnmarshal/.*/decoder=rwpb' -benchmem -count=6 ./internal/ingest/remotewrite/rwpb/ | tee new.txt
//	benchstat old.txt new.txt
//
// benchstat is golang.org/x/perf/cmd/benchstat. The machine is shared:
// compare runs made back to back, and distrust a difference within noise.
func BenchmarkUnmarshal(b *testing.B) {
	const (
		series  = 1000
		labels  = 10
		samples = series // one per series
	)
	v1, err := realisticV1(series, labels).Marshal()
	if err != nil {
		b.Fatal(err)
	}
	v2, err := realisticV2(series, labels).Marshal()
	if err != nil {
		b.Fatal(err)
	}
	decoders := []struct {
		version int
		name    string
		in      []byte
		// decode returns a function that decodes in once.
		decode func(in []byte) func() error
	}{
		{1, "generated", v1, func(in []byte) func() error {
			return func() error {
				var req prompb.WriteRequest
				return req.Unmarshal(in)
			}
		}},
		{1, "rwpb", v1, func(in []byte) func() error {
			var req V1Request
			return func() error { return req.Unmarshal(in) }
		}},
		{2, "generated", v2, func(in []byte) func() error {
			return func() error {
				var req writev2.Request
				return req.Unmarshal(in)
			}
		}},
		{2, "rwpb", v2, func(in []byte) func() error {
			var req V2Request
			return func() error { return req.Unmarshal(in) }
		}},
	}
	for _, d := range decoders {
		b.Run(fmt.Sprintf("version=%d/decoder=%s", d.version, d.name), func(b *testing.B) {
			decode := d.decode(d.in)
			if err := decode(); err != nil { // grows a reused struct
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(d.in)))
			for b.Loop() {
				if err := decode(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*samples), "ns/sample")
		})
	}
}
