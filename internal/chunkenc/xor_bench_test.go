package chunkenc

import (
	"encoding/binary"
	"math"
	"testing"
)

// The XOR benchmarks encode and decode chunks of 120 samples, the size the
// head cuts, of series scraped every 15s with up to 5ms of jitter (see
// realisticSeries). They report ns/sample (benchstat shows it as
// sec/sample) and the encoded size in B/sample. One set of figures:
//
//	go test -run=NONE -bench=BenchmarkXOR -benchmem -count=6 ./internal/chunkenc/ | benchstat /dev/stdin
//
// A change, measured the same way before and after:
//
//	go test -run=NONE -bench=BenchmarkXOR -benchmem -count=6 ./internal/chunkenc/ | tee old.txt
//	(apply the change)
//	go test -run=NONE -bench=BenchmarkXOR -benchmem -count=6 ./internal/chunkenc/ | tee new.txt
//	benchstat old.txt new.txt
//
// benchstat is golang.org/x/perf/cmd/benchstat. The machine is shared:
// compare runs made back to back, and distrust a difference within noise.

// benchKinds are the series the benchmarks use, from cheapest to dearest:
// noisy is a gauge of full-precision random values.
var benchKinds = []string{"constant", "counter", "gauge", "noisy"}

const benchChunkSamples = 120

// BenchmarkXORAppend measures filling a new chunk, as the head does every
// 120 samples: NewXORChunk and its allocations are part of each op.
func BenchmarkXORAppend(b *testing.B) {
	for _, kind := range benchKinds {
		b.Run("kind="+kind, func(b *testing.B) {
			samples := realisticSeries(kind, benchChunkSamples, 1)
			var size int
			b.ReportAllocs()
			for b.Loop() {
				c := NewXORChunk()
				for _, s := range samples {
					c.Append(s.t, math.Float64frombits(s.v))
				}
				size = len(c.Bytes())
			}
			reportPerSample(b, size)
		})
	}
}

// BenchmarkXORIterate measures Reset and a full iteration of a chunk with a
// reused iterator.
func BenchmarkXORIterate(b *testing.B) {
	for _, kind := range benchKinds {
		b.Run("kind="+kind, func(b *testing.B) {
			chunk := encode(realisticSeries(kind, benchChunkSamples, 1)).Bytes()
			it := &XORIterator{}
			var sum float64
			b.ReportAllocs()
			for b.Loop() {
				it.Reset(chunk)
				for it.Next() {
					_, v := it.At()
					sum += v
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

// BenchmarkXORAppendSamples is BenchmarkXORIterate through AppendSamples,
// the loop range queries and block writes decode with.
//
//	go test -run=NONE -bench='BenchmarkXORIterate|BenchmarkXORAppendSamples' -benchmem -count=6 ./internal/chunkenc/
func BenchmarkXORAppendSamples(b *testing.B) {
	for _, kind := range benchKinds {
		b.Run("kind="+kind, func(b *testing.B) {
			benchmarkAppendSamples(b, &XORIterator{}, encode(realisticSeries(kind, benchChunkSamples, 1)).Bytes())
		})
	}
}

// benchmarkAppendSamples decodes chunk whole with it.AppendSamples, once
// an op.
func benchmarkAppendSamples(b *testing.B, it bulkDecoder, chunk []byte) {
	var ts []int64
	var vs []float64
	var sum float64
	n := int(binary.BigEndian.Uint16(chunk))
	b.ReportAllocs()
	for b.Loop() {
		it.Reset(chunk)
		var ok bool
		if ts, vs, ok = it.AppendSamples(ts[:0], vs[:0], math.MaxInt64, math.MaxInt); !ok || len(vs) != n {
			b.Fatal("not decoded")
		}
		sum += vs[len(vs)-1]
	}
	reportSamples(b, len(chunk), n)
	_ = sum
}

func reportPerSample(b *testing.B, chunkBytes int) { reportSamples(b, chunkBytes, benchChunkSamples) }

func reportSamples(b *testing.B, chunkBytes, samples int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*samples), "ns/sample")
	b.ReportMetric(float64(chunkBytes)/float64(samples), "B/sample")
}
