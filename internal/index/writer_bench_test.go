package index

import (
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// BenchmarkWriter writes the index of 100k series of 10 labels that
// share their pairs as an exporter's series do (100 metrics of 100
// targets), each with two chunks. Each series' labels are built for its
// AddSeries, as the head builds them when it writes a block, so that what
// the Writer keeps of them shows: held is the live heap the Writer holds
// per series before Close, and close what Close allocates per series (its
// postings, offsets and symbols), on top of that while a block is
// written.
//
//	go test ./internal/index -run NONE -bench BenchmarkWriter -benchmem -count=6 | tee new.txt
//	benchstat old.txt new.txt
func BenchmarkWriter(b *testing.B) {
	const nseries = 100_000
	// Zero-padded, so that series come in label order.
	labelsOf := func(i int, sb *labels.ScratchBuilder) labels.Labels {
		sb.Reset()
		sb.Add("__name__", fmt.Sprintf("node_metric_%03d", i/1000))
		sb.Add("cluster", "eu-1")
		sb.Add("env", "prod")
		sb.Add("instance", fmt.Sprintf("10.0.0.%03d:9100", i%1000/10))
		sb.Add("job", "node")
		sb.Add("mode", fmt.Sprintf("%02d", i%10))
		sb.Add("region", "eu-west-1")
		sb.Add("team", "infra")
		sb.Add("zone", "eu-west-1a")
		return sb.Labels()
	}
	chunks := []ChunkMeta{{Ref: 0, MinT: 0, MaxT: 1799_000}, {Ref: 1, MinT: 1800_000, MaxT: 3599_000}}
	var held, closing float64
	b.ReportAllocs()
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		w := NewWriter(io.Discard)
		var sb labels.ScratchBuilder
		for i := range nseries {
			chunks[0].Ref, chunks[1].Ref = ChunkRef(2*i), ChunkRef(2*i+1)
			if err := w.AddSeries(labelsOf(i, &sb), chunks, nil); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		held = float64(after.HeapAlloc-before.HeapAlloc) / nseries
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		runtime.ReadMemStats(&before)
		closing = float64(before.TotalAlloc-after.TotalAlloc) / nseries
	}
	b.ReportMetric(held, "B/series-held")
	b.ReportMetric(closing, "B/series-close")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nseries), "ns/series")
}
