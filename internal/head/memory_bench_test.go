package head

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/storage"
)

// BenchmarkSeriesMemory reports the live heap per series of a head holding
// 100k series of 11 labels (node-exporter-like) with a given number of
// samples each, the figure behind "bytes per series in memory". Values
// are steady (a counter that always grows by one, a few bits a sample)
// or noisy (gauges of random fractions, about seven bytes a sample, the
// worst case for the open chunk's buffer). Each series has an instance
// and a pod of its own, the worst case for the symbol table, unless
// labels=shared: then 100 series share them, as an exporter's series
// share its target's labels. cell-B/series is the memory the head holds
// for series outside the Go heap (Stats.SeriesMemBytes); closed chunks,
// in anonymous memory here, count in neither.
//
//	go test ./internal/head -run NONE -bench BenchmarkSeriesMemory -benchtime=1x -count=6 | tee new.txt
//	benchstat old.txt new.txt
func BenchmarkSeriesMemory(b *testing.B) {
	// Batches of 2000 series, as a remote-write request carries: the
	// figure is the head's, not that of an appender's buffers for one
	// batch of all series (258 bytes a series).
	const nseries, batchSeries = 100_000, 2000
	lsetsOf := func(perTarget int) []labels.Labels {
		lsets := make([]labels.Labels, nseries)
		for i := range lsets {
			t := i / perTarget
			lsets[i] = labels.FromStrings("__name__", fmt.Sprintf("node_metric_%d", i%200), "cluster", "eu-1",
				"cpu", fmt.Sprint(i%16), "env", "prod", "instance", fmt.Sprintf("10.%d.%d.%d:9100", t/65536, t/256%256, t%256),
				"job", "node", "mode", "idle", "region", "eu-west-1", "team", "infra", "zone", "eu-west-1a", "pod", fmt.Sprintf("pod-%d", t))
		}
		return lsets
	}
	unique, shared := lsetsOf(1), lsetsOf(100)
	noisy := noisyValue
	steady := func(i, j int) float64 { return float64(i + j) }
	for _, c := range []struct {
		values  string
		samples int
		v       func(i, j int) float64
		shared  bool
	}{
		{"steady", 1, steady, false}, {"steady", 4, steady, false}, {"steady", 120, steady, false},
		{"noisy", 120, noisy, false}, {"noisy", 240, noisy, false}, {"steady", 600, steady, false},
		{"steady", 120, steady, true}, {"noisy", 120, noisy, true},
	} {
		samples := c.samples
		name := fmt.Sprintf("values=%s/samples=%d", c.values, samples)
		lsets := unique
		if c.shared {
			name += "/labels=shared"
			lsets = shared
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				opts := DefaultOptions()
				opts.WALDir = b.TempDir()
				opts.CheckpointOnClose = false
				opts.CheckpointMinBytes = 1 << 62
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				h, err := Open(opts)
				if err != nil {
					b.Fatal(err)
				}
				for j := range samples {
					for lo := 0; lo < len(lsets); lo += batchSeries {
						app := h.Appender(context.Background())
						for i := lo; i < lo+batchSeries; i++ {
							if _, err := app.Append(0, lsets[i], storage.Sample{T: int64(j) * 15000, V: c.v(i, j)}); err != nil {
								b.Fatal(err)
							}
						}
						if err := app.Commit(); err != nil {
							b.Fatal(err)
						}
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/nseries, "B/series")
				b.ReportMetric(float64(h.Stats().SeriesMemBytes)/nseries, "cell-B/series")
				runtime.KeepAlive(h)
				h.Close()
			}
		})
	}
}

// noisyValue is the value of series i at its j-th sample in benchmarks
// whose values change at every sample, as gauges of full precision do.
func noisyValue(i, j int) float64 { return float64(uint32((i+1)*(j+7)*2654435761)) / 1000 }
