package chunkenc

import (
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
)

// The histogram benchmarks encode and decode chunks of 120 histograms, the
// size the head cuts, of a latency histogram scraped every 15s with up to
// 5ms of jitter (see realisticHistograms): schema 3, about 20 populated
// buckets, counts growing by about rate observations per scrape, and a
// new bucket in the tails now and then, which re-encodes the chunk. The
// float chunk is measured with the same histograms as floats
// (kind=counter) and with per-second rates computed from them
// (kind=rate, gauge histograms whose counts use the whole mantissa). They
// report ns/sample (benchstat shows it as sec/sample) and the encoded size
// in B/sample. One set of figures:
//
//	go test ./internal/chunkenc -run NONE -bench Histogram -benchmem -count=6 | benchstat /dev/stdin
//
// A change, measured the same way before and after:
//
//	go test ./internal/chunkenc -run NONE -bench Histogram -benchmem -count=6 | tee old.txt
//	(apply the change)
//	go test ./internal/chunkenc -run NONE -bench Histogram -benchmem -count=6 | tee new.txt
//	benchstat old.txt new.txt
//
// benchstat is golang.org/x/perf/cmd/benchstat. The machine is shared:
// compare runs made back to back, and distrust a difference within noise.

// benchRates are the observations per scrape of the benchmark histograms:
// a quiet and a busy endpoint.
var benchRates = []int{20, 1000}

// benchFloatHistograms returns the float histograms of a kind.
func benchFloatHistograms(kind string, rate int) []fhsample {
	if kind == "rate" {
		return rateHistograms(benchChunkSamples, rate, 1)
	}
	return toFloatSamples(realisticHistograms(benchChunkSamples, rate, 1))
}

// BenchmarkHistogramAppend measures filling a new chunk, as the head does
// every 120 samples: NewHistogramChunk and its allocations, re-encodings
// included, are part of each op.
func BenchmarkHistogramAppend(b *testing.B) {
	for _, rate := range benchRates {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			samples := realisticHistograms(benchChunkSamples, rate, 1)
			var size int
			b.ReportAllocs()
			for b.Loop() {
				c := NewHistogramChunk()
				for _, s := range samples {
					if c.Append(s.t, s.h) != Appended {
						b.Fatal("append failed")
					}
				}
				size = len(c.Bytes())
			}
			reportPerSample(b, size)
		})
	}
}

// BenchmarkHistogramIterate measures Reset and a full iteration of a
// chunk with a reused iterator and histogram.
func BenchmarkHistogramIterate(b *testing.B) {
	for _, rate := range benchRates {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			c, err := encodeHistograms(realisticHistograms(benchChunkSamples, rate, 1))
			if err != nil {
				b.Fatal(err)
			}
			chunk := c.Bytes()
			it := &HistogramIterator{}
			h := &histogram.Histogram{}
			var sum uint64
			b.ReportAllocs()
			for b.Loop() {
				it.Reset(chunk)
				for it.Next() {
					h = it.AtHistogram(h)
					sum += h.Count
				}
				if it.Err() != nil {
					b.Fatal(it.Err())
				}
			}
			reportPerSample(b, len(chunk))
			_ = sum
		})
	}
}

// BenchmarkFloatHistogramAppend is BenchmarkHistogramAppend for the float
// chunk.
func BenchmarkFloatHistogramAppend(b *testing.B) {
	for _, kind := range []string{"counter", "rate"} {
		for _, rate := range benchRates {
			b.Run(fmt.Sprintf("kind=%s/rate=%d", kind, rate), func(b *testing.B) {
				samples := benchFloatHistograms(kind, rate)
				var size int
				b.ReportAllocs()
				for b.Loop() {
					c := NewFloatHistogramChunk()
					for _, s := range samples {
						if c.Append(s.t, s.h) != Appended {
							b.Fatal("append failed")
						}
					}
					size = len(c.Bytes())
				}
				reportPerSample(b, size)
			})
		}
	}
}

// BenchmarkFloatHistogramIterate is BenchmarkHistogramIterate for the
// float chunk.
func BenchmarkFloatHistogramIterate(b *testing.B) {
	for _, kind := range []string{"counter", "rate"} {
		for _, rate := range benchRates {
			b.Run(fmt.Sprintf("kind=%s/rate=%d", kind, rate), func(b *testing.B) {
				c, err := encodeFloatHistograms(benchFloatHistograms(kind, rate))
				if err != nil {
					b.Fatal(err)
				}
				chunk := c.Bytes()
				it := &FloatHistogramIterator{}
				fh := &histogram.FloatHistogram{}
				var sum float64
				b.ReportAllocs()
				for b.Loop() {
					it.Reset(chunk)
					for it.Next() {
						fh = it.AtFloatHistogram(fh)
						sum += fh.Count
					}
					if it.Err() != nil {
						b.Fatal(it.Err())
					}
				}
				reportPerSample(b, len(chunk))
				_ = sum
			})
		}
	}
}
