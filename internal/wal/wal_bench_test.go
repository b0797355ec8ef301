package wal

import (
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata/internal/vfs"
)

var benchSizes = []struct {
	name string
	size int
}{
	{"1KiB", 1 << 10},
	{"64KiB", 64 << 10},
}

// BenchmarkLog measures appending records of one size, one per Log call,
// from 1 or 8 goroutines, to a log in a temporary directory, under each
// sync policy: sync=never goes through write(2) into the page cache,
// sync=always also waits for fsync, shared between concurrent callers
// (group commit). Throughput counts record bytes; records/s counts Log
// calls of all goroutines per second of wall time; records/fsync says how
// many Log calls an fsync served on average.
//
// Compare two versions of the WAL with:
//
//	go test -run '^$' -bench 'BenchmarkLog|BenchmarkReplay' -benchmem -count=6 ./internal/wal/ > old.txt
//	# change the code
//	go test -run '^$' -bench 'BenchmarkLog|BenchmarkReplay' -benchmem -count=6 ./internal/wal/ > new.txt
//	benchstat old.txt new.txt
//
// The temporary directory is on the file system of $TMPDIR, whose fsync
// latency sync=always measures: set TMPDIR to the disk the WAL will use.
func BenchmarkLog(b *testing.B) {
	for _, policy := range []SyncPolicy{SyncNever, SyncAlways} {
		for _, conc := range []int{1, 8} {
			for _, bs := range benchSizes {
				name := fmt.Sprintf("sync=%s/concurrency=%d/size=%s", policy, conc, bs.name)
				b.Run(name, func(b *testing.B) { benchmarkLog(b, policy, conc, bs.size) })
			}
		}
	}
}

func benchmarkLog(b *testing.B, policy SyncPolicy, conc, size int) {
	dir := b.TempDir()
	fsys := &syncCountingFS{}
	w, err := Open(dir, Options{Sync: policy, FS: fsys})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.ReportAllocs()
	b.SetBytes(int64(size))
	// Keep the disk from filling on long runs: drop finished segments
	// every 8 GiB. The goroutine that crosses the mark does it, timed (the
	// others go on logging). Unlinking GiBs takes long enough on this
	// machine's disk (mounted with online discard) to skew the numbers,
	// so the mark is high enough that runs of the default -benchtime
	// never reach it.
	const cleanupEvery = 8 << 30
	var logged, next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range conc {
		wg.Go(func() {
			rec := make([]byte, size)
			for i := range rec {
				rec[i] = byte(i)
			}
			for next.Add(1) <= int64(b.N) {
				if err := w.Log(rec); err != nil {
					b.Error(err)
					return
				}
				if n := logged.Add(int64(size)); n%cleanupEvery < int64(size) {
					_, last, err := w.Segments()
					if err == nil {
						err = w.Truncate(last)
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	if policy == SyncAlways {
		b.ReportMetric(float64(b.N)/float64(max(fsys.syncs.Load(), 1)), "records/fsync")
	}
}

// syncCountingFS is the OS's file system, counting fsyncs of segments.
type syncCountingFS struct {
	vfs.OS
	syncs atomic.Int64
}

func (c *syncCountingFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := c.OS.OpenFile(name, flag, perm)
	if err != nil || flag&os.O_WRONLY == 0 {
		return f, err
	}
	return &syncCountingFile{File: f, syncs: &c.syncs}, nil
}

type syncCountingFile struct {
	vfs.File
	syncs *atomic.Int64
}

func (f *syncCountingFile) Sync() error {
	f.syncs.Add(1)
	return f.File.Sync()
}

// BenchmarkReplay measures reading a 256 MiB log back from the page cache,
// checking every CRC. Its throughput counts the bytes of the log, frames
// included. Run it as BenchmarkLog says.
func BenchmarkReplay(b *testing.B) {
	const logSize = 256 << 20 // two segments of the default size
	for _, bs := range benchSizes {
		b.Run("size="+bs.name, func(b *testing.B) {
			dir := b.TempDir()
			w, err := Open(dir, DefaultOptions())
			if err != nil {
				b.Fatal(err)
			}
			rec := make([]byte, bs.size)
			n := logSize / bs.size
			for i := range n {
				rec[0] = byte(i)
				if err := w.Log(rec); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(n * (headerSize + bs.size)))
			for b.Loop() {
				// Touch every record, as a decoder would.
				var got, sum int
				_, err := Replay(dir, ReplayOptions{}, func(rec []byte) error {
					got++
					sum += int(rec[0]) + int(rec[len(rec)-1])
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				if got != n {
					b.Fatalf("replayed %d records, want %d", got, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}
