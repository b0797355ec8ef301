package block

import (
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/chunkenc"
)

// BenchmarkWriter writes a block of 20k series with one chunk of 120
// samples each, their labels built for each AddSeries as the head builds
// them when it writes a block.
//
//	go test ./internal/block -run NONE -bench BenchmarkWriter -benchmem -count=6 | tee new.txt
//	benchstat old.txt new.txt
func BenchmarkWriter(b *testing.B) {
	const nseries = 20_000
	xc := chunkenc.NewXORChunk()
	for j := range 120 {
		xc.Append(int64(j)*15_000, float64(j))
	}
	chunk := []chunkenc.Meta{{Data: xc.Bytes(), MinT: 0, MaxT: 119 * 15_000, Enc: chunkenc.EncXOR}}
	b.ReportAllocs()
	for b.Loop() {
		w, err := NewWriter(b.TempDir(), WriterOptions{MinTime: 0, MaxTime: 7_200_000})
		if err != nil {
			b.Fatal(err)
		}
		var sb labels.ScratchBuilder
		for i := range nseries {
			sb.Reset()
			sb.Add("__name__", fmt.Sprintf("node_metric_%03d", i/200))
			sb.Add("instance", fmt.Sprintf("10.0.0.%03d:9100", i%200/10))
			sb.Add("job", "node")
			sb.Add("mode", fmt.Sprintf("%02d", i%10))
			if err := w.AddSeries(sb.Labels(), chunk, nil); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.Finish(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nseries), "ns/series")
}
