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
	"github.com/strata-db/strata/internal/vfs"
)

// Replay benchmark shape: 10k series, written as a scrape-like stream of
// one sample per series per commit.
const benchReplaySeries = 10_000

var (
	benchWALMu   sync.Mutex
	benchWALRoot string             // removed by TestMain
	benchWALDirs = map[int]string{} // by samples per series
)

// TestMain removes the benchmarks' WALs, which are kept across runs of a
// benchmark (-count) because writing them takes longer than replaying.
func TestMain(m *testing.M) {
	code := m.Run()
	if benchWALRoot != "" {
		os.RemoveAll(benchWALRoot)
	}
	os.Exit(code)
}

// benchWAL writes a WAL of benchReplaySeries series with samples samples
// each, once per process and shape, and returns its directory. It is kept
// without a checkpoint so that Open replays it all.
func benchWAL(b *testing.B, samples int) string {
	benchWALMu.Lock()
	defer benchWALMu.Unlock()
	if dir, ok := benchWALDirs[samples]; ok {
		return dir
	}
	if benchWALRoot == "" {
		root, err := os.MkdirTemp("", "strata-replay-bench")
		if err != nil {
			b.Fatal(err)
		}
		benchWALRoot = root
	}
	dir := filepath.Join(benchWALRoot, fmt.Sprintf("wal-%d", samples))
	opts := DefaultOptions()
	opts.WALDir = dir
	opts.CheckpointOnClose = false
	opts.CheckpointMinBytes = 1 << 62
	h, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	appendRound := benchAppender(b, h, func(i, j int) float64 { return float64(i + j) })
	for j := range samples {
		appendRound(j)
	}
	if err := h.Close(); err != nil {
		b.Fatal(err)
	}
	benchWALDirs[samples] = dir
	return dir
}

// BenchmarkReplay measures opening a head from a WAL of 10k series with 1k
// and 2k float samples each (10M and 20M samples), with 1, 2 and 4 replay
// workers. allocs/series is allocs/op over the series: equal for both
// lengths, it shows that replay allocates per series (creating it), not
// per sample.
//
//	go test ./internal/head -run NONE -bench BenchmarkReplay -benchmem -benchtime=3x -count=6 | tee new.txt
//	benchstat old.txt new.txt
func BenchmarkReplay(b *testing.B) {
	for _, samples := range []int{1000, 2000} {
		for _, workers := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("samples=%d/workers=%d", samples, workers), func(b *testing.B) {
				dir := benchWAL(b, samples)
				opts := DefaultOptions()
				opts.WALDir = dir
				opts.ChunkDir = filepath.Join(b.TempDir(), "chunks_head") // as the store has it
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
					if got := h.Stats().ReplayedSamples; got != uint64(benchReplaySeries*samples) {
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
				total := float64(b.N) * benchReplaySeries * float64(samples)
				mallocs := float64(after.Mallocs - before.Mallocs)
				b.ReportMetric(total/b.Elapsed().Seconds(), "samples/s")
				b.ReportMetric(mallocs/total, "allocs/sample")
				b.ReportMetric(mallocs/float64(b.N)/benchReplaySeries, "allocs/series")
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/total, "B/sample")
			})
		}
	}
}

// BenchmarkReplayCheckpointed measures a restart from the layout a
// server killed while it takes writes leaves: a checkpoint written while
// samples came in, which holds the first samples of the segment it
// started (overlap rounds of 10k series), then deltas of 100 rounds
// each, and the WAL since. samples/s counts the samples the WAL adds
// over the whole replay, the checkpoints' restore included; held/op is
// how many the checkpoint held already.
//
//	go test ./internal/head -run NONE -bench BenchmarkReplayCheckpointed -benchmem -benchtime=3x -count=6 | tee new.txt
//	benchstat old.txt new.txt
func BenchmarkReplayCheckpointed(b *testing.B) {
	const before, after, deltaRounds = 1000, 500, 100
	for _, c := range []struct{ overlap, deltas int }{{0, 0}, {50, 0}, {0, 4}} {
		name := fmt.Sprintf("overlap=%d", c.overlap)
		if c.deltas > 0 {
			name = fmt.Sprintf("deltas=%d", c.deltas)
		}
		b.Run(name, func(b *testing.B) {
			h, appendRound := benchChunkHead(b, b.TempDir())
			for j := range before {
				appendRound(j)
			}
			h.checkpointMu.Lock()
			n, walBytes, err := h.cutCheckpoint()
			if err != nil {
				b.Fatal(err)
			}
			for j := range c.overlap {
				appendRound(before + j)
			}
			if err := h.writeCheckpointAt(n, walBytes, checkpointKind{full: true}); err != nil {
				b.Fatal(err)
			}
			h.fullNext.Store(false)
			h.checkpointMu.Unlock()
			j := before + c.overlap
			for range c.deltas {
				for range deltaRounds {
					appendRound(j)
					j++
				}
				if err := h.Checkpoint(); err != nil {
					b.Fatal(err)
				}
			}
			if _, deltas, _, _ := checkpointChain(vfs.OS{}, h.opts.WALDir); len(deltas) != c.deltas {
				b.Fatalf("%d deltas written, want %d", len(deltas), c.deltas)
			}
			for range after {
				appendRound(j)
				j++
			}
			if err := h.Close(); err != nil {
				b.Fatal(err)
			}
			opts := h.opts
			wantSamples := uint64(benchReplaySeries * after)
			b.ReportAllocs()
			for b.Loop() {
				h, err := Open(opts)
				if err != nil {
					b.Fatal(err)
				}
				st := h.Stats()
				if st.ReplayedSamples != wantSamples {
					b.Fatalf("replayed %d samples, want %d", st.ReplayedSamples, wantSamples)
				}
				b.StopTimer()
				b.ReportMetric(float64(st.ReplayedHeld), "held/op")
				h.Close()
				removeEmptySegments(b, opts.WALDir)
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N)*float64(wantSamples)/b.Elapsed().Seconds(), "samples/s")
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

// benchChunkHead opens a head in dir that keeps its chunks in files, as
// the store does, and returns it with benchAppender's function for it.
func benchChunkHead(b *testing.B, dir string) (*Head, func(j int)) {
	opts := DefaultOptions()
	opts.WALDir = filepath.Join(dir, "wal")
	opts.ChunkDir = filepath.Join(dir, "chunks_head")
	opts.CheckpointOnClose = false
	opts.CheckpointMinBytes = 1 << 62
	h, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	return h, benchAppender(b, h, func(i, j int) float64 { return float64(i*j%1000) / 10 })
}

// benchAppender returns a function that appends the jth sample, of value
// v(i, j) at j*15s, to each of benchReplaySeries series i of h, in one
// commit.
func benchAppender(b *testing.B, h *Head, v func(i, j int) float64) func(j int) {
	lsets := make([]labels.Labels, benchReplaySeries)
	for i := range lsets {
		lsets[i] = labels.FromStrings("__name__", "node_cpu_seconds_total", "cpu", fmt.Sprint(i%32),
			"instance", fmt.Sprintf("host-%d:9100", i/32), "job", "node", "mode", "idle")
	}
	return func(j int) {
		app := h.Appender(context.Background())
		for i, l := range lsets {
			if _, err := app.Append(0, l, storage.Sample{T: int64(j) * 15000, V: v(i, j)}); err != nil {
				b.Fatal(err)
			}
		}
		if err := app.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckpoint measures a checkpoint of a head of 10k series with
// four closed chunks each and an open one, kept in files as the store
// keeps them, written 100 samples a series after the last one (16 MiB of
// WAL, what starts the next one): a full one, whose cost is mostly
// reading the chunks back, and a delta, which reads what came in since.
// record-bytes/op is the size of its records before compression.
//
//	go test ./internal/head -run NONE -bench 'BenchmarkCheckpoint$' -benchmem -benchtime=20x -count=6
func BenchmarkCheckpoint(b *testing.B) {
	for _, full := range []bool{true, false} {
		b.Run(fmt.Sprintf("full=%v", full), func(b *testing.B) {
			h, appendRound := benchChunkHead(b, b.TempDir())
			defer h.Close()
			samples := 4*h.opts.ChunkSamples + h.opts.ChunkSamples/2
			for j := range samples {
				appendRound(j)
			}
			if err := h.Checkpoint(); err != nil {
				b.Fatal(err)
			}
			var recordBytes int64
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				for range 100 {
					appendRound(samples)
					samples++
				}
				h.fullNext.Store(full)
				h.deltaBytes.Store(0)
				b.StartTimer()
				if err := h.Checkpoint(); err != nil {
					b.Fatal(err)
				}
				if full {
					recordBytes += h.checkpointSize.Load()
				} else {
					recordBytes += h.lastDeltaBytes.Load()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchReplaySeries, "ns/series")
			b.ReportMetric(float64(recordBytes)/float64(b.N), "record-bytes/op")
		})
	}
}

// BenchmarkTruncate measures a truncation that drops the two oldest of
// four closed chunks of 10k series, kept in files: it reads every
// series' chunk descriptions and retires the chunks dropped.
func BenchmarkTruncate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		h, appendRound := benchChunkHead(b, b.TempDir())
		n := h.opts.ChunkSamples
		for j := range 4*n + n/2 {
			appendRound(j)
		}
		b.StartTimer()
		if st := h.Truncate(int64(2*n) * 15000); st.Chunks != 2*benchReplaySeries {
			b.Fatalf("dropped %d chunks", st.Chunks)
		}
		b.StopTimer()
		h.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchReplaySeries, "ns/series")
}
