package head

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/storage"
)

// Replay benchmark shape: 10k series x 1k samples (10M samples), written
// as a scrape-like stream of one sample per series per commit.
const (
	benchReplaySeries  = 10_000
	benchReplaySamples = 1_000
)

var (
	benchWALOnce sync.Once
	benchWALDir  string
	benchWALErr  error
)

// benchWAL writes the benchmark's WAL once per process and returns its
// directory. It is kept without a checkpoint so that Open replays it all.
func benchWAL(b *testing.B) string {
	benchWALOnce.Do(func() {
		dir, err := os.MkdirTemp("", "strata-replay-bench")
		if err != nil {
			benchWALErr = err
			return
		}
		benchWALDir = filepath.Join(dir, "wal")
		opts := DefaultOptions()
		opts.WALDir = benchWALDir
		opts.CheckpointOnClose = false
		opts.CheckpointMinBytes = 1 << 62
		h, err := Open(opts)
		if err != nil {
			benchWALErr = err
			return
		}
		lsets := make([]labels.Labels, benchReplaySeries)
		for i := range lsets {
			lsets[i] = labels.FromStrings("__name__", "node_cpu_seconds_total", "cpu", fmt.Sprint(i%32),
				"instance", fmt.Sprintf("host-%d:9100", i/32), "job", "node", "mode", "idle")
		}
		for j := range benchReplaySamples {
			app := h.Appender(context.Background())
			for i, l := range lsets {
				if _, err := app.Append(0, l, storage.Sample{T: int64(j) * 15000, V: float64(i + j)}); err != nil {
					benchWALErr = err
					return
				}
			}
			if err := app.Commit(); err != nil {
				benchWALErr = err
				return
			}
		}
		benchWALErr = h.Close()
	})
	if benchWALErr != nil {
		b.Fatal(benchWALErr)
	}
	return benchWALDir
}

// BenchmarkReplay measures opening a head from a WAL of 10M float samples
// with 1, 2 and 4 replay workers.
//
//	go test ./internal/head -run NONE -bench BenchmarkReplay -benchmem -count=6 | tee new.txt
//	benchstat old.txt new.txt
func BenchmarkReplay(b *testing.B) {
	dir := benchWAL(b)
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			opts := DefaultOptions()
			opts.WALDir = dir
			opts.ReplayWorkers = workers
			opts.CheckpointOnClose = false
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				h, err := Open(opts)
				if err != nil {
					b.Fatal(err)
				}
				if got := h.Stats().ReplayedSamples; got != benchReplaySeries*benchReplaySamples {
					b.Fatalf("replayed %d samples", got)
				}
				b.StopTimer()
				h.Close()
				// Open starts a new segment each time; remove it so every
				// iteration replays the same log.
				removeEmptySegments(b, dir)
				b.StartTimer()
			}
			runtime.ReadMemStats(&after)
			samples := float64(b.N) * benchReplaySeries * benchReplaySamples
			b.ReportMetric(samples/b.Elapsed().Seconds(), "samples/s")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/samples, "allocs/sample")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/samples, "B/sample")
		})
	}
}

func removeEmptySegments(b *testing.B, dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() && info.Size() == 0 {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
