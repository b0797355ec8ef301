package chunkenc

import (
	"fmt"
	"testing"

	"github.com/strata-db/strata/internal/bench/workload"
)

// BenchmarkXORParts simulates how often the head writes an open chunk's
// finished bytes out in parts (Detach), and how much memory the chunk
// keeps, over strata-bench's values: 20k series of its catalog, 960
// samples each at 15 s, chunks cut at 240 samples. The rule "room" writes
// a part once the memory has less room than XORSampleMaxBytes after an
// append (the head's rule before Fits), "fits" before a sample that does
// not fit; a part needs minPart samples and 32 bytes (the head's
// minSpillBytes) at least, or the memory grows.
// It reports samples/part (higher: fewer writes) and B/series, the
// memory a series' open chunk holds at the end (lower is better):
//
//	go test ./internal/chunkenc -run NONE -bench BenchmarkXORParts -benchtime=1x
func BenchmarkXORParts(b *testing.B) {
	const (
		nseries = 20_000
		samples = 960
	)
	for _, c := range []struct {
		rule          string
		size, minPart int
	}{
		{"room", 64, 8}, {"fits", 64, 8}, {"fits", 48, 8}, {"fits", 48, 6}, {"fits", 48, 4},
	} {
		b.Run(fmt.Sprintf("rule=%s/memory=%d/part=%d", c.rule, c.size, c.minPart), func(b *testing.B) {
			var parts, held int
			for b.Loop() {
				parts, held = 0, 0
				for id := range uint64(nseries) {
					var a XORAppender
					w := bitWriter{buf: make([]byte, xorChunkHeaderSize, c.size)}
					a.setWriter(&w)
					var pt int64
					var pv float64
					for k := range int64(samples) {
						if a.NumSamples() == 240 {
							a.Reset()
						}
						t, v := k*15000, workload.Value(1, id, k)
						if c.rule == "fits" && a.SinceDetach() >= c.minPart && !a.Fits(pt, pv, t, v) && len(a.Finished()) >= 32 {
							a.Detach(len(a.Finished()))
							parts++
						}
						a.Append(pt, pv, t, v)
						if c.rule == "room" && a.Room() < XORSampleMaxBytes && a.SinceDetach() >= c.minPart && a.NumSamples() < 240 && len(a.Finished()) >= 32 {
							a.Detach(len(a.Finished()))
							parts++
						}
						pt, pv = t, v
					}
					held += int(a.cap)
				}
			}
			b.ReportMetric(float64(nseries*samples)/float64(parts), "samples/part")
			b.ReportMetric(float64(held)/nseries, "B/series")
		})
	}
}
