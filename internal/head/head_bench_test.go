package head

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/storage"
)

// BenchmarkAppend measures the append path from Appender to Commit,
// including the WAL write: batches of one sample for each of 1000 series
// with 10 labels, the shape of a remote-write request, in steady state
// (series exist, buffers have grown), with closed chunks in memory or, as
// the store keeps them, in files; each series' value is constant, or, in
// values=noisy, changes at every sample, or, in values=counters, grows by
// an amount of its own, as an exporter's counters do, so that the open
// chunks of many series fill, and write their parts out, in the same
// batch. batches=scrapes are a scrape's, whose parts are written out
// together (see flushSpills).
//
//	go test ./internal/head -run NONE -bench BenchmarkAppend -benchmem -count=6 | tee new.txt
//	benchstat old.txt new.txt
func BenchmarkAppend(b *testing.B) {
	for _, nseries := range []int{1000} {
		for _, chunks := range []string{"memory", "files"} {
			b.Run(fmt.Sprintf("series=%d/chunks=%s", nseries, chunks), func(b *testing.B) {
				benchmarkAppend(b, nseries, chunks == "files", nil)
			})
		}
		// Values that change at every sample: open chunks fill and
		// write their parts out (see spillOpen).
		b.Run(fmt.Sprintf("series=%d/chunks=files/values=noisy", nseries), func(b *testing.B) {
			benchmarkAppend(b, nseries, true, func(i int, ts int64) float64 { return noisyValue(i, int(ts/15000)) })
		})
		counters := func(i int, ts int64) float64 { return float64(ts / 15000 * int64(1000+i*37%4096)) }
		b.Run(fmt.Sprintf("series=%d/chunks=files/values=counters", nseries), func(b *testing.B) {
			benchmarkAppend(b, nseries, true, counters)
		})
		// The same batches as a scrape's (see storage.WithWholeScrapes).
		b.Run(fmt.Sprintf("series=%d/chunks=files/values=noisy/batches=scrapes", nseries), func(b *testing.B) {
			benchmarkAppendCtx(b, storage.WithWholeScrapes(context.Background()), nseries, true, func(i int, ts int64) float64 { return noisyValue(i, int(ts/15000)) })
		})
		b.Run(fmt.Sprintf("series=%d/chunks=files/values=counters/batches=scrapes", nseries), func(b *testing.B) {
			benchmarkAppendCtx(b, storage.WithWholeScrapes(context.Background()), nseries, true, counters)
		})
	}
}

// BenchmarkAppendLate measures what a late sample costs: batches as in
// BenchmarkAppend, each sample 15 s older than its series' newest, so
// that each goes into the open chunk (half full on average), decoded and
// encoded again. Only the late batches are timed; the in-order batches
// between them, which make room, are not.
func BenchmarkAppendLate(b *testing.B) {
	benchmarkAppendLate(b, 1000)
}

func benchmarkAppendLate(b *testing.B, nseries int) {
	opts := DefaultOptions()
	opts.WALDir = b.TempDir()
	opts.OutOfOrderWindow = 60_000
	h, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	lsets := benchLabels(nseries)
	batch := func(ts int64) { appendEach(b, h, lsets, ts) }
	ts := int64(0)
	batch(ts)
	// Allocations are counted for the timed batches only.
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		batch(ts + 30_000)
		b.StartTimer()
		batch(ts + 15_000)
		ts += 30_000
	}
	b.StopTimer()
	if got := h.Stats().SamplesLate; got != uint64(b.N*nseries) {
		b.Fatalf("%d late samples, want %d", got, b.N*nseries)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nseries), "ns/sample")
}

// appendEach commits a batch of a sample at ts for each series.
func appendEach(b *testing.B, h *Head, lsets []labels.Labels, ts int64) {
	appendValues(b, h, lsets, ts, nil)
}

// appendValues is appendEach with the value of series i at ts from
// value, or i if value is nil.
func appendValues(b *testing.B, h *Head, lsets []labels.Labels, ts int64, value func(i int, ts int64) float64) {
	appendValuesCtx(b, context.Background(), h, lsets, ts, value)
}

// appendValuesCtx is appendValues with an appender for ctx.
func appendValuesCtx(b *testing.B, ctx context.Context, h *Head, lsets []labels.Labels, ts int64, value func(i int, ts int64) float64) {
	app := h.Appender(ctx)
	for i, l := range lsets {
		v := float64(i)
		if value != nil {
			v = value(i, ts)
		}
		if _, err := app.Append(0, l, storage.Sample{T: ts, V: v}); err != nil {
			b.Fatal(err)
		}
	}
	if err := app.Commit(); err != nil {
		b.Fatal(err)
	}
}

// benchLabels returns n label sets of 10 labels, as node_exporter's CPU
// series look once remote-written.
func benchLabels(n int) []labels.Labels {
	lsets := make([]labels.Labels, n)
	for i := range lsets {
		lsets[i] = labels.FromStrings(
			"__name__", "node_cpu_seconds_total", "cpu", fmt.Sprint(i%32), "mode", "idle",
			"instance", fmt.Sprintf("host-%d:9100", i/32), "job", "node", "env", "prod",
			"region", "eu-west-1", "zone", "eu-west-1a", "cluster", "main", "team", "infra")
	}
	return lsets
}

func benchmarkAppend(b *testing.B, nseries int, files bool, value func(i int, ts int64) float64) {
	benchmarkAppendCtx(b, context.Background(), nseries, files, value)
}

// benchmarkAppendCtx is benchmarkAppend with appenders for ctx.
func benchmarkAppendCtx(b *testing.B, ctx context.Context, nseries int, files bool, value func(i int, ts int64) float64) {
	opts := DefaultOptions()
	opts.WALDir = b.TempDir()
	if files {
		opts.ChunkDir = filepath.Join(b.TempDir(), "chunks_head")
	}
	h, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	lsets := benchLabels(nseries)
	ts := int64(0)
	batch := func() {
		appendValuesCtx(b, ctx, h, lsets, ts, value)
		ts += 15000
	}
	batch() // create the series
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for b.Loop() {
		batch()
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	perSample := float64(b.N * nseries)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perSample, "ns/sample")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/perSample, "B/sample")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/perSample, "allocs/sample")
}

// BenchmarkCreateSeries measures creating series from four appenders at
// once, as receivers do when a fleet's series first arrive: batches of
// 1000 new series each, of one job and 10 labels. Refs must reach the
// index's postings in order, or each insertion copies the lists the
// series share (see Head.creating). The head grows with every
// iteration, so the iterations are fixed: 100 make 400k series.
//
//	go test ./internal/head -run NONE -bench BenchmarkCreateSeries -benchtime 100x -benchmem -count=6
func BenchmarkCreateSeries(b *testing.B) {
	h := openBenchHead(b)
	const appenders, batch = 4, 1000
	var next atomic.Int64
	b.ReportAllocs()
	for b.Loop() {
		var wg sync.WaitGroup
		for range appenders {
			wg.Go(func() {
				app := h.Appender(context.Background())
				for range batch {
					n := next.Add(1)
					lset := labels.FromStrings("__name__", "up", "job", "node", "instance", fmt.Sprintf("host-%d", n/50), "id", fmt.Sprint(n))
					if _, err := app.Append(0, lset, storage.Sample{T: 1, V: 1}); err != nil {
						b.Error(err)
					}
				}
				if err := app.Commit(); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(next.Load()), "ns/series")
}

// openBenchHead opens a head of the default options, its WAL in a
// temporary directory, closed when the benchmark ends.
func openBenchHead(b *testing.B) *Head {
	opts := DefaultOptions()
	opts.WALDir = b.TempDir()
	h, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	return h
}

// BenchmarkAppendLateBulk measures a backfill through the out-of-order
// window: a series holding ten chunks of samples 30 s apart takes the
// samples in between, late, in time order, in commits of samples=N. Each
// head takes 2,400 of them, so that every late sample meets a series of
// the same size; opening it and its in-order samples are not timed.
//
//	go test ./internal/head -run NONE -bench BenchmarkAppendLateBulk -benchmem -count=6 | tee new.txt
//	benchstat old.txt new.txt
func BenchmarkAppendLateBulk(b *testing.B) {
	const held = 2400
	lset := labels.FromStrings("__name__", "backfilled")
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("samples=%d", n), func(b *testing.B) {
			var h *Head
			j := held
			b.ReportAllocs()
			for b.Loop() {
				if j+n > held {
					b.StopTimer()
					if h != nil {
						h.Close()
					}
					opts := DefaultOptions()
					opts.WALDir = b.TempDir()
					opts.OutOfOrderWindow = 1 << 40
					var err error
					if h, err = Open(opts); err != nil {
						b.Fatal(err)
					}
					app := h.Appender(context.Background())
					for k := range held {
						if _, err := app.Append(0, lset, storage.Sample{T: int64(k) * 30_000, V: float64(k)}); err != nil {
							b.Fatal(err)
						}
					}
					if err := app.Commit(); err != nil {
						b.Fatal(err)
					}
					j = 0
					b.StartTimer()
				}
				app := h.Appender(context.Background())
				for range n {
					if _, err := app.Append(0, lset, storage.Sample{T: int64(j)*30_000 + 15_000, V: float64(j)}); err != nil {
						b.Fatal(err)
					}
					j++
				}
				if err := app.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			h.Close()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/sample")
		})
	}
}
