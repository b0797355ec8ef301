package workload

import (
	"fmt"
	"testing"
)

// BenchmarkEncode measures how fast the harness pre-encodes requests and
// how many wire bytes a sample costs. Compare changes with
//
//	go test ./internal/bench/workload -run '^$' -bench Encode -count=6 | tee new.txt
//	benchstat old.txt new.txt
func BenchmarkEncode(b *testing.B) {
	for _, p := range []Protocol{V1, V2} {
		for _, spr := range []int{1, 10} {
			b.Run(fmt.Sprintf("protocol=%s/samples=%d", p, spr), func(b *testing.B) {
				o := DefaultOptions()
				o.Senders = 1
				o.SamplesPerSeries = spr
				o.SeriesPerRequest = max(2000/spr, 1)
				s, err := NewSchedule(o)
				if err != nil {
					b.Fatal(err)
				}
				e := NewEncoder(s, p)
				var buf []byte
				var bytes, samples int
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					var info Info
					buf, info, err = e.Append(buf[:0], 0, int64(i))
					if err != nil {
						b.Fatal(err)
					}
					bytes += len(buf)
					samples += info.Samples
				}
				b.ReportMetric(float64(bytes)/float64(samples), "B/sample")
				b.ReportMetric(float64(samples)/b.Elapsed().Seconds(), "samples/s")
			})
		}
	}
}
